"""The child process that runs one ingest for the server (`python -m tracerag.server.ingest_worker`).

The writer is a process of its own, not a thread of the server: opening a collection for writing takes the writer
lock and the index (the collection's sharing rules hand the index over from the server, which then reads through
the writer), and an ingest holds the GIL for long stretches of chunking; in a child, the server's readers go on.

Protocol: stdin carries one JSON line, the request (`collection`, `inputs` as (file, format) pairs, `options`,
`dense`, `settings`, `job`); the child reads the uploaded files from its working folder (so that file names in
messages and document sources are the names uploaded, never a temporary path). Then stdin stays open: its end
means the server is gone, and the ingest is interrupted as Ctrl-C would (what is committed is kept, a first ingest
that failed is undone).
stdout carries one JSON event per line (`kind` and data); anything else a library prints goes to stderr. The
last event is `report` (the ingest report) or `failed` (the error, with its TRACE kind).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

PROGRESS_EVERY_S = 0.25  # at most four progress events a second: a follower sees it move, the list stays small


class Events:
    """Writes the events, one JSON line each, to the stream the server reads."""

    def __init__(self, stream: IO[str]):
        self._stream = stream
        self._lock = threading.Lock()

    def __call__(self, kind: str, **data: Any) -> None:
        line = json.dumps({"kind": kind, **data}, ensure_ascii=False, default=str)
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()


def main() -> int:
    # the events get the real stdout; fd 1 becomes stderr, so that nothing a library prints can break a line
    events = Events(os.fdopen(os.dup(1), "w", encoding="utf-8"))
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    request = json.loads(sys.stdin.readline() or "{}")
    sys.argv = ["tracerag-serve", "ingest", f"job {request.get('job', '?')}"]  # what a lock's holder note says
    threading.Thread(target=_interrupt_when_server_leaves, name="stdin-watch", daemon=True).start()
    try:
        return run(request, events)
    except KeyboardInterrupt:
        events("failed", error="interrupted: the server stopped during the ingest", error_kind="Interrupted")
        return 130


def _interrupt_when_server_leaves() -> None:
    sys.stdin.read()  # returns at EOF: the server closed the pipe, or died
    os.kill(os.getpid(), signal.SIGINT)


def run(request: dict[str, Any], events: Events) -> int:
    from tracerag.collection import IngestReport
    from tracerag.config import Settings
    from tracerag.errors import NothingIngestedError, TraceError, disk_full
    from tracerag.ingest.checked import read_checked

    try:
        settings = Settings(**request["settings"])
        inputs = [(Path(name), fmt) for name, fmt in request["inputs"]]
        options = request.get("options") or {}

        def records() -> Iterator[Any]:
            for path, fmt in inputs:
                yield from read_checked(path, fmt, options)

        # a first reading counts the documents (a total to show progress against) and meets any bad option
        # before the collection is opened for writing
        total = sum(1 for item in records() if _is_document(item))
        events("counted", total=total)
        report = _ingest(request, settings, records(), total, events)
    except NothingIngestedError as exc:
        if isinstance(exc.report, IngestReport):
            events("report", report=exc.report.to_dict())
        events("failed", error=str(exc), error_kind=type(exc).__name__)
        return 2
    except Exception as exc:  # a TraceError, or a full disk met where no folder was known to name it; else a bug
        said = disk_full(exc) or exc
        if not isinstance(said, TraceError):
            raise
        events("failed", error=str(said), error_kind=type(said).__name__)
        return 2
    events("report", report=report.to_dict())
    return 0


def _ingest(request: dict[str, Any], settings: Any, records: Iterable[Any], total: int, events: Events) -> Any:
    from tracerag.ingest.jobs.run import ingest_into
    from tracerag.retrieval import calibration, vocabulary

    progress = _Progress(total, events)

    def after(col: Any, _report: Any) -> None:
        # what the writer does at the end of `tracerag ingest` (cli/views.after_ingest), said as events
        events("calibrating")
        found = calibration.refresh(col)
        if found is not None:
            events("calibrated", weights=found.weights, seconds=round(found.seconds, 2))
        if col.settings.expansion.vocabulary_at_ingest:
            info = vocabulary.train_collection(col).info
            events("vocabulary", words=info.words, seconds=round(info.seconds, 2))

    return ingest_into(
        Path(request["collection"]),
        progress.watch(records),
        settings,
        dense=bool(request.get("dense", True)),
        wait=False,
        source=Path(request.get("label") or "the upload"),
        on_open=lambda: events("open"),
        progress=progress.update,
        notify=lambda message: events("note", message=message),
        after=after,
    )


def _is_document(item: object) -> bool:
    from tracerag.model import Document

    return isinstance(item, Document)


class _Progress:
    """Documents done of the total counted first, chunks, and each skipped record (with its file and line) as it
    is met; progress events at most every PROGRESS_EVERY_S."""

    def __init__(self, total: int, events: Events):
        self.total = total
        self.events = events
        self.started = time.monotonic()
        self._last = 0.0
        self._said = (-1, -1)

    def watch(self, records: Iterable[Any]) -> Iterator[Any]:
        from tracerag.errors import RecordError

        for item in records:
            if isinstance(item, RecordError):
                self.events("skipped", file=item.file, line=item.line, reason=item.reason)
            yield item

    def update(self, documents: int, chunks: int) -> None:
        now = time.monotonic()
        if (documents, chunks) == self._said or (now - self._last < PROGRESS_EVERY_S and documents < self.total):
            return
        self._last, self._said = now, (documents, chunks)
        seconds = now - self.started
        self.events(
            "progress",
            documents=documents,
            total=self.total,
            chunks=chunks,
            documents_per_second=round(documents / seconds, 1) if seconds else None,
        )


if __name__ == "__main__":
    sys.exit(main())
