"""Keyword in context: where a query's words occur in a text, found the way the BM25 index matches them (words
cut at every non-letter-or-digit, lowercased, accents folded, stemmed by the text's language), and the window
of the text that shows the most of them.

Matching on the analysed form rather than the surface form is what lets a result explain itself: the index found
"grèves" for the query "greve", so the snippet marks "grèves". Spans are character offsets, never markup: the
page escapes the text and marks the spans (document text is data)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tracerag.text import fold_key, stem

# The pieces the index's Word tokenizer cuts text into: runs of letters and digits ("_" splits too).
_WORD = re.compile(r"[^\W_]+")
WIDTH = 240  # characters of context a snippet shows: about two lines of a result list at 1280 px


@dataclass(frozen=True)
class Snippet:
    """`text` is `document_text[start:end]`; `spans` the matched words in it, as offsets into `text`;
    `cut_before` / `cut_after` whether the text goes on before and after it."""

    text: str
    start: int
    end: int
    spans: tuple[tuple[int, int], ...]
    cut_before: bool
    cut_after: bool


def term_key(word: str, language: str | None) -> str:
    """A word as the index compares it: folded (case, accents) and stemmed in `language` (unstemmed without one)."""
    folded = fold_key(word).replace(" ", "")
    return stem(folded, (language or "").lower()[:2]) if language else folded


def query_keys(queries: Iterable[str], language: str | None) -> set[str]:
    """The analysed terms of every query searched (the query itself, its additions and variants)."""
    return {key for q in queries for w in _WORD.findall(q) if (key := term_key(w, language))}


def matches(text: str, keys: set[str], language: str | None) -> list[tuple[int, int]]:
    """The spans of `text`'s words whose analysed form is one of `keys`, in order."""
    if not keys:
        return []
    return [(m.start(), m.end()) for m in _WORD.finditer(text) if term_key(m.group(), language) in keys]


def snippet(text: str, queries: Sequence[str], language: str | None, *, width: int = WIDTH, offset: int = 0) -> Snippet:
    """The window of about `width` characters of `text` holding the most distinct query terms (then the most
    matches), widened to word boundaries, with its matches. `offset` is where `text` starts in the document
    (a chunk's start), so that `start`/`end` are document offsets."""
    keys = query_keys(queries, language)
    found = matches(text, keys, language)
    lo, hi = _best_window(text, found, language, width)
    lo, hi = _word_bounds(text, lo, hi)
    spans = tuple((s - lo, e - lo) for s, e in found if s >= lo and e <= hi)
    return Snippet(text[lo:hi], offset + lo, offset + hi, spans, lo > 0 or offset > 0, hi < len(text))


def _best_window(text: str, found: list[tuple[int, int]], language: str | None, width: int) -> tuple[int, int]:
    if len(text) <= width:
        return 0, len(text)
    if not found:
        return 0, width
    best: tuple[int, int, int] = (-1, -1, 0)  # (distinct terms, matches, first match) of the best window
    for i, (start, _) in enumerate(found):
        inside = [(s, e) for s, e in found[i:] if e <= start + width]
        distinct = len({term_key(text[s:e], language) for s, e in inside})
        if (distinct, len(inside)) > best[:2]:
            best = (distinct, len(inside), i)
    first = found[best[2]][0]
    last = max(e for s, e in found[best[2] :] if e <= first + width)
    # centre the matches in the window, so each has context on both sides
    lo = max(0, min(first - (width - (last - first)) // 2, len(text) - width))
    return lo, min(len(text), lo + width)


def _word_bounds(text: str, lo: int, hi: int) -> tuple[int, int]:
    """Move `lo` back and `hi` forward (by at most 30 characters) so that no word is cut in two."""
    limit = max(0, lo - 30)
    while lo > limit and not text[lo - 1].isspace():
        lo -= 1
    limit = min(len(text), hi + 30)
    while hi < limit and not text[hi].isspace():
        hi += 1
    return lo, hi
