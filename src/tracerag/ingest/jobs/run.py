"""One ingest into a collection directory, as `tracerag ingest` runs it: the collection made if needed, the
chunking asked for checked against the collection's, and a first ingest that fails leaving nothing behind (only
the entries it added, when the folder existed before), unless batches were committed: those are kept for the next
run to finish, since deleting hours of embeddings would be worse."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from tracerag.collection import Collection, IngestReport
from tracerag.config import Settings
from tracerag.errors import CollectionBusyError, ConfigError, NothingIngestedError
from tracerag.ingest import Item
from tracerag.ingest.parallel import prepared_in_workers
from tracerag.ingest.prepare import IndexedDocuments, PreparedDocument


def ingest_into(
    path: Path,
    records: Iterable[Item | PreparedDocument] | Callable[[Collection], Iterable[Item | PreparedDocument]],
    settings: Settings,
    *,
    dense: bool = True,
    embed_model: str | None = None,
    wait: bool = False,
    chunking: Mapping[str, int | None] | None = None,
    source: Path | None = None,
    on_open: Callable[[], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    document_progress: Callable[[str, int, int], None] | None = None,
    notify: Callable[[str], None] | None = None,
    after: Callable[[Collection, IngestReport], None] | None = None,
    api_key: str | None = None,
) -> IngestReport:
    """Ingest `records` into the collection at `path` (made when missing). `chunking` holds the chunk `size` and
    `overlap` asked for explicitly (None: not asked): an existing collection chunked otherwise is refused, since
    its chunks would not match. `source` names what was read, for messages; `on_open` is called once the
    collection is open for writing (a progress display starts there); `notify` is told what a failed first ingest
    keeps. A first ingest that reads no document raises NothingIngestedError (with the report), and leaves no
    collection. `after` is called with the collection and the report when the ingest succeeded, while the
    collection is still open for writing (the CLI calibrates the channel weights there). `records` may be a
    function of the open collection that gives them (a distributed ingest prepares them with its settings).
    `api_key`: the key of a Qdrant server holding the index (settings.engine says whether a new collection's index
    goes to one)."""
    path = Path(path)
    before = _entries(path)
    first = not Collection.exists(path)
    committed = 0  # documents committed so far (marked indexed): what a failed first ingest would lose

    def undo() -> None:
        _remove_created(path, before)

    def batch_done(report: IngestReport) -> None:
        nonlocal committed
        committed = report.committed

    try:
        opened = Collection.open(
            path, settings, mode="write", create=True, embed_model=embed_model, wait=wait, api_key=api_key
        )
    except CollectionBusyError:
        raise  # another process is writing it: nothing here is ours to undo
    except BaseException:
        if first:  # it failed while making the collection (e.g. an embedding model that does not answer)
            undo()
        raise
    with opened as col:
        first = col.created  # known for sure only under the writer lock: another ingest may have made it
        if on_open is not None:
            on_open()
        items: Iterable[Item | PreparedDocument] = ()
        try:
            _check_chunking(col, chunking or {})
            items = records(col) if callable(records) else _prepared_alongside(col, records)
            report = col.ingest(
                items, dense=dense, progress=progress, on_batch=batch_done, document_progress=document_progress
            )
        except BaseException:
            # Stopped here, in this thread: left to the garbage collector, the workers preparing documents would be
            # shut down from whichever thread collects them (their pool's own: "cannot join current thread").
            close = getattr(items, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()
            # Removed under the writer lock, so that no other ingest sees a half-removed collection.
            if first and not committed:
                _discard(col)
                col.close(before_release=undo)
            elif first and notify is not None:
                notify(f"{path} keeps the {committed} documents committed so far: run the ingest again to finish")
            raise
        if report.read == 0 and first:
            _discard(col)
            col.close(before_release=undo)
            what = source if source is not None else "the input"
            reason = (
                f"no record of {what} could be read ({len(report.skipped)} skipped)"
                if report.skipped
                else f"{what} holds no document to ingest"
            )
            raise NothingIngestedError(f"{reason}: nothing was ingested, and no collection was made in {path}", report)
        if after is not None:
            after(col, report)
    return report


def _prepared_alongside(
    col: Collection, records: Iterable[Item | PreparedDocument]
) -> Iterable[Item | PreparedDocument]:
    """`records` prepared by worker processes while this one writes (`ingest.workers`; `ingest/parallel.py`)."""
    workers = col.settings.ingest.worker_count()
    if workers == 0:
        return records
    indexed = IndexedDocuments(col.store.indexed_digests())
    batch = col.settings.ingest.batch_documents
    return prepared_in_workers(records, col.preparation, indexed, workers=workers, batch=batch)


def _discard(col: Collection) -> None:
    """The index of a first ingest that made nothing, where removing the folder's files does not remove it (a
    server collection). Best effort: the error that got us here is the one to report."""
    with contextlib.suppress(Exception):
        col.discard_index()


def _check_chunking(col: Collection, asked: Mapping[str, int | None]) -> None:
    built = col.settings.chunk.model_dump()
    clash = {k: v for k, v in asked.items() if v is not None and v != built[k]}
    if clash:
        raise ConfigError(
            f"{col.path} is chunked with size {built['size']}, overlap {built['overlap']}; "
            f"asked for {clash}. Ingest into a new collection to change chunking."
        )


def _entries(folder: Path) -> set[str] | None:
    """The names in `folder` before an ingest, or None when it does not exist yet."""
    return set(os.listdir(folder)) if folder.is_dir() else None


def _remove_created(folder: Path, before: set[str] | None) -> None:
    """Undo a first ingest that made nothing usable: the folder when this ingest made it, else only the entries
    it added (a folder that existed before is never deleted)."""
    if before is None:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for name in set(os.listdir(folder)) - before if folder.is_dir() else ():
        entry = folder / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
