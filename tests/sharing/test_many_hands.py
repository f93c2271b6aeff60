"""The issue's headline: one writer killed with kill -9 at random and restarted, eight readers searching in a
loop, for a minute; then the collection is exactly what one clean ingest makes, and every reader got an answer
or a clean "busy" (exit 3, one line), never a traceback. Real `tracerag` processes, no mocks. About 90 s."""

from __future__ import annotations

import json
import random
import re
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.sharing import corpus, environment, start_tracerag, tracerag, wait_for
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.retrieval import Retriever, SearchRequest

SECONDS = 60
READERS = 8
DOCUMENTS = 3000


@dataclass
class Invocation:
    command: str
    rc: int
    stdout: str
    stderr: str


def check_reader(inv: Invocation) -> str | None:
    """What is wrong with one reader's invocation, or None."""
    if "Traceback" in inv.stdout + inv.stderr or re.search(r"^\w+(Error|Exception)\b", inv.stderr, re.M):
        return "a traceback"
    errors = [line for line in inv.stderr.splitlines() if line.startswith("error:")]
    if inv.rc == 3:
        if len(errors) != 1 or len(inv.stderr.strip().splitlines()) > 3:
            return "a busy message that is not one line"
        return None
    if inv.rc != 0:
        return f"exit {inv.rc}"
    if errors:
        return "an error with exit 0"
    data = json.loads(inv.stdout)
    if (inv.command == "search" and "results" not in data) or (inv.command == "info" and "documents" not in data):
        return "an incomplete answer"
    return None


def snapshot(path: Path, queries: list[str]) -> dict:
    """Everything a clean ingest determines: documents, chunks with their texts and spans, the index, and what
    searches find."""
    with Collection.open(path, load_settings(), mode="read") as col:
        docs = sorted((d.id, d.corpus, d.text) for d in col.store.iter_documents())
        ids = [d[0] for d in docs]
        chunks = [(c.id, c.start, c.end, c.index_text) for c in col.store.chunks_of(ids)]
        retriever = Retriever(col)
        found = {}
        for q in queries:
            ranking = retriever.search(SearchRequest(query=q, k=10))
            found[q] = [(d.doc_id, d.best_chunk_id, round(d.score, 6)) for d in ranking.documents]
        return {
            "documents": docs,
            "pending": col.store.pending_ids(),
            "chunks": chunks,
            "indexed_points": col.engine.count(),
            "search": found,
        }


@pytest.mark.slow
def test_a_writer_killed_at_random_while_eight_readers_search(hipe_dir: Path, tmp_path: Path):
    docs = tmp_path / "docs"
    source = corpus(hipe_dir, docs, DOCUMENTS)
    rng = random.Random(9)
    words = sorted({w for d in source[:200] for w in re.findall(r"\b[^\W\d_]{8,}\b", d.text)})
    queries = rng.sample(words, 6) + ["Reichstag Sitzung", "conseil fédéral"]
    env = environment(tmp_path / "cache")
    shared, clean = tmp_path / "shared", tmp_path / "clean"
    ingest = ("ingest", docs, "--format", "txt", "--no-dense")

    # The reference: one clean ingest into another folder, run alongside (it only adds load).
    reference = start_tracerag(*ingest, "-c", clean, env=env)
    invocations: list[Invocation] = []
    writer_runs: list[Invocation] = []
    kills = 0
    stop = threading.Event()
    lock = threading.Lock()

    def writer() -> None:
        nonlocal kills
        while not stop.is_set():
            proc = start_tracerag(*ingest, "-c", shared, env=env)
            try:
                out, err = proc.communicate(timeout=rng.uniform(0.5, 10.0))
                writer_runs.append(Invocation("ingest", proc.returncode, out, err))
            except subprocess.TimeoutExpired:
                proc.kill()  # SIGKILL: no chance to clean up
                proc.communicate()
                kills += 1

    def reader(n: int) -> None:
        mine = random.Random(n)
        while not stop.is_set():
            if mine.random() < 0.25:
                args, command = ("info", "-c", shared, "--json"), "info"
            else:
                args, command = ("search", mine.choice(queries), "-c", shared, "--json", "-k", "5"), "search"
            rc, out, err = tracerag(*args, env=env, timeout=180)
            with lock:
                invocations.append(Invocation(command, rc, out, err))

    threads = [threading.Thread(target=writer, daemon=True)]
    threads[0].start()
    wait_for(lambda: (shared / "collection.toml").is_file(), 60, "the first ingest to make the collection")
    threads += [threading.Thread(target=reader, args=(n,), daemon=True) for n in range(READERS)]
    for t in threads[1:]:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads)

    rc, out, err = tracerag(*ingest, "-c", shared, env=env, timeout=600)  # finish what the kills interrupted
    assert rc == 0, err
    assert reference.wait(timeout=600) == 0, reference.stderr.read()

    problems = [(p, inv) for inv in invocations if (p := check_reader(inv))]
    kinds = Counter(p for p, _ in problems)
    assert not problems, f"{len(problems)} bad reader invocations ({dict(kinds)}), first: {problems[0]}"
    answered = sum(inv.rc == 0 for inv in invocations)
    busy = len(invocations) - answered
    assert kills >= 3, f"only {kills} kills: the ingest was too quick to be interrupted"
    # Measured 63 answers in the minute with the 2 cores to ourselves, 37 under a load of 20; what matters is
    # that readers got through at all while the writer was killed around them.
    assert answered >= 2 * READERS, f"only {answered} answers ({busy} busy) in {SECONDS} s"
    assert all(run.rc == 0 for run in writer_runs), [r.stderr for r in writer_runs if r.rc]
    print(f"\n{kills} kills, {len(writer_runs)} finished ingests, {answered} answers, {busy} busy")

    got, want = snapshot(shared, queries), snapshot(clean, queries)
    assert got["pending"] == [] and want["pending"] == []
    assert len(got["documents"]) == DOCUMENTS
    assert got["documents"] == want["documents"]
    assert got["chunks"] == want["chunks"]
    assert got["indexed_points"] == want["indexed_points"] == len(want["chunks"])
    assert got["search"] == want["search"]
