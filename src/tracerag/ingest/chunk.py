"""Split a document into overlapping chunks on paragraph and sentence boundaries, keeping exact offsets."""

from __future__ import annotations

import re
from collections.abc import Callable

from tracerag.model import Chunk

# A boundary is a paragraph break, a line break, or the end of a sentence followed by whitespace.
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE = re.compile(r"(?<=[.!?;:»\"])\s+|\n")


def _units(text: str) -> list[tuple[int, int]]:
    """Sentence-sized spans covering the text (whitespace between them left out)."""
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


def _split_long(start: int, end: int, size: int, text: str) -> list[tuple[int, int]]:
    """A unit longer than `size` (OCR without punctuation) is cut at the last space before the limit."""
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


def chunk_text(
    doc_id: str,
    text: str,
    *,
    size: int = 1000,
    overlap: int = 200,
    index_form: Callable[[str], str] = lambda s: s,
) -> list[Chunk]:
    """Chunks of at most `size` characters made of whole sentences, each overlapping the previous one by up
    to `overlap` characters of whole sentences. `chunk.text == text[chunk.start:chunk.end]` always holds.
    """
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ValueError(f"chunk size {size} and overlap {overlap}: need size > overlap >= 0")
    units: list[tuple[int, int]] = []
    for s, e in _units(text):
        units.extend(_split_long(s, e, size, text))
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
        # Step back over whole units that fit in the overlap, but always move forward.
        k = j + 1
        while k - 1 > i and end - units[k - 1][0] <= overlap:
            k -= 1
        # An overlap that leaves no room for the next unit would repeat a chunk inside the last one.
        while k <= j and units[j + 1][1] - units[k][0] > size:
            k += 1
        i = k
    return chunks
