"""Reading trails back: every line is validated against the event schema, errors name the file and line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from tracerag.errors import TrailError
from tracerag.trail.events import EVENT_ADAPTER, STAMPS, Event, RunEvent


def read_trail(path: Path) -> list[Event]:
    """The typed events of a trail file, in order; the first is its `RunEvent`."""
    events, torn = read_trail_torn(path)
    if torn is not None:
        raise torn
    return events


def read_trail_torn(path: Path) -> tuple[list[Event], TrailError | None]:
    """A trail whose LAST line may be torn (a run killed while writing it): its good events, and the last line's
    error (None when it is whole). A damaged line with good lines after it is no torn write: an error still."""
    path = Path(path)
    if not path.is_file():
        raise TrailError(f"{path}: no such trail")
    events: list[Event] = []
    torn: TrailError | None = None
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            error: TrailError | None = None
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                error = TrailError(f"not UTF-8 ({exc.reason} at byte {exc.start})", file=str(path), line=n)
            else:
                if not line.strip():
                    continue
                try:
                    event = EVENT_ADAPTER.validate_json(line)
                except ValidationError as exc:
                    error = TrailError(_invalid(exc), file=str(path), line=n)
                else:
                    if not event.stamped:  # the stamps have defaults for emitters; a written line always has them
                        missing = next(name for name in STAMPS if name not in event.model_fields_set)
                        reason = f"not a trail event ({event.kind}.{missing}: Field required)"
                        error = TrailError(reason, file=str(path), line=n)
            if torn is not None:  # a good or bad line after a damaged one: the damage is in the middle
                raise torn
            if error is not None:
                torn = error
                continue
            events.append(event)
    if not events or not isinstance(events[0], RunEvent):
        raise torn or TrailError("a trail starts with a 'run' event", file=str(path))
    return events, torn


def _invalid(exc: ValidationError) -> str:
    """Why a line is no event: not JSON (where in the line), or which field of which event is wrong."""
    first = exc.errors()[0]
    if first["type"] == "json_invalid":
        # pydantic says "at line 1 column N" of the one line it was given: the column is what tells.
        detail = str(first.get("ctx", {}).get("error", first["msg"])).replace("at line 1 column", "at column")
        return f"not JSON ({detail})"
    where = ".".join(map(str, first["loc"])) or "line"
    return f"not a trail event ({where}: {first['msg']})"


def trail_path(collection_dir: Path, run: str) -> Path:
    """A run id (or a unique prefix of one), or a path to a .jsonl file."""
    candidate = Path(run)
    if candidate.suffix == ".jsonl" and candidate.is_file():
        return candidate
    folder = Path(collection_dir) / "trails"
    matches = sorted(folder.glob(f"{run}*.jsonl")) if folder.is_dir() else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise TrailError(f"no trail {run!r} in {folder} (is the run in another collection? pass -c DIR)")
    raise TrailError(f"{run!r} names {len(matches)} trails in {folder}: give more of the id")


def find_trail(roots: Sequence[Path], run: str) -> Path:
    """A run's trail in the first of `roots` whose trails/ holds it (a collection, then where runs on it went
    while it was read-only here: `collection.trail_roots`); an error names the first folder when none does."""
    if Path(run).suffix != ".jsonl":  # a file named as such is taken as it is (an absolute path cannot be globbed)
        for root in roots:
            folder = Path(root) / "trails"
            if folder.is_dir() and any(folder.glob(f"{run}*.jsonl")):
                return trail_path(root, run)
    return trail_path(roots[0], run)


def list_trails(collection_dir: Path) -> list[Path]:
    folder = Path(collection_dir) / "trails"
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def trails_by_run(roots: Sequence[Path]) -> dict[str, Path]:
    """Every trail under `roots` (`collection.trail_roots`) by its run id, the file's name without `.jsonl`; the
    first root holding a run wins. A caller that is given an id from outside (the web app) looks it up here, so
    that the id is only ever compared with names, never made into a path or a glob pattern."""
    found: dict[str, Path] = {}
    for root in roots:
        for path in list_trails(root):
            found.setdefault(path.stem, path)
    return found
