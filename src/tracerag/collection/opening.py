"""Opening a collection for reading or for writing, and closing it: the writer lock taken (one writer at a time,
any number of readers), a new collection made, a read-only one searched from a private copy of its text index.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tracerag.collection.engines import embedded_engine, missing_index, no_engine, reading_engine, server_engine
from tracerag.collection.ingest import CollectionIngest
from tracerag.collection.layout import (
    MANIFEST,
    STATE_DIR,
    STORE_FILE,
    holder_of,
    private_root,
    readable_as_the_rest,
    remove_unfinished_creation,
    storage_problem,
)
from tracerag.collection.maintenance import CollectionMaintenance
from tracerag.collection.manifest import (
    check_engine_asked,
    made_by_old_engine,
    new_manifest,
    old_engine_message,
    on_server,
    read_manifest,
    write_manifest,
)
from tracerag.collection.state import Mode
from tracerag.config import Settings
from tracerag.embed import load_embedder
from tracerag.engine import SearchEngine
from tracerag.engine.embedded import TEXT as TEXT_DIR
from tracerag.engine.embedded import EmbeddedEngine, is_embedded_index
from tracerag.engine.private_copy import hold as hold_copy
from tracerag.engine.private_copy import private_copy
from tracerag.errors import CollectionBusyError, CollectionError, ReadOnlyError, raise_if_disk_full
from tracerag.locks import WriterLock
from tracerag.store import DocumentStore


class Collection(CollectionIngest, CollectionMaintenance):
    """Open with `Collection.open(path, settings, mode="read")`, or `mode="write"` (with `create=True` to make
    one). Any number of processes may read a collection while one writes it; see `open`. What it holds is
    `CollectionState`'s; the ingest is `CollectionIngest`'s, the work on what it holds `CollectionMaintenance`'s."""

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
                manifest = new_manifest(settings, embedder)
                remove_unfinished_creation(path)
            else:
                manifest, settings = read_manifest(path, settings, embed_model)
                check_engine_asked(path, manifest, settings)
            store = DocumentStore(path / STORE_FILE)
            if on_server(manifest):
                engine = server_engine(path, manifest, settings, api_key=api_key, create=creating)
            elif made_by_old_engine(manifest) and not creating:
                if not old_engine:
                    raise CollectionError(old_engine_message(path))
                # the migration builds the new index itself (migrate.py); the old one is not opened
            else:
                engine = embedded_engine(path, path / "index", manifest, settings, writer=True)
            if creating:  # last: a collection.toml means the store and the index are there
                (path / "trails").mkdir(exist_ok=True)
                write_manifest(path / MANIFEST, manifest)
            col = cls(
                path,
                settings,
                manifest,
                store=store,
                engine=engine if engine is not None else functools.partial(no_engine, path),
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
        manifest, settings = read_manifest(path, settings, embed_model)
        problem = storage_problem(path)
        watch = WriterLock(path / STATE_DIR, path)
        try:
            store = DocumentStore(path / STORE_FILE, read_only=True)
        except CollectionError:
            holder = holder_of(watch)
            if holder is not None:
                raise CollectionBusyError(f"{path} is being created by {holder.describe()}; retry shortly") from None
            raise
        engine: SearchEngine | Callable[[], SearchEngine]
        trails = private_root(path, settings) / "trails" if problem is not None else None
        if made_by_old_engine(manifest):
            store.close()
            raise CollectionError(old_engine_message(path))
        if on_server(manifest):  # every process talks to the server: no private copy to make
            engine = functools.partial(server_engine, path, manifest, settings, api_key=api_key)
        else:
            engine = functools.partial(reading_engine, path, manifest, settings, watch)
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
        if problem is not None and not on_server(manifest):
            col._make_engine = functools.partial(col._private_engine, watch, notify)
        return col

    def _private_engine(self, watch: WriterLock, notify: Callable[[str], None]) -> SearchEngine:
        """The engine of a collection this user cannot write: tantivy's readers take a lock file in the index
        folder, so the text index is searched from a private copy (made once per version of it); the vectors are
        plain files, mapped where they are."""
        index = self.path / "index"
        if not is_embedded_index(index):
            raise missing_index(self.path, index, watch)
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
        writer = None if self.mode == "write" or self._writer_lock is None else holder_of(self._writer_lock)
        return {
            "writer": asdict(writer) if writer else None,
            "read_only": self.read_only,
            "private_index": str(self.private_index) if self.private_index else None,
        }

    def discard_index(self) -> None:
        """Delete the index where the folder does not hold it (a server collection), for a first ingest that made
        nothing usable; an embedded index goes with the folder's files."""
        drop = getattr(self._engine, "drop", None)  # the server engine's; the embedded engine has none
        if on_server(self.manifest) and callable(drop):
            drop()

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
                readable_as_the_rest(self.path)
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


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
