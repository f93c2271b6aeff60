"""`migrate_to_server` on real HIPE-2022 documents with vectors (an embeddings endpoint played by
`tests/fakes/embeddings_server.py`), to a Qdrant server played by `tests/fakes/qdrant_server.py` over real HTTP:
points, vectors and payload moved as stored (no text is embedded again), searches answering the same after,
an interruption resumed from the checkpoint, a collection changed meanwhile or a server that lost points refused,
and collection.toml switched only once the counts agree."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("qdrant_client", reason="qdrant-client is not installed (pip install 'tracerag[qdrant]')")

from tests.conftest import require_datasets  # noqa: E402
from tests.fakes.embeddings_server import FakeEmbeddings  # noqa: E402
from tests.fakes.qdrant_server import FakeQdrant  # noqa: E402
from tracerag.collection import STATE_DIR, Collection  # noqa: E402
from tracerag.config import Settings, load_settings  # noqa: E402
from tracerag.ingest import read_documents  # noqa: E402
from tracerag.migrate import CHECKPOINT, migrate_to_server  # noqa: E402
from tracerag.model import Filter  # noqa: E402

FILES = ("HIPE-2022-v2.1-hipe2020-dev-fr.tsv", "HIPE-2022-v2.1-hipe2020-dev-de.tsv")
QUERIES = ["grève des ouvriers", "Regierung Berlin", "le conseil fédéral", "Paris Paris Londres"]
PAGE = 40  # points per scroll: several pages for the interruption tests


class Stop(Exception):
    """An interruption in the middle of a migration (as Ctrl-C would be)."""


@pytest.fixture(scope="module")
def servers():
    with FakeEmbeddings(dim=16) as embeddings, FakeQdrant() as qdrant:
        yield embeddings, qdrant


def settings_for(embeddings: FakeEmbeddings) -> Settings:
    return load_settings(embed={"model": "openai:fake-embed", "base_url": embeddings.base_url})


def built(path: Path, settings: Settings, documents: int = 40) -> Path:
    """An embedded (Qdrant Edge) collection of real HIPE documents, French and German, with 16-d vectors."""
    root = require_datasets("hipe2022") / "hipe2022"
    with Collection.open(path, settings, mode="write", create=True) as col:
        for name in FILES:
            records = read_documents(root / name, "hipe")
            col.ingest((r for _, r in zip(range(documents // len(FILES)), records, strict=False)), dense=True)
    return path


def searches(path: Path, settings: Settings) -> dict[str, object]:
    """What the collection answers: each query's BM25 and phrase hits per field, dense hits, filtered counts."""
    with Collection.open(path, settings, mode="read") as col:
        engine = col.engine
        vector = col.embedder.encode_queries(["grève à Paris"])[0]
        found: dict[str, object] = {}
        for q in QUERIES:
            found[f"bm25 {q}"] = {
                f: [(h.chunk_id, round(h.score, 4)) for h in hits] for f, hits in engine.bm25(q, 20).items()
            }
            found[f"phrase {q}"] = {f: [h.chunk_id for h in hits] for f, hits in engine.phrase(q, 20).items()}
        found["dense"] = [h.chunk_id for h in engine.dense(vector, 20)]
        found["dense fr"] = [h.chunk_id for h in engine.dense(vector, 20, Filter(languages=("fr",)))]
        found["count"] = engine.count()
        found["count 1800s"] = engine.count(Filter(date_from="1800-01-01", date_to="1899-12-31"))
        found["stats"] = engine.field_stats("grève Regierung")
    return found


@pytest.mark.needs_data("hipe2022")
def test_a_migration_interrupted_then_resumed_moves_everything_and_searches_answer_the_same(servers, tmp_path):
    embeddings, qdrant = servers
    settings = settings_for(embeddings)
    path = built(tmp_path / "hipe", settings)
    before = searches(path, settings)
    embedded = len(embeddings.inputs)
    pages: list[int] = []

    def stop_after_three_pages(done: int, total: int) -> None:
        pages.append(done)
        if len(pages) == 3:
            raise Stop

    with pytest.raises(Stop):
        migrate_to_server(path, settings, url=qdrant.url, page=PAGE, progress=stop_after_three_pages)
    checkpoint = json.loads((path / STATE_DIR / CHECKPOINT).read_text())
    assert checkpoint["points"] == 3 * PAGE and checkpoint["offset"] and not checkpoint["done"]
    assert tomllib.loads((path / "collection.toml").read_text())["collection"]["engine"] == "qdrant-edge"
    assert searches(path, settings) == before  # still searched where it was, meanwhile
    upserts = sum(r.startswith("PUT /collections/" + checkpoint["collection"] + "/points?") for r in qdrant.requests)

    notes: list[str] = []
    report = migrate_to_server(path, settings, url=qdrant.url, page=PAGE, notify=notes.append)
    assert report.resumed and report.moved_now == report.points - 3 * PAGE  # the three pages were not sent again
    assert notes and f"{3 * PAGE:,} of {report.points:,} points moved" in notes[0]
    again = sum(r.startswith("PUT /collections/" + report.collection + "/points?") for r in qdrant.requests)
    assert again - upserts == -(-report.moved_now // PAGE)
    assert report.points == before["count"] and report.with_vectors == report.points
    assert sum(report.fields.values()) == report.points and set(report.fields) == {"de", "fr"}
    assert not (path / STATE_DIR / CHECKPOINT).exists()
    assert len(embeddings.inputs) == embedded + 1  # nothing embedded again: only the query of `searches`

    manifest = tomllib.loads((path / "collection.toml").read_text())
    assert manifest["collection"]["engine"] == "qdrant" and manifest["collection"]["id"]
    assert manifest["qdrant"] == {
        "url": qdrant.url,
        "collection": report.collection,
        "shard_number": 1,
        "replication_factor": 1,
        "write_consistency_factor": 1,
        "write_ordering": "weak",
        "batch_points": 256,
        "retries": 5,
        "backoff_s": 0.5,
        "timeout_s": 30.0,
    }
    assert report.collection.startswith("tracerag_hipe_")
    assert searches(path, settings) == before  # the same chunks, the same order, the same scores (to 4 places)

    with pytest.raises(Exception, match="already on"):
        migrate_to_server(path, settings, url=qdrant.url)


@pytest.mark.needs_data("hipe2022")
def test_a_collection_changed_since_the_interruption_is_refused_and_restart_starts_over(servers, tmp_path):
    embeddings, qdrant = servers
    settings = settings_for(embeddings)
    path = built(tmp_path / "hipe", settings, documents=20)
    with pytest.raises(Stop):
        migrate_to_server(path, settings, url=qdrant.url, page=PAGE, progress=lambda *_: (_ for _ in ()).throw(Stop()))
    first = json.loads((path / STATE_DIR / CHECKPOINT).read_text())["collection"]
    root = require_datasets("hipe2022") / "hipe2022"
    with Collection.open(path, settings, mode="write") as col:  # more documents meanwhile
        col.ingest(
            (r for i, r in zip(range(30), read_documents(root / FILES[0], "hipe"), strict=False) if i >= 20), dense=True
        )
    with pytest.raises(Exception, match=r"changed since the interrupted migration.*--restart"):
        migrate_to_server(path, settings, url=qdrant.url, page=PAGE)
    with pytest.raises(Exception, match=re.escape(f"interrupted migration to {qdrant.url}, not http://elsewhere:6333")):
        migrate_to_server(path, settings, url="http://elsewhere:6333", page=PAGE)
    report = migrate_to_server(path, settings, url=qdrant.url, page=PAGE, restart=True)
    assert not report.resumed and report.moved_now == report.points
    assert report.collection == first  # the same name, made again from nothing
    with Collection.open(path, settings, mode="read") as col:
        assert col.engine.count() == col.store.count_chunks() == report.points


@pytest.mark.needs_data("hipe2022")
def test_a_server_that_lost_points_leaves_the_collection_where_it_was(servers, tmp_path):
    embeddings, qdrant = servers
    settings = settings_for(embeddings)
    path = built(tmp_path / "hipe", settings, documents=20)
    with pytest.raises(Stop):
        migrate_to_server(path, settings, url=qdrant.url, page=PAGE, progress=lambda *_: (_ for _ in ()).throw(Stop()))
    name = json.loads((path / STATE_DIR / CHECKPOINT).read_text())["collection"]
    with qdrant._lock:  # the server loses what was written (a replica gone)
        records, _ = qdrant.local.scroll(name, limit=5)
        qdrant.local.delete(name, points_selector=[r.id for r in records])
    with pytest.raises(Exception, match=r"does not add up.*points: (\d+) embedded, \1 moved, (\d+) on the server"):
        migrate_to_server(path, settings, url=qdrant.url, page=PAGE)
    assert tomllib.loads((path / "collection.toml").read_text())["collection"]["engine"] == "qdrant-edge"
    report = migrate_to_server(path, settings, url=qdrant.url, page=PAGE, restart=True)
    assert report.points > 0 and not report.resumed


@pytest.mark.needs_data("hipe2022")
def test_a_read_only_collection_on_a_server_needs_no_private_copy(servers, tmp_path, monkeypatch):
    embeddings, qdrant = servers
    settings = settings_for(embeddings).model_copy(update={"cache_dir": tmp_path / "cache"})
    path = built(tmp_path / "hipe", settings, documents=10)
    migrate_to_server(path, settings, url=qdrant.url)
    monkeypatch.setattr("tracerag.collection.storage_problem", lambda _path: "on read-only storage")
    with Collection.open(path, settings, mode="read") as col:
        assert col.read_only == "on read-only storage"
        assert col.engine.count() == col.store.count_chunks()
        assert col.private_index is None and col.activity()["private_index"] is None
        assert col.stats()["engine"]["kind"] == "qdrant"
    assert not (tmp_path / "cache" / "readonly").exists()  # where a private copy of an embedded index would go


def test_vectors_survive_the_move_exactly(tmp_path):
    """A point's vector on the server is the one Edge held (both store cosine vectors normalised)."""
    from qdrant_client import QdrantClient

    from tests.engine.test_contract import CHUNKS, VECTORS
    from tracerag.config import EngineSettings
    from tracerag.engine.qdrant_edge import QdrantEdgeEngine
    from tracerag.engine.qdrant_server import QdrantServerEngine

    edge = QdrantEdgeEngine(tmp_path / "edge", 4)
    edge.upsert(CHUNKS, VECTORS)
    points, after = edge.scroll_points(None, 100)
    assert after is None and len(points) == len(CHUNKS)
    server = QdrantServerEngine(QdrantClient(":memory:"), "c", 4, settings=EngineSettings(), url="m", create=True)
    server.write_points(points)
    moved, _ = server.scroll_points(None, 100)
    assert {p.id: np.round(p.dense, 6).tolist() for p in moved} == {p.id: np.round(p.dense, 6).tolist() for p in points}
    assert {p.id: p.payload["chunk_id"] for p in moved} == {p.id: p.payload["chunk_id"] for p in points}
    edge.close()
