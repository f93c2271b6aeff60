"""Many readers of one embedded index, in real processes and in threads, while one writer writes it.

The embedded engine (`engine/embedded.py`) has no process serving the index: each reader opens tantivy's folders and
the vector segments itself and sees each commit of the writer. These tests hold it to that with 8 reader processes
polling while a writer process upserts, replaces and merges (each reader must see every commit, never a count that
falls, never a chunk twice, and at the end every chunk exactly once); with a second writer, refused or waiting; and
with threads of one process searching one engine at once (the answers a serial search gives).
"""

from __future__ import annotations

import json
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tests.sharing import Driver, corpus, environment, start_python, start_tracerag, wait_for
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.engine import IndexedChunk
from tracerag.engine.embedded import EmbeddedEngine
from tracerag.errors import CollectionBusyError
from tracerag.model import Filter

READERS = 8
BATCHES = 20  # commits of the writer
SIZE = 40  # new chunks per commit (each commit also rewrites the previous commit's chunks)
DIM = 16
LISTED = BATCHES * SIZE + 100  # a search this deep lists every chunk

# What the writer writes (shared with the test): chunk i of a French or a German document, every chunk holding
# "commun" (a BM25 listing of every chunk), written at commit i // SIZE, rewritten (same id, new text and vector)
# at the next one. German arrives at the third commit: readers must find a language index made after they opened.
COMMON = rf"""
import numpy as np
from tracerag.engine import IndexedChunk

SIZE, DIM = {SIZE}, {DIM}


def chunk(i, version):
    lang = "de" if i % 3 == 0 and i >= 2 * SIZE else "fr"
    return IndexedChunk(f"c{{i}}#0", f"c{{i}}", f"commun mot{{i}} version{{version}}", "news", lang, None, None, {{}})


def vectors(ids, version):
    rng = np.random.default_rng([version, *ids])
    return rng.standard_normal((len(ids), DIM)).astype(np.float32)
"""

# The writer: after each commit it waits until every reader has reported seeing it (`seen-N` files), so that a
# reader that misses a commit stops the test; at the middle commit it also merges (files removed under the readers).
WRITER = (
    COMMON
    + r"""
import sys, time
from pathlib import Path
from tracerag.engine.embedded import EmbeddedEngine

path, control, readers, batches = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
engine = EmbeddedEngine(path, DIM, writer=True)


def seen_by_all(count):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        seen = [int(p.read_text() or 0) for p in control.glob("seen-*")]
        if len(seen) == readers and min(seen) >= count:
            return
        time.sleep(0.01)
    raise SystemExit(f"a reader did not see the commit of {count} chunks: {sorted(seen)}")


for b in range(batches):
    new = list(range(b * SIZE, (b + 1) * SIZE))
    old = list(range((b - 1) * SIZE, b * SIZE)) if b else []
    engine.upsert([chunk(i, b) for i in old + new], vectors(old + new, b))
    if b == batches // 2:
        engine.optimize()
    engine.flush()
    (control / "committed").write_text(str((b + 1) * SIZE))
    print("committed", (b + 1) * SIZE, flush=True)
    seen_by_all((b + 1) * SIZE)
engine.close()
(control / "done").write_text(str(batches * SIZE))
print("done", flush=True)
"""
)

# A reader: polls count, a BM25 listing and a dense listing until the writer is done and it has seen the last
# commit (or the writer has stopped: `stop`); reports every count it saw (in order), any chunk it listed twice, and
# its last listings.
READER = r"""
import json, os, sys, time
from pathlib import Path
import numpy as np
from tracerag.engine.embedded import EmbeddedEngine

path, control, name, dim, listed = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
engine = EmbeddedEngine(path, dim)
query = np.ones(dim, dtype=np.float32)
counts, doubled, errors = [], [], []


def listing():
    words = [h.chunk_id for hits in engine.bm25("commun", listed).values() for h in hits]
    dense = [h.chunk_id for h in engine.dense(query, listed)]
    return words, dense


def report(count):
    tmp = control / f".seen-{name}"
    tmp.write_text(str(count))
    os.replace(tmp, control / f"seen-{name}")


while True:
    done, stop = (control / "done").exists(), (control / "stop").exists()
    try:
        count = engine.count()
        words, dense = listing()
    except Exception as exc:  # reported, not raised: the test says which reader failed and how
        errors.append(repr(exc))
        if len(errors) > 20:
            break
        continue
    if not counts or counts[-1] != count:
        counts.append(count)
    for kind, ids in (("bm25", words), ("dense", dense)):
        if len(ids) != len(set(ids)):
            doubled.append((kind, count, sorted({i for i in ids if ids.count(i) > 1})[:5]))
    report(count)
    if stop or (done and count == int((control / "done").read_text())):
        break
words, dense = listing()
print(json.dumps({"counts": counts, "doubled": doubled, "errors": errors, "bm25": words, "dense": dense}))
"""


def test_eight_reader_processes_see_every_commit_of_a_writer_and_every_chunk_once(tmp_path: Path):
    index, control = tmp_path / "index", tmp_path / "control"
    control.mkdir()
    env = environment(tmp_path / "cache")
    writer = start_python(WRITER, index, control, READERS, BATCHES, env=env)
    readers: list[subprocess.Popen] = []
    results = []
    try:
        assert writer.stdout is not None
        first = writer.stdout.readline()
        assert first.strip() == f"committed {SIZE}", writer.stderr.read() if writer.stderr else first
        readers = [start_python(READER, index, control, r, DIM, LISTED, env=env) for r in range(READERS)]
        out, err = writer.communicate(timeout=600)
        (control / "stop").write_text("")  # the readers stop after their next look, whatever the writer did
        for proc in readers:
            said, complaint = proc.communicate(timeout=120)
            assert proc.returncode == 0, complaint
            results.append(json.loads(said))
    finally:
        for proc in [writer, *readers]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    # the writer waited at each commit until every reader saw it: "a reader did not see the commit of N chunks"
    assert writer.returncode == 0 and out.rstrip().endswith("done"), err
    every = sorted(f"c{i}#0" for i in range(BATCHES * SIZE))
    commits = [(b + 1) * SIZE for b in range(BATCHES)]
    for r, found in enumerate(results):
        assert found["errors"] == [], r
        assert found["doubled"] == [], r
        counts = found["counts"]
        assert counts == sorted(counts) and counts[-1] == BATCHES * SIZE, (r, counts)  # never falls, ends whole
        assert set(commits) <= set(counts), (r, counts)  # every commit seen (a new language may show in between)
        assert sorted(found["bm25"]) == every and sorted(found["dense"]) == every, r


def _word_chunk(i: int, lang: str) -> IndexedChunk:
    return IndexedChunk(f"c{i}#0", f"c{i}", f"commun mot{i}", "news", lang, None, None, {})


def _listing(engine: EmbeddedEngine) -> list[str]:
    return sorted(h.chunk_id for hits in engine.bm25("commun", 100).values() for h in hits)


def test_a_reader_finds_a_language_index_made_after_it_looked(tmp_path: Path):
    """The writer makes a new language's index folder, then tantivy's files in it: a reader that looks in between
    must still find that index once it is committed (the 8 readers above stalled at the first German chunks)."""
    writer = EmbeddedEngine(tmp_path / "index", None, writer=True)
    reader = None
    try:
        writer.upsert([_word_chunk(0, "fr")], None)
        writer.flush()
        reader = EmbeddedEngine(tmp_path / "index", None)
        assert reader.count() == 1
        (tmp_path / "index" / "text" / "de").mkdir()  # where the writer is when the reader looks
        assert reader.count() == 1
        writer.upsert([_word_chunk(1, "de")], None)
        writer.flush()
        assert writer.count() == 2
        assert reader.count() == 2 and _listing(reader) == ["c0#0", "c1#0"]
    finally:
        writer.close()
        if reader is not None:
            reader.close()


def test_a_chunk_that_moves_to_another_language_is_never_missing(tmp_path: Path, monkeypatch):
    """A document ingested again under another language moves its chunks from one language index to another. The
    two indexes commit one after the other, so a reader looking in between sees the chunk in both (a search keeps a
    chunk once: the merge of language fields takes its best score), never in neither; after the flush, once."""
    from tracerag.engine import text_index

    writer = EmbeddedEngine(tmp_path / "index", None, writer=True)
    writer.upsert([_word_chunk(0, "fr"), _word_chunk(1, "fr"), _word_chunk(2, "de")], None)
    writer.flush()
    reader = EmbeddedEngine(tmp_path / "index", None)
    seen: list[tuple[str, list[str]]] = []
    commit = text_index.LanguageIndex.commit

    def looked_at(self: text_index.LanguageIndex) -> None:  # a reader's look right after each index's commit
        written = self._dirty
        commit(self)
        if written:
            seen.append((self.language, _listing(reader)))

    monkeypatch.setattr(text_index.LanguageIndex, "commit", looked_at)
    try:
        writer.upsert([_word_chunk(1, "de")], None)
        writer.flush()
        assert len(seen) == 2  # both indexes committed
        assert all(set(listed) == {"c0#0", "c1#0", "c2#0"} for _, listed in seen), seen
        assert _listing(reader) == ["c0#0", "c1#0", "c2#0"]
    finally:
        writer.close()
        reader.close()


def _chunks(n: int) -> list[IndexedChunk]:
    langs = ["fr", "de", "en"]
    return [
        IndexedChunk(
            f"d{i // 3}#{i % 3}",
            f"d{i // 3}",
            f"commun mot{i % 17} texte{i % 5} numero {i} " + ("orage" if i % 4 == 0 else "calme"),
            ["news/a", "news/b"][i % 2],
            langs[i % 3],
            f"19{10 + i % 80:02d}-01-01",
            None,
            {"genre": ["a", "b"][i % 2]},
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("threads") / "index"
    engine = EmbeddedEngine(path, DIM, writer=True)
    chunks = _chunks(600)
    engine.upsert(chunks, np.random.default_rng(0).standard_normal((len(chunks), DIM)).astype(np.float32))
    engine.close()
    return path


def _questions() -> list[tuple[str, tuple]]:
    rng = np.random.default_rng(1)
    filters = [None, Filter(languages=("fr",)), Filter(corpora=("news/a",)), Filter(date_from="1950-01-01")]
    filters.append(Filter(fields=(("genre", "b"),)))
    found: list[tuple[str, tuple]] = []
    for flt in filters:
        found += [("bm25", (q, 20, flt)) for q in ("orage", "commun mot3 mot3", "texte1 calme", "numero 7")]
        found += [("phrase", ("numero 12", 10, flt)), ("count", (flt,))]
        found += [("dense", (v, 15, flt)) for v in rng.standard_normal((3, DIM)).astype(np.float32)]
    found += [("field_stats", (q,)) for q in ("orage commun", "absent mot5")]
    return found


def _answer(engine: EmbeddedEngine, kind: str, args: tuple) -> object:
    found = getattr(engine, kind)(*args)
    if kind in ("bm25", "phrase"):
        return {f: [(h.chunk_id, round(h.score, 5)) for h in hits] for f, hits in found.items()}
    if kind == "dense":
        return [(h.chunk_id, round(h.score, 5)) for h in found]
    return found


@pytest.mark.parametrize(
    ("writer", "cold"), [(False, False), (False, True), (True, False)], ids=["reader", "cold reader", "writer"]
)
def test_threads_searching_one_engine_at_once_get_the_serial_answers(searched: Path, writer: bool, cold: bool):
    """8 threads ask every question twice, each in its own order, of one engine: the one that answered them
    serially, or (`cold`) one just opened, whose first questions come from several threads at once (as a server's
    first requests do)."""
    questions = _questions()
    reference = EmbeddedEngine(searched, DIM)
    serial = [_answer(reference, kind, args) for kind, args in questions]
    reference.close()
    assert sum(bool(answer) for answer in serial) > len(questions) // 2  # mostly not empty answers
    engine = EmbeddedEngine(searched, DIM, writer=writer)
    try:
        if not cold:
            assert [_answer(engine, kind, args) for kind, args in questions] == serial
        start = threading.Barrier(8)

        def run(seed: int) -> list[tuple[int, object]]:
            order = np.random.default_rng(seed).permutation(len(questions))
            start.wait(timeout=60)
            return [(int(i), _answer(engine, *questions[i])) for i in np.concatenate([order, order])]

        with ThreadPoolExecutor(8) as pool:
            rounds = list(pool.map(run, range(8)))
        wrong = [questions[i][0] for answers in rounds for i, answer in answers if answer != serial[i]]
        assert wrong == [], f"{len(wrong)} of {8 * 2 * len(questions)} answers differ from the serial ones"
    finally:
        engine.close()


@pytest.mark.needs_data("hipe2022")
def test_a_second_writer_is_refused_or_waits(hipe_dir: Path, tmp_path: Path):
    docs = tmp_path / "docs"
    corpus(hipe_dir, docs, 30)
    col = tmp_path / "col"
    env = environment(tmp_path / "cache")
    settings = load_settings(embed={"model": "none"})
    with Collection.open(col, settings, mode="write", create=True):
        pass
    holder = Driver(col, "write", env)  # another process holds the writer lock
    try:
        with pytest.raises(CollectionBusyError) as refused:
            Collection.open(col, settings, mode="write")
        assert f"(pid {holder.proc.pid})" in str(refused.value) and "--wait" in str(refused.value)
        waiting = start_tracerag("ingest", docs, "-c", col, "--format", "txt", "--no-dense", "--wait", env=env)
        said: list[str] = []
        assert waiting.stderr is not None and waiting.stdout is not None
        listen = threading.Thread(target=lambda: said.extend(waiting.stderr), daemon=True)
        listen.start()
        wait_for(lambda: any("waiting for it to finish" in line for line in said), 60, "the waiter to say it waits")
        assert waiting.poll() is None  # still waiting while the lock is held
        with Collection.open(col, settings, mode="read") as reader:  # a reader meanwhile: never refused
            assert reader.engine.count() == 0
    finally:
        holder.close()
    out = waiting.stdout.read()
    assert waiting.wait(timeout=300) == 0, "".join(said)
    listen.join(timeout=10)
    with Collection.open(col, settings, mode="read") as reader:
        assert reader.store.count_documents() == 30
        assert reader.engine.count() == reader.store.count_chunks() >= 30, out
