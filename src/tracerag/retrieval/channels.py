"""Channels: each ranks chunks for a query its own way. They return `Hit`s in rank order and never fuse."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from tracerag.engine import EngineHit, SearchEngine
from tracerag.ingest.dates import find_query_date
from tracerag.model import DateRange, Filter, Hit

_QUOTED = re.compile(r"[\"“«„]\s*([^\"”»“]+?)\s*[\"”»“]")


def _hits(channel: str, found: Sequence[EngineHit]) -> list[Hit]:
    return [Hit(h.chunk_id, h.doc_id, channel, i + 1, h.score) for i, h in enumerate(found)]


@dataclass(frozen=True)
class Bm25Channel:
    """BM25 over the per-language stemmed, accent-folded text indexes."""

    engine: SearchEngine
    name: str = "bm25"

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
        text = _QUOTED.sub(r"\1", query)
        return _hits(self.name, self.engine.bm25(text, k, flt))


@dataclass(frozen=True)
class DenseChannel:
    """Cosine similarity between the query embedding and chunk embeddings (HNSW). The query is embedded once,
    by the caller, because a search may query several corpora or deepen its pool."""

    engine: SearchEngine
    query_vector: np.ndarray
    name: str = "dense"

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
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

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
        found: dict[str, EngineHit] = {}
        for phrase in phrases_of(query):
            for h in self.engine.phrase(phrase, k, flt):
                if h.chunk_id not in found or h.score > found[h.chunk_id].score:
                    found[h.chunk_id] = h
        ranked = sorted(found.values(), key=lambda h: (-h.score, h.chunk_id))[:k]
        return _hits(self.name, ranked)


def date_score(span: tuple[str, str], target: DateRange, half_life_days: float) -> float:
    """1 inside the target range, else exponential decay with the distance in days to the nearest edge."""
    from datetime import date

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
