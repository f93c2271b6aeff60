"""Normalisation, chunking and historical dates: the index text changes, the cited spans never do."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.dates import find_query_date, normalise_date, parse_partial_date
from tracerag.ingest import hipe
from tracerag.ingest.chunk import chunk_text
from tracerag.ingest.normalise import normalise
from tracerag.model import DateRange


def test_normalise_repairs_mojibake_and_folds_compatibility_forms() -> None:
    assert normalise("La rÃ©publique") == "La république"
    assert normalise("ofﬁce") == "office"  # the "fi" ligature
    assert normalise("Cie ½") == "Cie 1⁄2"


def test_spelling_map_replaces_whole_words_only() -> None:
    spelling = {"françois": "français", "tems": "temps"}
    assert normalise("Le peuple François, en ce tems-là, Françoise", spelling) == (
        "Le peuple français, en ce temps-là, Françoise"
    )


def test_chunks_cover_sentences_with_exact_offsets_and_overlap(hipe_dir: Path) -> None:
    docs = [d for d in hipe.read(hipe_dir / "HIPE-2022-v2.1-letemps-dev-fr.tsv")][:10]
    for doc in docs:
        chunks = chunk_text(doc.id, doc.text, size=600, overlap=120, index_form=str.upper)
        assert chunks, doc.id
        for c in chunks:
            assert c.text == doc.text[c.start : c.end]
            assert c.index_text == c.text.upper()
            assert len(c.text) <= 600
            assert c.id == f"{doc.id}#{c.n}"
        # nothing but whitespace is left out between the first and the last chunk
        covered = set()
        for c in chunks:
            covered.update(range(c.start, c.end))
        assert all(doc.text[i].isspace() for i in range(len(doc.text)) if i not in covered)
        # consecutive chunks move forward and overlap by at most the overlap
        for a, b in zip(chunks, chunks[1:], strict=False):
            assert b.start > a.start and b.end > a.end
            assert a.end - b.start <= 120


def test_chunker_cuts_unpunctuated_ocr_at_spaces() -> None:
    text = "mot " * 500
    chunks = chunk_text("d", text, size=200, overlap=0)
    assert all(len(c.text) <= 200 and not c.text.startswith(" ") for c in chunks)
    assert all(c.text.endswith("mot") for c in chunks)


def test_chunker_rejects_impossible_settings() -> None:
    with pytest.raises(ValueError, match="overlap"):
        chunk_text("d", "x", size=100, overlap=100)


def test_partial_dates_are_ranges() -> None:
    assert parse_partial_date("1887") == DateRange("1887-01-01", "1887-12-31")
    assert parse_partial_date("1888-02") == DateRange("1888-02-01", "1888-02-29")
    assert parse_partial_date("1887-05-17") == DateRange("1887-05-17", "1887-05-17")
    assert normalise_date("1887-5") == "1887-05"
    assert normalise_date("1887-05-17T10:00:00") == "1887-05-17"
    assert normalise_date("  ") is None
    for bad in ("1887-13", "1887-02-30", "mai 1887", "NA"):
        with pytest.raises(ValueError, match="unparseable date"):
            parse_partial_date(bad)


@pytest.mark.parametrize(
    ("query", "expected", "said"),
    [
        ("grève 1890", ("1890-01-01", "1890-12-31"), "1890"),
        ("le 17 mai 1887 à Paris", ("1887-05-17", "1887-05-17"), "17 mai 1887"),
        ("Streik 3. März 1871", ("1871-03-03", "1871-03-03"), "3. März 1871"),
        ("May 3, 1871 riots", ("1871-05-03", "1871-05-03"), "May 3, 1871"),
        ("elections in the 1880s", ("1880-01-01", "1889-12-31"), "1880s"),
        ("krach 1873-05", ("1873-05-01", "1873-05-31"), "1873-05"),
    ],
)
def test_dates_found_in_queries(query: str, expected: tuple[str, str], said: str) -> None:
    found = find_query_date(query)
    assert found is not None
    assert (found[0].start, found[0].end) == expected and found[1] == said


def test_no_date_in_query() -> None:
    assert find_query_date("Gambetta discours Belleville") is None
    assert find_query_date("10000 francs") is None
