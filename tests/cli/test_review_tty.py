"""`tracerag review` on a real terminal (a pseudo-terminal): keys are read raw, one at a time without Enter, an
arrow is one key (down: next) and not an Esc (quit), and a note is typed as a line."""

from __future__ import annotations

import os
import pty
import select
import shutil
import subprocess
import sys
import time

import pytest

from tests.fixtures.record_trails import QUESTION
from tests.trail import AGENT_TRAIL, recorded, small_collection
from tracerag.config import load_settings
from tracerag.research.selection import Decision, open_selections

FRENCH, HOSTILE, GAZETTE = "EXP-1888-08-03-a-i0030", "hostile-1", "gaz-1881-05-27"


def _read_until(fd: int, marker: bytes, seen: bytearray, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while marker not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {marker!r} on the terminal; it showed: {bytes(seen[-600:])!r}"
        if select.select([fd], [], [], left)[0]:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                return


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX terminal")
def test_raw_keys_an_arrow_and_a_note_on_a_terminal(tmp_path_factory, datasets_dir, tmp_path):
    path = tmp_path / "collection"
    shutil.copytree(small_collection(tmp_path_factory, datasets_dir).path, path)
    case = recorded(AGENT_TRAIL, path)
    leader, follower = pty.openpty()
    env = os.environ | {"COLUMNS": "100", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracerag.cli", "review", case.run_id, "-c", str(path), "--who", "tty"],
        stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True,
    )  # fmt: skip
    os.close(follower)
    seen = bytearray()
    try:
        for key, shown in ((b"a", b"[2/7]"), (b"\x1b[B", b"[3/7]"), (b"n", b"note:")):
            _read_until(leader, b"quit (decisions", seen)  # the candidate and the help line are drawn
            seen.clear()
            os.write(leader, key)  # one byte (or one arrow), no Enter
            _read_until(leader, shown, seen)
        os.write(leader, b"a fire in 1881\r")
        _read_until(leader, b"note kept", seen)
        os.write(leader, b"r")
        _read_until(leader, b"[4/7]", seen)
        os.write(leader, b"q")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(leader)
    with open_selections(path, load_settings()) as store:
        state = {e.doc_id: (e.decision, e.note) for e in store.entries(QUESTION)}
    # accepted; skipped over by the arrow (no decision); the note, then rejected with the note kept
    assert state == {FRENCH: (Decision.ACCEPTED, ""), GAZETTE: (Decision.REJECTED, "a fire in 1881")}
    assert HOSTILE not in state
