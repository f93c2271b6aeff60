"""Background jobs of the server (an ingest, an agent run): each runs in its own thread, records its progress as a
list of events that any number of clients may follow from any point (server-sent events), and keeps its result or
its error. Nothing here knows what a job does."""

from __future__ import annotations

import json
import threading
import time
import traceback
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tracerag.errors import TraceError, disk_full


class JobStatus(StrEnum):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


@dataclass
class Job:
    """One background job. `events` only grows; `emit` appends under the condition and wakes every follower."""

    id: str
    kind: str
    collection: str | None
    started: float = field(default_factory=time.time)
    status: JobStatus = JobStatus.RUNNING
    finished: float | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    _changed: threading.Condition = field(default_factory=threading.Condition, repr=False)

    def emit(self, kind: str, **data: Any) -> None:
        """Record one progress event (`kind` and JSON-able data), numbered from 0."""
        with self._changed:
            self.events.append({"seq": len(self.events), "kind": kind, "time": time.time(), **data})
            self._changed.notify_all()

    def _finish(self, status: JobStatus, result: dict[str, Any] | None, error: str | None) -> None:
        with self._changed:
            self.status, self.result, self.error, self.finished = status, result, error, time.time()
            self.events.append(
                {"seq": len(self.events), "kind": "end", "time": self.finished, "status": status.value, "error": error}
            )
            self._changed.notify_all()

    def follow(
        self, after: int = -1, *, heartbeat_s: float = 15.0, stopping: threading.Event | None = None
    ) -> Iterator[dict[str, Any] | None]:
        """The events numbered after `after`, as they come, until the job's end event; None every `heartbeat_s`
        without news (so that a stream can say it is alive and notice a client that left). When `stopping` is set
        (the server is shutting down) the stream ends at once with a `stopping` event, so that no client holds the
        shutdown up."""
        next_seq = max(0, after + 1)
        while True:
            ended_before = False
            with self._changed:
                if next_seq >= len(self.events):
                    if self.status is not JobStatus.RUNNING:
                        ended_before = True
                    elif stopping is None or not stopping.is_set():
                        self._changed.wait(heartbeat_s)
                fresh = self.events[next_seq:]
                last = self.events[-1] if self.events else None
            if ended_before and last is not None:
                # the end is behind the point asked for (a bad id, or a browser that reconnected after it): the end
                # again, so that the client stops instead of reconnecting forever
                yield last
                return
            for event in fresh:
                yield event
                if event["kind"] == "end":
                    return
            next_seq += len(fresh)
            if stopping is not None and stopping.is_set():
                yield {"seq": next_seq, "kind": "stopping", "time": time.time(), "message": "the server is stopping"}
                return
            if not fresh:
                yield None

    def progress(self) -> str:
        """The job's last progress in words, for a message about it (its last event's numbers)."""
        for event in reversed(self.events):
            done = next((event[k] for k in ("done", "documents") if k in event), None)
            if done is not None and "total" in event:
                return f"{done} of {event['total']}"
        return f"its event {len(self.events)}"

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "collection": self.collection,
            "status": self.status.value,
            "started": self.started,
            "finished": self.finished,
            "events": len(self.events),
            "error": self.error,
            "result": self.result,
        }


JobWork = Callable[[Job], dict[str, Any] | None]


class JobRegistry:
    """The server's jobs, newest last; finished ones beyond `keep` are forgotten, oldest first."""

    def __init__(self, keep: int = 200):
        self.keep = keep
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self.stopping = threading.Event()  # set when the server shuts down: event streams end at once

    def stop(self) -> list[Job]:
        """Say the server is stopping: every event stream ends now. Returns the jobs still running (they are cut
        off when the process exits: an ingest's child stops like an interrupted `tracerag ingest`)."""
        self.stopping.set()
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            with job._changed:
                job._changed.notify_all()
        return [j for j in jobs if j.status is JobStatus.RUNNING]

    def start(self, kind: str, work: JobWork, *, collection: str | None = None) -> Job:
        """Run `work(job)` in a new thread; what it returns is the job's result. A TraceError is the job's error
        as the user should read it; any other exception is recorded with its type (the traceback goes to the
        server's log), never swallowed."""
        job = Job(uuid.uuid4().hex[:12], kind, collection)
        with self._lock:
            self._jobs[job.id] = job
            self._forget_old()

        def run() -> None:
            try:
                result = work(job)
            except TraceError as exc:
                job._finish(JobStatus.FAILED, None, str(disk_full(exc) or exc))
            except Exception as exc:  # a full disk met below, said as one; else a bug: the log has the traceback
                full = disk_full(exc)
                if full is None:
                    traceback.print_exc()
                job._finish(JobStatus.FAILED, None, str(full) if full else f"{type(exc).__name__}: {exc}")
            else:
                job._finish(JobStatus.DONE, result, None)

        threading.Thread(target=run, name=f"tracerag-job-{kind}-{job.id}", daemon=True).start()
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def list(self, kind: str | None = None) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs.values() if kind is None or j.kind == kind]

    def _forget_old(self) -> None:
        finished = [j.id for j in self._jobs.values() if j.status is not JobStatus.RUNNING]
        for job_id in finished[: max(0, len(finished) - self.keep)]:
            del self._jobs[job_id]


def sse(events: Iterator[dict[str, Any] | None]) -> Iterator[str]:
    """Server-sent events: `id` is the event's number (a client reconnecting sends it back as Last-Event-ID),
    `data` the event as JSON, its kind inside (unnamed events all reach a browser's `onmessage`); a comment line
    as heartbeat."""
    for event in events:
        if event is None:
            yield ": alive\n\n"
            continue
        data = json.dumps(event, ensure_ascii=False, default=str)
        yield f"id: {event['seq']}\ndata: {data}\n\n"
