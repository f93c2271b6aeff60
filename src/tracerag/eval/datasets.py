"""Benchmark loaders: a corpus, its queries and their relevance judgments, read in place from the real data.

Every loader returns a `Benchmark`. Its `qrels` hold only positive grades (query id -> doc id -> grade >= 1):
a document absent from a query's judgments is non-relevant, so metrics never need a "judged non-relevant" case.
Most judgments here are *derived* (entity links, taxonomy tags, the record a span was cut from, the paragraph
a question was written on), not pooled human relevance assessment; each `description` says which. Cranfield is
the one collection with real graded relevance judgments.

Ids are stable across loads and machines: they come from the data (HIPE document ids, Wikidata ids, record
ids, service ids) or from positions in files that do not change; no loader uses unseeded randomness.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracerag.dates import normalise_date
from tracerag.errors import ConfigError, DataUnavailableError, RecordError, Where
from tracerag.ingest.hipe import read as read_hipe
from tracerag.model import Document

Qrels = dict[str, dict[str, int]]


@dataclass(slots=True)
class Query:
    """One query. `type` and `metadata` (date, subset, cer_bucket, ...) exist for per-group score breakdowns."""

    id: str
    text: str
    type: str | None = None
    language: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Benchmark:
    """A corpus, queries and judgments; `description` says how the judgments were made (derived or human)."""

    name: str
    description: str
    documents: list[Document]
    queries: dict[str, Query]
    qrels: Qrels
    # Documents judged NOT relevant, where the judgments say so (a researcher's rejections: eval/selection_bench.py);
    # empty for the derived benchmarks, where every document without a grade counts as not relevant.
    nonrelevant: dict[str, set[str]] = field(default_factory=dict)

    def relevant(self, query_id: str) -> set[str]:
        """The documents judged relevant to a query (grade >= 1)."""
        return {d for d, g in self.qrels.get(query_id, {}).items() if g > 0}

    def judgment_count(self) -> int:
        return sum(len(docs) for docs in self.qrels.values())


# --------------------------------------------------------------------------------------------------- helpers


def _ws(text: str) -> str:
    """Whitespace-normalised text: OCR line breaks inside a mention are not part of how people type it."""
    return " ".join(text.split())


def _majority(values: Iterable[str | None]) -> str | None:
    """Most frequent non-empty value; ties go to the alphabetically first, so results never depend on order."""
    counts = Counter(v for v in values if v)
    if not counts:
        return None
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def _year(date: str | None) -> int | None:
    return int(date[:4]) if date and date[:4].isdigit() else None


def _hipe_documents(root: Path) -> list[Document]:
    """All HIPE-2022 documents, sorted by id; records the reader rejects are skipped (there are none in v2.1)."""
    docs = [d for d in read_hipe(Path(root) / "hipe2022") if isinstance(d, Document)]
    return sorted(docs, key=lambda d: d.id)


# ------------------------------------------------------------------------------------------ HIPE entities

HIPE_DATE_WINDOW = 5  # years either side of the earliest relevant document, for the dated variant
# The HIPE sub-datasets spell the coarse types differently (hipe2020 "pers"/"loc", newseye "PER"/"LOC"/"HumanProd",
# topres19th "LOC"/"BUILDING"/"STREET"): one spelling per type, so per-type breakdowns do not split.
_ENTITY_TYPE = {"per": "pers", "humanprod": "prod"}


def hipe_entities(root: Path, dated: bool = False) -> Benchmark:
    """Entity search over HIPE-2022: query = an entity's usual surface form, relevant = documents linking it.

    Only entities linked in at least two documents become queries (one document is a known-item task, not
    entity search). The dated variant appends the year of the earliest relevant document and keeps the
    relevant documents within +-5 years, to test date-aware retrieval.
    """
    documents = _hipe_documents(root)
    surfaces: dict[str, Counter[str]] = defaultdict(Counter)
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    linked: dict[str, set[str]] = defaultdict(set)
    by_id = {d.id: d for d in documents}
    for doc in documents:
        for ent in doc.source.get("entities", []):
            qid = ent.get("wikidata")
            if not qid:
                continue
            form = _ws(doc.text[ent["start"] : ent["end"]])
            if form:
                surfaces[qid][form] += 1
                etype = ent["type"].lower()
                kinds[qid][_ENTITY_TYPE.get(etype, etype)] += 1
                linked[qid].add(doc.id)

    queries: dict[str, Query] = {}
    qrels: Qrels = {}
    for entity in sorted(linked):
        doc_ids = linked[entity]
        if len(doc_ids) < 2:
            continue
        text = _majority(surfaces[entity].elements())
        assert text is not None
        language = _majority(by_id[d].language for d in sorted(doc_ids))
        kind = _majority(kinds[entity].elements())
        meta: dict[str, Any] = {"entity": entity, "linked_documents": len(doc_ids)}
        if not dated:
            queries[entity] = Query(entity, text, kind, language, meta)
            qrels[entity] = dict.fromkeys(sorted(doc_ids), 1)
            continue
        years = {d: _year(by_id[d].date) for d in doc_ids}
        known = [y for y in years.values() if y is not None]
        if not known:
            continue  # no dated document: nothing to anchor the date on
        first = min(known)
        window = sorted(d for d, y in years.items() if y is not None and abs(y - first) <= HIPE_DATE_WINDOW)
        if len(window) < 1:
            continue
        qid = f"{entity}@{first}"
        meta.update(date=str(first), window=[first - HIPE_DATE_WINDOW, first + HIPE_DATE_WINDOW])
        queries[qid] = Query(qid, f"{text} {first}", kind, language, meta)
        qrels[qid] = dict.fromkeys(window, 1)

    variant = "dated " if dated else ""
    description = (
        f"HIPE-2022 {variant}entity search. Judgments are derived, not pooled: a document is relevant (grade 1) "
        "when its gold named-entity annotation links the query's Wikidata id. Query text is the entity's most "
        "frequent surface form in the OCR text (whitespace-normalised, ties alphabetical); only entities "
        "linked in >= 2 documents are queries."
    )
    if dated:
        description += (
            f" Dated variant: the year of the earliest dated relevant document is appended to the query; relevant "
            f"= linking documents dated within +-{HIPE_DATE_WINDOW} years of it (undated ones are dropped)."
        )
    name = "hipe-entities-dated" if dated else "hipe-entities"
    return Benchmark(name, description, documents, queries, qrels)


def hipe_entities_dated(root: Path) -> Benchmark:
    """Entity search with a year: surface form + the earliest year, relevant = linking documents within ±5 years."""
    return hipe_entities(root, dated=True)


# -------------------------------------------------------------------------------------- OCR known item

_OCR_FILE = re.compile(r"^hipe-ocrepair-bench_v[\d.]+_(?P<subset>.+?)_v[\d.]+_(?P<split>[a-z_]+)_(?P<lang>[a-z]{2})$")
OCR_SPAN_WORDS = (8, 15)


def cer_bucket(cer: float | None) -> str | None:
    """Coarse OCR-noise band, so scores can be broken down by how bad the OCR is."""
    if cer is None:
        return None
    if cer < 0.05:
        return "<0.05"
    if cer < 0.15:
        return "0.05-0.15"
    if cer < 0.3:
        return "0.15-0.3"
    return ">=0.3"


def _ocr_subset(path: Path) -> str:
    """`hipe-ocrepair-bench_v0.9_dta19-l0_v0.1_test_de.jsonl` -> `dta19-l0`."""
    m = _OCR_FILE.match(path.stem)
    if not m:
        raise ValueError(f"unexpected OCR benchmark file name: {path.name}")
    return m.group("subset")


def _safe_date(value: str | None) -> str | None:
    try:
        return normalise_date(value)
    except ValueError:
        return None  # "n/a" (icdar2017) and the like: undated


def gold_span(record_id: str, gold: str) -> str:
    """A deterministic 8-15 word span of the gold transcription, seeded by the record id's hash.

    Spans without a "¬" line-end hyphen are preferred: a person typing a remembered sentence would not type one.
    The span is whitespace-normalised, so it occurs in `_ws(gold)`.
    """
    words = gold.split()
    rng = random.Random(int(hashlib.sha256(record_id.encode("utf-8")).hexdigest()[:16], 16))
    n = min(len(words), rng.randint(*OCR_SPAN_WORDS))
    starts = range(len(words) - n + 1)
    clean = [s for s in starts if not any("¬" in w for w in words[s : s + n])]
    start = rng.choice(clean or list(starts))
    return " ".join(words[start : start + n])


def ocr_records(root: Path) -> Iterator[tuple[Document, str]]:
    """Each OCR-repair record as a Document holding the NOISY OCR text, paired with its gold transcription."""
    for path in sorted((Path(root) / "hipe-ocrepair2026").glob("*.jsonl")):
        subset = _ocr_subset(path)
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                rec = json.loads(line)
                meta = rec["document_metadata"]
                hyp = rec["ocr_hypothesis"]
                cer = hyp.get("quality_report", {}).get("cer")
                doc = Document(
                    id=f"{subset}:{meta['document_id']}",
                    text=hyp["transcription_unit"],
                    corpus=subset,
                    title=meta.get("publication_title"),
                    date=_safe_date(meta.get("date")),
                    language=meta.get("language"),
                    source={
                        "file": path.name,
                        "record": meta["document_id"],
                        "dataset": meta.get("primary_dataset_name"),
                        "document_type": meta.get("document_type"),
                        "cer": cer,
                    },
                    ocr_quality=None if cer is None else max(0.0, 1.0 - float(cer)),
                )
                yield doc, rec["ground_truth"]["transcription_unit"]


def ocr_known_item(root: Path) -> Benchmark:
    """Known-item search under OCR noise: find the noisy record from a clean span of its gold transcription.

    HIPE-2022 documents join the corpus as distractors (also noisy historical newspapers, same languages).
    """
    documents: list[Document] = []
    queries: dict[str, Query] = {}
    qrels: Qrels = {}
    for doc, gold in ocr_records(root):
        if doc.id in qrels:
            raise ValueError(f"duplicate OCR record id {doc.id}")
        documents.append(doc)
        cer = doc.source.get("cer")
        meta = {"subset": doc.corpus, "cer": cer, "cer_bucket": cer_bucket(cer), "date": doc.date}
        queries[doc.id] = Query(doc.id, gold_span(doc.id, gold), "known-item", doc.language, meta)
        qrels[doc.id] = {doc.id: 1}
    ocr_ids = set(qrels)
    distractors = [d for d in _hipe_documents(root) if d.id not in ocr_ids]
    description = (
        "HIPE-OCRepair-2026 known-item search. Judgments are derived: each query is an 8-15 word span of a "
        "record's gold transcription (chosen deterministically from the record id), and only that record, "
        "indexed with its noisy OCR text, is relevant (grade 1). All HIPE-2022 documents are added as "
        "distractors. Metadata: subset, language, CER bucket of the record's OCR."
    )
    return Benchmark("ocr-known-item", description, documents + distractors, queries, qrels)


# ---------------------------------------------------------------------------------------------- Cranfield

# cranqrel codes: 1 = complete answer, 2 = high relevance, 3 = useful background, 4 = minimum interest,
# -1 = no interest. Gains reverse the scale (1 -> 4 ... 4 -> 1); -1 is dropped, i.e. non-relevant.
CRANFIELD_GAIN = {1: 4, 2: 3, 3: 2, 4: 1}


def _dot_records(path: Path) -> list[tuple[str, dict[str, str]]]:
    """SMART-format records: `.I id` then `.X` fields; a repeated field is appended (cran.all.1400 doc 576)."""
    records: list[tuple[str, dict[str, list[str]]]] = []
    key = ""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(".I"):
            records.append((line[2:].strip(), {}))
            key = ""
        elif records and re.fullmatch(r"\.[A-Z]", line.strip()):
            key = line.strip()[1]
            records[-1][1].setdefault(key, [])
        elif records and key:
            records[-1][1][key].append(line)
    return [(rid, {k: "\n".join(v).strip() for k, v in fields.items()}) for rid, fields in records]


def cranfield(root: Path) -> Benchmark:
    """Cranfield: 1,400 aeronautics abstracts, 225 queries, graded human judgments (cranqrel)."""
    folder = Path(root) / "cranfield"
    documents = [
        Document(
            id=rid,
            text=f.get("W", ""),
            corpus="cranfield",
            title=f.get("T") or None,
            language="en",
            fields={"author": f.get("A", ""), "bibliography": f.get("B", "")},
        )
        for rid, f in _dot_records(folder / "cran.all.1400")
    ]
    queries: dict[str, Query] = {}
    # cran.qry ids skip numbers (001, 002, 004, ... 365); cranqrel numbers the queries 1-225 by position.
    for pos, (qry_id, f) in enumerate(_dot_records(folder / "cran.qry"), 1):
        qid = str(pos)
        queries[qid] = Query(qid, _ws(f.get("W", "")), "question", "en", {"cran_qry_id": qry_id})
    qrels: Qrels = defaultdict(dict)
    for line in (folder / "cranqrel").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue  # blank lines in the file
        qid, doc_id, code = parts[0], parts[1], int(parts[2])
        if code in CRANFIELD_GAIN:
            qrels[qid][doc_id] = max(qrels[qid].get(doc_id, 0), CRANFIELD_GAIN[code])
    description = (
        "Cranfield collection with its human relevance judgments (not derived). cranqrel codes 1 (complete "
        "answer) .. 4 (minimum interest) become gains 4 .. 1; code -1 (no interest) is dropped as non-relevant. "
        "Query ids are positions 1-225, as in cranqrel; the skipping cran.qry id is in metadata['cran_qry_id']."
    )
    return Benchmark("cranfield", description, documents, queries, dict(qrels))


# --------------------------------------------------------------------------------------------------- PIAF


@dataclass(frozen=True, slots=True)
class PiafQuestion:
    """One PIAF question, with the id of the paragraph (Document) it was written on."""

    text: str
    doc_id: str
    answers: list[str]


def piaf_corpus(root: Path) -> tuple[list[Document], dict[str, PiafQuestion]]:
    """PIAF's paragraphs as Documents and its questions by id. Every PIAF benchmark reads the corpus here, so their
    Documents (ids and text) are the same and a collection built for one lends its vectors to the others."""
    data = json.loads((Path(root) / "piaf" / "piaf-v1.1.json").read_text(encoding="utf-8"))
    documents: list[Document] = []
    questions: dict[str, PiafQuestion] = {}
    by_context: dict[str, str] = {}
    for article in data["data"]:
        title = article["title"]
        for n, para in enumerate(article["paragraphs"]):
            context = para["context"]
            doc_id = by_context.get(context)
            if doc_id is None:  # identical paragraphs are one document, so no duplicate competes with the gold
                # Wikipedia-style title (spaces → "_"): ids must hold no whitespace to go into TREC run files.
                doc_id = by_context[context] = f"{'_'.join(title.split())}:{n}"
                documents.append(
                    Document(
                        id=doc_id,
                        text=context,
                        corpus="piaf",
                        title=title,
                        language="fr",
                        source={"category": article.get("categorie")},
                    )
                )
            for qa in para["qas"]:
                answers = [a["text"] for a in qa.get("answers", [])]
                questions[qa["id"]] = PiafQuestion(qa["question"].strip(), doc_id, answers)
    return documents, questions


def piaf_fr(root: Path) -> Benchmark:
    """PIAF (French SQuAD): passage retrieval, each question's own paragraph is its one relevant document."""
    documents, questions = piaf_corpus(root)
    queries = {qid: Query(qid, q.text, "question", "fr", {"answers": q.answers}) for qid, q in questions.items()}
    qrels: Qrels = {qid: {q.doc_id: 1} for qid, q in questions.items()}
    description = (
        "PIAF v1.1 French questions over Wikipedia paragraphs. Judgments are derived: a question's relevant "
        "document (grade 1) is the paragraph it was written on; other paragraphs may answer it too."
    )
    return Benchmark("piaf-fr", description, documents, queries, qrels)


# The translated questions live in the repository (benchmarks/crosslingual), not in the package nor the datasets
# folder: they are the project's own data, reviewed with the code. Located from the source tree (src/tracerag/eval).
CROSSLINGUAL_DIR = Path(__file__).resolve().parents[3] / "benchmarks" / "crosslingual"
XLING_PIAF_FILES = "piaf-*.jsonl"  # one file per question language; every one present is read


def _translated_questions(
    path: Path, fields: tuple[str, ...] = ("id", "language", "text", "source")
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of a questions file; a record without its fields is an error naming file:line."""
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordError(f"not JSON ({exc.msg})", file=str(path), line=n) from None
            if not isinstance(rec, dict):
                raise RecordError("not a JSON object", file=str(path), line=n)
            missing = [k for k in fields if not isinstance(rec.get(k), str) or not rec[k]]
            if missing:
                raise RecordError(f"lacks {', '.join(missing)} (non-empty strings)", file=str(path), line=n)
            yield n, rec


def xling_piaf(root: Path, questions: Path | None = None) -> Benchmark:
    """Cross-lingual PIAF: questions translated from PIAF's French into other languages, over the French paragraphs.

    The corpus is piaf-fr's. Each question's relevant document is the paragraph of the PIAF question it was
    translated from (`source`). Query.type is "question language->document language" (e.g. "en->fr")."""
    folder = Path(questions) if questions is not None else CROSSLINGUAL_DIR
    files = sorted(folder.glob(XLING_PIAF_FILES)) if folder.is_dir() else []
    if not files:
        raise DataUnavailableError(f"xling-piaf: no translated questions ({XLING_PIAF_FILES}) in {folder}")
    documents, piaf_questions = piaf_corpus(root)
    doc_language = {d.id: d.language for d in documents}
    queries: dict[str, Query] = {}
    qrels: Qrels = {}
    for path in files:
        for n, rec in _translated_questions(path):
            where = Where(file=str(path), line=n)
            source = piaf_questions.get(rec["source"])
            if source is None:
                raise RecordError(f"source {rec['source']!r} is not a PIAF question id", **where)
            if rec["id"] in queries:
                raise RecordError(f"id {rec['id']!r} is used twice", **where)
            language = rec["language"]
            meta = {"source": rec["source"], "source_text": source.text, "answers": source.answers}
            queries[rec["id"]] = Query(
                rec["id"], rec["text"].strip(), f"{language}->{doc_language[source.doc_id]}", language, meta
            )
            qrels[rec["id"]] = {source.doc_id: 1}
    description = (
        "PIAF v1.1 questions translated from French into other languages (benchmarks/crosslingual/README.md says "
        "how), over PIAF's French Wikipedia paragraphs. Judgments are derived: a question's relevant document "
        "(grade 1) is the paragraph its French original was written on; other paragraphs may answer it too."
    )
    return Benchmark("xling-piaf", description, documents, queries, qrels)


XLING_HIPE_FILE = "hipe-questions.jsonl"


def xling_hipe(root: Path, questions: Path | None = None) -> Benchmark:
    """Cross-lingual HIPE-2022: questions in one language about newspaper articles in another (all HIPE-2022).

    The corpus is every HIPE-2022 document (fr, de, en, fi, sv), as hipe-entities reads them.

    Each record names its relevant `documents` (the one the question was written on, and any other the writer
    found answering it) and their `document_language`; Query.type is "question language->document language"."""
    path = (Path(questions) if questions is not None else CROSSLINGUAL_DIR) / XLING_HIPE_FILE
    if not path.is_file():
        raise DataUnavailableError(f"xling-hipe: no questions file {path}")
    documents = _hipe_documents(root)
    language_of = {d.id: d.language for d in documents}
    queries: dict[str, Query] = {}
    qrels: Qrels = {}
    for n, rec in _translated_questions(path, ("id", "language", "text", "document_language")):
        where = Where(file=str(path), line=n)
        relevant = rec.get("documents")
        if not isinstance(relevant, list) or not relevant or not all(isinstance(d, str) for d in relevant):
            raise RecordError("documents must be a non-empty list of HIPE document ids", **where)
        unknown = [d for d in relevant if d not in language_of]
        if unknown:
            raise RecordError(f"documents {unknown} are not HIPE-2022 document ids", **where)
        if rec["id"] in queries:
            raise RecordError(f"id {rec['id']!r} is used twice", **where)
        queries[rec["id"]] = Query(
            rec["id"], rec["text"].strip(), f"{rec['language']}->{rec['document_language']}", rec["language"]
        )
        qrels[rec["id"]] = {d: 1 for d in relevant}
    description = (
        "HIPE-2022 newspapers (fr, de, en, fi, sv) with questions written in another language than the article "
        "they ask about (benchmarks/crosslingual/NOTES-hipe.md says how). Judgments are derived from the writer's "
        "reading: the article the question was written on, and any other the writer found answering it."
    )
    return Benchmark("xling-hipe", description, documents, queries, qrels)


# ----------------------------------------------------------------------------------- the miami211 directory

MIAMI_MAX_SERVICES = 200  # a term tagged on more services is a category, not a search


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return [{k: (v or "").strip() for k, v in row.items()} for row in csv.DictReader(fh)]


def _unescape(text: str) -> str:
    """The export writes line breaks as the two characters backslash-n."""
    return text.replace("\\r\\n", "\n").replace("\\n", "\n").strip()


def miami211_documents(folder: Path) -> list[Document]:
    """One Document per service, with its organization and its location's city and zip as fields.

    eligibility.csv is not used: its id and service_id columns are empty, so no row can be tied to a service.
    """
    orgs = {r["id"]: r["name"] for r in _csv(folder / "organizations.csv")}
    location_of = {r["service_id"]: r["location_id"] for r in _csv(folder / "services_at_location.csv")}
    address = {r["location_id"]: r for r in _csv(folder / "physical_addresses.csv")}
    documents = []
    for row in _csv(folder / "services.csv"):
        parts = [row["name"], _unescape(row["description"])]
        for label, key in (("Fees", "fees"), ("Application process", "application_process")):
            if row.get(key):
                parts.append(f"{label}: {_unescape(row[key])}")
        addr = address.get(location_of.get(row["id"], ""), {})
        fields = {
            "organization": orgs.get(row["organization_id"], ""),
            "city": addr.get("city", ""),
            "zip": addr.get("postal_code", ""),
        }
        documents.append(
            Document(
                id=row["id"],
                text="\n\n".join(p for p in parts if p),
                corpus="miami211",
                title=row["name"] or None,
                language="en",
                fields={k: v for k, v in fields.items() if v},
            )
        )
    return documents


def miami211_services(root: Path, with_city: bool = False) -> Benchmark:
    """Service search in a real 211 directory: query = a taxonomy term, relevant = services tagged with it.

    The city variant asks for the term in the city holding most of its services, to test structured filters.
    """
    folder = Path(root) / "miami211"
    documents = miami211_documents(folder)
    city = {d.id: d.fields.get("city", "") for d in documents}
    names: dict[str, str] = {}
    for row in _csv(folder / "taxonomy.csv"):
        names.setdefault(row["id"], row["name"])  # id "J" appears twice with two names: the first wins
    tagged: dict[str, set[str]] = defaultdict(set)
    for row in _csv(folder / "services_taxonomy.csv"):
        if row["service_id"] in city and row["taxonomy_id"] in names:
            tagged[row["taxonomy_id"]].add(row["service_id"])  # the file repeats many (service, term) pairs

    queries: dict[str, Query] = {}
    qrels: Qrels = {}
    for term in sorted(tagged):
        services = tagged[term]
        if not 2 <= len(services) <= MIAMI_MAX_SERVICES:
            continue
        meta: dict[str, Any] = {"taxonomy_id": term, "tagged_services": len(services)}
        if not with_city:
            queries[term] = Query(term, names[term], "taxonomy", "en", meta)
            qrels[term] = dict.fromkeys(sorted(services, key=int), 1)
            continue
        where = _majority(city[s] for s in services)
        if where is None:
            continue
        qid = f"{term}@{'_'.join(where.split())}"  # no whitespace in an id: TREC run files split on it
        meta["city"] = where
        queries[qid] = Query(qid, f"{names[term]} in {where}", "taxonomy+city", "en", meta)
        qrels[qid] = dict.fromkeys(sorted((s for s in services if city[s] == where), key=int), 1)

    description = (
        "Service search over the miami211 directory (Open Referral HSDS). Judgments are derived: a service is "
        "relevant (grade 1) when it is tagged with the query's AIRS taxonomy term; terms on fewer than 2 or more "
        f"than {MIAMI_MAX_SERVICES} "
        "services are not queries."
    )
    if with_city:
        description += " City variant: query = term + ' in ' + the city with most of its services; relevant = those."
    name = "miami211-services-city" if with_city else "miami211-services"
    return Benchmark(name, description, documents, queries, qrels)


def miami211_services_city(root: Path) -> Benchmark:
    """Service search with a place: taxonomy term + " in " + city, relevant = tagged services in that city."""
    return miami211_services(root, with_city=True)


# --------------------------------------------------------------------------------------------------- BEIR


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def beir(path: Path, split: str = "test") -> Benchmark:
    """A benchmark in BEIR layout: corpus.jsonl, queries.jsonl, qrels/{split}.tsv (query-id corpus-id score).

    As BEIR's own loader does, only queries with judgments in the split are kept; grades <= 0 are dropped.
    """
    folder = Path(path)
    documents = [
        Document(
            id=str(rec["_id"]),
            text=rec.get("text", ""),
            corpus=rec.get("corpus") or folder.name,
            title=rec.get("title") or None,
            date=_safe_date(rec.get("date")),
            language=rec.get("language"),
            source=rec.get("metadata") or {},
        )
        for rec in _jsonl(folder / "corpus.jsonl")
    ]
    qrels: Qrels = defaultdict(dict)
    with (folder / "qrels" / f"{split}.tsv").open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        next(reader, None)  # header: query-id corpus-id score
        for row in reader:
            if len(row) >= 3 and int(row[2]) > 0:
                qrels[row[0]][row[1]] = int(row[2])
    queries = {
        str(rec["_id"]): Query(
            str(rec["_id"]),
            rec["text"],
            rec.get("type"),
            rec.get("language"),
            dict(rec.get("metadata") or {}),
        )
        for rec in _jsonl(folder / "queries.jsonl")
        if str(rec["_id"]) in qrels
    }
    description = f"BEIR-layout benchmark read from {folder.name}/ ({split} judgments as given)."
    return Benchmark(folder.name, description, documents, queries, {q: qrels[q] for q in queries})


# ------------------------------------------------------------------------------------------------ registry

BENCHMARKS: dict[str, Callable[[Path], Benchmark]] = {
    "hipe-entities": hipe_entities,
    "hipe-entities-dated": hipe_entities_dated,
    "ocr-known-item": ocr_known_item,
    "cranfield": cranfield,
    "piaf-fr": piaf_fr,
    "xling-hipe": xling_hipe,
    "xling-piaf": xling_piaf,
    "miami211-services": miami211_services,
    "miami211-services-city": miami211_services_city,
}


def load_benchmark(name_or_path: str | Path, root: Path) -> Benchmark:
    """A named benchmark read from `root` (the datasets folder), or a BEIR-layout folder given by path."""
    key = str(name_or_path)
    if key in BENCHMARKS:
        hint = "pass --data DIR or set TRACERAG_DATASETS"
        if not Path(root).is_dir():
            raise DataUnavailableError(f"{key}: the datasets folder {root} does not exist; {hint}")
        try:
            bench = BENCHMARKS[key](Path(root))
        except FileNotFoundError as exc:
            raise DataUnavailableError(f"{key}: {exc.filename} is missing; {hint}") from None
        if not bench.documents:
            raise DataUnavailableError(f"{key}: no documents found under {root}; {hint}")
        return bench
    path = Path(name_or_path)
    if (path / "corpus.jsonl").is_file():
        return beir(path)
    raise ConfigError(
        f"unknown benchmark {key!r}: expected one of {', '.join(BENCHMARKS)}, or a folder with corpus.jsonl, "
        "queries.jsonl and qrels/test.tsv (BEIR layout)"
    )
