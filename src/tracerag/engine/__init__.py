"""Search engines behind one protocol. Fusion is not the engine's job, not even across its own text fields: it
returns each field's ranking and `tracerag.retrieval` fuses them, so every engine behaves the same and the trail
sees every ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

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


@dataclass(frozen=True, slots=True)
class EngineHit:
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


class SearchEngine(Protocol):
    """The primitives retrieval builds on. Every implementation passes tests/engine/test_contract.py."""

    def upsert(self, chunks: Sequence[IndexedChunk], vectors: np.ndarray | None) -> None: ...

    def set_vectors(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> None: ...

    def delete(self, doc_ids: Sequence[str]) -> None: ...

    def bm25(self, text: str, k: int, filter: Filter | None = None) -> FieldHits: ...

    def dense(self, vector: np.ndarray, k: int, filter: Filter | None = None) -> list[EngineHit]: ...

    def phrase(self, text: str, k: int, filter: Filter | None = None) -> FieldHits: ...

    def count(self, filter: Filter | None = None) -> int: ...

    def flush(self) -> None: ...

    def optimize(self) -> None: ...

    def close(self) -> None: ...
