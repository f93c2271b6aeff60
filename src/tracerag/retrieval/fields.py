"""A lexical channel's per-field rankings (one BM25 index per language) joined into the channel's one ranking.

Raw BM25 scores of two language indexes are not on one scale: each index has its own N, IDF and average length.
A query's word that is common in its own language is rare in another's index ("the" in French), so there it
weighs as much as a rare name: with an English passage repeating "the", a French chunk scored 27.8 in the French
index and the English gold 17.1 in the English one. `query_idf` divides each field's scores by the query's own IDF
mass in that field, Σ_t counted(t) · idf_f(t), the words the field lacks included (at the IDF of a word no chunk
holds): a score becomes the share of the whole query's weight in that field that the chunk matches (saturated),
and a field that knows few of the query's words cannot score high. The statistics come from the engine
(`SearchEngine.field_stats`), asked only when a field found something. A field found alone is rescaled too: a
hit's score must not depend on what the other fields found (a filter to one language would change it). Pure
functions, no I/O.

Tried before and worse than the raw score on hipe-entities (nDCG@10, bm25): RRF over fields .596, each field's
scores over its top score .583 (every field's best ties at 1), against .659.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

from tracerag.model import FieldMerge, Hit

if TYPE_CHECKING:  # fusion's enums are option types of `tracerag fuse`: its --help loads no engine (nor numpy)
    from tracerag.engine import FieldStats

StatsSource: TypeAlias = "Callable[[], Mapping[str, FieldStats]]"
"""The query's term statistics per field, asked for only when a merge needs them (each ask costs the engine a
count per word and field the first time it meets them)."""


def idf(chunks: int, holding: int) -> float:
    """BM25's IDF as Qdrant (and Lucene) compute it: ln(1 + (N - n + 0.5) / (n + 0.5)); n = 0 for a word the
    field lacks, the highest IDF the field can give."""
    return math.log(1.0 + (chunks - holding + 0.5) / (holding + 0.5))


def query_idf_mass(stats: FieldStats) -> float:
    """Σ_t counted(t) · idf(t) over the query's terms in one field: BM25's best attainable score there is this
    times (k1 + 1), so a field's score over it is the query's share that the chunk matches."""
    return math.fsum(t.counted * idf(stats.chunks, t.chunks) for t in stats.terms)


def merge(
    fields: Mapping[str, Sequence[Hit]],
    k: int,
    how: FieldMerge = FieldMerge.MAX_RAW_SCORE,
    stats: StatsSource | None = None,
) -> list[Hit]:
    """The channel's ranking: every field's hits by their score on one scale (`how`), best first, a chunk found
    in two fields at its best, ties by chunk id, ranks renumbered 1..n, cut at `k`.

    With `query_idf`, each hit's score is its raw score over its field's `query_idf_mass`, whichever fields
    found something. Raises ValueError when `query_idf` needs statistics that `stats` does not give.
    """
    found = {field: hits for field, hits in fields.items() if hits}
    scale = {field: 1.0 for field in found}
    if how is FieldMerge.QUERY_IDF and found:
        if stats is None:
            raise ValueError("field merge 'query_idf' needs the query's term statistics per field")
        given = stats()
        missing = sorted(set(found) - set(given))
        if missing:
            raise ValueError(f"no term statistics for field(s) {missing}; the engine gave {sorted(given)}")
        for field in found:
            mass = query_idf_mass(given[field])
            scale[field] = 1.0 / mass if mass > 0 else 1.0
    best: dict[str, Hit] = {}
    for field, hits in found.items():
        for hit in hits:
            score = hit.score * scale[field]
            if hit.chunk_id not in best or score > best[hit.chunk_id].score:
                best[hit.chunk_id] = Hit(hit.chunk_id, hit.doc_id, hit.channel, hit.rank, score)
    ranked = sorted(best.values(), key=lambda h: (-h.score, h.chunk_id))[:k]
    return [Hit(h.chunk_id, h.doc_id, h.channel, i + 1, h.score) for i, h in enumerate(ranked)]
