"""Benchmark loaders on the real data: counts pinned as literals and re-derived independently where cheap."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from tracerag.errors import ConfigError
from tracerag.eval.datasets import (
    BENCHMARKS,
    Benchmark,
    beir,
    cer_bucket,
    cranfield,
    gold_span,
    hipe_entities,
    load_benchmark,
    miami211_services,
    ocr_known_item,
    ocr_records,
    piaf_fr,
)


def _counts(b: Benchmark) -> tuple[int, int, int]:
    return len(b.documents), len(b.queries), b.judgment_count()


def _consistent(b: Benchmark) -> None:
    """Ids unique, every judged document in the corpus, every query judged, every grade positive."""
    ids = [d.id for d in b.documents]
    assert len(ids) == len(set(ids))
    known = set(ids)
    assert set(b.qrels) == set(b.queries)
    for qid, docs in b.qrels.items():
        assert docs, qid
        assert set(docs) <= known, qid
        assert all(g > 0 for g in docs.values()), qid
    assert all(q.id == qid and q.text.strip() for qid, q in b.queries.items())


@pytest.fixture(scope="module")
def hipe(datasets_dir: Path) -> Benchmark:
    return hipe_entities(datasets_dir)


@pytest.fixture(scope="module")
def hipe_dated(datasets_dir: Path) -> Benchmark:
    return hipe_entities(datasets_dir, dated=True)


@pytest.fixture(scope="module")
def ocr(datasets_dir: Path) -> Benchmark:
    return ocr_known_item(datasets_dir)


@pytest.fixture(scope="module")
def cran(datasets_dir: Path) -> Benchmark:
    return cranfield(datasets_dir)


@pytest.fixture(scope="module")
def piaf(datasets_dir: Path) -> Benchmark:
    return piaf_fr(datasets_dir)


@pytest.fixture(scope="module")
def miami(datasets_dir: Path) -> Benchmark:
    return miami211_services(datasets_dir)


@pytest.fixture(scope="module")
def miami_city(datasets_dir: Path) -> Benchmark:
    return miami211_services(datasets_dir, with_city=True)


# ------------------------------------------------------------------------------------------------- HIPE


def test_hipe_entities_counts(hipe: Benchmark) -> None:
    assert _counts(hipe) == (1293, 1565, 8107)
    _consistent(hipe)
    assert hipe.name == "hipe-entities" and "derived" in hipe.description
    types = Counter(q.type for q in hipe.queries.values())
    assert types == {"loc": 1065, "pers": 268, "org": 130, "prod": 73, "building": 17, "street": 12}


def test_hipe_entities_relevant_docs_link_the_entity(hipe: Benchmark) -> None:
    links: dict[str, set[str]] = {}
    for doc in hipe.documents:
        links[doc.id] = {e["wikidata"] for e in doc.source["entities"] if e["wikidata"]}
    linked_in = Counter(q for ids in links.values() for q in ids)
    assert set(hipe.queries) == {q for q, n in linked_in.items() if n >= 2}
    for qid, docs in hipe.qrels.items():
        assert set(docs) == {d for d, ids in links.items() if qid in ids}
        assert all(g == 1 for g in docs.values())


def test_hipe_query_text_is_a_surface_form(hipe: Benchmark) -> None:
    by_id = {d.id: d for d in hipe.documents}
    for qid in list(hipe.queries)[::50]:
        forms = {
            " ".join(by_id[d].text[e["start"] : e["end"]].split())
            for d in hipe.qrels[qid]
            for e in by_id[d].source["entities"]
            if e["wikidata"] == qid
        }
        assert hipe.queries[qid].text in forms
        assert hipe.queries[qid].language in {by_id[d].language for d in hipe.qrels[qid]}


def test_hipe_entities_dated(hipe: Benchmark, hipe_dated: Benchmark) -> None:
    assert _counts(hipe_dated) == (1293, 1554, 2456)
    _consistent(hipe_dated)
    by_id = {d.id: d for d in hipe_dated.documents}
    for qid, query in hipe_dated.queries.items():
        entity, year = qid.split("@")
        assert query.text == f"{hipe.queries[entity].text} {year}"
        linked = hipe.qrels[entity]
        years = {d: int(by_id[d].date[:4]) for d in linked if by_id[d].date}
        assert int(year) == min(years.values())
        assert set(hipe_dated.qrels[qid]) == {d for d, y in years.items() if abs(y - int(year)) <= 5}


# ------------------------------------------------------------------------------------------ OCR known item


def test_ocr_known_item_counts(ocr: Benchmark, datasets_dir: Path) -> None:
    assert _counts(ocr) == (740 + 1293, 740, 740)
    _consistent(ocr)
    files = sorted((datasets_dir / "hipe-ocrepair2026").glob("*.jsonl"))
    records = sum(1 for f in files for line in f.open(encoding="utf-8") if line.strip())
    assert records == len(ocr.queries) == 740
    assert Counter(q.metadata["subset"] for q in ocr.queries.values()) == {
        "dta19-l0": 80,
        "dta19-l1": 80,
        "dta19-l2": 80,
        "icdar2017": 200,
        "impresso-snippets": 300,
    }


def test_ocr_queries_are_gold_spans_of_their_record(ocr: Benchmark, datasets_dir: Path) -> None:
    gold = {doc.id: (doc, text) for doc, text in ocr_records(datasets_dir)}
    for qid, query in ocr.queries.items():
        (rel,) = ocr.qrels[qid]
        doc, text = gold[rel]
        assert query.text in " ".join(text.split())
        assert 8 <= len(query.text.split()) <= 15
        assert query.text == gold_span(rel, text)  # deterministic
        assert query.language == doc.language and query.metadata["cer_bucket"] == cer_bucket(doc.source["cer"])
    docs = {d.id: d for d in ocr.documents}
    assert all(docs[d].text != gold[d][1] for d in ocr.qrels if docs[d].source["cer"] > 0)  # noisy text indexed


def test_cer_buckets() -> None:
    assert [cer_bucket(x) for x in (0.0, 0.05, 0.149, 0.15, 0.3, 0.9, None)] == [
        "<0.05",
        "0.05-0.15",
        "0.05-0.15",
        "0.15-0.3",
        ">=0.3",
        ">=0.3",
        None,
    ]


# ------------------------------------------------------------------------------------------------ Cranfield


def test_cranfield_counts(cran: Benchmark, datasets_dir: Path) -> None:
    folder = datasets_dir / "cranfield"
    assert _counts(cran) == (1400, 225, 1612)
    _consistent(cran)
    assert sum(1 for line in (folder / "cran.all.1400").open() if line.startswith(".I ")) == 1400
    assert sum(1 for line in (folder / "cran.qry").open() if line.startswith(".I ")) == 225
    rows = [line.split() for line in (folder / "cranqrel").open() if line.strip()]
    assert len(rows) == 1837
    assert sum(1 for r in rows if r[2] != "-1") == cran.judgment_count()
    assert Counter(g for docs in cran.qrels.values() for g in docs.values()) == {4: 128, 3: 387, 2: 734, 1: 363}


def test_cranfield_query_ids_are_positions(cran: Benchmark, datasets_dir: Path) -> None:
    qry_ids = re.findall(r"^\.I (\d+)", (datasets_dir / "cranfield" / "cran.qry").read_text(), re.M)
    assert qry_ids[:3] == ["001", "002", "004"] and qry_ids[-1] == "365"
    assert cran.queries["2"].metadata["cran_qry_id"] == "002"
    assert cran.queries["3"].metadata["cran_qry_id"] == "004"  # ids diverge from here on
    assert cran.queries["225"].metadata["cran_qry_id"] == "365"
    assert "365" not in cran.queries
    assert cran.queries["2"].text.startswith("what are the structural and aeroelastic problems")
    # cranqrel: query 1 -> doc 184 code 2 (gain 3); doc 486 code -1 is dropped.
    assert cran.qrels["1"]["184"] == 3 and "486" not in cran.qrels["1"]
    assert cran.qrels["2"]["12"] == 4


# ----------------------------------------------------------------------------------------------------- PIAF


def test_piaf_counts(piaf: Benchmark, datasets_dir: Path) -> None:
    data = json.loads((datasets_dir / "piaf" / "piaf-v1.1.json").read_text(encoding="utf-8"))
    paragraphs = [p for a in data["data"] for p in a["paragraphs"]]
    assert len({p["context"] for p in paragraphs}) == len(piaf.documents) == 1518
    assert sum(len(p["qas"]) for p in paragraphs) == len(piaf.queries) == 7569
    assert _counts(piaf) == (1518, 7569, 7569)
    _consistent(piaf)
    docs = {d.id: d for d in piaf.documents}
    for qid, query in list(piaf.queries.items())[::100]:
        (rel,) = piaf.qrels[qid]
        assert all(a in docs[rel].text for a in query.metadata["answers"])


# ------------------------------------------------------------------------------------------------- Miami 211


def test_miami211_counts(miami: Benchmark, miami_city: Benchmark, datasets_dir: Path) -> None:
    assert _counts(miami) == (4089, 1205, 11410)
    assert _counts(miami_city) == (4089, 1205, 6144)
    _consistent(miami)
    _consistent(miami_city)
    folder = datasets_dir / "miami211"
    with (folder / "services_taxonomy.csv").open(newline="") as fh:
        pairs = {(r["service_id"], r["taxonomy_id"]) for r in csv.DictReader(fh)}
    per_term = Counter(t for _, t in pairs)
    assert {t for t, n in per_term.items() if 2 <= n <= 200} == set(miami.queries)
    for term, docs in miami.qrels.items():
        assert set(docs) == {s for s, t in pairs if t == term}


def test_miami211_documents(miami: Benchmark, miami_city: Benchmark) -> None:
    docs = {d.id: d for d in miami.documents}
    girl_scouts = docs["136"]
    assert girl_scouts.text.startswith("GIRL SCOUTS COUNCIL OF TROPICAL FLORIDA, INC.\n\nThe Girl Scout Council")
    assert "\\n" not in girl_scouts.text and "Application process: Call to register" in girl_scouts.text
    assert girl_scouts.fields == {
        "organization": "GIRL SCOUTS COUNCIL OF TROPICAL FLORIDA, INC.",
        "city": "Miami",
        "zip": "33157",
    }
    assert not any("\\n" in d.text for d in miami.documents)
    for qid, query in miami_city.queries.items():
        term, city = qid.split("@")[0], query.metadata["city"]
        assert qid == f"{term}@{'_'.join(city.split())}" and not any(c.isspace() for c in qid)  # a TREC id
        assert query.text == f"{miami.queries[term].text} in {city}"
        assert {docs[d].fields.get("city") for d in miami_city.qrels[qid]} == {city}
        assert set(miami_city.qrels[qid]) <= set(miami.qrels[term])


# ----------------------------------------------------------------------------------------------- BEIR, registry


def _write_beir(folder: Path) -> None:
    (folder / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": "d1", "title": "Gare", "text": "La gare de Lausanne.", "date": "1887-05", "language": "fr"},
        {"_id": "d2", "title": "", "text": "Bahnhof Zürich.", "corpus": "nzz"},
        {"_id": "d3", "title": "x", "text": "unrelated"},
    ]
    queries = [{"_id": "q1", "text": "gare"}, {"_id": "q2", "text": "Bahnhof"}, {"_id": "q3", "text": "no qrels"}]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(r) for r in corpus) + "\n", encoding="utf-8")
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n", encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t0\nq2\td2\t1\n", encoding="utf-8"
    )


def test_beir_layout(tmp_path: Path) -> None:
    folder = tmp_path / "tiny"
    _write_beir(folder)
    b = beir(folder)
    assert b.name == "tiny"
    assert [d.id for d in b.documents] == ["d1", "d2", "d3"]
    d1, d2, _ = b.documents
    assert (d1.title, d1.text, d1.date, d1.language, d1.corpus) == (
        "Gare",
        "La gare de Lausanne.",
        "1887-05",
        "fr",
        "tiny",
    )
    assert (d2.title, d2.corpus) == (None, "nzz")
    assert set(b.queries) == {"q1", "q2"}  # q3 has no judgments
    assert b.qrels == {"q1": {"d1": 2}, "q2": {"d2": 1}}  # score 0 dropped
    assert load_benchmark(folder, tmp_path).qrels == b.qrels
    assert load_benchmark(str(folder), tmp_path).name == "tiny"


def test_registry(datasets_dir: Path) -> None:
    assert {
        "hipe-entities",
        "hipe-entities-dated",
        "ocr-known-item",
        "cranfield",
        "piaf-fr",
        "miami211-services",
    } <= set(BENCHMARKS)
    assert _counts(load_benchmark("cranfield", datasets_dir)) == (1400, 225, 1612)
    with pytest.raises(ConfigError, match="unknown benchmark"):
        load_benchmark("no-such-benchmark", datasets_dir)
