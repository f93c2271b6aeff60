"""Fuzzed readers: over a thousand malformed files in every format (tests/ingest/fuzz.py), mixed with good ones.

No exception escapes a reader or the ingest, no good record is lost (each comes out with its id and exact text),
and every fault is reported, as an error or a warning, at its file and line.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.ingest.fuzz import Corpus, make_corpus
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import RecordError
from tracerag.ingest import Item, RecordWarning, read_documents
from tracerag.model import Document

SEED = 9
FORMATS = ("jsonl", "csv", "txt", "alto", "hipe")
OPTIONS = {"csv": {"date_column": "date"}}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return make_corpus(tmp_path_factory.mktemp("fuzz"), SEED)


@pytest.fixture(scope="module")
def items(corpus: Corpus) -> dict[str, list[Item]]:
    """What each reader made of its folder: reading it must not raise."""
    return {fmt: list(read_documents(corpus.root / fmt, fmt, **OPTIONS.get(fmt, {}))) for fmt in FORMATS}


def test_the_corpus_is_large_and_deterministic(corpus: Corpus, tmp_path: Path) -> None:
    assert corpus.malformed >= 1000, corpus.malformed
    for fmt in FORMATS:
        assert len(corpus.faults[fmt]) >= 100 and len(corpus.expected[fmt]) >= 100, fmt
    again = make_corpus(tmp_path, SEED)
    assert (again.expected, again.malformed) == (corpus.expected, corpus.malformed)
    first = sorted(p.relative_to(corpus.root) for p in corpus.root.rglob("*") if p.is_file())
    assert first == sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert all((corpus.root / p).read_bytes() == (tmp_path / p).read_bytes() for p in first[::25])


@pytest.mark.parametrize("fmt", FORMATS)
def test_readers_yield_only_documents_errors_and_warnings(fmt: str, items: dict[str, list[Item]]) -> None:
    kinds = {type(i) for i in items[fmt]}
    assert kinds <= {Document, RecordError, RecordWarning}
    assert all(r.file for r in items[fmt] if not isinstance(r, Document))


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_good_record_is_lost(fmt: str, corpus: Corpus, items: dict[str, list[Item]]) -> None:
    docs = {d.id: d.text for d in items[fmt] if isinstance(d, Document)}
    expected = corpus.expected[fmt]
    missing = [i for i in expected if i not in docs]
    changed = [(i, expected[i][:80], docs[i][:80]) for i in expected if i in docs and docs[i] != expected[i]]
    unexpected = [i for i in docs if i not in expected]
    assert (missing, changed, unexpected) == ([], [], [])


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_fault_is_reported_at_its_place(fmt: str, corpus: Corpus, items: dict[str, list[Item]]) -> None:
    reports = [r for r in items[fmt] if isinstance(r, RecordError | RecordWarning)]
    at = {(r.file, r.line) for r in reports}
    files = {r.file for r in reports}
    refused = _refused(reports)
    unreported = [
        (str(p.relative_to(corpus.root)), line)
        for p, line in corpus.faults[fmt]
        if str(p) not in refused and ((str(p), line) not in at if line is not None else str(p) not in files)
    ]
    assert unreported == []


def _refused(reports: list[RecordError | RecordWarning]) -> set[str]:
    """The files refused whole as binary data (one garbage line is most of them): their faults are reported."""
    return {r.file for r in reports if r.line is None and r.reason.startswith("binary data, not text")}


def test_one_real_ingest_keeps_every_good_record_and_reports_every_fault(corpus: Corpus, tmp_path: Path) -> None:
    """A subset of every format through `Collection.ingest`, as `tracerag ingest` runs it."""
    chosen = {
        fmt: [p for p in sorted((corpus.root / fmt).glob("*.*")) if p.stat().st_size < 50_000][:40]
        for fmt in ("jsonl", "csv", "alto", "hipe")
    }
    records = itertools.chain(
        *(read_documents(p, fmt, **OPTIONS.get(fmt, {})) for fmt, paths in chosen.items() for p in paths),
        read_documents(corpus.root / "txt", "txt"),
    )
    with Collection.open(tmp_path / "c", load_settings(), mode="write", create=True, embed_model="none") as col:
        report = col.ingest(records, dense=False)
        wanted: dict[str, str] = dict(corpus.expected["txt"])
        faults = list(corpus.faults["txt"])
        for fmt, paths in chosen.items():
            wanted |= {i: text for i, text in corpus.expected[fmt].items() if corpus.origin[i] in paths}
            faults += [(p, line) for p, line in corpus.faults[fmt] if p in paths]
        stored = col.store.get_documents(list(wanted))
        assert report.read == len(wanted) == len(stored)
        assert {i: d.text for i, d in stored.items()} == wanted
        assert col.store.count_documents() == len(wanted)
        reports = report.skipped + report.warnings
        at = {(r.file, r.line) for r in reports}
        files = {r.file for r in reports}
        refused = _refused(reports)
        unreported = [
            (p, n)
            for p, n in faults
            if str(p) not in refused and ((str(p), n) not in at if n is not None else str(p) not in files)
        ]
        assert unreported == []
        assert report.to_dict()["warnings"] and report.to_dict()["errors"]
