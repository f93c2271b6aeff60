"""A collection's index made again from its document store (`tracerag migrate`): on a Qdrant server, or in the
embedded engine for a collection made by the previous one (Qdrant Edge). Chunks, vectors and metadata as the store
holds them (the source of truth): nothing is re-chunked or re-embedded, and neither direction reads the old index.

Both hold the writer lock, so nothing changes the collection meanwhile (readers go on searching the index it has).
To a server: pages of chunks in document-id order, each written to the server (idempotent upserts, retried by the
engine); after each page a checkpoint in the collection's state folder (`.tracerag/migrate.json`) records the next
page and what has been moved, so an interrupted migration (Ctrl-C, kill, a server that kept failing) continues where
it stopped when run again. At the end the server's counts are checked against the store's (chunks, chunks with a
vector, chunks per language); only when they agree does collection.toml point at the server. The embedded index
stays in `index/`, unused, for the user to remove.
To the embedded engine: the new index is built in `index.new/` beside the old one, counted against the store, then
put in `index/`'s place and named in collection.toml, in an order a kill at any point leaves recoverable (the next
run finishes a swap it finds half done, or builds again: a build is minutes at thousands of chunks a second).
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tracerag.collection import MANIFEST, OLD_ENGINE, STATE_DIR, Collection, engine_of, write_manifest
from tracerag.config import Settings
from tracerag.engine.embedded import KIND as EMBEDDED
from tracerag.engine.embedded import EmbeddedEngine
from tracerag.engine.points import StoredPoint, payload, point_id, text_field
from tracerag.errors import CollectionError

CHECKPOINT = "migrate.json"


@dataclass
class MigrateReport:
    """What a migration did: where to, what was moved and checked, whether it continued an interrupted one."""

    url: str
    collection: str
    points: int = 0
    with_vectors: int = 0
    fields: dict[str, int] = field(default_factory=dict)  # chunks per language field, as both engines count them
    moved_now: int = 0  # points written by this run (fewer than `points` when it resumed)
    resumed: bool = False
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["seconds"] = round(self.seconds, 2)
        found["points_per_second"] = round(self.moved_now / self.seconds, 1) if self.seconds else None
        return found


def migrate_to_server(
    path: Path,
    settings: Settings,
    *,
    url: str,
    api_key: str | None = None,
    collection: str | None = None,
    restart: bool = False,
    page: int | None = None,
    wait: bool = False,
    progress: Callable[[int, int], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> MigrateReport:
    """Move the embedded index of the collection at `path` to the Qdrant server at `url` (see the module
    docstring). `collection` names the server collection (default: from the collection's id, or the checkpoint's
    when resuming); `restart` drops what an interrupted migration wrote and starts over; `page` points per scroll
    (default: engine.batch_points). `progress(done, total)` after each page; `notify` is told about a resume."""
    from tracerag.engine import qdrant_server  # the `qdrant` extra: only a migration needs it

    start = time.perf_counter()
    # The collection is opened as the embedded one it is: engine.kind = "qdrant" (say, from the environment) asks
    # where a *new* collection goes, and would have the open refuse an embedded one.
    settings = settings.model_copy(update={"engine": settings.engine.model_copy(update={"kind": EMBEDDED})})
    with Collection.open(path, settings, mode="write", wait=wait, api_key=api_key, old_engine=True) as col:
        if col.manifest["collection"].get("engine") == "qdrant":
            where = engine_of(col.path, col.manifest)
            raise CollectionError(f"{path}'s index is already on {where.get('url')} ({where.get('collection')})")
        checkpoint_path = col.path / STATE_DIR / CHECKPOINT
        checkpoint = _read_checkpoint(checkpoint_path)
        total = col.store.count_chunks()
        if checkpoint is not None and not restart:
            _check_resumable(checkpoint, path, url, total)
        collection_id = (checkpoint or {}).get("id") or col.id or uuid.uuid4().hex
        name = (
            (checkpoint or {}).get("collection")
            or collection
            or settings.engine.collection
            or qdrant_server.server_collection_name(col.path.name, collection_id)
        )
        record = {"url": url, "collection": name}
        if checkpoint is not None and restart:  # what the interrupted migration wrote goes
            qdrant_server.delete_recorded(record, settings, api_key=api_key)
            checkpoint = None
        resuming = checkpoint is not None
        server = qdrant_server.open_recorded(record, col.dim, settings, api_key=api_key, create=not resuming)
        try:
            state = checkpoint or {
                "url": url,
                "collection": name,
                "id": collection_id,
                "chunks": total,
                "offset": 0,
                "done": False,
                "points": 0,
                "with_vectors": 0,
                "fields": {},
            }
            if resuming and notify is not None:
                notify(f"continuing the migration to {url} ({name}): {state['points']:,} of {total:,} points moved")
            else:  # the server collection exists now: a run after a failure in the first page resumes it, not makes it
                _write_checkpoint(checkpoint_path, state)
            moved = 0
            size = page or settings.engine.batch_points
            for n, chunks in enumerate(_pages(col, size)):
                if n < state["offset"]:
                    continue  # moved before the interruption
                points = [
                    StoredPoint(str(point_id(c.chunk_id)), None if v is None else v.tolist(), payload(c))
                    for c, v in chunks
                ]
                server.write_points(points)
                state["points"] += len(points)
                state["with_vectors"] += sum(p.dense is not None for p in points)
                for c, _ in chunks:
                    language = text_field(c.language).removeprefix("text_")
                    state["fields"][language] = state["fields"].get(language, 0) + 1
                state["offset"] = n + 1
                moved += len(points)
                _write_checkpoint(checkpoint_path, state)  # after the page is on the server: a rerun skips it
                if progress is not None:
                    progress(state["points"], total)
            state["done"] = True
            report = MigrateReport(
                url,
                name,
                points=state["points"],
                with_vectors=state["with_vectors"],
                fields=dict(sorted(state["fields"].items())),
                moved_now=moved,
                resumed=resuming,
            )
            _check_counts(report, total, col, server)
            col.use_server_index(qdrant_server.record_of(server), collection_id)
            checkpoint_path.unlink(missing_ok=True)
        finally:
            server.close()
    report.seconds = time.perf_counter() - start
    return report


def _pages(col: Collection, size: int) -> Iterator[list[tuple[Any, Any]]]:
    """The store's chunks in pages of exactly `size` (the last fewer): `indexed_pages` cuts at whole batches of
    documents, and a checkpoint counts pages of `size` points, each one request to the server."""
    pending: list[tuple[Any, Any]] = []
    for part in col.indexed_pages(size):
        pending.extend(part)
        while len(pending) >= size:
            yield pending[:size]
            pending = pending[size:]
    if pending:
        yield pending


def _read_checkpoint(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CollectionError(f"{path}: unreadable migration checkpoint ({exc}); run with --restart") from None
    if not isinstance(found, dict) or not {"url", "collection", "offset", "points"} <= set(found):
        raise CollectionError(f"{path}: not a migration checkpoint; run with --restart")
    return found


def _write_checkpoint(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state), encoding="utf-8")
    tmp.replace(path)


def _check_resumable(checkpoint: dict[str, Any], path: Path, url: str, total: int) -> None:
    again = f"run `tracerag migrate -c {path} --to qdrant --url {url} --restart` to start over"
    if checkpoint["url"] != url:
        raise CollectionError(
            f"{path} has an interrupted migration to {checkpoint['url']}, not {url}: finish it (same --url), or {again}"
        )
    if checkpoint.get("chunks") != total:
        raise CollectionError(
            f"{path} changed since the interrupted migration ({checkpoint.get('chunks')} chunks then, {total} "
            f"now): {again}"
        )


def _check_counts(report: MigrateReport, total: int, col: Collection, server: Any) -> None:
    """The server holds what the store holds: chunks, chunks with a vector, chunks per language field."""
    server_fields = {name.removeprefix("text_"): n for name, n in server.field_sizes().items()}
    with_vectors = total - col.store.count_chunks(without_vectors=True) if col.dim else 0
    found = {
        "points": (total, report.points, server.count()),
        "points with a vector": (with_vectors, report.with_vectors, server.count_with_vectors()),
        "chunks per language": (report.fields, report.fields, server_fields),
    }
    wrong = [
        f"{what}: {a} stored, {b} moved, {c} on the server" for what, (a, b, c) in found.items() if a != b or b != c
    ]
    if wrong:
        raise CollectionError(
            f"the migration to {report.url} ({report.collection}) does not add up, so the collection still uses its "
            f"embedded index: {'; '.join(wrong)}. Run `tracerag migrate ... --restart` to move it again"
        )


@dataclass
class RebuildReport:
    """What a conversion to the embedded engine did."""

    chunks: int = 0
    with_vectors: int = 0
    seconds: float = 0.0
    finished_swap: bool = False  # an interrupted run had built the index; this one only put it in place

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["seconds"] = round(self.seconds, 2)
        found["chunks_per_second"] = round(self.chunks / self.seconds, 1) if self.seconds else None
        return found


def migrate_to_embedded(
    path: Path,
    settings: Settings,
    *,
    wait: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> RebuildReport:
    """Give the collection at `path`, made by the previous embedded engine, this one's index (see the module
    docstring). `progress(done, total)` after each page of chunks."""
    start = time.perf_counter()
    report = RebuildReport()
    settings = settings.model_copy(update={"engine": settings.engine.model_copy(update={"kind": EMBEDDED})})
    with Collection.open(path, settings, mode="write", wait=wait, old_engine=True) as col:
        kind = col.manifest["collection"].get("engine", OLD_ENGINE)
        index, new, old = col.path / "index", col.path / "index.new", col.path / "index.old"
        if kind != OLD_ENGINE:
            if kind == EMBEDDED and old.exists():  # a run killed after the swap left only the old index behind
                shutil.rmtree(old, ignore_errors=True)
                report.finished_swap = True
                report.seconds = time.perf_counter() - start
                return report
            raise CollectionError(f"{path}'s index is already {kind}'s: nothing to convert")
        if old.exists() and index.exists() and (index / "text").is_dir():  # killed between the swap's two renames
            report.finished_swap = True
        else:
            shutil.rmtree(new, ignore_errors=True)
            total = col.store.count_chunks()
            engine = EmbeddedEngine(new, col.dim, query_tf=settings.retrieval.query_tf, writer=True)
            try:
                for page in col.indexed_pages(10_000):
                    with_vectors = [(c, v) for c, v in page if v is not None]
                    without = [c for c, v in page if v is None]
                    if with_vectors:
                        engine.upsert([c for c, _ in with_vectors], np.stack([v for _, v in with_vectors]))
                    if without:
                        engine.upsert(without, None)
                    engine.flush()
                    report.chunks += len(page)
                    report.with_vectors += len(with_vectors)
                    if progress is not None:
                        progress(report.chunks, total)
                engine.optimize()
                counted = (engine.count(), engine.count_with_vectors())
            finally:
                engine.close()
            stored = (report.chunks, report.with_vectors)
            if counted != stored:
                raise CollectionError(
                    f"{path}: the new index holds {counted[0]} chunks ({counted[1]} with vectors), the store "
                    f"{stored[0]} ({stored[1]}); the collection keeps its old index. Run `tracerag migrate` again"
                )
            shutil.rmtree(old, ignore_errors=True)
            if index.exists():
                index.rename(old)
            new.rename(index)
        manifest = {section: dict(values) for section, values in col.manifest.items()}
        manifest["collection"]["engine"] = EMBEDDED
        write_manifest(col.path / MANIFEST, manifest)
        col.manifest = manifest
        shutil.rmtree(old, ignore_errors=True)
    report.seconds = time.perf_counter() - start
    return report
