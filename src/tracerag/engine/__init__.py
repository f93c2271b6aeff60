"""Search engines behind one protocol. Fusion is not the engine's job, not even across its own text fields: it
returns each field's ranking and `tracerag.retrieval` fuses them, so every engine behaves the same and the trail
sees every ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from tracerag.model import Filter


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    """What an engine stores for a chunk: its index text and the metadata filters use."""

    chunk_id: str
    doc_id: str
    text: str  # normalised index text
    corpus: str
    language: str | None
    date_start: str | None  # ISO day
    date_end: str | None
    fields: dict[str, Any]


class EngineHit(NamedTuple):
    """A chunk an engine found, with its score on that engine's (or text field's) own scale. A named tuple, not a
    frozen dataclass: a search makes hundreds, and a frozen dataclass costs ~4x as much to make."""

    chunk_id: str
    doc_id: str
    score: float


FieldHits = dict[str, list[EngineHit]]
"""What a lexical search found in each text field: field name → that field's own ranking, best first, at most k.

An engine keeps one text index per language (its own stemmer, IDF and average length), named by the language
("fr", "de", ...; "xx" for every other language): BM25 scores of two fields are on different scales, so merging
them is a fusion decision, made in `tracerag.retrieval.fusion` where the trail sees it. A chunk is indexed in
the field of its language only, so the fields never share a chunk. A field that found nothing is absent.
"""


@dataclass(frozen=True, slots=True)
class TermStats:
    """One term of a query as a text field analyses it: its first surface word in the query, how many times the
    engine's BM25 counts it (the query's count with query term frequency on, else 1), and in how many of the
    field's chunks it occurs (its document frequency: 0 when the field lacks it)."""

    term: str
    counted: int
    chunks: int


@dataclass(frozen=True, slots=True)
class FieldStats:
    """What a query's BM25 scores in one text field are made of: the field's chunk count (BM25's N) and each
    query term's statistics, in order of first occurrence. Enough to know the field's IDF of every query term,
    so that retrieval can put two fields' scores on one scale without the engine fusing anything."""

    chunks: int
    terms: tuple[TermStats, ...]


class SearchEngine(Protocol):
    """The primitives retrieval builds on. Every implementation passes tests/engine/test_contract.py."""

    def upsert(self, chunks: Sequence[IndexedChunk], vectors: np.ndarray | None) -> None: ...

    def set_vectors(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> None: ...

    def delete(self, doc_ids: Sequence[str]) -> None: ...

    def bm25(self, text: str, k: int, filter: Filter | None = None) -> FieldHits: ...

    def dense(self, vector: np.ndarray, k: int, filter: Filter | None = None) -> list[EngineHit]: ...

    def phrase(self, text: str, k: int, filter: Filter | None = None) -> FieldHits: ...

    def count(self, filter: Filter | None = None) -> int: ...

    def field_stats(self, text: str) -> dict[str, FieldStats]:
        """The term statistics of `text` in every text field that holds a chunk, keyed as `FieldHits` is. Over
        the whole collection, whatever a search's filter: BM25's IDF is the collection's too."""
        ...

    def flush(self) -> None: ...

    def optimize(self) -> None: ...

    def close(self) -> None: ...
