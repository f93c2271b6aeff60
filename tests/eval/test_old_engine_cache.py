"""An eval collection the harness built with the previous embedded engine (Qdrant Edge) is the harness's own: the
next eval converts it from its store, saying so on stderr, instead of stopping at the refusal a user's collection
gets; nothing is ingested or embedded again. A tiny collection in a temporary folder, never the real cache."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from tracerag.collection import Collection, write_manifest
from tracerag.config import load_settings
from tracerag.errors import CollectionError
from tracerag.eval.datasets import Benchmark
from tracerag.eval.runner import build_collection, made_by_old_engine
from tracerag.model import Document

DOCS = [
    Document("d0", "La grève des mineurs de Carmaux continue malgré la pluie."),
    Document("d1", "Die Arbeiter streiken in Berlin seit Montag."),
    Document("d2", "The council met in Geneva about the new railway."),
]


def answers(col: Collection) -> dict[str, object]:
    vector = col.embedder.encode_queries(["grève des mineurs"])[0]
    return {
        "bm25": {f: [h.chunk_id for h in hits] for f, hits in col.engine.bm25("grève Arbeiter council", 5).items()},
        "dense": [h.chunk_id for h in col.engine.dense(vector, 3)],
        "count": col.engine.count(),
        "with vectors": col.engine.count_with_vectors(),
    }


def as_made_by_the_old_engine(path: Path) -> None:
    """collection.toml naming Qdrant Edge, and its files in index/ (segments, WAL) where this engine's were."""
    manifest = tomllib.loads((path / "collection.toml").read_text(encoding="utf-8"))
    manifest["collection"]["engine"] = "qdrant-edge"
    write_manifest(path / "collection.toml", manifest)
    shutil.rmtree(path / "index")
    (path / "index" / "segments" / "0").mkdir(parents=True)
    (path / "index" / "segments" / "0" / "segment.json").write_text("{}", encoding="utf-8")
    (path / "index" / "wal").mkdir()
    (path / "index" / "wal" / "open-1").write_bytes(b"\0" * 512)


def test_an_eval_collection_of_the_old_engine_is_converted_with_its_vectors(tmp_path: Path, capsys) -> None:
    settings = load_settings()
    bench = Benchmark("tiny", "", DOCS, {}, {})
    col, report = build_collection(bench, tmp_path, settings, dense=True)
    with col:
        path, before = col.path, answers(col)
    assert report.embedded == before["count"] == before["with vectors"] > 0
    as_made_by_the_old_engine(path)
    assert made_by_old_engine(path)
    with pytest.raises(CollectionError, match="tracerag migrate"):  # a user's collection would stop here
        Collection.open(path, settings, mode="read")
    capsys.readouterr()

    col, report = build_collection(bench, tmp_path, settings, dense=True)
    with col:
        after = answers(col)
    said = capsys.readouterr().err
    assert f"{path}: this eval collection was built by the previous embedded engine (Qdrant Edge)" in said
    assert "the harness's own cache" in said
    assert report.added == report.updated == report.embedded == 0 and report.unchanged == len(DOCS)
    assert after == before
    assert not made_by_old_engine(path) and not (path / "index" / "segments").exists()

    col, _ = build_collection(bench, tmp_path, settings, dense=True)  # converted once: the next eval says nothing
    col.close()
    assert capsys.readouterr().err == ""


def test_a_manifest_without_an_engine_predates_the_server_engine(tmp_path: Path) -> None:
    (tmp_path / "collection.toml").write_text('[collection]\nid = "x"\n', encoding="utf-8")
    assert made_by_old_engine(tmp_path)
    (tmp_path / "collection.toml").write_text('[collection]\nengine = "tantivy"\n', encoding="utf-8")
    assert not made_by_old_engine(tmp_path)
    (tmp_path / "collection.toml").write_text('[collection]\nengine = "qdrant"\n', encoding="utf-8")
    assert not made_by_old_engine(tmp_path)
    assert not made_by_old_engine(tmp_path / "nothing here")  # a collection still to build
