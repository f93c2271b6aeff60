"""`Trail`: the one `emit()` every stage calls. An emitter builds its event (`VerdictEvent(...)`); the trail stamps
it with the run id, the next sequence number and the time, and gives it to every listener: the JSONL writer is
one, tests and the CLI's live view are others.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from tracerag.errors import DiskFullError, on_full_disk, says_disk_full
from tracerag.trail.events import STAMPS, RunEvent, TrailEvent

EventListener = Callable[[TrailEvent], None]
E = TypeVar("E", bound=TrailEvent)


# Who asked for the runs started in this context (a front door says it: the MCP server names its client), stamped
# on every run event emitted here, so that no run below the front door, of whatever kind, has to be told; and the
# runs started, so that the front door can take back those of a call that failed.
_ASKED_BY: contextvars.ContextVar[tuple[str, list[str]] | None] = contextvars.ContextVar(
    "tracerag_asked_by", default=None
)


@contextlib.contextmanager
def asked_by(client: str) -> Iterator[list[str]]:
    """Stamp `client` on the run events emitted within (in this thread, and in the threads started from a copy of
    its context): `RunEvent.client`. Yields the ids of the runs started within, in order."""
    started: list[str] = []
    token = _ASKED_BY.set((client, started))
    try:
        yield started
    finally:
        _ASKED_BY.reset(token)


def new_run_id() -> str:
    """Sortable and unique: UTC time to the second, then 6 random hex digits."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


class Trail:
    def __init__(self, run_id: str | None = None, listeners: Sequence[EventListener] = ()):
        self.run_id = run_id or new_run_id()
        self.listeners: list[EventListener] = list(listeners)
        self.seq = 0

    def emit(self, event: E) -> E:
        """Stamp `event` with the run id, the next sequence number and the time, and send it to every listener;
        returns the stamped event. The event was validated when its emitter built it, so a wrong field is a bug
        at the emitter, not a bad trail later."""
        given = [name for name in STAMPS if name in event.model_fields_set]
        if given:
            raise ValueError(f"{type(event).__name__}: {', '.join(given)} are the trail's to stamp, not the emitter's")
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        update: dict[str, object] = {"run_id": self.run_id, "seq": self.seq, "time": now}
        asked = _ASKED_BY.get()
        if asked is not None and isinstance(event, RunEvent):
            asked[1].append(self.run_id)
            if event.client is None:
                update["client"] = asked[0]
        stamped = event.model_copy(update=update)
        self.seq += 1
        for listener in self.listeners:
            listener(stamped)
        return stamped


class JsonlWriter:
    """Appends each event as one line and writes it through, so a crashed run still leaves every step before the
    crash. A line that does not fit on the disk is taken back whole (the trail stays readable, the run is
    unfinished in it) and said as a DiskFullError naming the trail's folder."""

    def __init__(self, path: Path):
        self.path = Path(path)
        with on_full_disk(self.path.parent, f"the trail {self.path.name}"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # unbuffered: each line reaches the file in its own write, so a failed one is known and taken back
            self._fh = self.path.open("ab", buffering=0)

    def __call__(self, event: TrailEvent) -> None:
        # backslashreplace: a lone surrogate in a model's answer is written as the JSON escape it came as,
        # so the trail reads back exactly instead of the run crashing on it.
        line = (json.dumps(event.model_dump(mode="json"), ensure_ascii=False) + "\n").encode(
            "utf-8", errors="backslashreplace"
        )
        end = self._fh.seek(0, os.SEEK_END)
        try:
            written = 0
            while written < len(line):
                written += self._fh.write(line[written:]) or 0
        except OSError as exc:
            with contextlib.suppress(OSError):
                self._fh.truncate(end)  # no half line: a reader would call the trail damaged
                if end == 0:
                    self.path.unlink()  # nor an empty trail: the run never started to be recorded
            if not says_disk_full(exc, self.path.parent):
                raise
            raise DiskFullError(self.path.parent, f"the trail {self.path.name}", needed=len(line)) from exc

    def close(self) -> None:
        self._fh.close()


class MemoryListener(list[TrailEvent]):
    """Collects events in memory (tests, the eval harness)."""

    def __call__(self, event: TrailEvent) -> None:
        self.append(event)

    def of(self, kind: type[E]) -> list[E]:
        """The events of one class, in order, typed as that class: `of(VerdictEvent) -> list[VerdictEvent]`."""
        return [e for e in self if isinstance(e, kind)]
