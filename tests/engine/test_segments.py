"""The embedded engine leaves what it writes in sealed segments, whose indexes are mapped from disk at open
instead of rebuilt in RAM (a 233,821-chunk collection took 19.5 s and 2.5 GB to open when its one segment stayed
appendable); a shard made before is brought to that layout by its first write and searches the same."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tracerag.engine.qdrant_edge as qe
from tracerag.engine import IndexedChunk
from tracerag.ingest import read_documents
from tracerag.ingest.chunk import iter_chunks
from tracerag.model import Document


@pytest.fixture(scope="module")
def hipe_chunks(hipe_dir: Path) -> list[IndexedChunk]:
    """Real OCR chunks of HIPE-2022 (size 400, so ~15k of them), as the collection indexes them."""
    out = []
    for doc in read_documents(hipe_dir, "hipe"):
        if isinstance(doc, Document):
            for c in iter_chunks(doc.id, doc.text, size=400, overlap=60):
                out.append(IndexedChunk(c.id, doc.id, c.index_text, doc.corpus, doc.language, None, None, {}))
    assert len(out) > 2 * qe.SEAL_EVERY
    return out


def _write(engine: qe.QdrantEdgeEngine, chunks: list[IndexedChunk], vectors: np.ndarray | None = None) -> None:
    for i in range(0, len(chunks), 1000):
        engine.upsert(chunks[i : i + 1000], None if vectors is None else vectors[i : i + 1000])


def test_the_hipe_ingest_is_left_in_sealed_segments(hipe_collection):
    # 6.6k chunks without dense vectors: one segment that never sealed before the seal vector
    layout = qe.segment_layout(hipe_collection.collection.path / "index")
    assert layout["sealed"] >= 1
    assert layout["appendable"] <= 1


def test_a_long_write_seals_as_it_goes_and_optimize_seals_the_rest(tmp_path, hipe_chunks):
    engine = qe.QdrantEdgeEngine(tmp_path / "index", None)
    _write(engine, hipe_chunks)  # no optimize() call: the writes seal every SEAL_EVERY points themselves
    assert engine.layout()["sealed"] >= len(hipe_chunks) // qe.SEAL_EVERY - 1
    engine.optimize()
    assert engine.count() == len(hipe_chunks)
    engine.close()
    reopened = qe.QdrantEdgeEngine(tmp_path / "index", None)
    layout = reopened.layout()
    assert layout["appendable"] == 1 and layout["sealed"] >= len(hipe_chunks) // qe.SEAL_EVERY
    assert reopened.count() == len(hipe_chunks)
    assert reopened.bm25("conseil fédéral", 5)
    reopened.close()


# -- a shard written by the TRACE before sealing (commit 8e1ddc3) -----------------------------------------


def test_dense_vectors_switch_the_segment_cap_to_their_weight(tmp_path, hipe_chunks):
    chunks = hipe_chunks[:8000]
    dim = 8
    engine = qe.QdrantEdgeEngine(tmp_path / "index", dim)
    _write(engine, chunks)  # lexical first, as `ingest --no-dense` does
    engine.optimize()

    def persisted() -> dict:
        return json.loads((tmp_path / "index" / "edge_config.json").read_text())["optimizers"]

    assert persisted()["max_segment_size"] == qe._optimizers(None)["max_segment_size"]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(chunks), dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for i in range(0, len(chunks), 1000):  # then `embed`
        engine.set_vectors([c.chunk_id for c in chunks[i : i + 1000]], vectors[i : i + 1000])
    engine.optimize()
    assert persisted()["max_segment_size"] == qe._optimizers(dim)["max_segment_size"]
    assert engine.layout()["sealed"] >= 1
    hits = engine.dense(vectors[17], 3)
    assert hits[0].chunk_id == chunks[17].chunk_id
    engine.close()


def test_segment_layout_reads_the_segment_files(tmp_path):
    engine = qe.QdrantEdgeEngine(tmp_path / "index", None)
    assert engine.layout() == {"segments": 1, "sealed": 0, "appendable": 1}
    engine.close()
    assert qe.segment_layout(tmp_path / "missing") == {"segments": 0, "sealed": 0, "appendable": 0}


def test_the_segment_cap_is_the_collections_setting(tmp_path, hipe_dir):
    """`engine.segment_chunks` reaches the shard's optimizer (merges stop there; benchmarks/results/scale.md
    measures what fewer, larger segments gain), and changes nothing a search finds."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings

    source = next(hipe_dir.rglob("HIPE-2022-v2.1-sonar-dev-de.tsv"))
    found = {}
    for cap in (12_500, 200_000):
        settings = load_settings(engine={"segment_chunks": cap, "segments": 2 if cap > 12_500 else 8})
        path = tmp_path / str(cap)
        with Collection.open(path, settings, mode="write", create=True, embed_model="none") as col:
            col.ingest(read_documents(source, "hipe"), dense=False)
            found[cap] = col.engine.bm25("Berlin", 10)
        persisted = json.loads((path / "index" / "edge_config.json").read_text(encoding="utf-8"))["optimizers"]
        assert persisted == {**persisted, **qe._optimizers(None, cap, 2 if cap > 12_500 else 8)}
    assert found[12_500] == found[200_000] and found[12_500]
