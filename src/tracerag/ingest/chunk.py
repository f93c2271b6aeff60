"""Split a document into overlapping chunks on paragraph and sentence boundaries, keeping exact offsets.

Everything streams: sentence spans are found as the chunker needs them and chunks are yielded one by one, so a
200 MB document costs its own text and a window of a few sentences, never a list of its millions of sentences.

A boundary here is only a place where a chunk may end, so the rule is loose and knows no language: after `.`,
`!`, `?`, `;`, `:`, `»` or `"` and a space, whatever follows (OCR loses capitals), and at every line break; a cut
after "Dr." costs nothing, since units are joined up to the chunk size again. `tracerag.text.sentence_spans` is
the stricter rule for sentences shown as evidence (a capital after, abbreviations kept whole, bullets dropped);
both trim with `text.trimmed_span`. Not one rule, on purpose: the chunk ids, offsets and index depend on this
one, and `sentence_spans` as the unit would move 3,290 of HIPE-2022's 6,744 chunks and 8 of the demo sample's
84 (measured at the default size 1000 and overlap 150), and with them every benchmark figure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from tracerag.model import Chunk
from tracerag.text import trimmed_span

# A boundary is a paragraph break, a line break, or the end of a sentence followed by whitespace.
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?;:»\"])\s+|\n")


def _paragraphs(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each paragraph, the breaks between them left out."""
    start = 0
    for m in _PARAGRAPH.finditer(text):
        yield start, m.start()
        start = m.end()
    yield start, len(text)


def _units(text: str) -> Iterator[tuple[int, int]]:
    """Sentence-sized spans covering the text (whitespace between them left out), in order."""
    for para_start, para_end in _paragraphs(text):
        pos = para_start
        for m in _SENTENCE.finditer(text, para_start, para_end):
            if m.start() > pos:
                yield from _trimmed(text, pos, m.start())
            pos = m.end()
        if para_end > pos:
            yield from _trimmed(text, pos, para_end)


def _trimmed(text: str, s: int, e: int) -> Iterator[tuple[int, int]]:
    if span := trimmed_span(text, s, e):
        yield span


def _split_long(start: int, end: int, size: int, text: str) -> Iterator[tuple[int, int]]:
    """A unit longer than `size` (OCR without punctuation) is cut at the last space before the limit."""
    while end - start > size:
        cut = text.rfind(" ", start + size // 2, start + size)
        cut = cut if cut > start else start + size
        yield start, cut
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        yield start, end


class _Window:
    """The units from the current chunk's first one onwards, pulled from the stream as the chunker looks ahead
    and dropped once behind it. Indexed by the unit's position in the whole document."""

    def __init__(self, units: Iterator[tuple[int, int]]):
        self._units = units
        self._held: list[tuple[int, int]] = []
        self._first = 0  # document position of self._held[0]

    def get(self, i: int) -> tuple[int, int] | None:
        """Unit number `i`, or None past the end of the document."""
        while i - self._first >= len(self._held):
            unit = next(self._units, None)
            if unit is None:
                return None
            self._held.append(unit)
        return self._held[i - self._first]

    def seen(self, i: int) -> tuple[int, int]:
        """Unit number `i`, which `get()` has already pulled: the chunker looks back only at units it has read."""
        return self._held[i - self._first]

    def drop_before(self, i: int) -> None:
        del self._held[: i - self._first]
        self._first = i


def iter_chunks(
    doc_id: str,
    text: str,
    *,
    size: int = 1000,
    overlap: int = 200,
    index_form: Callable[[str], str] = lambda s: s,
) -> Iterator[Chunk]:
    """Chunks of at most `size` characters made of whole sentences, each overlapping the previous one by up
    to `overlap` characters of whole sentences, in document order. `chunk.text == text[chunk.start:chunk.end]`
    always holds.
    """
    if size <= 0 or overlap < 0 or overlap >= size:  # checked now, not at the first chunk
        raise ValueError(f"chunk size {size} and overlap {overlap}: need size > overlap >= 0")
    return _chunks(doc_id, text, size, overlap, index_form)


def _chunks(doc_id: str, text: str, size: int, overlap: int, index_form: Callable[[str], str]) -> Iterator[Chunk]:
    units = _Window(piece for s, e in _units(text) for piece in _split_long(s, e, size, text))
    n = 0
    i = 0
    while (first := units.get(i)) is not None:
        start = first[0]
        j = i
        while (following := units.get(j + 1)) is not None and following[1] - start <= size:
            j += 1
        end = units.seen(j)[1]
        piece = text[start:end]
        yield Chunk(doc_id, n, start, end, piece, index_form(piece))
        n += 1
        if following is None:
            return
        # Step back over whole units that fit in the overlap, but always move forward.
        k = j + 1
        while k - 1 > i and end - units.seen(k - 1)[0] <= overlap:
            k -= 1
        # An overlap that leaves no room for the next unit would repeat a chunk inside the last one.
        while k <= j and following[1] - units.seen(k)[0] > size:
            k += 1
        i = k
        units.drop_before(i)


def chunk_text(
    doc_id: str,
    text: str,
    *,
    size: int = 1000,
    overlap: int = 200,
    index_form: Callable[[str], str] = lambda s: s,
) -> list[Chunk]:
    """All of `iter_chunks` as a list, for documents known to be small."""
    return list(iter_chunks(doc_id, text, size=size, overlap=overlap, index_form=index_form))
