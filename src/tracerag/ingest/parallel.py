"""Documents prepared by worker processes while this one writes: a single machine's ingest on all its cores.

An ingest does two kinds of work. Preparing a document (`ingest/prepare.py`: date, language, content hash, chunks
with their index text, OCR-quality estimate) is pure Python and needs nothing but the document; writing it (the
store, the engine's index) must happen in the one process that holds the collection's writer lock (an index has
one writer). Done one after the other in one process, the engine waits for Python and Python for the engine; here
`workers` processes prepare the next batches while this one writes, and hand the prepared documents back in reading
order, so `Collection.ingest` writes exactly what it would have prepared itself (the same code prepares them).

Workers start only for an input larger than one batch (a small ingest is not worth their start, ~1-2 s of imports),
in "spawn" mode (this process runs the engine's threads, which a fork would copy in whatever state they were), and
ignore Ctrl-C, which this process handles: it stops them and the ingest ends as an interrupted one does. A worker
whose writer dies without stopping it (SIGKILL, out of memory) exits at once: left waiting for work, it would keep
the writer's output pipes open, and whoever ran the ingest would wait for them forever. At most
`2 × workers` batches wait between reading and writing, so memory stays bounded whatever the input's size. A worker
that dies (killed, out of memory) ends the ingest with an error saying so; a rerun resumes it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import chain, islice

from tracerag.errors import CollectionError
from tracerag.ingest import Item
from tracerag.ingest.prepare import IndexedDocuments, Preparation, PreparedDocument
from tracerag.model import Document

# A document longer than this is handed to the writer as read: it chunks it as it writes, a sub-batch at a time,
# where a worker would send every chunk of it back at once (a 200 MB document: ~600 MB of chunks and index text).
WHOLE_DOCUMENT_CHARS = 2_000_000

# What a worker holds for its whole life: set once by `_start` (a process pool gives its initializer's arguments to
# every worker once, not with every batch).
_preparation: Preparation | None = None
_indexed: IndexedDocuments | None = None


def prepared_in_workers(
    records: Iterable[Item | PreparedDocument],
    preparation: Preparation,
    indexed: IndexedDocuments,
    *,
    workers: int,
    batch: int,
) -> Iterator[Item | PreparedDocument]:
    """`records` with each document prepared by one of `workers` processes, in the order read; errors and warnings
    of the readers pass through in place. `indexed` says which documents the collection holds already (they come
    back `unchanged`, unprepared). One batch or less: nothing is started, the records are given back as read."""
    items = iter(records)
    first = list(islice(items, batch + 1))
    if workers < 1 or len(first) <= batch:
        yield from first
        return
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_start, initargs=(preparation, indexed))
    waiting: deque[Future[list[Item | PreparedDocument]]] = deque()
    try:
        for part in _batches(chain(first, items), batch):
            waiting.append(pool.submit(_prepare, part))
            while len(waiting) >= 2 * workers:
                yield from _result(waiting.popleft())
        while waiting:
            yield from _result(waiting.popleft())
    finally:
        for future in waiting:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def _batches(items: Iterator[Item | PreparedDocument], size: int) -> Iterator[list[Item | PreparedDocument]]:
    while part := list(islice(items, size)):
        yield part


def _result(future: Future[list[Item | PreparedDocument]]) -> list[Item | PreparedDocument]:
    try:
        return future.result()
    except BrokenProcessPool as exc:
        raise CollectionError(
            "a process preparing documents for this ingest died (killed, or out of memory); run the ingest again "
            "to finish it, with ingest.workers = 0 to prepare in one process"
        ) from exc


def _start(preparation: Preparation, indexed: IndexedDocuments) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the writer's to handle: it stops the workers
    threading.Thread(target=_exit_with_the_writer, name="writer-watch", daemon=True).start()
    global _preparation, _indexed
    _preparation, _indexed = preparation, indexed


def _exit_with_the_writer() -> None:
    """Wait for the writer (this worker's parent) to end, then end this worker, whatever it was doing."""
    writer = multiprocessing.parent_process()
    if writer is None:  # not started by multiprocessing: nothing to watch
        return
    writer.join()
    os._exit(1)


def _prepare(part: list[Item | PreparedDocument]) -> list[Item | PreparedDocument]:
    assert _preparation is not None and _indexed is not None, "a worker is started by prepared_in_workers"
    return [
        _preparation.prepare(item, _indexed.holds)
        if isinstance(item, Document) and len(item.text) <= WHOLE_DOCUMENT_CHARS
        else item
        for item in part
    ]
