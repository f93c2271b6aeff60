"""An ingest whose documents are prepared by worker processes (`ingest.workers`) ends where one prepared in the
writing process ends: the same store, row for row, and the same search results with their scores; a rerun finds
every document unchanged; a small input starts no worker; a worker that dies is an error that says what to do."""

from __future__ import annotations

import sqlite3
import time
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from tests.sharing import environment, start_tracerag
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import CollectionError
from tracerag.ingest import parallel, read_documents
from tracerag.ingest.jobs.run import ingest_into
from tracerag.ingest.prepare import IndexedDocuments, PreparedDocument
from tracerag.model import Document
from tracerag.retrieval import Retriever, SearchRequest

# 89 documents in four languages: more than one batch of 16, so that the workers start
HIPE_FILES = [
    "HIPE-2022-v2.1-sonar-dev-de.tsv",
    "HIPE-2022-v2.1-newseye-dev-sv.tsv",
    "HIPE-2022-v2.1-newseye-dev-fi.tsv",
    "HIPE-2022-v2.1-topres19th-dev-en.tsv",
]


def _store_rows(path: Path) -> dict[str, list[str]]:
    db = sqlite3.connect(f"file:{path / 'store.sqlite'}?mode=ro", uri=True)
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    rows = {t: sorted(map(repr, db.execute(f"SELECT * FROM {t}"))) for t in tables}
    db.close()
    return rows


def _ingest(source: Path, path: Path, workers: int):
    settings = load_settings(ingest={"workers": workers, "batch_documents": 16})
    return ingest_into(path, read_documents(source, "hipe"), settings, dense=False, embed_model="none")


@pytest.mark.needs_data("hipe2022")
def test_workers_prepare_what_the_writer_would_have(tmp_path: Path, hipe_dir: Path) -> None:
    source = tmp_path / "hipe"
    source.mkdir()
    for name in HIPE_FILES:
        (source / name).symlink_to(next(hipe_dir.rglob(name)))
    alone = _ingest(source, tmp_path / "alone", workers=0)
    helped = _ingest(source, tmp_path / "helped", workers=2)
    assert (
        (helped.read, helped.added, helped.chunks) == (alone.read, alone.added, alone.chunks) == (89, 89, alone.chunks)
    )
    assert dict(helped.languages) == dict(alone.languages)
    assert _store_rows(tmp_path / "helped") == _store_rows(tmp_path / "alone")
    results = {}
    for name in ("alone", "helped"):
        with Collection.open(tmp_path / name, load_settings(), mode="read") as col:
            retriever = Retriever(col)
            # as sets: two ingests of the same input, prepared in one process both, already order ties otherwise
            results[name] = [
                sorted((round(d.score, 6), d.doc_id) for d in retriever.search(SearchRequest(q, k=10)).documents)
                for q in ("Berlin Börse", "Helsingfors", "the railway accident", "Stockholm konung")
            ]
    assert results["helped"] == results["alone"] and sum(1 for found in results["alone"] if found) >= 3
    again = _ingest(source, tmp_path / "helped", workers=2)
    assert (again.unchanged, again.added, again.updated, again.chunks) == (89, 0, 0, 0)


def test_an_input_of_one_batch_starts_no_worker(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("no worker should start for one batch")

    monkeypatch.setattr(parallel, "ProcessPoolExecutor", refuse)
    docs = [Document(f"d{i}", f"text {i}") for i in range(5)]
    out = list(parallel.prepared_in_workers(docs, object(), IndexedDocuments([]), workers=2, batch=5))  # type: ignore[arg-type]
    assert out == docs  # given back as read: the writer prepares them itself


def test_a_worker_that_died_is_an_error_saying_how_to_finish() -> None:
    future: Future[list] = Future()
    future.set_exception(BrokenProcessPool("a child process terminated abruptly"))
    with pytest.raises(CollectionError, match="run the ingest again"):
        parallel._result(future)


def test_unchanged_documents_come_back_unprepared() -> None:
    doc = Document("a", "Une grève à Lyon.", language="fr")
    from tracerag.config import Settings
    from tracerag.ingest.prepare import Preparation

    prep = Preparation(Settings())
    digest = prep.prepare(Document("a", "Une grève à Lyon.", language="fr")).digest
    known = IndexedDocuments([("a", digest)])
    assert known.holds("a", digest) and not known.holds("a", "other") and not known.holds("b", digest)
    parallel._start(prep, known)
    [same] = parallel._prepare([doc])
    assert isinstance(same, PreparedDocument) and same.unchanged and same.chunks is None


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found += [int(p) for p in task.read_text().split()]
    return found


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the workers through /proc (Linux)")
def test_a_killed_ingest_leaves_no_worker_holding_its_output(tmp_path: Path) -> None:
    """SIGKILL gives the writer no chance to stop its workers: they must end by themselves, or they would keep its
    stdout and stderr open and whoever ran the ingest (a script, a scheduler) would wait for them forever."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(400):  # many batches of 4: the workers are still busy when the writer is killed
        (folder / f"d{i:04d}.txt").write_text(f"Document {i}. " + "La grève continue à Lyon. " * 400)
    env = environment(tmp_path / "cache", TRACERAG_INGEST__WORKERS="1", TRACERAG_INGEST__BATCH_DOCUMENTS="4")
    ingest = start_tracerag("ingest", folder, "-c", tmp_path / "c", "--no-dense", env=env)
    workers: list[int] = []
    deadline = time.monotonic() + 120
    while not workers and ingest.poll() is None and time.monotonic() < deadline:
        workers = [p for p in _children(ingest.pid) if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()]
        time.sleep(0.05)
    assert workers, "the ingest started no worker (or ended before one was seen)"
    ingest.kill()
    ingest.communicate(timeout=60)  # its pipes close: no worker holds them
    deadline = time.monotonic() + 30
    while any(map(_running, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_running, workers))
