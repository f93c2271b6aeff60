"""The researcher's selection: decisions persist across processes and a re-ingest of real HIPE documents, two
processes deciding at once lose nothing, a decision is written while another process holds the collection's
writer lock, undo puts a source back as it was, and a read-only collection keeps its selection per user."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fixtures.record_trails import agent_documents, build_collection
from tracerag.collection import SELECTIONS_FILE, Collection, private_root
from tracerag.config import load_settings
from tracerag.errors import SelectionError
from tracerag.research.selection import Decision, SelectionStore, open_selections, selections_path

Q = "Which newspapers reported fires, panics or disasters?"


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`code` in a process of its own (another user's session, another terminal)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done


DECIDE = """
    import sys
    from pathlib import Path
    from tracerag.config import load_settings
    from tracerag.research.selection import Decision, open_selections
    collection, question, who, start, count = sys.argv[1:6]
    with open_selections(Path(collection), load_settings(), write=True) as store:
        for n in range(int(start), int(start) + int(count)):
            decision = Decision.ACCEPTED if n % 2 == 0 else Decision.REJECTED
            store.decide(question, f"doc-{n:04d}", decision, who=who, note=f"by {who}", span=(n, n + 5))
"""


@pytest.fixture(scope="module")
def hipe_docs(datasets_dir):
    return agent_documents(datasets_dir)[:3]  # a French daily, a British weekly, a German paper (HIPE-2022)


def test_decisions_persist_across_processes_and_a_reingest(tmp_path, hipe_docs):
    path = build_collection(tmp_path / "collection", hipe_docs)
    french, british, german = (d.id for d in hipe_docs)
    _run(
        """
        import sys
        from pathlib import Path
        from tracerag.config import load_settings
        from tracerag.research.selection import Decision, open_selections
        collection, question, a, r = sys.argv[1:5]
        with open_selections(Path(collection), load_settings(), write=True) as store:
            store.decide(question, a, Decision.ACCEPTED, who="alice", chunk_id=a + ":0", span=(0, 40), note="fire")
            store.decide(question, r, Decision.REJECTED, who="alice")
        """,
        str(path),
        "  Which newspapers reported   fires, panics or disasters? ",  # retyped: the same question
        french,
        british,
    )
    # Re-ingest: the French document changed (its chunks replaced), the others unchanged.
    changed = [dataclasses.replace(d, text=d.text + "\n\nAddendum.") if d.id == french else d for d in hipe_docs]
    with Collection.open(path, load_settings(), mode="write") as col:
        report = col.ingest(iter(changed), dense=False)
    assert (report.updated, report.unchanged) == (1, 2)
    with open_selections(path, load_settings()) as store:
        assert store.resolve("Which newspapers") == Q
        accepted = store.accepted(Q)
        assert [(e.doc_id, e.who, e.note, e.span, e.chunk_id) for e in accepted] == [
            (french, "alice", "fire", (0, 40), french + ":0")
        ]
        assert store.get(Q, british).decision is Decision.REJECTED
        assert store.get(Q, german) is None
        assert accepted[0].when.endswith("+00:00")  # UTC
    assert (path / SELECTIONS_FILE).is_file()


def test_two_writers_at_once_lose_nothing(tmp_path):
    (tmp_path / "c").mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(DECIDE), str(tmp_path / "c"), Q, who, start, "150"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for who, start in (("alice", "0"), ("bob", "100"))  # documents 100-149 decided by both
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    with open_selections(tmp_path / "c", load_settings()) as store:
        entries = store.entries(Q)
        assert len(entries) == 250
        assert len(store.history(Q)) == 300  # every decision of both, none lost
        both = [e for e in entries if 100 <= int(e.doc_id[4:]) < 150]
        assert {e.who for e in both} <= {"alice", "bob"} and len(both) == 50
        assert all(e.note == f"by {e.who}" for e in entries)
        assert len(store.accepted(Q)) == 125


def test_a_decision_is_written_while_another_process_holds_the_writer_lock(tmp_path, hipe_docs):
    path = build_collection(tmp_path / "collection", hipe_docs[:1])
    with Collection.open(path, load_settings(), mode="write"):  # an ingest's writer, in this process
        _run(DECIDE, str(path), Q, "carol", "0", "3")
    with open_selections(path, load_settings()) as store:
        assert [e.doc_id for e in store.entries(Q)] == ["doc-0000", "doc-0001", "doc-0002"]


def test_undo_restores_what_was_there_and_keeps_the_history(tmp_path):
    with SelectionStore(tmp_path / SELECTIONS_FILE, write=True) as store:
        store.decide(Q, "d1", Decision.ACCEPTED, who="a", note="first")
        before = store.get(Q, "d1")
        store.decide(Q, "d1", Decision.REJECTED, who="a")  # note=None keeps the note
        assert store.get(Q, "d1").note == "first"
        store.restore(Q, "d1", before, who="a")
        assert store.get(Q, "d1").decision is Decision.ACCEPTED
        store.restore(Q, "d1", None, who="a")  # back to no decision at all
        assert store.get(Q, "d1") is None
        history = store.history(Q, "d1")
        assert [h.decision if not isinstance(h, tuple) else None for h in history] == [
            Decision.ACCEPTED,
            Decision.REJECTED,
            Decision.ACCEPTED,
            None,
        ]


def test_bad_input_is_named(tmp_path):
    with SelectionStore(tmp_path / SELECTIONS_FILE, write=True) as store:
        store.decide("Fires in Paris", "d1", Decision.ACCEPTED, who="a")
        store.decide("Fires in Lyon", "d2", Decision.ACCEPTED, who="a")
        with pytest.raises(SelectionError, match="begins 2 questions"):
            store.resolve("Fires in")
        with pytest.raises(SelectionError, match="no selection for the question 'Floods'"):
            store.resolve("Floods")
        with pytest.raises(SelectionError, match=r"span \(5, 2\)"):
            store.decide("Fires in Paris", "d3", Decision.ACCEPTED, who="a", span=(5, 2))
        with pytest.raises(SelectionError, match="empty"):
            store.decide("   ", "d3", Decision.ACCEPTED, who="a")
    with SelectionStore(tmp_path / SELECTIONS_FILE) as reader, pytest.raises(SelectionError, match="for reading"):
        reader.decide("Fires in Paris", "d3", Decision.ACCEPTED, who="a")
    with SelectionStore(tmp_path / "none.sqlite") as empty:  # reading never creates the file
        assert empty.questions() == [] and not (tmp_path / "none.sqlite").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a read-only folder")
def test_a_read_only_collection_keeps_its_selection_per_user(tmp_path):
    collection = tmp_path / "shared"
    collection.mkdir()
    settings = load_settings(cache_dir=tmp_path / "cache")
    collection.chmod(0o555)
    try:
        assert selections_path(collection, settings) == private_root(collection, settings) / SELECTIONS_FILE
        with open_selections(collection, settings, write=True) as store:
            store.decide(Q, "d1", Decision.ACCEPTED, who="reader")
        with open_selections(collection, settings) as store:
            assert [e.doc_id for e in store.accepted(Q)] == ["d1"]
        assert not (collection / SELECTIONS_FILE).exists()
    finally:
        collection.chmod(0o755)
    assert selections_path(collection, settings) == Path(collection) / SELECTIONS_FILE
