"""The writer lock: who holds it, a note left by a killed holder, waiting for it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracerag.errors import CollectionBusyError
from tracerag.locks import FileLock, Holder, WriterLock, read_note

HOLD = """
import sys, time
from pathlib import Path
from tracerag.locks import WriterLock
lock = WriterLock(Path(sys.argv[1]), Path("the-collection"))
lock.acquire(wait=False, notify=print)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
lock.release()
"""


def hold(state: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(state), str(seconds), "ingest-like"], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_at_once_naming_the_holder(tmp_path):
    proc = hold(tmp_path, 60)
    try:
        lock = WriterLock(tmp_path, Path("the-collection"))
        holder = lock.holder()
        assert holder is not None and holder.pid == proc.pid and "ingest-like" in holder.command
        start = time.monotonic()
        with pytest.raises(CollectionBusyError) as refused:
            lock.acquire(wait=False, notify=print)
        assert time.monotonic() - start < 2
        message = str(refused.value)
        assert f"(pid {proc.pid})" in message and "ingest-like" in message
        assert "the-collection is being written by" in message and "--wait" in message
        assert " since 20" in message and " UTC" in message
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_holder_leaves_a_note_that_is_ignored(tmp_path):
    proc = hold(tmp_path, 60)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    stale = read_note(tmp_path / "writer.json")
    assert stale is not None and stale.pid == proc.pid  # the note outlives its writer...
    lock = WriterLock(tmp_path, Path("the-collection"))
    assert lock.holder() is None  # ...but the kernel dropped the lock, so it names nobody
    lock.acquire(wait=False, notify=print)
    try:
        assert read_note(tmp_path / "writer.json").pid == os.getpid()
    finally:
        lock.release()
    assert not (tmp_path / "writer.json").exists() and lock.holder() is None


def test_wait_says_so_and_proceeds_when_the_holder_is_done(tmp_path):
    proc = hold(tmp_path, 1.5)
    notes: list[str] = []
    lock = WriterLock(tmp_path, Path("the-collection"))
    start = time.monotonic()
    lock.acquire(wait=True, notify=notes.append)
    waited = time.monotonic() - start
    try:
        assert 0.5 < waited < 20
        assert len(notes) == 1 and "waiting" in notes[0] and f"(pid {proc.pid})" in notes[0]
        assert proc.wait(timeout=10) == 0
    finally:
        lock.release()


def test_a_file_lock_excludes_another_in_the_same_process(tmp_path):
    first, second = FileLock(tmp_path / "x.lock"), FileLock(tmp_path / "x.lock")
    assert first.acquire()
    assert not second.acquire() and not second.acquire(shared=True) and not first.is_free()
    first.release()
    assert second.acquire(shared=True) and FileLock(tmp_path / "x.lock").acquire(shared=True)


def test_the_holders_command_line_is_shown_safely():
    hostile = Holder(1234, "tracerag search \x1b]0;owned\x07 \x1b[2J", "elsewhere", "2026-12-01T10:42:01+00:00")
    text = hostile.describe()
    assert "\x1b" not in text and "\x07" not in text
    assert "(pid 1234 on elsewhere) since 2026-12-01 10:42:01 UTC" in text
