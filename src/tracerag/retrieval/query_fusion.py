"""Each channel's weight for one query: the collection's calibrated weight, moved by what this query shows.

A collection's calibration says how well each channel finds its documents on average; a query can be far from the
average. A question in another language than the documents is the clearest case: BM25 can match only its names
and numbers, the multilingual dense channel reads it whole, and a weight set once per collection keeps trusting
the words (xling-piaf: BM25 put the gold paragraph in the first 10 for half of the questions, the dense channel
for four in five, the fusion with fixed weights for 0.70). A pasted span is the other end: BM25's best chunk holds
every word, and the dense channel's first documents only move it about.

What a query shows, read from what the search computes anyway (no model, no word list of any language):
- how much of the query BM25's best chunk matches (`matched`): its merged score is already the share of the
  query's IDF weight that the chunk holds, saturated (`retrieval/fields.py`), so over BM25's ceiling (k1 + 1) it
  is a share from 0 to 1;
- how many of the query's words the language indexes of the dense channel's first documents know (`known_there`):
  BM25 matching little of a query whose words those documents' language holds is OCR noise or a loose question;
  where their language lacks most of the words, the question is in another language.
The rule (`QueryRule`) turns the two into a lexical trust between 0 and 1; the lexical channels weigh their
calibrated weight times a factor that falls with it (never to 0: a name BM25 matched in a foreign question is still
evidence), the dense channel gains what the words lose, up to 1; a sure match takes from the dense channel instead.
Its constants were set on the benchmarks (docs/guide/evaluation.md: fusion per query); `--explain`, `--json` and the
trail show the factors, the evidence and the why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tracerag.engine import FieldStats
from tracerag.model import Hit

LEXICAL = ("bm25", "phrase")  # the channels that read the query's words


@dataclass(frozen=True, slots=True)
class QueryEvidence:
    """What one query shows about its channels (`evidence`). None where a channel did not speak."""

    matched: float | None  # share of the query's IDF weight BM25's best chunk holds (saturated), 0..1
    known: float | None  # share of the query's words the best-knowing language index holds
    index: str | None  # that index: the collection's language closest to the query's
    indexes: tuple[str, ...]  # the collection's language indexes
    # The share of the query's words known by the indexes of the dense channel's first documents (the mean over
    # them): low where the dense channel found documents in a language whose words the query does not use.
    known_there: float | None = None
    candidate_indexes: tuple[str, ...] = ()  # those documents' indexes, most frequent first

    def to_dict(self) -> dict:
        return {
            "matched": _rounded(self.matched),
            "known": _rounded(self.known),
            "index": self.index,
            "indexes": list(self.indexes),
            "known_where_dense_found": _rounded(self.known_there),
            "dense_found_in": list(self.candidate_indexes),
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


CANDIDATES = 10  # the dense channel's first documents whose languages are read


def evidence(
    hits: Mapping[str, Sequence[Hit]],
    stats: Mapping[str, FieldStats] | None,
    k1: float,
    candidate_indexes: Sequence[str] = (),
) -> QueryEvidence:
    """The query's evidence from the lexical channel's merged hits (`query_idf` scale), its term statistics per
    language index (None: not asked, since BM25 did not run), and the indexes of the dense channel's first
    documents (`CANDIDATES` of them, in rank order)."""
    bm25 = hits.get("bm25")
    matched = None
    if bm25 is not None:
        best = max((h.score for h in bm25), default=0.0)
        matched = min(1.0, max(0.0, best / (k1 + 1.0)))
    shares = _known_shares(stats or {})
    index = max(sorted(shares), key=lambda f: shares[f]) if shares else None
    there = [shares.get(f, 0.0) for f in candidate_indexes] if shares else []
    counted = sorted(set(candidate_indexes), key=lambda f: (-list(candidate_indexes).count(f), f))
    return QueryEvidence(
        matched,
        shares[index] if index is not None else None,
        index,
        tuple(sorted(stats or {})),
        sum(there) / len(there) if there else None,
        tuple(counted),
    )


def _known_shares(stats: Mapping[str, FieldStats]) -> dict[str, float]:
    """Each index's share of the query's counted words that it holds."""
    shares = {}
    for field, found in stats.items():
        total = sum(t.counted for t in found.terms)
        if total:
            shares[field] = sum(t.counted for t in found.terms if t.chunks > 0) / total
    return shares


@dataclass(frozen=True, slots=True)
class QueryRule:
    """Lexical trust = (matched - low) / (high - low), clipped to 0..1. A lexical channel's factor is
    floor + (1 - floor) * trust; the dense channel's weight rises from its calibrated weight w to
    w + (1 - w) * (1 - trust), all of it where BM25 matched little. Measured on the benchmarks
    (docs/guide/evaluation.md)."""

    low: float = 0.15
    high: float = 0.3
    floor: float = 0.5
    # The words are trusted anyway where the indexes of the dense channel's first documents know them: BM25
    # matching little of a query whose words those documents' language holds is OCR noise or a loose question, not
    # a language the lexical channel cannot read (on OCR'd known-item spans, raising the dense channel there cost
    # 0.006 nDCG@10). Full trust from `known_high` of the query's words known there, none below `known_low`.
    known_low: float = 0.6
    known_high: float = 0.9
    # Where BM25's best chunk holds more of the query than `sure` (a pasted span, a name written as the documents
    # write it), the dense channel's weight falls further, by up to `damp` of itself at a full match: on OCR'd
    # known-item spans the dense channel's first documents only moved BM25's (0.9826 -> 0.9869 nDCG@10).
    sure: float = 0.3
    damp: float = 0.9

    def dense_share(self, matched: float) -> float:
        """What remains of the dense channel's calibrated weight where the words are sure (1: nothing taken)."""
        if matched <= self.sure or self.sure >= 1.0:
            return 1.0
        return 1.0 - self.damp * (matched - self.sure) / (1.0 - self.sure)

    def trust(self, matched: float, known: float | None = None) -> float:
        return max(_ramp(matched, self.low, self.high), _ramp(known, self.known_low, self.known_high))


def _ramp(value: float | None, low: float, high: float) -> float:
    """0 at or below `low`, 1 at or above `high`, in proportion between (None: 0)."""
    if value is None:
        return 0.0
    if high <= low:
        return 1.0 if value >= high else 0.0
    return min(1.0, max(0.0, (value - low) / (high - low)))


DEFAULT_RULE = QueryRule()


@dataclass(frozen=True, slots=True)
class QueryWeights:
    """The weights of one query's fusion and why: `weights[c] = base[c] * factor[c]`, or the dense channel's raised
    weight; `why` is one line for `--explain`."""

    weights: dict[str, float]
    base: dict[str, float]
    factors: dict[str, float]
    evidence: QueryEvidence
    why: str

    def to_dict(self) -> dict:
        return {
            "weights": {c: round(w, 4) for c, w in self.weights.items()},
            "calibrated": {c: round(w, 4) for c, w in self.base.items()},
            "factors": {c: round(f, 4) for c, f in self.factors.items()},
            "evidence": self.evidence.to_dict(),
            "why": self.why,
        }


def weigh(
    base: Mapping[str, float], channels: Iterable[str], ev: QueryEvidence, rule: QueryRule = DEFAULT_RULE
) -> QueryWeights:
    """The weights of `channels` (those that found something) for a query with evidence `ev`, from the base
    weights (a channel `base` does not name weighs 1). Without BM25's evidence, or without a dense channel to
    carry the query, nothing moves."""
    present = list(channels)
    weights = {c: float(base.get(c, 1.0)) for c in present}
    start = dict(weights)
    factors = {c: 1.0 for c in present}
    if ev.matched is None or "dense" not in present or not any(c in present for c in LEXICAL):
        return QueryWeights(
            weights, start, factors, ev, "no weight moved (the words or the dense channel found nothing)"
        )
    trust = rule.trust(ev.matched, ev.known_there)
    for c in LEXICAL:
        if c in weights:
            factors[c] = rule.floor + (1.0 - rule.floor) * trust
            weights[c] = start[c] * factors[c]
    dense = (start["dense"] + (1.0 - start["dense"]) * (1.0 - trust)) * rule.dense_share(ev.matched)
    factors["dense"] = dense / start["dense"] if start["dense"] > 0 else 1.0
    weights["dense"] = dense
    return QueryWeights(weights, start, factors, ev, _why(ev, trust, rule.dense_share(ev.matched), dense))


def _why(ev: QueryEvidence, trust: float, dense_share: float = 1.0, dense: float = 1.0) -> str:
    matched = f"BM25's best chunk holds {ev.matched:.0%} of the query's weight"
    known = ""
    if ev.known is not None and ev.index is not None:
        known = f"; the {ev.index} index knows {ev.known:.0%} of its words"
        if len(ev.indexes) > 1:
            known += f" (the most of {len(ev.indexes)} indexes)"
    if ev.known_there is not None and ev.candidate_indexes:
        where = "/".join(ev.candidate_indexes[:3])
        known += (
            f"; the dense channel's first documents are {where}, whose indexes know {ev.known_there:.0%} of its "
            "words on average"
        )
    if trust >= 1.0:
        verdict = "the words are trusted at their calibrated weight"
    elif trust <= 0.0:
        verdict = "the words are weak evidence: the dense channel carries the query"
    else:
        verdict = f"the words are trusted at {trust:.0%}, the dense channel rises to {dense:.2f}"
    if dense_share < 1.0:
        verdict += f"; so sure a match that the dense channel keeps {dense_share:.0%} of its weight"
    return f"{matched}{known}: {verdict}"
