"""Helpers for the tests of one collection shared by many processes: real processes, no mocks.

`tracerag(...)` runs the real command line in a subprocess (what a user's second terminal does); `corpus(...)`
writes a folder of text files from real HIPE-2022 documents, large enough that an ingest takes a while.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tracerag.ingest import read_documents
from tracerag.model import Document

CLI = "from tracerag.cli import app; app()"
# A Python driver that keeps a collection open and answers commands on stdin, one JSON line each: a process
# that has the index open for as long as a test wants.
DRIVER = r"""
import json, sys
from tracerag.collection import Collection
from tracerag.config import load_settings
col = Collection.open(sys.argv[1], load_settings(), mode=sys.argv[2])
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    cmd, _, arg = line.strip().partition(" ")
    if cmd == "bm25":
        found = col.engine.bm25(arg, 5)  # per language field
        hits = sorted(h.chunk_id for field_hits in found.values() for h in field_hits)
        print(json.dumps({"hits": hits}), flush=True)
    elif cmd == "count":
        count = col.engine.count()
        print(json.dumps({"count": count}), flush=True)
    elif cmd == "close":
        break
col.close()
print(json.dumps({"closed": True}), flush=True)
"""


def environment(cache: Path, **extra: str) -> dict[str, str]:
    """The subprocesses' environment: a private cache, and wide lines (so that one message is one line)."""
    env = dict(os.environ)
    env.update({"TRACERAG_CACHE_DIR": str(cache), "COLUMNS": "400", "PYTHONUNBUFFERED": "1"}, **extra)
    return env


def tracerag(*args: object, env: dict[str, str], python: str = sys.executable, timeout: float = 120, **kw):
    """Run `tracerag ARGS...` to completion: (exit code, stdout, stderr)."""
    done = subprocess.run(
        [python, "-c", CLI, *map(str, args)], env=env, capture_output=True, text=True, timeout=timeout, **kw
    )
    return done.returncode, done.stdout, done.stderr


def start_python(script: str, *args: object, env: dict[str, str], **kw) -> subprocess.Popen:
    """`python -c SCRIPT ARGS...` started, its output piped as text."""
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def start_tracerag(*args: object, env: dict[str, str], **kw) -> subprocess.Popen:
    return start_python(CLI, *args, env=env, **kw)


class Driver:
    """A process holding a collection open (see DRIVER)."""

    def __init__(self, collection: Path, mode: str, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(collection), mode],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.ask_raw() == {"ready": True}

    def ask_raw(self, line: str | None = None) -> dict:
        import json

        if line is not None:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise AssertionError(f"driver {self.proc.pid} died: {self.proc.stderr.read()}")
        return json.loads(answer)

    def ask(self, line: str) -> dict:
        return self.ask_raw(line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("close\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)


def corpus(hipe_dir: Path, folder: Path, documents: int, seed: int = 0) -> list[Document]:
    """A folder of `documents` text files (in sub-folders by newspaper, so several sub-corpora) made of real
    HIPE-2022 OCR text: document i is a real document's text cut at a seeded point and rejoined, so that no two
    files are the same. Returns the source documents used, for choosing queries."""
    rng = random.Random(seed)
    source = [d for d in read_documents(hipe_dir, "hipe") if isinstance(d, Document) and len(d.text) > 400]
    for i in range(documents):
        doc = source[i % len(source)]
        cut = rng.randrange(100, len(doc.text) - 100)
        text = doc.text[cut:] + "\n" + doc.text[:cut]
        sub = folder / doc.corpus.split("/")[0]
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"d{i:05d}.txt").write_text(text[:3000], encoding="utf-8")
    return source


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)
