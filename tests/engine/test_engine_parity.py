"""The embedded engine and the cluster engine (on qdrant-client's local mode) rank real HIPE-2022 chunks the same:
the same chunks in the same order, the same scores to float32 rounding, the same term statistics, for entity
queries, queries that repeat a word and phrases, with and without filters. `benchmarks/engine_parity.py` runs the
same comparison larger (602 chunks, 240 queries: no ranking differs) and writes its figures."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("qdrant_client", reason="qdrant-client is not installed (pip install 'tracerag[qdrant]')")

from qdrant_client import QdrantClient  # noqa: E402

from tests.conftest import REPO, require_datasets  # noqa: E402
from tracerag.config import EngineSettings  # noqa: E402
from tracerag.engine.qdrant_edge import QdrantEdgeEngine  # noqa: E402
from tracerag.engine.qdrant_server import QdrantServerEngine  # noqa: E402

_spec = importlib.util.spec_from_file_location("engine_parity", REPO / "benchmarks" / "engine_parity.py")
assert _spec is not None and _spec.loader is not None
parity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(parity)


@pytest.mark.needs_data("hipe2022")
def test_both_engines_rank_real_chunks_the_same(tmp_path: Path):
    chunks, bench = parity.chunks_of(require_datasets("hipe2022"), 200, tmp_path)
    assert len({c.language for c in chunks}) >= 3
    vectors = np.random.default_rng(0).standard_normal((len(chunks), 16)).astype(np.float32)
    edge = QdrantEdgeEngine(tmp_path / "edge", 16, query_tf=True)
    local = QdrantServerEngine(
        QdrantClient(":memory:"), "parity", 16, settings=EngineSettings(), url=":memory:", query_tf=True, create=True
    )
    edge.upsert(chunks, vectors)
    edge.optimize()
    local.upsert(chunks, vectors)
    compared = 0
    for kind, text, flt in parity.queries_of(bench, chunks, 30, random.Random(1)):
        search = "phrase" if kind == "phrase" else "bm25"
        a, b = getattr(edge, search)(text, 100, flt), getattr(local, search)(text, 100, flt)
        assert sorted(a) == sorted(b), text
        for field in a:
            assert parity.same_ranking(a[field], b[field]), (kind, text, field)
            assert [h.score for h in a[field]] == pytest.approx([h.score for h in b[field]], rel=1e-5)
            compared += 1
        assert edge.field_stats(text) == local.field_stats(text), text
        assert edge.count(flt) == local.count(flt)
    assert compared >= 40  # most queries find something: the comparison is not of empty lists
    for v in np.random.default_rng(1).standard_normal((10, 16)).astype(np.float32):
        assert [h.chunk_id for h in edge.dense(v, 10)] == [h.chunk_id for h in local.dense(v, 10)]
    edge.close()
