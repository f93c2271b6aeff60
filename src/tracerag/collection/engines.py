"""Which engine a collection's index is searched and written through: the embedded one in `index/`, opened in
place by the writer and by every reader, or a Qdrant server's; and what a reader finding no index is told.
"""

from __future__ import annotations

from pathlib import Path

from tracerag.collection.layout import MANIFEST, holder_of
from tracerag.collection.manifest import old_engine_message
from tracerag.config import Settings
from tracerag.engine import SearchEngine
from tracerag.engine.embedded import EmbeddedEngine, is_embedded_index
from tracerag.errors import CollectionBusyError, CollectionError
from tracerag.locks import WriterLock


def server_engine(
    path: Path, manifest: dict, settings: Settings, *, api_key: str | None, create: bool = False
) -> SearchEngine:
    """The collection's index on a Qdrant server (engine/qdrant_server.py): no sharing machinery, every process
    talks to the server. `create` makes the server collection and records it in `manifest` (not yet written)."""
    try:
        from tracerag.engine import qdrant_server
    except ImportError as exc:
        raise CollectionError(
            f"{path}'s index is on a Qdrant server, and qdrant-client is not installed ({exc}): "
            "pip install 'tracerag[qdrant]'"
        ) from None
    dim = manifest["embedding"].get("dim")
    if not create:
        return qdrant_server.open_recorded(
            manifest.get("qdrant", {}), dim, settings, api_key=api_key, where=str(path / MANIFEST)
        )
    asked = settings.engine
    assert asked.url is not None  # the settings refuse kind "qdrant" without a url
    name = asked.collection or qdrant_server.server_collection_name(path.name, manifest["collection"]["id"])
    engine = qdrant_server.open_recorded(
        {"url": asked.url, "collection": name}, dim, settings, api_key=api_key, create=True
    )
    manifest["qdrant"] = qdrant_server.record_of(engine)
    return engine


def embedded_engine(path: Path, index: Path, manifest: dict, settings: Settings, *, writer: bool) -> EmbeddedEngine:
    """The collection's embedded engine (engine/embedded.py): the writer makes its folders, a reader opens them."""
    return EmbeddedEngine(
        index,
        manifest["embedding"].get("dim"),
        query_tf=settings.retrieval.query_tf,
        writer=writer,
        dense_ef=settings.engine.dense_ef,
    )


def no_engine(path: Path) -> SearchEngine:
    raise CollectionError(old_engine_message(path))


def missing_index(path: Path, index: Path, watch: WriterLock) -> CollectionError:
    """What a reader finding no index is told: a collection still being made, or one whose index is gone."""
    holder = holder_of(watch)
    if holder is not None:
        return CollectionBusyError(f"{path} is being created by {holder.describe()}; retry shortly")
    return CollectionError(f"{path}: its index is missing ({index}); run `tracerag ingest` into it again")


def reading_engine(
    path: Path,
    manifest: dict,
    settings: Settings,
    watch: WriterLock,
) -> SearchEngine:
    """A reader's embedded engine, opened in place (any number of processes may; the writer's commits show)."""
    index = path / "index"
    if not is_embedded_index(index):
        raise missing_index(path, index, watch)
    return embedded_engine(path, index, manifest, settings, writer=False)
