"""The OCR-quality estimate on real OCR (HIPE-OCRepair-2026: the same dta19 pages at three noise levels, each with
its measured character error rate) and on the rules' own cases."""

from __future__ import annotations

from collections import defaultdict

import pytest
from scipy.stats import spearmanr

from tests.conftest import require_datasets
from tracerag.ingest.normalise import normalise
from tracerag.ingest.ocr_fixes import fix
from tracerag.ingest.ocr_quality import estimate, is_garbage


@pytest.fixture(scope="module")
def records():
    from tracerag.eval.datasets import ocr_records

    return list(ocr_records(require_datasets("hipe-ocrepair2026")))


def _score(doc):
    return estimate(normalise(fix(doc.text)[0]), doc.language)  # what ingest stores


def test_the_same_page_scores_higher_clean_than_noisy(records):
    by_page: dict[str, dict[str, float]] = defaultdict(dict)
    by_level: dict[str, list[float]] = defaultdict(list)
    for doc, _ in records:
        if doc.corpus.startswith("dta19-l"):
            score = _score(doc).score
            by_page[doc.source["record"].rsplit("_l", 1)[0]][doc.corpus] = score
            by_level[doc.corpus].append(score)
    pairs = [p for p in by_page.values() if "dta19-l0" in p and "dta19-l2" in p]
    assert len(pairs) == 8  # pages the benchmark holds at the cleanest and the noisiest level
    assert all(p["dta19-l0"] > p["dta19-l2"] for p in pairs), pairs
    means = [sum(by_level[level]) / len(by_level[level]) for level in ("dta19-l0", "dta19-l1", "dta19-l2")]
    assert means[0] > means[1] > means[2], means  # measured 0.96 > 0.89 > 0.81


def test_the_cleanest_record_of_a_subset_outscores_its_noisiest(records):
    groups: dict[str, list] = defaultdict(list)
    for doc, _ in records:
        groups[f"{doc.corpus}:{doc.language}"].append(doc)
    ordered = 0
    for docs in groups.values():
        docs.sort(key=lambda d: d.source["cer"])
        ordered += _score(docs[0]).score > _score(docs[-1]).score
    assert ordered >= 7, ordered  # of 8 subsets


def test_the_estimate_falls_as_the_character_error_rate_rises(records):
    scored = [(s.score, doc.source["cer"]) for doc, _ in records if (s := _score(doc)).score is not None]
    assert len(scored) == len(records)  # de, en, fr all have a lexicon
    rho = spearmanr([s for s, _ in scored], [c for _, c in scored])[0]
    assert rho < -0.55, rho  # measured -0.61 (benchmarks/results/ocr_fixes.md)


def test_parts_are_kept_and_combined_as_stated(records):
    doc = records[0][0]
    q = _score(doc)
    assert q.score == pytest.approx(q.lexicon_share * (1 - q.garbage_rate), abs=1e-3)
    assert q.lexicon and q.lexicon.startswith("wordfreq ") and q.lexicon.endswith(f":{doc.language}")
    assert q.words > 50 and q.tokens >= q.words // 2


def test_a_language_without_a_lexicon_gets_no_score_and_says_so():
    text = "Hii ni maandishi ya kawaida kabisa yenye maneno mengi ya kutosha kwa kipimo."
    q = estimate(text, "sw")  # wordfreq has no Swahili list
    assert q.score is None and q.lexicon_share is None and q.note == "no lexicon"
    assert estimate(text, None).note == "no language"
    assert estimate("le chat", "fr").note == "too few words"


@pytest.mark.parametrize("token", ["l0ndon", "tl1e", "hoUse", "■", "wo|d", "th;e", "aaaaah", "x" * 41, "©"])
def test_garbage_tokens(token):
    assert is_garbage(token)


@pytest.mark.parametrize(
    "token",
    [
        "19th",
        "1er",
        "aujourd'hui",
        "porte-manteau",
        "«Paris»,",
        "M.",
        "1887-05",
        "—",
        "Schifffahrt",
        "McDonald",
        "&",
        "uͤber",
    ],
)
def test_tokens_that_are_not_garbage(token):
    assert not is_garbage(token)


def test_the_demo_sample_is_estimated_at_ingest_and_shown_per_corpus(tmp_path):
    """The packaged sample (public-domain ALTO and text pages; one in Luxembourgish, which wordfreq has no list for)."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.demo_data import sample_source
    from tracerag.model import Document
    from tracerag.retrieval.collection_info import ocr_distribution

    docs = [d for d in sample_source().documents() if isinstance(d, Document)]
    with Collection.open(tmp_path / "c", load_settings(), mode="write", create=True, embed_model="none") as col:
        col.ingest(docs, dense=False)
        estimates = col.store.ocr_estimates([d.id for d in docs])
        distribution = ocr_distribution(col.store.ocr_by_corpus())
    assert set(estimates) == {d.id for d in docs}  # every document has its estimate, scored or not
    stated = {d.id: d.language for d in docs}
    for doc_id, e in estimates.items():
        if e["language"] == "lb":
            assert e["score"] is None and e["note"] == "no lexicon"
        elif stated[doc_id] in ("fr", "de", "en"):
            assert 0.3 < e["score"] <= 1 and e["lexicon"].endswith(":" + stated[doc_id]), (doc_id, e)
    assert any(e["note"] == "no lexicon" for e in estimates.values())
    assert distribution is not None and all(d["unestimated"] == 0 for d in distribution.values())
    assert sum(d["scored"] + d["unscored"] for d in distribution.values()) == len(docs)
    for d in distribution.values():
        if d["scored"]:
            low, q1, median, q3, high = d["min_q1_median_q3_max"]
            assert low <= q1 <= median <= q3 <= high
