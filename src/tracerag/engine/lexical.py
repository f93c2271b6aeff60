"""BM25 with query term frequency over an engine whose text query scores a query as a set of words (Qdrant's
`TextQuery`, embedded or on a server): the query model both Qdrant engines share, pure of any engine API.

A word the query repeats counts as often as it is repeated (linear query term frequency, as Lucene and bm25s do).
With the query's distinct counts c1 < c2 < ..., that is a weighted sum of set-of-words scores, one per repeat
level (`repeat_levels`), computed exactly by `counted_top` from the engine's own set-of-words searches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

QUERY_TF_DEPTH = 0  # least first depth of a query with repeats, beyond 2 k (see `counted_top`)
# The least limit a lexical search asks the engine for. Qdrant's BM25 score of a chunk can differ in its last
# float32 bit with the limit asked (its top-k search adds a chunk's term scores in another order): on HIPE-2022,
# 1-ULP differences between limits 2..39 and 200. Asked at one limit for every k up to retrieval's depth, a field's
# ranking for a shorter k is a prefix of a longer one's, scores and all, and the merge of fields (which rescales
# scores, `retrieval/fields.py`) then orders chunks the same whatever k.
LEAST_LIMIT = 100
# Document frequencies kept per (field, word) until the next write: an eval's queries share their words, and a
# count is an index lookup per field. Bounded so that a long-lived server does not grow without end.
DF_CACHE_SIZE = 200_000

Scored = tuple[str, float]  # a point id (as text) and its score


def repeat_levels(terms: list[tuple[str, int]]) -> list[tuple[int, str]]:
    """BM25 with query term frequency as a weighted sum of set-of-words BM25 scores: with the query's distinct
    counts c1 < c2 < ..., level j scores the terms the query holds at least c_j times, weighted c_j - c_(j-1),
    so a term held n times is counted n times in all. "paris paris london": [(1, "paris london"), (1, "paris")]."""
    levels = []
    previous = 0
    for count in sorted({n for _, n in terms}):
        levels.append((count - previous, " ".join(word for word, n in terms if n >= count)))
        previous = count
    return levels


def needs_counting(levels: list[tuple[int, str]]) -> bool:
    """Whether a query's levels differ from one set-of-words query (some word is repeated)."""
    return len(levels) > 1 or (bool(levels) and levels[0][0] != 1)


@dataclass(frozen=True, slots=True)
class LevelQuery:
    """One set-of-words search `counted_top` asks for: `words`, at most `limit` points, among the points `among`
    (None: every point the search's filter admits)."""

    words: str
    limit: int
    among: frozenset[str] | None = None


Search = Callable[[list[LevelQuery]], list[list[Scored]]]
"""Runs set-of-words searches as a batch, each one's points best first with their BM25 scores."""


def counted_top(levels: list[tuple[int, str]], k: int, least_depth: int, search: Search) -> list[Scored]:
    """The top `k` points by BM25 with query term frequency: the sum over the repeat levels of weight x
    set-of-words BM25 (`repeat_levels`), exact, best first (ties by id). A text query cannot rescore prefetched
    points, so: (1) the top `depth` points of level 0 (every term once) are the candidates; (2) each other level
    scores exactly those (an id filter). A point left out scores at most the last candidate's level-0 score at
    level 0, and at a level j at most that and the level's best score anywhere (a level's terms are a subset of
    level 0's); when the k-th total is below that bound, the depth grows. A fixed prefetch depth instead (a Formula
    over prefetches) changed 19 of Cranfield's 135 top-10 lists with repeats at depth 1000: a long query repeats
    common words, which match almost every chunk."""
    top_weight = levels[0][0]
    depth = max(2 * k, least_depth)
    while True:
        first = search([LevelQuery(levels[0][1], depth)])[0]
        if not first:
            return []
        totals = {pid: top_weight * score for pid, score in first}
        last = first[-1][1]
        bound = top_weight * last  # the most a point left out can total
        if len(levels) > 1:
            among = frozenset(totals)
            batch = []
            for _, words in levels[1:]:
                batch.append(LevelQuery(words, len(first), among))
                batch.append(LevelQuery(words, 1))  # the level's best anywhere
            found = search(batch)
            for j, (weight, _) in enumerate(levels[1:]):
                for pid, score in found[2 * j]:
                    totals[pid] += weight * score
                best = found[2 * j + 1][0][1] if found[2 * j + 1] else 0.0
                bound += weight * min(last, best)
        top = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:k]
        if len(first) < depth or top[-1][1] >= bound:
            return top  # every matching point was scored, or none left out can reach the top k
        depth *= 4
