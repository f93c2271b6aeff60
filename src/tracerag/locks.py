"""File locks that let many processes share one collection, and the note that says who holds one.

The locks are `flock(2)` locks: the kernel drops them when their holder exits, however it exits (kill -9
included), so a lock is never stale. What can be stale is the note a holder writes beside its lock (pid,
command line, host, since when): it is read only while the lock is seen held, and ignored when it is free.

A lock is held per open file, not per process: two `FileLock`s on one path exclude each other even inside one
process, which is what lets the tests run several "processes" in one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from tracerag.errors import CollectionBusyError
from tracerag.text import safe_line

# How long a non-blocking writer keeps trying before it refuses: another process may be probing the lock
# (`tracerag info` takes it shared for a few microseconds to see whether it is free).
_REFUSE_AFTER_S = 0.5
_POLL_S = 0.02


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as the holder wrote it."""

    pid: int
    command: str
    host: str
    since: str  # ISO 8601, UTC

    @classmethod
    def me(cls) -> Holder:
        command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv and sys.argv[0] else "python"
        return cls(os.getpid(), command, socket.gethostname(), datetime.now(UTC).isoformat(timespec="seconds"))

    def describe(self) -> str:
        """ "`tracerag ingest …` (pid 1234) since 2026-12-01 10:42:01 UTC", safe for a terminal (the note is
        written by another process, maybe another user: its command line is data)."""
        if not self.pid:
            return "another process"
        try:
            since = datetime.fromisoformat(self.since).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        except ValueError:
            since = self.since
        command = self.command if len(self.command) <= 200 else self.command[:199] + "…"
        host = "" if self.host == socket.gethostname() else f" on {self.host}"
        return safe_line(f"`{command}` (pid {self.pid}{host}) since {since}")


def read_note(path: Path) -> Holder | None:
    """The holder note at `path`, or None when it is missing or unreadable (a holder that is still writing it)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Holder(int(data["pid"]), str(data["command"]), str(data["host"]), str(data["since"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_note(path: Path, holder: Holder, **extra: object) -> None:
    """Write a holder note atomically (readers never see half of one). Best effort: a note is information,
    and a folder shared with another user may refuse it; the lock itself is what excludes."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(asdict(holder) | extra), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def read_extra(path: Path) -> dict:
    """The whole note as written (the engine owner adds its socket path to it)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class FileLock:
    """One flock on one file, exclusive or shared, taken without blocking unless asked."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._fd: int | None = None
        self.shared = False

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, *, shared: bool = False, blocking: bool = False) -> bool:
        """Take the lock; False when another holder has it (never False with `blocking`)."""
        if self._fd is not None:
            raise RuntimeError(f"{self.path}: already held by this FileLock")
        flags = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB)
        while True:
            # Read-only is enough for flock, and works on a lock file another user created in a shared folder.
            try:
                fd = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except FileNotFoundError:  # its folder went away (a failed first ingest removed its collection)
                self.path.parent.mkdir(parents=True, exist_ok=True)
                continue
            try:
                fcntl.flock(fd, flags)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return False
                raise
            except BaseException:  # Ctrl-C while blocked
                os.close(fd)
                raise
            # Got it, but on the file that is still at the path? One deleted meanwhile (a removed collection
            # folder) locks nothing anyone else will look at: take the new one instead.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        self._fd = fd
        self.shared = shared
        return True

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the only descriptor drops the flock

    def is_free(self) -> bool:
        """Whether nobody holds the lock now: a probe that takes it shared and drops it at once."""
        probe = FileLock(self.path)
        if probe.acquire(shared=True):
            probe.release()
            return True
        return False


class WriterLock:
    """The right to write a collection: one writer at a time, across processes. `DIR/.tracerag/writer.lock`,
    with the holder's note in `writer.json`."""

    def __init__(self, state_dir: Path, collection: Path):
        self.lock = FileLock(state_dir / "writer.lock")
        self.note = state_dir / "writer.json"
        self.collection = collection

    def holder(self) -> Holder | None:
        """Who writes the collection now, or None. A note left by a killed writer is ignored: its lock is free."""
        if not self.lock.path.exists() or self.lock.is_free():
            return None
        return read_note(self.note) or Holder(0, "", "", "")  # held, but its note is not written yet

    def acquire(self, *, wait: bool, notify: Callable[[str], None]) -> None:
        """Take the lock. Held by another: refuse at once with CollectionBusyError naming the holder, or with
        `wait` say so on `notify` and wait for it."""
        deadline = time.monotonic() + _REFUSE_AFTER_S
        while not self.lock.acquire():
            if time.monotonic() < deadline:
                time.sleep(_POLL_S)
                continue
            holder = read_note(self.note)
            who = holder.describe() if holder else "another process"
            if not wait:
                raise CollectionBusyError(f"{self.collection} is being written by {who}; pass --wait to wait for it")
            notify(f"{self.collection} is being written by {who}: waiting for it to finish…")
            self.lock.acquire(blocking=True)
            break
        write_note(self.note, Holder.me())

    def release(self) -> None:
        if self.lock.held:
            with contextlib.suppress(OSError):
                self.note.unlink()  # still ours: nobody else can hold the lock
            self.lock.release()
