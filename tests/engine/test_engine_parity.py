"""The embedded engine (tantivy) and the cluster engine (on qdrant-client's local mode) rank real HIPE-2022 chunks
alike, as closely as their two known differences allow (`benchmarks/engine_parity.py`, which runs the same
comparison larger and writes its figures):
- where both analysers merge a query's words with the same words of a field's chunks, the field matches the same
  chunks, with the same term statistics, and each chunk's tantivy score is its Qdrant score times 1 to 9/8 (tantivy
  stores a chunk's length rounded down, by less than 1/9, beyond 40 tokens);
- where they do not (two Snowball implementations stem some words apart), the words are known to be merged apart.
Counts under filters and the dense top 10 (exact search on both sides) are the same."""

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
from tracerag.engine import EngineHit, IndexedChunk  # noqa: E402
from tracerag.engine.embedded import EmbeddedEngine  # noqa: E402
from tracerag.engine.qdrant_server import QdrantServerEngine  # noqa: E402

_spec = importlib.util.spec_from_file_location("engine_parity", REPO / "benchmarks" / "engine_parity.py")
assert _spec is not None and _spec.loader is not None
parity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(parity)


def _fr(*texts: str) -> list[IndexedChunk]:
    return [IndexedChunk(f"d{i}#0", f"d{i}", t, "c", "fr", None, None, {}) for i, t in enumerate(texts)]


def test_the_comparison_tells_where_the_analysers_stem_apart():
    """Qdrant's French stemmer makes "val" of "Valais" (as of a verb in -ais), tantivy's does not: in a field holding
    both words neither agrees, and a search for either is not held to the bound; in one without "val", "Valais"
    agrees."""
    both = parity.Analyses(_fr("Le Valais.", "Un val.", "La ville."))
    assert (both.agrees("Valais", "fr"), both.agrees("val", "fr"), both.agrees("ville", "fr")) == (False, False, True)
    assert not both.query_agrees("Valais ville", "fr")
    assert parity.Analyses(_fr("Le Valais et la ville.")).agrees("Valais", "fr")


def test_the_bound_holds_scores_to_tantivys_rounding_of_lengths():
    hit = EngineHit
    assert parity.check_field([hit("a", "a", 1.1)], [hit("a", "a", 1.0)], 10) == []
    assert parity.check_field([hit("a", "a", 1.2)], [hit("a", "a", 1.0)], 10) != []  # more than 9/8
    assert parity.check_field([hit("a", "a", 0.9)], [hit("a", "a", 1.0)], 10) != []  # rounded down: never lower
    assert parity.check_field([hit("a", "a", 1.0)], [hit("b", "b", 1.0)], 10) == ["other chunks matched"]
    assert parity.check_field([hit("a", "a", 1.0)], [hit("b", "b", 1.0)], 1) == []  # k reached: the cut may differ


@pytest.mark.needs_data("hipe2022")
def test_both_engines_rank_real_chunks_alike(tmp_path: Path):
    chunks, bench = parity.chunks_of(require_datasets("hipe2022"), 200, tmp_path)
    assert len({c.language for c in chunks}) >= 3
    analyses = parity.Analyses(chunks)
    vectors = np.random.default_rng(0).standard_normal((len(chunks), 16)).astype(np.float32)
    embedded = EmbeddedEngine(tmp_path / "embedded", 16, query_tf=True, writer=True)
    local = QdrantServerEngine(
        QdrantClient(":memory:"), "parity", 16, settings=EngineSettings(), url=":memory:", query_tf=True, create=True
    )
    embedded.upsert(chunks, vectors)
    embedded.optimize()
    local.upsert(chunks, vectors)
    compared = 0
    for kind, text, flt in parity.queries_of(bench, chunks, 30, random.Random(1)):
        search = "phrase" if kind == "phrase" else "bm25"
        a, b = getattr(embedded, search)(text, 100, flt), getattr(local, search)(text, 100, flt)
        for field in set(a) | set(b):
            if not analyses.query_agrees(text, field):
                continue  # two stemmers: benchmarks/engine_parity.py counts how often
            assert field in a and field in b, (kind, text, field)
            assert parity.check_field(a[field], b[field], 100) == [], (kind, text, field)
            compared += 1
        assert parity.stats_problems(analyses, text, embedded.field_stats(text), local.field_stats(text)) == []
        assert embedded.count(flt) == local.count(flt)
    assert compared >= 30  # most queries find something: the comparison is not of empty lists
    for v in np.random.default_rng(1).standard_normal((10, 16)).astype(np.float32):
        assert [h.chunk_id for h in embedded.dense(v, 10)] == [h.chunk_id for h in local.dense(v, 10)]
    embedded.close()
    local.close()
