"""Keyword in context: where a query's words occur in a text, found the way the BM25 index matches them (words
cut at every non-letter-or-digit, lowercased, accents folded, stemmed by the text's language: the text index's own
analyser, `engine/text_index.analyser`, so "cœur" meets "coeur" as it does in the index), and the windows of the
text that show the most of them. The CLI's result list and the web app's both take their snippets from here.

Matching on the analysed form rather than the surface form is what lets a result explain itself: the index found
"grèves" for the query "greve", so the snippet marks "grèves". Spans are character offsets, never markup: the
page escapes the text and marks the spans (document text is data)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import regex

from tracerag.engine import FieldStats
from tracerag.engine.text_index import analyser, language_of
from tracerag.ingest.normalise import join_hyphenation
from tracerag.retrieval.fields import idf

# The pieces the index's tokenizer cuts text into: runs of Unicode Alphabetic or Numeric characters, as
# `engine/text_index.py` cuts them (not `[^\W_]`, which splits the combining letters of OCR'd German).
_WORD = regex.compile(r"[\p{Alphabetic}\p{N}]+")
# What may join two pieces into one word in the index's text: OCR line-end hyphenation ("Belle¬ ville", "opi-\nnion"),
# undone by `ingest/normalise.join_hyphenation` before indexing
_JOINS = "¬\u00ad-\u2010"
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
    """A word as the index of `language` stores it: lowercased, ASCII-folded, stemmed where that index stems
    ("fr-ch" is French; a language without a stemmer, or none, is folded only). "" for a word it drops. A word
    hyphenated at a line end ("Belle¬ ville") is the one word the index made of it."""
    if any(ch in _JOINS for ch in word):
        word = join_hyphenation(word)
    return _term(language_of(language), word)


@functools.lru_cache(maxsize=100_000)
def _term(index_language: str, word: str) -> str:
    tokens = analyser(index_language).analyze(word)
    return "".join(tokens)


def query_keys(queries: Iterable[str], language: str | None) -> set[str]:
    """The analysed terms of every query searched (the query itself, its additions and variants)."""
    return {key for q in queries for w in _WORD.findall(q) if (key := term_key(w, language))}


def matches(text: str, keys: set[str], language: str | None) -> list[tuple[int, int]]:
    """The spans of `text`'s words whose analysed form is one of `keys`, in order; two pieces of a word hyphenated
    at a line end are one word, as the index read them (its span covers both)."""
    if not keys:
        return []
    words = list(_WORD.finditer(text))
    found: list[tuple[int, int]] = []
    after = -1  # the end of a hyphenated word whose second piece is not a word of its own
    for i, m in enumerate(words):
        if m.start() < after:
            continue
        start, end = m.span()
        if i + 1 < len(words) and text[end : end + 1] and text[end : end + 1] in _JOINS:
            nxt = words[i + 1]
            if _WORD.fullmatch(join_hyphenation(text[start : nxt.end()])):
                end = after = nxt.end()
        if term_key(text[start:end], language) in keys:
            found.append((start, end))
    return found


def snippet(
    text: str,
    queries: Sequence[str],
    language: str | None,
    *,
    width: int = WIDTH,
    offset: int = 0,
    weights: Mapping[str, float] | None = None,
) -> Snippet:
    """The window of about `width` characters of `text` holding the most distinct query terms, each counted by
    its weight in `weights` (then the most matches), widened to word boundaries, with its matches. `offset` is
    where `text` starts in the document (a chunk's start), so that `start`/`end` are document offsets. `weights`
    (term key → weight, `rarity`) lets a window showing the query's one rare word beat one showing its five
    commonest; without it every term counts 1."""
    return snippets(text, queries, language, width=width, offset=offset, weights=weights)[0]


def rarity(stats: FieldStats, language: str) -> dict[str, float]:
    """Each query term's weight in a snippet's choice: its IDF in the index of `language` (the field `stats`
    describes), as BM25 weighs it, so that "de" and "la" weigh little beside "Australie"."""
    return {key: idf(stats.chunks, t.chunks) for t in stats.terms if (key := term_key(t.term, language))}


def snippets(
    text: str,
    queries: Sequence[str],
    language: str | None,
    *,
    width: int = WIDTH,
    count: int = 1,
    offset: int = 0,
    weights: Mapping[str, float] | None = None,
) -> list[Snippet]:
    """Up to `count` windows of `text` that do not overlap, best first: the best (as `snippet`), then the best
    among the matches left outside it, and so on while matches are left (a reader shows them in text order, an API
    that shows one takes the first). A text without a match gives one window, its start. Offsets and `weights` as
    in `snippet`."""
    found = matches(text, query_keys(queries, language), language)
    weigh = _weigher(weights, language)
    chosen: list[tuple[int, int]] = []  # in text order, for the gaps between them
    picked: list[tuple[int, int]] = []  # best first
    while len(chosen) < count:
        best: tuple[tuple[float, int], int, int] | None = None  # (score, lo, hi) of the best window of any gap
        for g0, g1 in _gaps(chosen, len(text)):
            inside = [(s - g0, e - g0) for s, e in found if s >= g0 and e <= g1]
            if chosen and not inside:
                continue
            part = text[g0:g1]
            lo, hi, score = _best_window(part, inside, weigh, width)
            lo, hi = _word_bounds(part, lo, hi)
            if g0 + lo == 0 and offset > 0:  # a chunk may begin inside a word: start at its first whole one
                lo = _first_whole_word(part, inside)
            if best is None or score > best[0]:
                best = (score, g0 + lo, g0 + hi)
        if best is None:
            break
        picked.append((best[1], best[2]))
        chosen = sorted(picked)
    return [
        Snippet(
            text[lo:hi],
            offset + lo,
            offset + hi,
            tuple((s - lo, e - lo) for s, e in found if s >= lo and e <= hi),
            lo > 0 or offset > 0,
            hi < len(text),
        )
        for lo, hi in picked
    ]


def _gaps(windows: list[tuple[int, int]], length: int) -> list[tuple[int, int]]:
    """The stretches of a text of `length` characters outside `windows` (sorted, not overlapping)."""
    gaps, at = [], 0
    for lo, hi in windows:
        if lo > at:
            gaps.append((at, lo))
        at = max(at, hi)
    if at < length or not windows:
        gaps.append((at, length))
    return gaps


def _weigher(
    weights: Mapping[str, float] | None, language: str | None
) -> Callable[[str, Iterable[tuple[int, int]]], float]:
    """The weight of a window's distinct terms: their sum in `weights`, a term it lacks weighing as its rarest
    (a word no statistic describes is taken as rare); every term 1 without `weights`."""
    top = max(weights.values(), default=1.0) if weights else 1.0

    def weigh(text: str, spans: Iterable[tuple[int, int]]) -> float:
        keys = {term_key(text[s:e], language) for s, e in spans}
        return float(len(keys)) if weights is None else math.fsum(weights.get(k, top) for k in keys)

    return weigh


def _best_window(
    text: str, found: list[tuple[int, int]], weigh: Callable[[str, Iterable[tuple[int, int]]], float], width: int
) -> tuple[int, int, tuple[float, int]]:
    """The window and its score (weight of its distinct terms, matches) holding the most of `found`."""
    if not found:
        return 0, min(len(text), width), (0.0, 0)
    best: tuple[float, int, int] = (-1.0, -1, 0)  # (distinct terms' weight, matches, first match) of the best
    for i, (start, _) in enumerate(found):
        inside = [(s, e) for s, e in found[i:] if e <= start + width]
        distinct = weigh(text, inside)
        if (distinct, len(inside)) > best[:2]:
            best = (distinct, len(inside), i)
    score = (best[0], best[1])
    if len(text) <= width:
        return 0, len(text), (weigh(text, found), len(found))
    first = found[best[2]][0]
    last = max(e for s, e in found[best[2] :] if e <= first + width)
    # centre the matches in the window, so each has context on both sides
    lo = max(0, min(first - (width - (last - first)) // 2, len(text) - width))
    return lo, min(len(text), lo + width), score


def _first_whole_word(text: str, found: list[tuple[int, int]]) -> int:
    """Where the text's first whole word starts: after its first whitespace, if within 30 characters and before
    the first match."""
    limit = min(30, found[0][0] if found else 30, len(text))
    for i in range(limit):
        if text[i].isspace():
            return i + 1
    return 0


def _word_bounds(text: str, lo: int, hi: int) -> tuple[int, int]:
    """Move `lo` back and `hi` forward (by at most 30 characters) so that no word is cut in two."""
    limit = max(0, lo - 30)
    while lo > limit and not text[lo - 1].isspace():
        lo -= 1
    limit = min(len(text), hi + 30)
    while hi < limit and not text[hi].isspace():
        hi += 1
    return lo, hi
