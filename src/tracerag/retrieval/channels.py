"""Channels: each ranks chunks for a query its own way. They return `Hit`s in rank order and never fuse
across channels. A lexical channel searches one text index per language: `run_fields` gives each field's own
ranking, `run` the channel's ranking after `fusion.merge_fields`. Every channel passes
tests/retrieval/test_channel_contract.py: ranks 1..n, at most k, the filter kept, the same answer twice, and
nothing (not noise) when it has nothing to say.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np

from tracerag.dates import find_query_date
from tracerag.engine import EngineHit, FieldHits, SearchEngine
from tracerag.model import DateRange, Filter, Hit
from tracerag.retrieval.fusion import merge_fields

_QUOTED = re.compile(r"[\"“«„]\s*([^\"”»“]+?)\s*[\"”»“]")


def _hits(channel: str, found: Sequence[EngineHit]) -> list[Hit]:
    return [Hit(h.chunk_id, h.doc_id, channel, i + 1, h.score) for i, h in enumerate(found)]


def _field_hits(channel: str, found: FieldHits) -> dict[str, list[Hit]]:
    return {field: _hits(channel, hits) for field, hits in sorted(found.items()) if hits}


@dataclass(frozen=True)
class Bm25Channel:
    """BM25 over the per-language stemmed, accent-folded text indexes."""

    engine: SearchEngine
    name: str = "bm25"

    def run_fields(self, query: str, k: int, flt: Filter | None) -> dict[str, list[Hit]]:
        """Each language field's own ranking (ranks 1..n within the field, raw BM25 scores of that index)."""
        text = _QUOTED.sub(r"\1", query)
        if not text.strip():
            return {}
        return _field_hits(self.name, self.engine.bm25(text, k, flt))

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
        return merge_fields(self.run_fields(query, k, flt), k)


@dataclass(frozen=True)
class DenseChannel:
    """Cosine similarity between the query embedding and chunk embeddings (HNSW). The query is embedded once,
    by the caller, because a search may query several corpora or deepen its pool."""

    engine: SearchEngine
    query_vector: np.ndarray
    name: str = "dense"

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
        # A query without a letter or digit says nothing, and a vector of zero length (or NaN) points nowhere:
        # their "nearest" chunks would be arbitrary (with a zero vector, every chunk at cosine 0).
        norm = float(np.linalg.norm(self.query_vector))
        if not any(c.isalnum() for c in query) or not math.isfinite(norm) or norm == 0.0:
            return []
        return _hits(self.name, self.engine.dense(self.query_vector, k, flt))


def phrases_of(query: str) -> list[str]:
    """The phrases a query asks for: its quoted parts, else the whole query when it has 2 to 6 words."""
    quoted = [q for q in _QUOTED.findall(query) if len(q.split()) >= 1]
    if quoted:
        return quoted
    words = query.split()
    return [query.strip()] if 2 <= len(words) <= 6 else []


@dataclass(frozen=True)
class PhraseChannel:
    """Chunks that contain a phrase of the query word for word (after folding), ranked by BM25 among them."""

    engine: SearchEngine
    name: str = "phrase"

    def run_fields(self, query: str, k: int, flt: Filter | None) -> dict[str, list[Hit]]:
        """Each language field's own ranking; a chunk matching several phrases counts at its best score."""
        found: dict[str, dict[str, EngineHit]] = {}
        for phrase in phrases_of(query):
            for field, hits in self.engine.phrase(phrase, k, flt).items():
                best = found.setdefault(field, {})
                for h in hits:
                    if h.chunk_id not in best or h.score > best[h.chunk_id].score:
                        best[h.chunk_id] = h
        return _field_hits(
            self.name, {f: sorted(b.values(), key=lambda h: (-h.score, h.chunk_id))[:k] for f, b in found.items()}
        )

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
        return merge_fields(self.run_fields(query, k, flt), k)


def date_score(span: tuple[str, str], target: DateRange, half_life_days: float) -> float:
    """1 inside the target range, else exponential decay with the distance in days to the nearest edge."""
    start, end = date.fromisoformat(span[0]), date.fromisoformat(span[1])
    t0, t1 = date.fromisoformat(target.start), date.fromisoformat(target.end)
    if start <= t1 and t0 <= end:
        return 1.0
    gap = (t0 - end).days if end < t0 else (start - t1).days
    return math.exp(-math.log(2) * gap / half_life_days)


@dataclass(frozen=True)
class DateChannel:
    """Ranks the documents other channels found by closeness to the date written in the query.

    Built only when the query carries a date (`for_query`): a date channel without a date would only add noise
    to the fusion. It ranks the candidate pool rather than the whole collection, because "any document of
    1890" is not evidence for a question about a strike in 1890.
    """

    target: DateRange
    half_life_days: float
    name: str = "date"

    @classmethod
    def for_query(cls, query: str, half_life_days: float) -> DateChannel | None:
        found = find_query_date(query)
        return cls(found[0], half_life_days) if found else None

    def rank(self, pool: Sequence[Hit], doc_dates: Mapping[str, tuple[str, str]], k: int) -> list[Hit]:
        best_chunk: dict[str, Hit] = {}
        for h in sorted(pool, key=lambda h: (h.rank, h.channel)):
            best_chunk.setdefault(h.doc_id, h)
        scored = [
            (date_score(doc_dates[d], self.target, self.half_life_days), best_chunk[d].rank, d)
            for d in best_chunk
            if d in doc_dates
        ]
        scored.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [Hit(best_chunk[d].chunk_id, d, self.name, i + 1, s) for i, (s, _, d) in enumerate(scored[:k])]
