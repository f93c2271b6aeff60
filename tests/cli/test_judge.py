"""`tracerag judge` over the trail of a real agent run on real HIPE documents (tests/fixtures/trails/agent.jsonl),
with model answers recorded once and replayed (`--llm replay:DIR`): every candidate judged and recorded in a judge
run's trail, the document the collection no longer holds skipped and said (exit 1), a second run answered from the
cache without a model call, `--compare` giving the rank correlation of two judges, and bad usage exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.research.test_judge import CRITERIA, Scripted
from tests.trail import AGENT_TRAIL, recorded, small_collection
from tracerag.cli import app
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.llm import StructuredLLM
from tracerag.llm.replay import RecordingProvider
from tracerag.research.criteria import parse_toml
from tracerag.research.judge import candidates_of, judge_run
from tracerag.research.selection import Decision, open_selections
from tracerag.research.sources import load_chunks, refs_from_run
from tracerag.trail import read_trail
from tracerag.trail.events import JudgmentEvent, LLMCallEvent, RunEvent, RunKind

runner = CliRunner()
GONE = "gone-42"


@pytest.fixture(scope="module")
def case(tmp_path_factory, datasets_dir):
    shared = small_collection(tmp_path_factory, datasets_dir)
    root = tmp_path_factory.mktemp("judge-cli")
    path = root / "collection"
    shutil.copytree(shared.path, path)
    run = recorded(AGENT_TRAIL, path)
    criteria = root / "crit.toml"
    criteria.write_text(CRITERIA.replace("Reichstag", "fire"), encoding="utf-8")
    # The judges' answers recorded once, on the candidates the command will read from the run.
    folders = {}
    with Collection.open(path, load_settings(), mode="read") as col:
        candidates = candidates_of(load_chunks(col, refs_from_run(run.events)).chunks)
        for name, provider in (("a", Scripted(word="fire")), ("b", Scripted(word="incendie", model="judge-b"))):
            folders[name] = root / f"recorded-{name}"
            llm = StructuredLLM(RecordingProvider(provider, folders[name]))
            judge_run(
                col, load_settings(), llm, parse_toml(criteria.read_text(), str(criteria)), candidates,
                question="q", source_run="recording", trail_dir=root / "recording-trails",
            )  # fmt: skip
    return path, run, criteria, folders, candidates


def _judge(path, run_id, criteria, *extra):
    args = ["judge", "--criteria", str(criteria), "--from", run_id, "-c", str(path), *extra]
    return runner.invoke(app, args)


def test_a_run_judged_recorded_then_answered_from_the_cache(case):
    path, run, criteria, folders, candidates = case
    result = _judge(path, run.run_id, criteria, "--llm", f"replay:{folders['a']}", "--json")
    assert result.exit_code == 1, result.output  # partial: a candidate's document is gone from the collection
    report = json.loads(result.stdout)
    assert report["skipped"] == [GONE]
    (first,) = report["runs"]
    judged = first["judgments"]
    assert [j["chunk_id"] for j in judged] == [c.chunk_id for c in candidates] and first["calls"] == len(candidates)
    assert all(j["score"] in (1, 9) and not j["cached"] for j in judged)
    events = read_trail(Path(first["trail"]))
    assert isinstance(events[0], RunEvent) and events[0].run is RunKind.JUDGE
    assert events[0].config["from"] == run.run_id
    assert len([e for e in events if isinstance(e, JudgmentEvent)]) == len(candidates)
    assert len([e for e in events if isinstance(e, LLMCallEvent)]) == len(candidates)
    assert (path / "judgments.sqlite").is_file()  # the cache lives in the collection (it is writable here)
    again = json.loads(_judge(path, run.run_id, criteria, "--llm", f"replay:{folders['a']}", "--json").stdout)
    assert again["runs"][0]["calls"] == 0 and all(j["cached"] for j in again["runs"][0]["judgments"])
    assert [j["score"] for j in again["runs"][0]["judgments"]] == [j["score"] for j in judged]
    (diagnostic,) = again["diagnostics"]
    assert diagnostic["what"] == "retrieval rank vs judge score" and diagnostic["n"] == len(candidates)
    shown = runner.invoke(app, ["trail", "show", again["runs"][0]["run_id"], "-c", str(path)])
    assert shown.exit_code == 0, shown.output
    lines = [line for line in shown.output.splitlines() if line.startswith("judged ")]
    assert len(lines) == len(candidates) and all("(cached)" in line for line in lines)
    assert f"judge · {len(candidates)} judgments" in shown.output
    listed = runner.invoke(app, ["trail", "list", "-c", str(path)])
    assert f"judge · {len(candidates)} judgments" in " ".join(listed.output.split())


def test_compare_gives_the_rank_correlation_of_two_judges(case):
    path, run, criteria, folders, candidates = case
    result = _judge(path, run.run_id, criteria, "--llm", f"replay:{folders['a']}", "--compare",
                    f"replay:{folders['b']}")  # fmt: skip
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "judge scores, scripted-judge vs judge-b" in text
    assert "Spearman ρ, retrieval rank vs judge score" in text
    assert f"{len(candidates)} judgments" in text and "skipped gone-42" in text


def test_a_selection_judged(case):
    path, run, criteria, folders, candidates = case
    chosen = candidates[0]
    with open_selections(path, load_settings(), write=True) as store:
        store.decide("fires in the press", chosen.doc_id, Decision.ACCEPTED, who="historian", chunk_id=chosen.chunk_id)
    args = ["judge", "--criteria", str(criteria), "--selection", "fires", "-c", str(path)]
    result = runner.invoke(app, [*args, "--llm", f"replay:{folders['a']}", "--json"])
    assert result.exit_code == 0, result.output
    (judged,) = json.loads(result.stdout)["runs"][0]["judgments"]
    assert judged["chunk_id"] == chosen.chunk_id and judged["score"] in (1, 9)
    events = read_trail(Path(json.loads(result.stdout)["runs"][0]["trail"]))
    assert events[0].config["from"] == "selection:fires in the press"  # type: ignore[union-attr]


def test_bad_usage_exits_2(case, tmp_path):
    path, run, criteria, folders, _ = case
    bad = tmp_path / "bad.toml"
    bad.write_text('counts = ["x"]\nexclude = ["y"]\n', encoding="utf-8")
    result = _judge(path, run.run_id, bad, "--llm", f"replay:{folders['a']}")
    assert result.exit_code == 2 and "bad.toml:2" in " ".join(result.output.split())
    neither = runner.invoke(app, ["judge", "--criteria", str(criteria), "-c", str(path), "--llm", "local"])
    assert neither.exit_code == 2 and "--from RUN or --selection" in neither.output
    empty = tmp_path / "settings.toml"
    empty.write_text("", encoding="utf-8")
    nomodel = _judge(path, run.run_id, criteria, "--config", str(empty))
    assert nomodel.exit_code == 2 and "the judge needs a model" in " ".join(nomodel.output.split())
