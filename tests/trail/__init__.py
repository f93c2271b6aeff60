"""Shared material for the trail tests: the trails recorded from real runs (tests/fixtures/trails/, rewritten by
`python -m tests.fixtures.record_trails`; see that module for what each run does) and the small real collection
they are shown and exported against: the recording's documents less MISSING_ID, which the agent ranked and
which the collection no longer holds."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fixtures.record_trails import (
    AGENT_TRAIL,
    CATALOG_TRAIL,
    MISSING_ID,
    RESEARCH_RUNS,
    RESEARCH_TRAILS,
    agent_documents,
    build_collection,
)
from tracerag.model import Document
from tracerag.trail import Event, read_trail

__all__ = [
    "AGENT_TRAIL",
    "CATALOG_TRAIL",
    "MISSING_ID",
    "RESEARCH_RUNS",
    "RESEARCH_TRAILS",
    "Recorded",
    "SmallCollection",
    "assert_records_the_fixture",
    "comparable",
    "lines",
    "recorded",
]


@dataclass
class SmallCollection:
    path: Path
    documents: dict[str, Document]  # as the store gives them back
    hipe_ids: list[str]  # the French daily, the British weekly, the German paper


_CACHE: dict[str, SmallCollection] = {}


def small_collection(tmp_path_factory, datasets_dir: Path) -> SmallCollection:
    """Built once per test session (about 2 s), closed at once: tests read it, never change it."""
    if "col" not in _CACHE:
        documents = [d for d in agent_documents(datasets_dir) if d.id != MISSING_ID]
        path = build_collection(tmp_path_factory.mktemp("trail") / "collection", documents)
        from tracerag.collection import Collection
        from tracerag.config import load_settings

        with Collection.open(path, load_settings(), mode="read") as col:
            stored = col.store.get_documents([*(d.id for d in documents), MISSING_ID])
        assert MISSING_ID not in stored and set(stored) == {d.id for d in documents}
        _CACHE["col"] = SmallCollection(path, stored, [d.id for d in documents[:3]])
    return _CACHE["col"]


@dataclass
class Recorded:
    path: Path  # where the collection keeps its runs' trails: COLLECTION/trails/{run_id}.jsonl
    run_id: str
    events: list[Event]


def recorded(fixture: Path, collection: Path) -> Recorded:
    """A recorded trail, placed in `collection`'s trails/ folder as a run's own trail is."""
    run_id = json.loads(fixture.read_text(encoding="utf-8").split("\n", 1)[0])["run_id"]
    path = collection / "trails" / f"{run_id}.jsonl"
    path.parent.mkdir(exist_ok=True)
    shutil.copyfile(fixture, path)
    return Recorded(path, run_id, read_trail(path))


# What a recording may change between two runs of the same code: its run id (and the ids of the runs it names: a
# judge run names the search it judged), the time of each event, the wall-clock seconds of the run, where and with
# which package versions it ran, and how long a replayed model answer took (a replay records no latency: it is the
# replay's own).
VARYING = {"run_id", "time"}
VARYING_RUN = {"collection", "versions"}
RUN_ID = re.compile(r"\b\d{8}T\d{6}-[0-9a-f]{6}\b")


def lines(path: Path) -> list[str]:
    """A trail's lines. Split on "\\n" only, as the reader splits: a line may hold U+2028 (a document's
    line separator in a prompt), which `str.splitlines` would take for a line break."""
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def comparable(path: Path) -> list[dict[str, Any]]:
    """A trail's lines as JSON objects without what varies between two recordings by the same code."""
    out = []
    for line in lines(path):
        event = {k: v for k, v in json.loads(RUN_ID.sub("RUN", line)).items() if k not in VARYING}
        if event["kind"] == "run":
            event = {k: v for k, v in event.items() if k not in VARYING_RUN}
        if event["kind"] == "result":
            event["totals"] = {k: v for k, v in event["totals"].items() if k != "wall_s"}
        if event["kind"] == "llm_call" and event["provider"] == "replay":
            event.pop("latency_s")
        out.append(event)
    return out


def assert_records_the_fixture(fresh: Path, fixture: Path) -> None:
    """`fresh` (recorded just now) holds the same events as `fixture`, modulo what varies; else the first event
    that differs, and how to regenerate the fixtures once the change is wanted."""
    new, old = comparable(fresh), comparable(fixture)
    regenerate = "if the change is wanted, run `python -m tests.fixtures.record_trails` and look at the diff"
    for n, (a, b) in enumerate(zip(new, old, strict=False)):
        if a != b:
            keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
            raise AssertionError(
                f"{fixture.name}: event {n} ({b['kind']}) differs from what the code records now in {keys}: "
                f"recorded {json.dumps({k: b.get(k) for k in keys}, ensure_ascii=False)[:300]}, "
                f"now {json.dumps({k: a.get(k) for k in keys}, ensure_ascii=False)[:300]}; {regenerate}"
            )
    assert len(new) == len(old), f"{fixture.name}: {len(old)} events recorded, {len(new)} now; {regenerate}"
