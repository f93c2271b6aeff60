"""The trail as written and read back: every kind of event, the schema every line validates against, and the
errors a damaged trail gives (they name the file and the line)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from pydantic import ValidationError

from tests.trail import ALL_KINDS, QUESTION, small_collection, write_trail
from tracerag.errors import TrailError
from tracerag.trail import (
    EVENT_ADAPTER,
    JsonlWriter,
    MemoryListener,
    Trail,
    event_schema,
    list_trails,
    read_trail,
    trail_path,
)


@pytest.fixture(scope="module")
def col(tmp_path_factory, datasets_dir):
    return small_collection(tmp_path_factory, datasets_dir)


@pytest.fixture(scope="module")
def case(col):
    return write_trail(col)


@pytest.fixture(scope="module")
def events(case):
    return read_trail(case.path)


def test_a_written_trail_reads_back_whole(case, events):
    assert len(events) == case.emitted
    assert {e.kind for e in events} == ALL_KINDS
    assert [e.seq for e in events] == list(range(case.emitted))
    assert {e.run_id for e in events} == {case.run_id}
    assert events[0].kind == "run" and events[0].question == QUESTION
    assert events[-1].kind == "result"
    assert [r.doc_id for r in events[-1].ranking] == case.ranking


def test_reading_back_loses_nothing(case, events):
    """Each event read back dumps to exactly its line: tuples (spans, rankings) and enums survive."""
    lines = case.path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [e.model_dump(mode="json") for e in events]
    verdict = next(e for e in events if e.kind == "verdict" and e.span)
    assert isinstance(verdict.span, tuple)


def test_every_line_validates_against_the_exported_schema(case):
    schema = event_schema()
    lines = [json.loads(line) for line in case.path.read_text(encoding="utf-8").splitlines()]
    try:
        import jsonschema
    except ImportError:  # not a dependency: fall back to the adapter the schema is exported from
        for obj in lines:
            EVENT_ADAPTER.validate_python(obj)
        return
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for n, obj in enumerate(lines, start=1):
        errors = list(validator.iter_errors(obj))
        assert not errors, f"line {n} ({obj['kind']}): {errors[0].message}"
    verdict = next(obj for obj in lines if obj["kind"] == "verdict")
    assert not validator.is_valid({**verdict, "verdict": "maybe"})
    assert not validator.is_valid({**verdict, "extra": 1})
    assert not validator.is_valid({**verdict, "kind": "nonsense"})


@pytest.mark.parametrize(
    ("damage", "detail"),
    [
        (lambda line: line[: len(line) // 2], "json"),  # a line cut short by a crash mid-write
        (lambda line: line.replace('"verdict": "accept"', '"verdict": "maybe"'), "verdict"),
        (lambda line: line.replace('"step": 1', '"step": 1, "mood": "happy"'), "mood"),
        (lambda line: line.replace('"kind": "verdict"', '"kind": "opinion"'), "opinion|kind|tag"),
    ],
    ids=["truncated", "bad-value", "unknown-field", "unknown-kind"],
)
def test_a_damaged_line_is_named_by_file_and_line(case, tmp_path, damage, detail):
    lines = case.path.read_text(encoding="utf-8").splitlines()
    n = next(i for i, line in enumerate(lines) if '"kind": "verdict"' in line and '"verdict": "accept"' in line)
    damaged = damage(lines[n])
    assert damaged != lines[n]
    lines[n] = damaged
    bad = tmp_path / "damaged.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TrailError, match=re.escape(f"{bad}:{n + 1}:")) as err:
        read_trail(bad)
    assert re.search(detail, str(err.value), re.IGNORECASE)


def test_blank_lines_are_skipped_and_a_trail_starts_with_its_run(case, tmp_path):
    lines = case.path.read_text(encoding="utf-8").splitlines()
    padded = tmp_path / "padded.jsonl"
    padded.write_text("\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n\n", encoding="utf-8")
    assert len(read_trail(padded)) == len(lines)
    headless = tmp_path / "headless.jsonl"
    headless.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    with pytest.raises(TrailError, match="starts with a 'run' event"):
        read_trail(headless)
    with pytest.raises(TrailError, match="no such trail"):
        read_trail(tmp_path / "nothing.jsonl")


def test_a_run_id_or_a_prefix_finds_its_trail(col, case, tmp_path):
    assert trail_path(col.path, case.run_id) == case.path
    assert trail_path(col.path, case.run_id[:-1]) == case.path
    assert trail_path(col.path, str(case.path)) == case.path
    assert case.path in list_trails(col.path)
    with pytest.raises(TrailError, match="no trail"):
        trail_path(col.path, "19990101T000000")
    copy = tmp_path / "trails" / case.path.name
    copy.parent.mkdir()
    shutil.copy(case.path, copy)
    shutil.copy(case.path, tmp_path / "trails" / (case.run_id + "-copy.jsonl"))
    with pytest.raises(TrailError, match="give more of the id"):
        trail_path(tmp_path, case.run_id)


def test_emit_validates_and_every_listener_gets_the_same_event(tmp_path):
    memory = MemoryListener()
    writer = JsonlWriter(tmp_path / "t.jsonl")
    trail = Trail(listeners=[memory, writer])
    trail.emit("run", question="q", collection="c", k=3, config={}, llm=None, versions={})
    trail.emit("guard", step=1, guard="g", message="m")
    with pytest.raises(ValidationError):
        trail.emit("verdict", step=1, doc_id="d", chunk_id="d#0", verdict="maybe", reason="r")
    with pytest.raises(ValidationError):
        trail.emit("guard", step=1, guard="g", message="m", mood="x")
    writer.close()
    assert [e.kind for e in memory] == ["run", "guard"] and len(memory.of("guard")) == 1
    assert [e.model_dump() for e in read_trail(tmp_path / "t.jsonl")] == [e.model_dump() for e in memory]
