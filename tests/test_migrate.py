"""`tracerag migrate` on real HIPE-2022 documents with vectors (an embeddings endpoint played by
`tests/fakes/embeddings_server.py`); both directions make the index again from the document store, nothing
re-embedded.

To the embedded engine: a collection made by the previous one (Qdrant Edge: its manifest says "qdrant-edge", or
no engine) is refused by search, info and ingest with what to run; `tracerag migrate -c DIR` converts it, after
which it answers as a collection built directly does, with nothing lost; a run killed in the middle of its swap is
finished (or its build done again) by the next one.

To a Qdrant server (`tests/fakes/qdrant_server.py` over real HTTP): the stored chunks and vectors moved, searches
answering as a collection ingested straight into the server does, an interruption resumed from the checkpoint, a
collection changed meanwhile or a server that lost points refused, and collection.toml switched only once the
counts agree."""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("qdrant_client", reason="qdrant-client is not installed (pip install 'tracerag[qdrant]')")

from tests.conftest import require_datasets  # noqa: E402
from tests.fakes.embeddings_server import FakeEmbeddings  # noqa: E402
from tests.fakes.qdrant_server import FakeQdrant  # noqa: E402
from tracerag.cli import app  # noqa: E402
from tracerag.collection import STATE_DIR, Collection, write_manifest  # noqa: E402
from tracerag.config import Settings, load_settings  # noqa: E402
from tracerag.errors import CollectionError, EngineError  # noqa: E402
from tracerag.ingest import read_documents  # noqa: E402
from tracerag.migrate import CHECKPOINT, migrate_to_embedded, migrate_to_server  # noqa: E402
from tracerag.model import Filter  # noqa: E402

FILES = ("HIPE-2022-v2.1-hipe2020-dev-fr.tsv", "HIPE-2022-v2.1-hipe2020-dev-de.tsv")
QUERIES = ["grève des ouvriers", "Regierung Berlin", "le conseil fédéral", "Paris Paris Londres"]
PAGE = 40  # points per page: several pages for the interruption tests
pytestmark = pytest.mark.needs_data("hipe2022")
runner = CliRunner()


class Stop(Exception):
    """An interruption in the middle of a migration (as Ctrl-C would be)."""


@pytest.fixture(scope="module")
def servers():
    with FakeEmbeddings(dim=16) as embeddings, FakeQdrant() as qdrant:
        yield embeddings, qdrant


def settings_for(embeddings: FakeEmbeddings, **engine: object) -> Settings:
    return load_settings(embed={"model": "openai:fake-embed", "base_url": embeddings.base_url}, engine=engine)


def records(documents: int):
    root = require_datasets("hipe2022") / "hipe2022"
    for name in FILES:
        yield from (
            r for _, r in zip(range(documents // len(FILES)), read_documents(root / name, "hipe"), strict=False)
        )


def built(path: Path, settings: Settings, documents: int = 40) -> Path:
    """A collection of real HIPE documents, French and German, with 16-d vectors (where `settings.engine` says)."""
    with Collection.open(path, settings, mode="write", create=True) as col:
        col.ingest(records(documents), dense=True)
    return path


def manifest(path: Path) -> dict:
    return tomllib.loads((path / "collection.toml").read_text(encoding="utf-8"))


def searches(path: Path, settings: Settings) -> dict[str, object]:
    """What the collection answers: each query's BM25 and phrase hits per field, dense hits, counts, field stats."""
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
        found["count with vectors"] = engine.count_with_vectors()
        found["count 1800s"] = engine.count(Filter(date_from="1800-01-01", date_to="1899-12-31"))
        found["stats"] = engine.field_stats("grève Regierung")
    return found


def held(path: Path, settings: Settings) -> dict[str, int]:
    """What the store holds: a conversion loses none of it."""
    with Collection.open(path, settings, mode="read") as col:
        return {
            "documents": col.store.count_documents(),
            "chunks": col.store.count_chunks(),
            "without vectors": col.store.count_chunks(without_vectors=True),
        }


def tracerag(*args: object, env: dict[str, str]):
    result = runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "300", **env})
    result.said = " ".join(result.output.split())  # what it said, whatever the lines it was wrapped into
    return result


# -- to the embedded engine ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def direct(servers, tmp_path_factory) -> Path:
    """A collection built directly by this engine: what a converted one must answer as. Tests do not change it."""
    embeddings, _ = servers
    return built(tmp_path_factory.mktemp("direct") / "hipe", settings_for(embeddings))


def old_index(index: Path) -> None:
    """Files as Qdrant Edge left them (a shard's segments and WAL): this engine never reads them."""
    (index / "segments" / "0b3c").mkdir(parents=True)
    (index / "segments" / "0b3c" / "segment.json").write_text('{"version": 0}', encoding="utf-8")
    (index / "wal").mkdir()
    (index / "wal" / "open-1").write_bytes(b"\0" * 4096)
    (index / "edge_config.json").write_text("{}", encoding="utf-8")


def made_by_the_old_engine(source: Path, dest: Path, *, engine: str | None = "qdrant-edge") -> Path:
    """A copy of `source` as the previous engine left it: its store, its manifest naming that engine (or no
    engine, as before the server engine existed), and that engine's index in index/."""
    shutil.copytree(source, dest)
    shutil.rmtree(dest / "index")
    old_index(dest / "index")
    recorded = manifest(dest)
    recorded["collection"].pop("engine")
    if engine is not None:
        recorded["collection"]["engine"] = engine
    write_manifest(dest / "collection.toml", recorded)
    return dest


def test_an_old_collection_is_refused_until_migrated_then_answers_as_one_built_directly(servers, direct, tmp_path):
    embeddings, _ = servers
    settings = settings_for(embeddings)
    env = {"TRACERAG_EMBED__BASE_URL": embeddings.base_url}
    old = made_by_the_old_engine(direct, tmp_path / "old")
    before = {str(p.relative_to(old)): p.read_bytes() for p in (old / "index").rglob("*") if p.is_file()}
    wanted = f"`tracerag migrate -c {old}` converts it"
    for command in (("search", "conseil"), ("info",), ("ingest", require_datasets("hipe2022") / "hipe2022" / FILES[0])):
        out = tracerag(*command, "-c", old, env=env)
        assert out.exit_code == 2, (command, out.output)
        assert "previous embedded engine (Qdrant Edge)" in out.said and wanted in out.said, (command, out.output)
    for mode in ("read", "write"):
        with pytest.raises(CollectionError, match=re.escape(wanted)):
            Collection.open(old, settings, mode=mode)
    assert manifest(old)["collection"]["engine"] == "qdrant-edge"  # the refusals touched nothing
    assert {str(p.relative_to(old)): p.read_bytes() for p in (old / "index").rglob("*") if p.is_file()} == before

    embedded = len(embeddings.inputs)
    out = tracerag("migrate", "-c", old, env=env)
    assert out.exit_code == 0, out.output
    stored = held(direct, settings)
    assert f"{old}: index made again from the store, {stored['chunks']:,} chunks" in out.said
    assert "counts checked; the old index removed" in out.said
    assert len(embeddings.inputs) == embedded  # nothing embedded again
    recorded, reference = manifest(old), manifest(direct)
    assert recorded["collection"]["engine"] == "tantivy"
    assert recorded == reference  # the rest of the manifest (id, model, chunking) as it was
    assert sorted(p.name for p in old.iterdir() if p.name.startswith("index")) == ["index"]
    assert not (old / "index" / "segments").exists() and (old / "index" / "text").is_dir()

    assert held(old, settings) == stored  # nothing lost: documents, chunks, vectors
    found, expected = searches(old, settings), searches(direct, settings)
    assert found["count"] == stored["chunks"] and found["count with vectors"] == stored["chunks"]
    assert found == expected  # the same chunks, the same order, the same scores (to 4 places)
    out = tracerag("search", "conseil fédéral", "-c", old, "--json", env=env)
    assert out.exit_code == 0 and json.loads(out.stdout)["results"], out.output

    again = tracerag("migrate", "-c", old, env=env)
    assert again.exit_code == 2 and "already tantivy's: nothing to convert" in again.said


def half_built(index: Path) -> None:
    """The beginning of an index a run was building when it was killed."""
    (index / "text" / "fr").mkdir(parents=True)
    (index / "text" / "fr" / "half.idx").write_bytes(b"\1" * 100)


# Where a killed run left the folders ("built": the index it had built): after its second rename (before
# collection.toml said so), between its build and its swap, during its build, after its first rename.
KILLED = {
    "between the swap's renames": {"index.old": "old", "index": "built"},
    "before the swap": {"index": "old", "index.new": "built"},
    "during the build": {"index": "old", "index.new": "half built"},
    "after the first rename": {"index.old": "old", "index.new": "built"},
}


@pytest.mark.parametrize("moment", KILLED)
def test_a_migration_killed_midway_is_finished_by_the_next_run(servers, direct, tmp_path, moment):
    embeddings, _ = servers
    settings = settings_for(embeddings)
    old = made_by_the_old_engine(direct, tmp_path / "old", engine=None)  # made before engines were named
    shutil.rmtree(old / "index")
    for name, what in KILLED[moment].items():
        if what == "built":  # the same store gives the same index
            shutil.copytree(direct / "index", old / name)
        else:
            (old_index if what == "old" else half_built)(old / name)
    with pytest.raises(CollectionError, match="tracerag migrate"):  # until the manifest says the new engine
        Collection.open(old, settings, mode="read")

    report = migrate_to_embedded(old, settings)
    assert report.finished_swap == (moment == "between the swap's renames")
    assert report.chunks == (0 if report.finished_swap else held(direct, settings)["chunks"])
    assert manifest(old)["collection"]["engine"] == "tantivy"
    assert sorted(p.name for p in old.iterdir() if p.name.startswith("index")) == ["index"]
    assert held(old, settings) == held(direct, settings)
    assert searches(old, settings) == searches(direct, settings)


def test_a_migration_killed_after_its_manifest_leaves_nothing_behind_after_the_next_run(servers, direct, tmp_path):
    """Killed after collection.toml named the new engine, before the old index was removed: the collection is
    already converted, and the next run removes what the old engine left."""
    embeddings, _ = servers
    settings = settings_for(embeddings)
    converted = tmp_path / "converted"
    shutil.copytree(direct, converted)
    old_index(converted / "index.old")
    report = migrate_to_embedded(converted, settings)
    assert report.finished_swap and report.chunks == 0
    assert sorted(p.name for p in converted.iterdir() if p.name.startswith("index")) == ["index"]
    assert searches(converted, settings) == searches(direct, settings)


# -- to a Qdrant server ------------------------------------------------------------------------------------------


def straight_to(qdrant: FakeQdrant, embeddings: FakeEmbeddings, path: Path, name: str, documents: int) -> Path:
    """The same documents ingested straight into the server: what a moved index must answer as."""
    return built(path, settings_for(embeddings, kind="qdrant", url=qdrant.url, collection=name), documents)


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
    assert pages == [PAGE, 2 * PAGE, 3 * PAGE]
    checkpoint = json.loads((path / STATE_DIR / CHECKPOINT).read_text())
    assert checkpoint["points"] == 3 * PAGE and checkpoint["offset"] == 3 and not checkpoint["done"]
    assert manifest(path)["collection"]["engine"] == "tantivy"
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

    recorded = manifest(path)
    assert recorded["collection"]["engine"] == "qdrant" and recorded["collection"]["id"]
    assert recorded["qdrant"] == {
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
    after = searches(path, settings)
    # What does not depend on the engine's BM25 is what it was: counts, filters, term statistics, dense hits.
    same = ("count", "count with vectors", "count 1800s", "stats", "dense", "dense fr")
    assert {k: after[k] for k in same} == {k: before[k] for k in same}
    # The words are Qdrant's BM25 now (exact document lengths, not tantivy's one-byte norms): the moved index
    # answers as one ingested straight into the server, chunk for chunk and score for score.
    assert after == searches(straight_to(qdrant, embeddings, tmp_path / "straight", "straight", 40), settings)

    with pytest.raises(CollectionError, match="already on"):
        migrate_to_server(path, settings, url=qdrant.url)


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
    with pytest.raises(CollectionError, match=r"changed since the interrupted migration.*--restart"):
        migrate_to_server(path, settings, url=qdrant.url, page=PAGE)
    with pytest.raises(
        CollectionError, match=re.escape(f"interrupted migration to {qdrant.url}, not http://elsewhere:6333")
    ):
        migrate_to_server(path, settings, url="http://elsewhere:6333", page=PAGE)
    report = migrate_to_server(path, settings, url=qdrant.url, page=PAGE, restart=True)
    assert not report.resumed and report.moved_now == report.points
    assert report.collection == first  # the same name, made again from nothing
    with Collection.open(path, settings, mode="read") as col:
        assert col.engine.count() == col.store.count_chunks() == report.points


def test_a_failure_in_the_first_page_is_resumed_not_refused(servers, tmp_path):
    """The server collection is checkpointed as soon as it is made: a page that failed half-written (its first
    request went, its second did not) is written again by the next run, which an earlier version refused (the
    server collection held points, no checkpoint said whose)."""
    embeddings, qdrant = servers
    settings = settings_for(embeddings, retries=0, batch_points=PAGE // 2)
    path = built(tmp_path / "hipe", settings, documents=20)
    qdrant.fail("503", on="PUT /collections/first_page/points", after=1)
    with pytest.raises(EngineError, match="503"):
        migrate_to_server(path, settings, url=qdrant.url, collection="first_page", page=PAGE)
    assert json.loads((path / STATE_DIR / CHECKPOINT).read_text())["offset"] == 0
    report = migrate_to_server(path, settings, url=qdrant.url, page=PAGE)
    assert report.resumed and report.collection == "first_page" and report.moved_now == report.points
    with Collection.open(path, settings, mode="read") as col:
        assert col.engine.count() == col.store.count_chunks() == report.points


def test_a_server_that_lost_points_leaves_the_collection_where_it_was(servers, tmp_path):
    embeddings, qdrant = servers
    settings = settings_for(embeddings)
    path = built(tmp_path / "hipe", settings, documents=20)
    with pytest.raises(Stop):
        migrate_to_server(path, settings, url=qdrant.url, page=PAGE, progress=lambda *_: (_ for _ in ()).throw(Stop()))
    name = json.loads((path / STATE_DIR / CHECKPOINT).read_text())["collection"]
    with qdrant._lock:  # the server loses what was written (a replica gone)
        found, _ = qdrant.local.scroll(name, limit=5)
        qdrant.local.delete(name, points_selector=[r.id for r in found])
    with pytest.raises(CollectionError, match=r"does not add up.*points: (\d+) stored, \1 moved, (\d+) on the server"):
        migrate_to_server(path, settings, url=qdrant.url, page=PAGE)
    assert manifest(path)["collection"]["engine"] == "tantivy"
    report = migrate_to_server(path, settings, url=qdrant.url, page=PAGE, restart=True)
    assert report.points > 0 and not report.resumed


def test_a_read_only_collection_on_a_server_needs_no_private_copy(servers, tmp_path, monkeypatch):
    embeddings, qdrant = servers
    settings = settings_for(embeddings).model_copy(update={"cache_dir": tmp_path / "cache"})
    path = built(tmp_path / "hipe", settings, documents=10)
    migrate_to_server(path, settings, url=qdrant.url)
    monkeypatch.setattr("tracerag.collection.opening.storage_problem", lambda _path: "on read-only storage")
    with Collection.open(path, settings, mode="read") as col:
        assert col.read_only == "on read-only storage"
        assert col.engine.count() == col.store.count_chunks()
        assert col.private_index is None and col.activity()["private_index"] is None
        assert col.stats()["engine"]["kind"] == "qdrant"
    assert not (tmp_path / "cache" / "readonly").exists()  # where a private copy of an embedded index would go


def test_the_stored_vectors_and_metadata_are_what_the_server_holds(servers, tmp_path):
    """Each point on the server is a stored chunk: its vector the store's (normalised, as cosine points are), its
    payload the chunk's document, language and dates."""
    embeddings, qdrant = servers
    settings = settings_for(embeddings)
    path = built(tmp_path / "hipe", settings, documents=10)
    with Collection.open(path, settings, mode="read") as col:
        chunks = col.store.chunks_of(col.store.document_ids())
        vectors = col.store.vectors_by_hash(c.text_hash for c in chunks)
        stored = {c.id: (c.doc_id, vectors[c.text_hash]) for c in chunks}
    migrate_to_server(path, settings, url=qdrant.url)
    with Collection.open(path, settings, mode="read") as col:
        points, after = col.engine.scroll_points(None, 1000)
    assert after is None and len(points) == len(stored)
    for p in points:
        doc_id, vector = stored[p.payload["chunk_id"]]
        assert p.payload["doc_id"] == doc_id
        assert np.allclose(p.dense, vector / np.linalg.norm(vector), atol=1e-6)
