"""The shared engine passes the engine contract as a client: every read goes over the owner's socket (JSON on
the wire), every write to the owner. Two `SharedEngine`s in one process exclude each other as two processes do
(flock is per open file), so the owner's server thread and the client are real, only in one process."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.engine.test_contract import CHUNKS, DIM, VECTORS, EngineContract
from tracerag.engine.qdrant_edge import QdrantEdgeEngine
from tracerag.engine.shared import SharedEngine
from tracerag.errors import ReadOnlyError
from tracerag.model import Filter


def shared(path: Path, dim: int | None, *, writer: bool, notes: list[str] | None = None) -> SharedEngine:
    state = path.with_name(path.name + ".state")
    state.mkdir(parents=True, exist_ok=True)
    return SharedEngine(
        path,
        state_dir=state,
        open_engine=lambda: QdrantEdgeEngine(path, dim, query_tf=True),
        writer=writer,
        label=str(path),
        patience=20.0,
        notify=(notes if notes is not None else []).append,
        dim=dim,
    )


class OwnerAndClient:
    """Writes go to a writer that owns the shard; reads to a reader that is its client."""

    def __init__(self, path: Path, dim: int | None):
        self.owner = shared(path, dim, writer=True)
        self.owner.attach()
        self.client = shared(path, dim, writer=False)
        self.dim = dim

    def __getattr__(self, name: str):
        if name in ("upsert", "set_vectors", "delete", "flush", "optimize"):
            return getattr(self.owner, name)
        return getattr(self.client, name)

    def close(self) -> None:
        self.client.close()
        self.owner.close()


class TestSharedEngineClient(EngineContract):
    def make_engine(self, path: Path, dim: int | None):
        return OwnerAndClient(path, dim)

    def test_reads_really_go_over_the_socket(self, engine):
        assert engine.client.count() == len(CHUNKS)
        assert engine.owner.role == "owner" and engine.client.role == "client"


def test_a_reader_cannot_write(tmp_path):
    engine = shared(tmp_path / "index", DIM, writer=True)
    engine.upsert(CHUNKS, VECTORS)
    reader = shared(tmp_path / "index", DIM, writer=False)
    with pytest.raises(ReadOnlyError, match="open for reading"):
        reader.delete(["fr1"])
    reader.close()
    engine.close()


def test_a_reader_becomes_owner_when_the_owner_closes(tmp_path):
    writer = shared(tmp_path / "index", DIM, writer=True)
    writer.upsert(CHUNKS, VECTORS)
    writer.flush()
    reader = shared(tmp_path / "index", DIM, writer=False)
    assert reader.count(Filter(corpora=("b",))) == 3 and reader.role == "client"
    writer.close()
    assert [h.chunk_id for h in reader.bm25("Liverpool", 5)["en"]] == ["en2#0"]
    assert reader.role == "owner"
    reader.close()


def test_a_writer_takes_the_index_over_from_a_reader_that_owns_it(tmp_path):
    path = tmp_path / "index"
    first = shared(path, DIM, writer=True)
    first.upsert(CHUNKS, VECTORS)
    first.close()
    reader = shared(path, DIM, writer=False)
    assert reader.count() == len(CHUNKS) and reader.role == "owner"
    notes: list[str] = []
    writer = shared(path, DIM, writer=True, notes=notes)
    writer.attach()  # asks the reader to hand over, waits for it
    assert writer.role == "owner" and reader.role == "detached"
    writer.delete(["fr1"])
    # the former owner now asks the writer, and sees its write at once
    assert reader.count() == len(CHUNKS) - 2 and reader.role == "client"
    assert len(reader.dense(np.ones(DIM, dtype=np.float32), 100)) == len(CHUNKS) - 2
    writer.close()
    reader.close()
