"""Fusion is ours, not the engine's: every engine then behaves the same and each channel's ranking stays
visible. Two levels: a lexical channel's per-field rankings (one text index per language) become the channel's
ranking (`merge_fields`), then the channels' rankings become one ranking of documents (`fuse`). Pure functions,
no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tracerag.model import ChannelEvidence, Hit, RankedDocument

RRF_K = 60  # Cormack, Clarke & Büttcher (2009): k=60 damps the weight of top ranks; robust across collections.
FIELD_MERGE = "max_raw_score"  # how `merge_fields` joins a channel's fields; named in every ranking's params


def merge_fields(fields: Mapping[str, Sequence[Hit]], k: int) -> list[Hit]:
    """A channel's ranking from its per-field rankings: every field's hits by their raw score, best first, a
    chunk found in two fields at its best score, ties by chunk id, ranks renumbered 1..n, cut at `k`.

    Raw BM25 scores of two language indexes are not on one scale (each has its own IDF and average length), so
    this favours the field whose index scores higher. It is the engine's former merge, kept as is so that
    every figure stays the same; how per-language lists are best fused is measured in issue 11.
    """
    best: dict[str, Hit] = {}
    for hits in fields.values():
        for hit in hits:
            if hit.chunk_id not in best or hit.score > best[hit.chunk_id].score:
                best[hit.chunk_id] = hit
    ranked = sorted(best.values(), key=lambda h: (-h.score, h.chunk_id))[:k]
    return [Hit(h.chunk_id, h.doc_id, h.channel, i + 1, h.score) for i, h in enumerate(ranked)]


def max_pool(hits: Sequence[Hit]) -> list[ChannelEvidence]:
    """Documents of one channel ranked by their best chunk: a long document counts once per channel.

    `hits` must be in rank order; the returned ranks are 1-based document ranks within the channel.
    """
    seen: dict[str, ChannelEvidence] = {}
    for hit in sorted(hits, key=lambda h: h.rank):
        if hit.doc_id not in seen:
            seen[hit.doc_id] = ChannelEvidence(hit.channel, len(seen) + 1, hit.score, hit.chunk_id, hit.doc_id)
    return list(seen.values())


def rrf(channels: Mapping[str, Sequence[ChannelEvidence]], k: int = RRF_K) -> list[RankedDocument]:
    """Reciprocal rank fusion of per-channel document rankings: score(d) = Σ_c 1 / (k + rank_c(d)).

    Ties are broken by the best single-channel rank, then by document id, so the order is deterministic. The
    best chunk of each document is chosen by `best_chunks`, not taken from whichever channel came first.
    """
    scores: dict[str, float] = {}
    evidence: dict[str, list[ChannelEvidence]] = {}
    for ranking in channels.values():
        for ev in ranking:
            doc = ev.doc_id
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + ev.rank)
            evidence.setdefault(doc, []).append(ev)
    order = sorted(scores, key=lambda d: (-scores[d], min(e.rank for e in evidence[d]), d))
    return [
        RankedDocument(
            doc_id=d, rank=i + 1, score=scores[d], channels=evidence[d], best_chunk_id=evidence[d][0].chunk_id
        )
        for i, d in enumerate(order)
    ]


def best_chunks(hits_by_channel: Mapping[str, Sequence[Hit]], k: int = RRF_K) -> dict[str, str]:
    """For each document, the chunk with the highest chunk-level RRF score across all channels.

    This is the span a citation points at: a chunk found high by two channels beats one found by one.
    """
    chunk_scores: dict[str, float] = {}
    doc_of_chunk: dict[str, str] = {}
    for hits in hits_by_channel.values():
        for hit in hits:
            chunk_scores[hit.chunk_id] = chunk_scores.get(hit.chunk_id, 0.0) + 1.0 / (k + hit.rank)
            doc_of_chunk[hit.chunk_id] = hit.doc_id
    best: dict[str, str] = {}
    for cid in sorted(chunk_scores, key=lambda c: (-chunk_scores[c], c)):
        best.setdefault(doc_of_chunk[cid], cid)
    return best


def fuse(hits_by_channel: Mapping[str, Sequence[Hit]], k: int = RRF_K) -> list[RankedDocument]:
    """Max-pool each channel to documents, RRF across channels, and attach each document's best chunk."""
    ranked = rrf({name: max_pool(hits) for name, hits in hits_by_channel.items()}, k)
    best = best_chunks(hits_by_channel, k)
    for doc in ranked:
        doc.best_chunk_id = best[doc.doc_id]
    return ranked
