"""Work on what a collection already holds: vectors computed for chunks ingested without them (`embed_missing`)
or taken from another collection of the same model (`adopt_vectors`), every chunk as the engine indexes it (for a
rebuilt or moved index), and the counts `tracerag info` shows.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import numpy as np

from tracerag.collection import ingest
from tracerag.collection.layout import STORE_FILE
from tracerag.collection.manifest import engine_of, manifest_of
from tracerag.collection.state import CollectionState
from tracerag.engine import IndexedChunk
from tracerag.errors import CollectionError
from tracerag.store import DocumentStore


class CollectionMaintenance(CollectionState):
    """Vectors added to a collection after its ingest, its chunks paged out for a new index, and its counts."""

    def adopt_vectors(self, other: Path) -> int:
        """Take the vectors another collection computed with the same embedding model (name, version, dimension)
        for the texts this one holds: an index rebuilt at a new version or with other settings then re-embeds only
        what changed. Returns how many vectors were new here; another model's collection is refused."""
        mine, theirs = self.manifest["embedding"], manifest_of(other)["embedding"]
        same = ("name", "version", "dim")
        if not self.dim or any(mine.get(key) != theirs.get(key) for key in same):
            raise CollectionError(
                f"{other}: embedded with {theirs.get('name')} {theirs.get('version')} ({theirs.get('dim')}-d), "
                f"not this collection's {mine.get('name')} {mine.get('version')} ({mine.get('dim')}-d)"
            )
        # Chunks already here without a vector get theirs in the index first, then in the store: a vector in the
        # store says its chunks are in the index (see `embed_missing`). Adopted into the store alone, a collection
        # built lexically before kept a dense index of the few chunks embedded earlier, and searched only those.
        served = 0
        theirs = DocumentStore(other / STORE_FILE, read_only=True)
        try:
            after = ("", -1)
            while chunks := self.store.chunks_without_vectors(self.settings.embed.batch_size * 4, after):
                after = (chunks[-1].doc_id, chunks[-1].n)
                found = {
                    h: v for h, v in theirs.vectors_by_hash(c.text_hash for c in chunks).items() if len(v) == self.dim
                }
                if not found:
                    continue
                chunk_texts = self.store.chunks_with_texts(found)
                self.engine.set_vectors([cid for cid, _ in chunk_texts], np.stack([found[h] for _, h in chunk_texts]))
                self.engine.flush()
                self.store.put_vectors(found)
                served += len(found)
        finally:
            theirs.close()
        if served:
            self.engine.optimize()
        # the texts not chunked here yet: an ingest then carries their vectors (`_carry_known_vectors`)
        return served + self.store.adopt_vectors(other / STORE_FILE, self.dim)

    def embed_missing(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Compute and index the vectors of chunks ingested with dense=False. Resumable: done work stays."""
        if not self.dim:
            raise CollectionError(f"{self.path} has no embedding model (built with 'none')")
        total = self.store.count_chunks(without_vectors=True)
        done = 0
        after = ("", -1)
        unstored: dict[str, np.ndarray] = {}  # vectors in the index since its last flush, not yet in the store
        unflushed = 0
        flushed_at = time.monotonic()

        def store_vectors() -> None:
            # Stored after the flush: a vector in the store says its chunks are in the index, so that an embed
            # interrupted before (Ctrl-C, kill) does those pages again instead of leaving chunks without vectors.
            nonlocal unflushed, flushed_at
            self.engine.flush()
            self.store.put_vectors(unstored)
            unstored.clear()
            unflushed, flushed_at = 0, time.monotonic()

        try:
            while True:
                page = max(self.settings.embed.batch_size * 4, self.settings.embed.texts_per_call())
                chunks = self.store.chunks_without_vectors(page, after)
                if not chunks:
                    break
                after = (chunks[-1].doc_id, chunks[-1].n)
                texts = {c.text_hash: c.index_text for c in chunks if c.text_hash not in unstored}
                vectors = dict(zip(texts, self._encode(list(texts.values())), strict=True))
                # Every chunk of these texts, later pages' too: a vector serves its text on every later page.
                served = self.store.chunks_with_texts(vectors)
                if served:
                    self.engine.set_vectors([cid for cid, _ in served], np.stack([vectors[h] for _, h in served]))
                unstored.update(vectors)
                unflushed += len(served)
                # Flushed every FLUSH_CHUNKS chunks or FLUSH_SECONDS (a flush costs ~0.5 s: once per page of 64 it
                # was 587 s of a 100k-chunk embed with vectors given), so a killed embed loses at most that much.
                # Read from the ingest's module at each page: one rhythm for both (a test that lowers it lowers both).
                if unflushed >= ingest.FLUSH_CHUNKS or time.monotonic() - flushed_at >= ingest.FLUSH_SECONDS:
                    store_vectors()
                done += len(served)
                if progress:
                    progress(done, total)
        except BaseException:
            # The pages whose vectors are in the index are kept (Ctrl-C, a model that stopped answering): best
            # effort, since the error may be the index's own.
            with contextlib.suppress(Exception):
                if unstored:
                    store_vectors()
            raise
        if unstored:
            store_vectors()
        self.engine.optimize()
        return done

    def indexed_pages(self, size: int) -> Iterator[list[tuple[IndexedChunk, np.ndarray | None]]]:
        """Every chunk of the store as an engine indexes it, with its stored vector (None: not embedded), about
        `size` chunks a page in document-id order: an index rebuilt or moved from the source of truth
        (`tracerag migrate`), nothing re-chunked or re-embedded."""
        ids = sorted(self.store.document_ids())
        page: list[tuple[IndexedChunk, np.ndarray | None]] = []
        step = max(1, self.settings.ingest.batch_documents)
        for i in range(0, len(ids), step):
            part = ids[i : i + step]
            docs = self.store.get_documents(part, text=False)
            spans = self.store.date_spans(part)
            chunks = self.store.chunks_of(part)
            vectors = self.store.vectors_by_hash(c.text_hash for c in chunks) if self.dim else {}
            for c in chunks:
                page.append((self._indexed(c, docs[c.doc_id], spans.get(c.doc_id)), vectors.get(c.text_hash)))
            if len(page) >= size:
                yield page
                page = []
        if page:
            yield page

    def stats(self) -> dict:
        return {
            "documents": self.store.count_documents(),
            "chunks": self.store.count_chunks(),
            "chunks_without_vectors": self.store.count_chunks(without_vectors=True) if self.dim else None,
            "indexed_points": self.engine.count(),
            "engine": engine_of(self.path, self.manifest),
            "embedding": self.manifest["embedding"],
            "corpora": [asdict(c) for c in self.store.corpora()],
        }
