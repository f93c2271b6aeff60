"""The embedded engine's vector segments (engine/vector_index.py): exact and HNSW segments answer alike, a filtered
search returns min(k, admitted) hits every time, deletions and merges keep every live row once, and a reader in
another process state sees the writer's flushes."""

from __future__ import annotations

import numpy as np
import pytest

from tracerag.engine import vector_index
from tracerag.engine.vector_index import VectorIndex

DIM = 16


@pytest.fixture
def small_graphs(monkeypatch):
    """Graphs from 200 rows, so that a test's segments get one."""
    monkeypatch.setattr(vector_index, "HNSW_ROWS", 200)
    monkeypatch.setattr(vector_index, "EXACT_ROWS", 50)


def rows(n: int, seed: int = 0, start: int = 0):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    ids = [f"c{i}" for i in range(start, start + n)]
    docs = [f"d{i // 3}" for i in range(start, start + n)]
    corpora = ["a/x" if i % 2 else "b" for i in range(start, start + n)]
    days = [(700_000 + i, 700_000 + i) if i % 4 else None for i in range(start, start + n)]
    return ids, docs, corpora, ["fr"] * n, days, vectors


def exact_top(vectors: np.ndarray, ids: list[str], query: np.ndarray, k: int, keep=None) -> list[str]:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = unit @ (query / np.linalg.norm(query))
    order = [i for i in np.argsort(-scores) if keep is None or keep(i)]
    return [ids[i] for i in order[:k]]


def test_exact_segment_finds_the_exact_top(tmp_path):
    index = VectorIndex(tmp_path, DIM, create=True)
    ids, docs, corpora, langs, days, vectors = rows(150)
    index.add(ids, docs, corpora, langs, days, vectors)
    index.flush()
    query = vectors[7] + 0.1
    found = [c for c, _, _ in index.search(query, 10)]
    assert found == exact_top(vectors, ids, query, 10)


def test_graph_segment_matches_exact_search_and_keeps_vectors_once(tmp_path, small_graphs):
    index = VectorIndex(tmp_path, DIM, create=True)
    ids, docs, corpora, langs, days, vectors = rows(600)
    index.add(ids, docs, corpora, langs, days, vectors)
    index.flush()
    assert not list(tmp_path.glob("*.vec.npy")) and list(tmp_path.glob("*.hnsw.faiss"))
    for i in range(0, 600, 60):
        found = [c for c, _, _ in index.search(vectors[i], 5)]
        assert found[0] == ids[i]
        assert len(set(found) & set(exact_top(vectors, ids, vectors[i], 5))) >= 4


@pytest.mark.parametrize("graph", [False, True])
def test_a_filtered_search_returns_every_admitted_row_up_to_k(tmp_path, graph, monkeypatch):
    if graph:
        monkeypatch.setattr(vector_index, "HNSW_ROWS", 200)
        monkeypatch.setattr(vector_index, "EXACT_ROWS", 5)  # the graph answers first, then exact if it came short
    index = VectorIndex(tmp_path, DIM, create=True)
    ids, docs, corpora, langs, days, vectors = rows(600)
    index.add(ids, docs, corpora, langs, days, vectors)
    index.flush()
    codes = index.corpus_codes(["b"])
    for admitted in (3, 40, 300):
        wanted = np.zeros(1, dtype=np.int64)

        def admit(meta, admitted=admitted):
            return np.isin(meta["corpus"], codes) & (np.arange(len(meta)) < 2 * admitted)

        found = index.search(vectors[0], 50, admit)
        assert len(found) == min(50, admitted), wanted
        assert all(int(c[1:]) % 2 == 0 and int(c[1:]) < 2 * admitted for c, _, _ in found)


def test_deletes_and_replacements_keep_each_live_chunk_once(tmp_path, small_graphs):
    index = VectorIndex(tmp_path, DIM, create=True)
    ids, docs, corpora, langs, days, vectors = rows(400)
    index.add(ids, docs, corpora, langs, days, vectors)
    index.flush()
    index.delete_docs(["d0", "d1"])  # c0..c5
    more = rows(100, seed=1, start=390)  # c390..c399 again (replaced), c400..c489 new
    index.add(*more)
    index.flush()
    assert index.count() == 400 - 6 + 90
    listed = [c for c, _, _ in index.search(np.ones(DIM, dtype=np.float32), 10_000)]
    assert len(listed) == len(set(listed)) == index.count()
    assert not {f"c{i}" for i in range(6)} & set(listed)
    index.add(*rows(100, seed=2, start=1000))
    index.flush()
    index.optimize()  # the two small segments merge; the large one with its graph stays as it is
    assert len(list(tmp_path.glob("seg*.meta.npy"))) == 2
    listed = listed + [f"c{i}" for i in range(1000, 1100)]
    listed_after = [c for c, _, _ in index.search(np.ones(DIM, dtype=np.float32), 10_000)]
    assert sorted(listed_after) == sorted(listed)
    replaced = more[5][0]  # c390's new vector finds c390
    assert index.search(replaced, 1)[0][0] == "c390"


def test_a_reader_sees_each_flush_and_survives_a_merge(tmp_path, small_graphs):
    writer = VectorIndex(tmp_path, DIM, create=True)
    reader = VectorIndex(tmp_path, DIM)
    assert reader.count() == 0
    for part in range(3):
        writer.add(*rows(150, seed=part, start=150 * part))
        assert reader.count() == 150 * part  # not flushed yet
        writer.flush()
        assert reader.count() == 150 * (part + 1)
        assert len(reader.search(np.ones(DIM, dtype=np.float32), 1000)) == 150 * (part + 1)
    writer.optimize()  # merges the three segments and removes their files
    assert len(reader.search(np.ones(DIM, dtype=np.float32), 1000)) == 450


def test_an_index_of_another_dimension_is_refused(tmp_path):
    VectorIndex(tmp_path, DIM, create=True)
    with pytest.raises(ValueError, match="16-d vectors, not 8-d"):
        VectorIndex(tmp_path, 8)


def test_a_writer_killed_mid_flush_leaves_nothing_the_next_one_keeps(tmp_path):
    index = VectorIndex(tmp_path, DIM, create=True)
    index.add(*rows(50))
    index.flush()
    before = index.search(np.ones(DIM, dtype=np.float32), 100)
    # what a kill between a segment's files and the state that names them leaves behind
    (tmp_path / "seg000007.vec.npy").write_bytes(b"half")
    (tmp_path / "seg000000.del9.npy").write_bytes(b"half")
    (tmp_path / "state.json.tmp").write_text("{")
    again = VectorIndex(tmp_path, DIM, create=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["state.json", "seg000000.vec.npy", "seg000000.meta.npy", "seg000000.ids.npy", "seg000000.ids.bin"]
    )
    assert again.search(np.ones(DIM, dtype=np.float32), 100) == before
