"""Where a collection's channel weights are kept, and whether they still describe it: `calibration.json` beside
the collection, written atomically by the writer (`retrieval/calibration.py` measures them). Read by every search
(`Retriever.fusion_plan`), so this module does not search."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from tracerag.config import INDEX_VERSION
from tracerag.errors import CollectionError, DiskFullError, ReadOnlyError, says_disk_full
from tracerag.retrieval.pseudo_queries import SEED  # the pseudo-queries' draw: one seed, recorded with the weights

if TYPE_CHECKING:
    from tracerag.collection import Collection

CALIBRATION_FILE = "calibration.json"
FORMAT = 2  # of calibration.json: 2 added the pseudo-query kinds and their table (`kinds`)
MIN_DOCUMENTS = 50  # below this, a weight measured on a few dozen queries says more about chance than channels
# A stored calibration no longer describes a collection whose documents grew or shrank by more than this share.
STALE_SHARE = 0.25


@dataclass(slots=True)
class KindReport:
    """How the channels did on one kind of pseudo-query: `mrr[c]` over the `acted[c]` queries of the kind that
    channel c returned anything for, `fused` the default fusion's MRR on all `queries` of the kind, and `note` why
    the kind has fewer queries than asked, or none (no model for questions, no entities, failures)."""

    queries: int
    mrr: dict[str, float]
    acted: dict[str, int]
    fused: float | None = None
    note: str = ""


@dataclass(slots=True)
class Calibration:
    """Channel weights and how they were measured. `mrr[c]` is channel c's mean reciprocal rank over the
    `acted[c]` pseudo-queries it returned anything for, each kind of query weighing the same whatever its count,
    `reference[c]` the best channel's over those same queries, alike, and `weights[c] = mrr[c] / reference[c]` (at
    most 1). `fused` is each fusion method's MRR on all of them, and `kinds` each kind's table."""

    weights: dict[str, float]
    mrr: dict[str, float]
    reference: dict[str, float]
    acted: dict[str, int]
    queries: dict[str, int]
    fused: dict[str, float]
    state: dict[str, Any]  # the collection when measured (`collection_state`)
    created: str
    seconds: float
    kinds: dict[str, KindReport]
    seed: int = SEED
    format: int = FORMAT
    channels: list[str] = field(default_factory=list)

    def staleness(self, state: Mapping[str, Any]) -> str | None:
        """Why this calibration no longer describes a collection in `state`, or None when it still does."""
        if self.state.get("index_version") != state.get("index_version"):
            was, now_at = self.state.get("index_version"), state.get("index_version")
            return f"measured on index version {was}, the collection is at {now_at}"
        if self.state.get("dense") != state.get("dense"):
            had = "with" if self.state.get("dense") else "without"
            has = "now has" if state.get("dense") else "no longer has"
            return f"measured {had} the dense channel, which the collection {has}"
        before, now = int(self.state.get("documents", 0)), int(state.get("documents", 0))
        if before and abs(now - before) > STALE_SHARE * before:
            return f"measured on {before:,} documents, the collection now holds {now:,}"
        return None

    def summary(self) -> str:
        """One line for `--explain`, `info` and the trail: the weights and where they come from."""
        parts = [
            f"{c} {self.weights[c]:.2f} (pseudo-MRR {self.mrr[c]:.2f} against the best channel's "
            f"{self.reference[c]:.2f} on the {self.acted[c]} it acted on)"
            for c in self.weights
        ]
        total = sum(self.queries.values())
        kinds = sum(1 for n in self.queries.values() if n)
        older = "" if self.kinds else " (format 1: spans and words only, no table per kind; `tracerag calibrate`)"
        return (
            f"calibrated {self.created[:10]} on {total} pseudo-queries of {kinds} kinds from this collection{older}: "
            + ", ".join(parts)
        )


def collection_state(collection: Collection) -> dict[str, Any]:
    """What a calibration depends on: documents, whether every chunk has a vector, the index version, the model."""
    store = collection.store
    dense = bool(collection.dim) and store.has_vectors() and not store.count_chunks(without_vectors=True)
    return {
        "documents": store.count_documents(),
        "chunks": store.count_chunks(),
        "dense": dense,
        "index_version": INDEX_VERSION,
        # the model, for the record (a collection has one model: vectors of another are refused at open)
        "embed_model": _model_of(collection) if dense else None,
    }


def _model_of(collection: Collection) -> str | None:
    embedding = collection.manifest.get("embedding", {})
    return " ".join(str(embedding[k]) for k in ("name", "version") if embedding.get(k)) or None


def as_dict(calibration: Calibration) -> dict[str, Any]:
    return asdict(calibration)


def path_of(collection: Collection) -> Path:
    return collection.path / CALIBRATION_FILE


def save(collection: Collection, calibration: Calibration) -> Path:
    """Write `calibration.json` atomically; only the collection's writer may."""
    if collection.mode != "write":
        raise ReadOnlyError(f"{collection.path}: calibrating writes the collection; open it for writing")
    path = path_of(collection)
    tmp = path.with_suffix(".tmp")
    text = json.dumps(as_dict(calibration), indent=2, ensure_ascii=False)
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()  # a half-written file only takes space: the calibration before stands
        if says_disk_full(exc, collection.path):
            raise DiskFullError(collection.path, path.name, needed=len(text.encode())) from exc
        raise CollectionError(f"{path}: cannot write the calibration ({exc.strerror}); remove what is there") from None
    return path


def load(collection: Collection) -> tuple[Calibration | None, str]:
    """The stored calibration, or None with why there is none (never calibrated, unreadable, a value out of place:
    every field is checked, so that a damaged file is said and never used, whatever was edited in it)."""
    path = path_of(collection)
    where = f"{collection.path}'s {path.name}"
    if not path.is_file():
        return None, "not calibrated (run `tracerag calibrate`)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{where} could not be read ({exc}): run `tracerag calibrate`"
    if isinstance(data, dict) and data.get("format") == 1 and "kinds" not in data:
        # Weights measured on spans and words only are still measured weights: a search keeps them (equal weights
        # would undo what they protect) and says so; the writer's next refresh measures the kinds.
        data = {**data, "format": FORMAT, "kinds": {}}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        return None, f"{where} is in format {found}, this TRACE reads {FORMAT}: run `tracerag calibrate`"
    try:
        return _checked(_ADAPTER.validate_python(data)), ""
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        return None, f"{where}: {field}: {first['msg']}: run `tracerag calibrate`"
    except ValueError as exc:
        return None, f"{where}: {exc}: run `tracerag calibrate`"


_ADAPTER = TypeAdapter(Calibration)  # every field of its type, or a ValidationError naming it


def _checked(calibration: Calibration) -> Calibration:
    """What the types alone do not say: weights between 0 and 1 (a weight is an MRR over the best one), and every
    weighed channel measured."""
    for channel, weight in calibration.weights.items():
        if not (math.isfinite(weight) and 0 <= weight <= 1):
            raise ValueError(f"weights.{channel} must be between 0 and 1, got {weight!r}")
        for table in ("mrr", "reference", "acted"):
            if channel not in getattr(calibration, table):
                raise ValueError(f"{table} has no {channel!r}, which weights names")
    for kind, report in calibration.kinds.items():
        for channel, value in report.mrr.items():
            if not (math.isfinite(value) and 0 <= value <= 1):
                raise ValueError(f"kinds.{kind}.mrr.{channel} must be between 0 and 1, got {value!r}")
    if not isinstance(calibration.state.get("documents"), int):
        raise ValueError("state.documents must be a number of documents")
    return calibration
