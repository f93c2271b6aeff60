"""The streaming chunker gives exactly the chunks of the list-building one it replaced, on real HIPE documents
and on edge cases. `_reference_chunks` is that implementation as it was (commit 8e1ddc3), kept here only."""

from __future__ import annotations

import functools
import random
import re
from pathlib import Path

import pytest

from tracerag.ingest import read_documents
from tracerag.ingest.chunk import chunk_text, iter_chunks
from tracerag.ingest.normalise import normalise
from tracerag.model import Chunk, Document

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first

# -- the reference: the list-building chunker, verbatim ----------------------------------------------------

_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?;:»\"])\s+|\n")


def _reference_units(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    para_start = 0
    bounds = [m.span() for m in _PARAGRAPH.finditer(text)] + [(len(text), len(text))]
    for p_end, next_start in bounds:
        pos = para_start
        for m in _SENTENCE.finditer(text, para_start, p_end):
            if m.start() > pos:
                spans.append((pos, m.start()))
            pos = m.end()
        if p_end > pos:
            spans.append((pos, p_end))
        para_start = next_start
    trimmed = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            trimmed.append((s, e))
    return trimmed


def _reference_split_long(start: int, end: int, size: int, text: str) -> list[tuple[int, int]]:
    out = []
    while end - start > size:
        cut = text.rfind(" ", start + size // 2, start + size)
        cut = cut if cut > start else start + size
        out.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        out.append((start, end))
    return out


def _reference_chunks(doc_id: str, text: str, *, size: int, overlap: int, index_form=lambda s: s) -> list[Chunk]:
    units: list[tuple[int, int]] = []
    for s, e in _reference_units(text):
        units.extend(_reference_split_long(s, e, size, text))
    chunks: list[Chunk] = []
    i = 0
    while i < len(units):
        start = units[i][0]
        j = i
        while j + 1 < len(units) and units[j + 1][1] - start <= size:
            j += 1
        end = units[j][1]
        piece = text[start:end]
        chunks.append(Chunk(doc_id, len(chunks), start, end, piece, index_form(piece)))
        if j + 1 >= len(units):
            break
        k = j + 1
        while k - 1 > i and end - units[k - 1][0] <= overlap:
            k -= 1
        while k <= j and units[j + 1][1] - units[k][0] > size:
            k += 1
        i = k
    return chunks


# -- the tests ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hipe_documents(hipe_dir: Path) -> list[Document]:
    docs = [d for d in read_documents(hipe_dir, "hipe") if isinstance(d, Document)]
    assert len(docs) == 1293
    return docs


@pytest.mark.parametrize(("size", "overlap"), [(1000, 150), (300, 299), (60, 0)])
def test_same_chunks_as_the_list_chunker_on_all_of_hipe(hipe_documents, size, overlap):
    chunks = 0
    for doc in hipe_documents:
        # normalise is a pure function of the piece and was most of this test's time (each piece normalised by
        # both chunkers): a memo per document gives both the very same index forms, at half the cost.
        form = functools.cache(normalise)
        expected = _reference_chunks(doc.id, doc.text, size=size, overlap=overlap, index_form=form)
        assert list(iter_chunks(doc.id, doc.text, size=size, overlap=overlap, index_form=form)) == expected, doc.id
        chunks += len(expected)
    assert chunks > 1293  # the documents are longer than one chunk, so the overlap logic ran


EDGE_CASES = [
    "",
    "   \n\n  \t ",
    "Un mot.",
    "mot " * 400,  # OCR without punctuation: cut at spaces
    "x" * 2500,  # no space at all: cut at the size
    "Phrase une. " * 50 + "\n\n\n\n" + "Zweiter Absatz! " * 30,
    "Ligne un\r\nLigne deux\r\n\r\nParagraphe « deux » : fin ; vraiment ?",
    "\u00a0Espaces\u2003insécables.\u00a0\u00a0Et \u3000 ideographic.\n",
    "A." + " " * 3000 + "B.",
    "a\n" * 700,
    "« Il a dit : » « non » " * 40,
]


@pytest.mark.parametrize("text", EDGE_CASES, ids=range(len(EDGE_CASES)))
@pytest.mark.parametrize(("size", "overlap"), [(1000, 150), (100, 99), (51, 0), (1, 0)])
def test_same_chunks_on_edge_cases(text, size, overlap):
    assert chunk_text("d", text, size=size, overlap=overlap) == _reference_chunks("d", text, size=size, overlap=overlap)


def test_same_chunks_on_random_texts():
    rng = random.Random(20261201)
    alphabet = ["a", "bc", " ", "  ", ".", "!", "?", ";", ":", "»", '"', "\n", "\n\n", " \n \t\n", "é", "\t", "x. "]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 160)))
        size = rng.randint(1, 50)
        overlap = rng.randint(0, size - 1)
        assert chunk_text("d", text, size=size, overlap=overlap) == _reference_chunks(
            "d", text, size=size, overlap=overlap
        ), (text, size, overlap)


def test_chunks_come_one_at_a_time():
    # The first chunk of a long text arrives before the rest is chunked: the index form of only one is asked.
    asked = []
    chunks = iter_chunks("d", "Une phrase courte. " * 100_000, size=200, overlap=40, index_form=asked.append)
    first = next(chunks)
    assert (first.start, first.n, len(asked)) == (0, 0, 1)
    assert sum(1 for _ in chunks) > 10_000


def test_bad_settings_are_refused_at_the_call_not_at_the_first_chunk():
    with pytest.raises(ValueError, match="overlap"):
        iter_chunks("d", "x", size=100, overlap=100)
