"""A collection's index moved from the embedded engine to a Qdrant server (`tracerag migrate`), as it is stored:
points, dense vectors and payload, without re-embedding or re-chunking.

The migration holds the writer lock, so nothing changes the collection meanwhile (readers go on searching the
embedded index). It scrolls the Edge shard a page at a time in point-id order and writes each page to the server
(idempotent upserts, retried by the engine); after each page a checkpoint in the collection's state folder
(`.tracerag/migrate.json`) records the next offset and what has been moved, so an interrupted migration (Ctrl-C,
kill, a server that kept failing) continues where it stopped when run again. At the end the server's counts are
checked against the embedded index's (points, points with a vector, chunks per language field); only when they
agree does collection.toml point at the server. The embedded index stays in `index/`, unused, for the user to
remove.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tracerag.collection import STATE_DIR, Collection, engine_of
from tracerag.config import Settings
from tracerag.engine.shared import SharedEngine
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
    settings = settings.model_copy(update={"engine": settings.engine.model_copy(update={"kind": "qdrant-edge"})})
    with Collection.open(path, settings, mode="write", wait=wait, api_key=api_key) as col:
        if col.manifest["collection"].get("engine") == "qdrant":
            where = engine_of(col.path, col.manifest)
            raise CollectionError(f"{path}'s index is already on {where.get('url')} ({where.get('collection')})")
        edge = col.engine
        assert isinstance(edge, SharedEngine)  # an embedded collection's writer holds its shard
        checkpoint_path = col.path / STATE_DIR / CHECKPOINT
        checkpoint = _read_checkpoint(checkpoint_path)
        total = edge.count()
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
                "edge_points": total,
                "offset": None,
                "done": False,
                "points": 0,
                "with_vectors": 0,
                "fields": {},
            }
            if resuming and notify is not None:
                notify(f"continuing the migration to {url} ({name}): {state['points']:,} of {total:,} points moved")
            moved = 0
            size = page or settings.engine.batch_points
            while not state["done"]:
                points, after = edge.scroll_points(state["offset"], size)
                server.write_points(points)
                state["points"] += len(points)
                state["with_vectors"] += sum(p.dense is not None for p in points)
                for p in points:
                    field_name = next((k for k in p.payload if k.startswith("text_")), None)
                    if field_name is not None:
                        language = field_name.removeprefix("text_")
                        state["fields"][language] = state["fields"].get(language, 0) + 1
                state["offset"], state["done"] = after, after is None
                moved += len(points)
                _write_checkpoint(checkpoint_path, state)  # after the page is on the server: a rerun skips it
                if progress is not None:
                    progress(state["points"], total)
            report = MigrateReport(
                url,
                name,
                points=state["points"],
                with_vectors=state["with_vectors"],
                fields=dict(sorted(state["fields"].items())),
                moved_now=moved,
                resumed=resuming,
            )
            _check_counts(report, total, edge, server)
            col.use_server_index(qdrant_server.record_of(server), collection_id)
            checkpoint_path.unlink(missing_ok=True)
        finally:
            server.close()
    report.seconds = time.perf_counter() - start
    return report


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
    if checkpoint.get("edge_points") != total:
        raise CollectionError(
            f"{path} changed since the interrupted migration ({checkpoint.get('edge_points')} points then, {total} "
            f"now): {again}"
        )


def _check_counts(report: MigrateReport, total: int, edge: SharedEngine, server: Any) -> None:
    """The server holds what the embedded index holds: points, points with a vector, chunks per language field."""
    edge_fields = {language: stats.chunks for language, stats in edge.field_stats("").items()}
    server_fields = {name.removeprefix("text_"): n for name, n in server.field_sizes().items()}
    found = {
        "points": (total, report.points, server.count()),
        "points with a vector": (edge.count_with_vectors(), report.with_vectors, server.count_with_vectors()),
        "chunks per language": (edge_fields, report.fields, server_fields),
    }
    wrong = [
        f"{what}: {a} embedded, {b} moved, {c} on the server" for what, (a, b, c) in found.items() if a != b or b != c
    ]
    if wrong:
        raise CollectionError(
            f"the migration to {report.url} ({report.collection}) does not add up, so the collection still uses its "
            f"embedded index: {'; '.join(wrong)}. Run `tracerag migrate ... --restart` to move it again"
        )
