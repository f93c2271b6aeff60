"""The agent over real HTTP (the fake OpenAI-compatible server answering with the scripted policy), its replay
from the trail, and the `ask` / `trail` commands on a small real collection."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.agent.policy import Policy
from tests.fakes.openai_server import FakeOpenAI, Reply
from tracerag.agent import Agent
from tracerag.agent.replay import replay
from tracerag.cli import app
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.demo_data import DEMO_FILES
from tracerag.errors import LLMCallFailed, LLMError
from tracerag.ingest import read_documents
from tracerag.llm import Message, load_llm
from tracerag.model import RunStatus
from tracerag.trail import read_trail
from tracerag.trail.events import LLMCallEvent

runner = CliRunner()
QUESTION = "Reichstag Sitzung"


def policy_server(policy: Policy) -> FakeOpenAI:
    def handler(body: dict, n: int) -> Reply:
        text = policy.answer([Message(m["role"], m["content"]) for m in body["messages"]])
        return Reply(content=text, usage=(100, 20))

    return FakeOpenAI(handler)


@pytest.fixture(scope="module")
def small(hipe_dir: Path, tmp_path_factory) -> Path:
    """The demo's three HIPE files (fr, de, en), lexical only: a few seconds."""
    path = tmp_path_factory.mktemp("small") / "col"
    with Collection.open(path, load_settings(), mode="write", create=True) as col:
        col.ingest(
            (d for spec in DEMO_FILES for d in read_documents(hipe_dir / _find(hipe_dir, spec.name), "hipe")),
            dense=False,
        )
    return path


def _find(root: Path, name: str) -> Path:
    return next(root.rglob(name)).relative_to(root)


def reichstag_policy() -> Policy:
    return Policy(
        sub_questions=[{"question": "Reichstag", "target_corpus": None}, {"question": "Sitzung des Reichstags"}],
        accept=("reichstag",),
        hold=("sitzung",),
        actions=[
            {"tool": "review"},
            {"tool": "search_bm25", "query": "Reichstag Berlin"},
            {"tool": "review"},
            {"tool": "finish"},
        ],
    )


def test_agent_over_http_then_replay_reproduces_the_ranking(small: Path):
    with policy_server(reichstag_policy()) as fake:
        settings = load_settings(
            llm={"model": "openai:policy", "base_url": fake.base_url, "prices": {"policy": (1.0, 2.0)}}
        )
        with Collection.open(small, settings, mode="read") as col:
            result = Agent(col, load_llm(settings)).run(QUESTION, 10)
        assert fake.requests and all(r["model"] == "policy" for r in fake.requests)
    assert result.status is RunStatus.COMPLETE and result.accepted
    calls = [e for e in read_trail(result.trail_path) if e.kind == "llm_call"]
    assert len(calls) == len(fake.requests) and all(c.provider == "openai" for c in calls)
    assert result.totals["cost_usd"] == pytest.approx(len(calls) * (100 * 1.0 + 20 * 2.0) / 1e6)

    # no model configured: the trail is the model
    with Collection.open(small, load_settings(), mode="read") as col:
        report = replay(col, result.trail_path)
    assert report.same, report.differences()
    assert report.replayed.accepted == result.accepted
    replayed = read_trail(report.replayed.trail_path)
    assert replayed[0].replay_of == result.run_id and replayed[0].llm["provider"] == "replay"

    cli = runner.invoke(app, ["ask", "--replay", result.run_id, "-c", str(small)])
    assert cli.exit_code == 0, cli.output
    assert "reproduced" in cli.output


def test_replay_with_a_changed_prompt_fails_naming_the_request(small: Path, tmp_path: Path):
    with policy_server(reichstag_policy()) as fake:
        settings = load_settings(llm={"model": "openai:policy", "base_url": fake.base_url})
        with Collection.open(small, settings, mode="read") as col:
            result = Agent(col, load_llm(settings), trail_dir=tmp_path).run(QUESTION, 10)
    lines = result.trail_path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["question"] = "Reichstag Debatte"  # a different question: its plan request was never recorded
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    with Collection.open(small, load_settings(), mode="read") as col:
        report = replay(col, tampered, trail_dir=tmp_path / "replays")
    assert report.replayed.status is RunStatus.FAILED and "never recorded" in report.replayed.message
    assert not report.same


def test_ask_without_a_model_says_so_and_writes_a_trail(small: Path):
    result = runner.invoke(app, ["ask", QUESTION, "-c", str(small), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["status"] == "no_llm" and "--llm" in payload["message"]
    assert payload["ranking"] and {r["origin"] for r in payload["ranking"]} == {"warm_start"}
    assert Path(payload["trail"]).is_file()


def test_ask_with_an_unreachable_endpoint_fails_cleanly_and_keeps_the_trail(small: Path, tmp_path: Path):
    settings = load_settings(llm={"model": "openai:m", "base_url": "http://127.0.0.1:9/v1", "max_retries": 0})
    with Collection.open(small, settings, mode="read") as col:
        result = Agent(col, load_llm(settings), trail_dir=tmp_path).run(QUESTION, 5)
    assert result.status is RunStatus.FAILED and "no answer after 1 attempts" in result.message
    assert len(result.ranking) == 5  # the hybrid warm start still answers
    events = read_trail(result.trail_path)
    assert events[-1].status is RunStatus.FAILED
    # the call that got no answer is in the trail, with its attempt and error, and counted as failed
    calls = [e for e in events if isinstance(e, LLMCallEvent)]
    assert len(calls) == 1 and calls[0].purpose == "plan" and calls[0].parsed is None
    assert "no answer after 1 attempts" in (calls[0].error or "")
    assert calls[0].attempts[-1]["error"] and calls[0].attempts[-1]["text"] == ""
    assert result.totals["llm_calls"] == 1 and result.totals["failed_calls"] == 1
    assert issubclass(LLMCallFailed, LLMError)


def test_trail_show_and_export_from_the_cli(small: Path, tmp_path: Path):
    with policy_server(reichstag_policy()) as fake:
        asked = runner.invoke(
            app, ["ask", QUESTION, "-c", str(small), "--llm", "openai:policy", "--base-url", fake.base_url, "--json"]
        )
    assert asked.exit_code == 0, asked.output
    run_id = json.loads(asked.stdout)["run_id"]
    n = len(json.loads(asked.stdout)["ranking"])
    shown = runner.invoke(app, ["trail", "show", run_id, "-c", str(small)])
    assert shown.exit_code == 0, shown.output
    assert QUESTION in shown.output and "accept" in shown.output
    exported = runner.invoke(app, ["trail", "export", run_id, "-c", str(small), "--format", "csv"])
    assert exported.exit_code == 0, exported.output
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert len(rows) == n and rows[0]["origin"] == "agent"
    ris = runner.invoke(
        app, ["trail", "export", run_id, "-c", str(small), "--format", "ris", "-o", str(tmp_path / "x.ris")]
    )
    assert ris.exit_code == 0 and (tmp_path / "x.ris").read_text().count("ER  - ") == n
    bad = runner.invoke(app, ["trail", "export", run_id, "-c", str(small), "--format", "bibtex"])
    assert bad.exit_code == 2 and "csl-json" in bad.output
    listed = runner.invoke(app, ["trail", "list", "-c", str(small)])
    assert run_id in listed.output
