"""Fusion is ours, not the engine's: every engine then behaves the same and each channel's ranking stays
visible. Two levels: a lexical channel's per-field rankings (one text index per language) become the channel's
ranking (`merge_fields`), then the channels' rankings become one ranking of documents (`fuse`).

Every fusion of ranked lists goes through one of the methods below, which share one shape: named rankings of
keys in, `Fused` items (key, score, what each ranking contributed) out, best first, ties by the best single
rank and then by key. RRF is the primitive of the warm start (documents and their best chunks) and of the
agent's merge of warm starts; CombSUM and CombMNZ over normalised scores sit beside it so that a calibrated
default can choose among them. Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tracerag.model import ChannelEvidence, FusionMethod, Hit, Normalisation, RankedDocument
from tracerag.retrieval.fields import FieldMerge, StatsSource
from tracerag.retrieval.fields import merge as fields_merge

RRF_K = 60  # Cormack, Clarke & Büttcher (2009): k=60 damps the weight of top ranks; robust across collections.
# The merge a search uses unless `retrieval.field_merge` says otherwise (the settings' default is the same), and
# the one a channel's own `run` uses; a search names the merge it used in its params.
FIELD_MERGE = FieldMerge.QUERY_IDF


Method = FusionMethod  # the fusion methods, by the names `tracerag fuse --method` takes (defined in the model)


# One normalisation for every ranking, or one per ranking name (a ranking not named is min-max scaled).
Normalisations = Normalisation | Mapping[str, Normalisation]


@dataclass(frozen=True, slots=True)
class Fused:
    """One key of a fused ranking: its score, what each ranking that holds it added to that score (they sum to
    it), and its best rank in any of them (the first tie-break)."""

    key: str
    score: float
    contributions: dict[str, float]
    best_rank: int


def rrf(
    rankings: Mapping[str, Sequence[str]], k: int = RRF_K, weights: Mapping[str, float] | None = None
) -> list[Fused]:
    """Reciprocal rank fusion (Cormack, Clarke & Büttcher 2009): score(d) = Σ_r w_r / (k + rank_r(d)), each
    ranking's keys best first (rank 1 first), `w_r` = 1 unless `weights` names the ranking's weight (weighted
    RRF). Only ranks count, so rankings on incomparable scales (BM25, cosine, a date decay) fuse as they are.

    Raises ValueError for k < 1, a key twice in one ranking, or weights that miss a ranking or are negative.
    """
    if k < 1:
        raise ValueError(f"RRF k must be at least 1, got {k}")
    w = _weights(rankings, weights)
    parts: dict[str, dict[str, float]] = {}
    best: dict[str, int] = {}
    for name, keys in rankings.items():
        _check_unique(name, keys)
        for rank, key in enumerate(keys, start=1):
            parts.setdefault(key, {})[name] = w[name] / (k + rank)
            best[key] = min(best.get(key, rank), rank)
    return _ordered(parts, best)


def comb_sum(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float] | None = None,
    normalisation: Normalisations = Normalisation.MINMAX,
) -> list[Fused]:
    """CombSUM (Fox & Shaw 1994): score(d) = Σ_r w_r · norm_r(s_r(d)) over the rankings that hold d, each
    ranking's (key, score) pairs best first and its scores normalised on their own (`normalisation`), since
    raw scores of two channels are not on one scale.

    Raises ValueError as `rrf` does, and for a score that is not finite.
    """
    return _comb(rankings, weights, normalisation, mnz=False)


def comb_mnz(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float] | None = None,
    normalisation: Normalisations = Normalisation.MINMAX,
) -> list[Fused]:
    """CombMNZ (Fox & Shaw 1994): CombSUM multiplied by the number of rankings that hold d, rewarding agreement.
    Each contribution is multiplied too, so the contributions still sum to the score."""
    return _comb(rankings, weights, normalisation, mnz=True)


def fuse_scored(
    method: Method,
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
    normalisation: Normalisations = Normalisation.MINMAX,
) -> list[Fused]:
    """Any method over scored rankings (best first): RRF and weighted RRF read only the order, CombSUM and
    CombMNZ the scores. Plain RRF refuses weights (that is weighted RRF), so a run's name says what it did."""
    if method is Method.RRF:
        if weights is not None:
            raise ValueError("plain RRF takes no weights; weighted RRF is method 'wrrf'")
        return rrf({n: [key for key, _ in r] for n, r in rankings.items()}, k)
    if method is Method.WRRF:
        return rrf({n: [key for key, _ in r] for n, r in rankings.items()}, k, weights)
    if method is Method.COMBSUM:
        return comb_sum(rankings, weights, normalisation)
    return comb_mnz(rankings, weights, normalisation)


def normalise(scores: Sequence[float], how: Normalisation = Normalisation.MINMAX) -> list[float]:
    """One ranking's scores on a common scale (see `Normalisation` for the degenerate cases)."""
    if not scores:
        return []
    if how is Normalisation.MAX and max(scores) > 0:
        high = max(scores)
        return [s / high for s in scores]
    if how in (Normalisation.MINMAX, Normalisation.MAX):
        low, high = min(scores), max(scores)
        return [1.0 if high == low else (s - low) / (high - low) for s in scores]
    mean = math.fsum(scores) / len(scores)
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))
    return [0.0 if std == 0 else (s - mean) / std for s in scores]


def _comb(
    rankings: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float] | None,
    normalisation: Normalisations,
    *,
    mnz: bool,
) -> list[Fused]:
    w = _weights(rankings, weights)
    parts: dict[str, dict[str, float]] = {}
    best: dict[str, int] = {}
    for name, pairs in rankings.items():
        _check_unique(name, [key for key, _ in pairs])
        for key, score in pairs:
            if not math.isfinite(score):
                raise ValueError(f"ranking {name!r}: key {key!r} has a score that is not finite: {score!r}")
        how = (
            normalisation if isinstance(normalisation, Normalisation) else normalisation.get(name, Normalisation.MINMAX)
        )
        normed = normalise([score for _, score in pairs], how)
        for rank, ((key, _), norm) in enumerate(zip(pairs, normed, strict=True), start=1):
            parts.setdefault(key, {})[name] = w[name] * norm
            best[key] = min(best.get(key, rank), rank)
    if mnz:
        parts = {key: {n: v * len(p) for n, v in p.items()} for key, p in parts.items()}
    return _ordered(parts, best)


def _ordered(parts: dict[str, dict[str, float]], best: dict[str, int]) -> list[Fused]:
    """Best first; equal scores by the best single rank, then by key, so the order is deterministic. The sum
    runs over the rankings in the order given, so a fusion is reproducible to the last bit."""
    scores = {key: sum(p.values()) for key, p in parts.items()}
    order = sorted(scores, key=lambda key: (-scores[key], best[key], key))
    return [Fused(key, scores[key], parts[key], best[key]) for key in order]


def _weights(rankings: Mapping[str, object], weights: Mapping[str, float] | None) -> dict[str, float]:
    if weights is None:
        return {name: 1.0 for name in rankings}
    missing = [name for name in rankings if name not in weights]
    if missing:
        raise ValueError(f"no weight for ranking(s) {missing}; weights name {sorted(weights)}")
    negative = {name: v for name, v in weights.items() if not (math.isfinite(v) and v >= 0)}
    if negative:
        raise ValueError(f"weights must be finite and at least 0, got {negative}")
    return {name: float(weights[name]) for name in rankings}


def _check_unique(name: str, keys: Sequence[str]) -> None:
    if len(set(keys)) != len(keys):
        twice = sorted({key for key in keys if keys.count(key) > 1})[:3]
        raise ValueError(f"ranking {name!r} holds {twice} more than once")


def merge_fields(
    fields: Mapping[str, Sequence[Hit]],
    k: int,
    how: FieldMerge | str = FieldMerge.MAX_RAW_SCORE,
    stats: StatsSource | None = None,
) -> list[Hit]:
    """A channel's ranking from its per-field rankings (one BM25 index per language), their scores put on one
    scale as `how` says (`retrieval.field_merge`; searches use `FIELD_MERGE` by default): see
    `tracerag.retrieval.fields`. `stats` gives the query's term statistics per field, asked only when `how` needs
    them and a field found something; without `how`, the raw-score merge, which needs none."""
    return fields_merge(fields, k, FieldMerge(how), stats)


def max_pool(hits: Sequence[Hit]) -> list[ChannelEvidence]:
    """Documents of one channel ranked by their best chunk: a long document counts once per channel.

    `hits` must be in rank order; the returned ranks are 1-based document ranks within the channel.
    """
    seen: dict[str, ChannelEvidence] = {}
    for hit in sorted(hits, key=lambda h: h.rank):
        if hit.doc_id not in seen:
            seen[hit.doc_id] = ChannelEvidence(hit.channel, len(seen) + 1, hit.score, hit.chunk_id, hit.doc_id)
    return list(seen.values())


def rrf_documents(channels: Mapping[str, Sequence[ChannelEvidence]], k: int = RRF_K) -> list[RankedDocument]:
    """`rrf` over per-channel document rankings, each document kept with every channel's evidence."""
    return fuse_documents(channels, Method.RRF, k=k)


def fuse_documents(
    channels: Mapping[str, Sequence[ChannelEvidence]],
    method: Method = Method.RRF,
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
    normalisation: Normalisations = Normalisation.MINMAX,
) -> list[RankedDocument]:
    """Per-channel document rankings fused by `method` (`fuse_scored`), each document kept with every channel's
    evidence. A channel `weights` does not name weighs 1.

    The best chunk of each document is chosen by `best_chunks`, not taken from whichever channel came first
    (this keeps the first channel's chunk until `fuse` replaces it).
    """
    evidence: dict[str, list[ChannelEvidence]] = {}
    scored: dict[str, list[tuple[str, float]]] = {}
    for name, ranking in channels.items():
        ordered = sorted(ranking, key=lambda e: e.rank)
        scored[name] = [(ev.doc_id, ev.score) for ev in ordered]
        for ev in ordered:
            evidence.setdefault(ev.doc_id, []).append(ev)
    named = None
    if weights is not None or method is Method.WRRF:
        named = {name: float((weights or {}).get(name, 1.0)) for name in channels}
    fused = fuse_scored(method, scored, k=k, weights=named, normalisation=normalisation)
    return [
        RankedDocument(
            doc_id=f.key, rank=i + 1, score=f.score, channels=evidence[f.key], best_chunk_id=evidence[f.key][0].chunk_id
        )
        for i, f in enumerate(fused)
    ]


def best_chunks(hits_by_channel: Mapping[str, Sequence[Hit]], k: int = RRF_K) -> dict[str, str]:
    """For each document, the chunk with the highest chunk-level RRF score across all channels (`rrf` over the
    channels' chunk rankings).

    This is the span a citation points at: a chunk found high by two channels beats one found by one.
    """
    doc_of_chunk = {hit.chunk_id: hit.doc_id for hits in hits_by_channel.values() for hit in hits}
    orders = {name: [h.chunk_id for h in sorted(hits, key=lambda h: h.rank)] for name, hits in hits_by_channel.items()}
    best: dict[str, str] = {}
    for f in rrf(orders, k):
        best.setdefault(doc_of_chunk[f.key], f.key)
    return best


def fuse(
    hits_by_channel: Mapping[str, Sequence[Hit]],
    k: int = RRF_K,
    method: Method = Method.RRF,
    *,
    weights: Mapping[str, float] | None = None,
    normalisation: Normalisations = Normalisation.MINMAX,
) -> list[RankedDocument]:
    """Max-pool each channel to documents, fuse across channels by `method`, and attach each document's best
    chunk."""
    pooled = {name: max_pool(hits) for name, hits in hits_by_channel.items()}
    if method is Method.RRF:
        weights = None  # plain RRF weighs every channel 1 (a weighted one is WRRF)
    ranked = fuse_documents(pooled, method, k=k, weights=weights, normalisation=normalisation)
    best = best_chunks(hits_by_channel, k)
    for doc in ranked:
        doc.best_chunk_id = best[doc.doc_id]
    return ranked
