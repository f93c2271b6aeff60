"""Several real `tracerag` processes on one collection: two writers, a reader during a writer, a reader killed
under the others, a reader that keeps the index open while a writer adds to it."""

from __future__ import annotations

import itertools
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from tests.sharing import Driver, corpus, environment, start_tracerag, tracerag, wait_for
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.locks import read_note

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first

DOCUMENTS = 800


@pytest.fixture(scope="module")
def docs(hipe_dir: Path, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    corpus(hipe_dir, folder, DOCUMENTS, seed=1)
    return folder


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return environment(tmp_path / "cache")


def consistent(path: Path, documents: int) -> None:
    """Every document is there once, indexed, and the index holds exactly the stored chunks."""
    with Collection.open(path, load_settings(), mode="read") as col:
        assert col.store.count_documents() == documents
        assert col.store.pending_ids() == []
        assert col.engine.count() == col.store.count_chunks() > documents


def writing(path: Path, pid: int) -> bool:
    note = read_note(path / ".tracerag" / "writer.json")
    return note is not None and note.pid == pid


def test_a_second_ingest_is_refused_naming_the_first_or_waits_for_it(docs: Path, tmp_path: Path, env):
    col = tmp_path / "col"
    first = start_tracerag("ingest", docs, "-c", col, "--format", "txt", "--no-dense", env=env)
    wait_for(lambda: writing(col, first.pid), 60, "the first ingest to take the writer lock")
    rc, out, err = tracerag("ingest", docs, "-c", col, "--format", "txt", "--no-dense", env=env, timeout=60)
    assert rc == 3, err
    assert f"(pid {first.pid})" in err and "is being written by" in err and "--wait" in err and "ingest" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    # --wait, made deterministic: another process holds the writer lock until the waiter has said it waits.
    holder = Driver(col, "write", env)
    waiting = start_tracerag("ingest", docs, "-c", col, "--format", "txt", "--no-dense", "--wait", env=env)
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(waiting.stderr), daemon=True)
    reader.start()
    wait_for(lambda: any("waiting for it to finish" in line for line in said), 60, "the waiter to say it waits")
    assert waiting.poll() is None  # still waiting while the lock is held
    holder.close()
    out = waiting.stdout.read()
    assert waiting.wait(timeout=300) == 0, "".join(said)
    reader.join(timeout=10)
    assert f"unchanged {DOCUMENTS}" in out  # it came after the first one, and found everything done
    consistent(col, DOCUMENTS)


def test_a_search_during_an_ingest_answers_and_the_ingest_completes(docs: Path, tmp_path: Path, env):
    col = tmp_path / "col"
    part = tmp_path / "part"
    first = sorted(docs.rglob("*.txt"))[:100]  # from any newspaper: none has 100 documents of its own
    for f in first:
        (part / f.parent.name).mkdir(parents=True, exist_ok=True)
        (part / f.parent.name / f.name).write_bytes(f.read_bytes())
    rc, _, err = tracerag("ingest", part, "-c", col, "--format", "txt", "--no-dense", env=env)
    assert rc == 0, err
    words = first[0].read_text(encoding="utf-8").split()
    # a whole word: not the second half of one hyphenated across a line break, which the index has joined
    word = next(w for before, w in itertools.pairwise(words) if w.isalpha() and len(w) > 5 and before.isalpha())
    rc, out, err = tracerag("search", word, "-c", col, "--json", "-k", "3", env=env)
    assert rc == 0 and json.loads(out)["results"], err  # found before the ingest: so it must be found during it
    ingest = start_tracerag("ingest", docs, "-c", col, "--format", "txt", "--no-dense", env=env)
    wait_for(lambda: writing(col, ingest.pid), 60, "the ingest to take the writer lock")
    answers = []
    while ingest.poll() is None and len(answers) < 6:
        rc, out, err = tracerag("search", word, "-c", col, "--json", "-k", "3", env=env, timeout=120)
        assert rc == 0 and "Traceback" not in err, err
        answers.append(json.loads(out))
        rc, out, err = tracerag("info", "-c", col, "--json", env=env, timeout=120)
        assert rc == 0, err
        stats = json.loads(out)
        assert stats["documents"] >= 100
        if ingest.poll() is None and stats["activity"]["writer"]:
            assert stats["activity"]["writer"]["pid"] == ingest.pid
    out, err = ingest.communicate(timeout=300)
    assert ingest.returncode == 0, err
    assert answers and all(a["results"] for a in answers)  # the committed documents were found throughout
    assert len(answers) >= 2, "the ingest finished before the searches could overlap it"
    consistent(col, DOCUMENTS)


@pytest.fixture(scope="module")
def built(docs: Path, tmp_path_factory) -> Path:
    col = tmp_path_factory.mktemp("built") / "col"
    env = environment(col.parent / "cache")
    rc, _, err = tracerag("ingest", docs / "letemps", "-c", col, "--format", "txt", "--no-dense", env=env)
    assert rc == 0, err
    return col


def test_a_reader_killed_mid_use_harms_neither_the_other_readers_nor_the_next_writer(built: Path, docs: Path, env):
    first = Driver(built, "read", env)
    second = Driver(built, "read", env)
    try:
        found = first.ask("bm25 conseil")
        assert found["hits"]
        assert second.ask("bm25 conseil") == found  # each opened the index's files itself, and reads the same
        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait()
        assert second.ask("bm25 conseil") == found  # nothing it needed went with the killed process
        third = Driver(built, "read", env)  # what the killed reader left in the index folder stops no one
        try:
            assert third.ask("bm25 conseil") == found
        finally:
            third.close()
        rc, out, err = tracerag("ingest", docs / "letemps", "-c", built, "--format", "txt", "--no-dense", env=env)
        assert rc == 0, err
        assert second.ask("bm25 conseil") == found  # the same documents again: unchanged
    finally:
        second.close()
        first.close()
    assert second.proc.returncode == 0, second.proc.stderr.read()


def test_a_reader_open_during_an_ingest_sees_its_commits_without_reopening(docs: Path, tmp_path: Path, env):
    col = tmp_path / "col"
    papers = sorted(p for p in docs.iterdir() if p.is_dir())
    rc, _, err = tracerag("ingest", papers[0], "-c", col, "--format", "txt", "--no-dense", env=env)
    assert rc == 0, err
    reader = Driver(col, "read", env)
    try:
        before = reader.ask("count")["count"]
        assert before > 0
        rc, out, err = tracerag("ingest", docs, "-c", col, "--format", "txt", "--no-dense", env=env, timeout=300)
        assert rc == 0, err  # the reader kept the index open, and the writer was not held up by it
        after = reader.ask("count")["count"]  # the same open collection, the writer's last commit seen
        with Collection.open(col, load_settings(), mode="read") as fresh:
            assert after == fresh.store.count_chunks() == fresh.engine.count() > before
        assert reader.proc.poll() is None
    finally:
        reader.close()
    assert reader.proc.returncode == 0, reader.proc.stderr.read()
