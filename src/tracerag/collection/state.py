"""What an open collection holds, for every part of its work (opening, ingest, maintenance): its folder, settings
and manifest, its store, its engine (made on first use), its embedding model (loaded on first use and checked
against what built the index) and the preparation of documents.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np

from tracerag.config import Settings
from tracerag.embed import Embedder, load_embedder, mismatch
from tracerag.engine import IndexedChunk, SearchEngine
from tracerag.errors import ModelMismatchError
from tracerag.ingest.prepare import Preparation
from tracerag.locks import FileLock, WriterLock
from tracerag.model import Document
from tracerag.store import DocumentStore, StoredChunk

Mode = Literal["read", "write"]


class CollectionState:
    """The state of an open collection (`Collection` adds opening and closing, the ingest and maintenance)."""

    def __init__(
        self,
        path: Path,
        settings: Settings,
        manifest: dict,
        *,
        store: DocumentStore,
        engine: SearchEngine | Callable[[], SearchEngine],
        mode: Mode,
        writer_lock: WriterLock | None,
        read_only: str | None = None,
        trails_dir: Path | None = None,
    ):
        self.path = Path(path)
        self.settings = settings
        self.manifest = manifest
        self.mode = mode
        self.store = store
        self.dim: int | None = manifest["embedding"].get("dim")
        # A reader's engine is made on first use (a read-only collection's needs a private copy of its text index, a
        # server's a connection): commands that only read the store (trail show, export) pay for none of them.
        self._engine: SearchEngine | None = None if callable(engine) else engine
        self._make_engine = engine if callable(engine) else None
        self.read_only = read_only  # why this process cannot write the collection's files, or None
        self.private_index: Path | None = None  # the private copy of the text index searched instead, if any
        self._copy_lock: FileLock | None = None  # held shared while the copy is searched (old copies are removed)
        self.trails_dir = trails_dir or self.path / "trails"  # where runs on this collection write their trails
        self.created = False  # whether this open made the collection (decided under the writer lock)
        self._writer_lock = writer_lock  # held by this process in write mode; only looked at in read mode
        self._embedder: Embedder | None = None
        self._preparation: Preparation | None = None
        self._unflushed: list[str] = []  # documents written to the index since its last flush (still pending)
        self._unflushed_chunks = 0
        self._flushed_at = time.monotonic()
        self._closed = False

    @property
    def engine(self) -> SearchEngine:
        if self._engine is None:
            assert self._make_engine is not None
            self._engine = self._make_engine()
        return self._engine

    @property
    def id(self) -> str | None:
        """The collection's id (collections made before ids have none until `tracerag migrate` gives one)."""
        return self.manifest["collection"].get("id")

    @property
    def embedder(self) -> Embedder | None:
        """The collection's embedding model, loaded on first use and checked against what built the index."""
        if self._embedder is None and self.dim:
            # the dimension it was built at: an endpoint is held to it, and needs no probe request
            emb = load_embedder(self.settings.embed, dim=self.dim, cache_dir=self.settings.cache_dir)
            if emb is not None and (problem := mismatch(self.manifest["embedding"], emb)):
                raise ModelMismatchError(f"{self.path} was {problem}")
            self._embedder = emb
        return self._embedder

    @property
    def preparation(self) -> Preparation:
        """What the ingest does to each document before writing it (`tracerag.ingest.prepare`), shaped by this
        collection's settings; made on first use (it reads the spelling map)."""
        if self._preparation is None:
            self._preparation = Preparation(self.settings)
        return self._preparation

    def _encode(self, texts: list[str]) -> np.ndarray:
        embedder = self.embedder
        assert embedder is not None
        size = self.settings.embed.texts_per_call()
        parts = [embedder.encode_documents(texts[i : i + size]) for i in range(0, len(texts), size)]
        return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), np.float32)

    def _indexed(self, c: StoredChunk, doc: Document, span: tuple[str, str] | None) -> IndexedChunk:
        return IndexedChunk(
            chunk_id=c.id,
            doc_id=c.doc_id,
            text=c.index_text,
            corpus=doc.corpus,
            language=doc.language,
            date_start=span[0] if span else None,
            date_end=span[1] if span else None,
            fields={k: v for k, v in doc.fields.items() if isinstance(v, str | int | float | bool)},
        )
