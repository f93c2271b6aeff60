"""The trails API and pages over a collection with real runs (an ask run replayed, a search run, and a trail of
another kind written by hand): the list as `tracerag trail list` says it, a run's typed events, the exports
(the CLI's writers: CSV header, RIS records, CSL-JSON), 404 on unknown and traversing ids, and the timeline page
(steps in order, each model call expandable, the hostile document's markup shown as text)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.server.ask_setup import (  # noqa: F401  (fixtures)
    NAME,
    QUESTION,
    AskSetup,
    ask,
    ask_client_fixture,
    ask_config_fixture,
    ask_setup_fixture,
)
from tracerag.cli import app as cli
from tracerag.server import ServerConfig, create_app
from tracerag.server.pages.trails import step_of, timeline
from tracerag.trail import read_trail, trails_by_run

runner = CliRunner()


@pytest.fixture(scope="module")
def ran(ask_config: ServerConfig) -> str:
    """An ask run through the API (the replay model); its run id."""
    with TestClient(create_app(ask_config), base_url="http://127.0.0.1") as client:
        job, _events = ask(client)
    assert job["status"] == "done", job["error"]
    return job["result"]["run_id"]


def test_the_list_is_what_trail_list_says(ask_client, ask_setup: AskSetup, ran: str):
    response = ask_client.get(f"/api/collections/{NAME}/trails")
    assert response.status_code == 200
    items = response.json()
    assert sorted(i["run_id"] for i in items) == sorted(trails_by_run([ask_setup.collection]))
    started = [i["started"] for i in items if i["started"]]
    assert started == sorted(started)  # oldest first, by the run's start time
    mine = next(i for i in items if i["run_id"] == ran)
    assert mine["kind"] == "ask" and mine["question"] == QUESTION and mine["status"] == "complete"
    assert mine["started"].startswith(ran[:4]) and mine["damaged"] is None
    listed = runner.invoke(cli, ["trail", "list", "-c", str(ask_setup.collection)], terminal_width=200)
    assert listed.exit_code == 0, listed.output
    assert ran in listed.output and "complete" in listed.output


def test_a_damaged_trail_is_listed_as_such_and_hides_nothing(ask_setup: AskSetup, ask_config: ServerConfig, tmp_path):
    copy = tmp_path / NAME
    shutil.copytree(ask_setup.collection, copy)
    good = sorted(trails_by_run([copy]))
    (copy / "trails" / "20000101T000000-bad000.jsonl").write_text('{"kind": "run"\n', encoding="utf-8")
    config = ServerConfig(collections=(copy,), settings=ask_config.settings)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        items = client.get(f"/api/collections/{NAME}/trails").json()
        # by start time (runs of one second in the order they started), the damaged one by the time in its id
        assert items[0]["run_id"] == "20000101T000000-bad000"
        assert sorted(i["run_id"] for i in items[1:]) == good
        assert items[0]["status"] == "damaged" and items[0]["damaged"].startswith("line 1: not JSON")
        page = client.get("/trails")
        assert page.status_code == 200 and "damaged" in page.text


def test_a_run_is_its_typed_events(ask_client, ask_setup: AskSetup, ran: str):
    response = ask_client.get(f"/api/collections/{NAME}/trails/{ran}")
    assert response.status_code == 200
    body = response.json()
    on_disk = read_trail(trails_by_run([ask_setup.collection])[ran])
    assert body["run"]["run_id"] == ran and body["run"]["kind"] == "ask"
    assert [e["kind"] for e in body["events"]] == [e.kind for e in on_disk]
    assert body["events"] == [e.model_dump(mode="json") for e in on_disk]
    # the schema names every event model, so that a client knows the fields of each kind
    schema = ask_client.get("/api/openapi.json").json()
    assert {"VerdictEvent", "LLMCallEvent", "ResultEvent"} <= set(schema["components"]["schemas"])


def test_exports_are_the_cli_exports(ask_client, ask_setup: AskSetup, ran: str):
    url = f"/api/collections/{NAME}/trails/{ran}/export"
    csv_answer = ask_client.get(url, params={"format": "csv"})
    assert csv_answer.status_code == 200
    assert csv_answer.headers["content-type"].startswith("text/csv")
    assert csv_answer.headers["content-disposition"] == f'attachment; filename="trace-{ran}.csv"'
    rows = list(csv.DictReader(io.StringIO(csv_answer.text)))
    assert rows and rows[0]["run_id"] == ran and {"doc_id", "quote", "span_start", "reasons"} <= set(rows[0])
    cli_csv = runner.invoke(cli, ["trail", "export", ran, "-c", str(ask_setup.collection), "--format", "csv"])
    assert cli_csv.exit_code == 0, cli_csv.output
    # the same writer (CSV's own CRLF row ends; the terminal's stdout writes them as it writes newlines)
    assert csv_answer.text.replace("\r\n", "\n") == cli_csv.stdout.replace("\r\n", "\n")

    ris = ask_client.get(url, params={"format": "ris"})
    assert ris.status_code == 200 and ris.headers["content-type"].startswith("application/x-research-info-systems")
    assert ris.text.count("TY  - ") == len(rows) and "ER  -" in ris.text
    assert ris.headers["content-disposition"].endswith('.ris"')

    csl = ask_client.get(url, params={"format": "csl-json"})
    assert csl.status_code == 200 and csl.headers["content-type"].startswith("application/vnd.citationstyles.csl+json")
    items = json.loads(csl.text)
    assert len(items) == len(rows) and all("title" in i for i in items)

    bad = ask_client.get(url, params={"format": "bibtex"})
    assert bad.status_code == 422 and bad.json()["field"] == "format"
    base = ask_client.get(url, params={"format": "csv", "iiif_base": "javascript:alert(1)"})
    assert base.status_code == 400 and "iiif_base" in base.json()["error"]
    ok_base = ask_client.get(url, params={"format": "csv", "iiif_base": "https://iiif.example.org/{doc_id}"})
    assert ok_base.status_code == 200  # HIPE documents keep no ALTO boxes: no regions, the same rows
    assert list(csv.DictReader(io.StringIO(ok_base.text))) == rows


@pytest.mark.parametrize("run_id", ["20990101T000000-abcdef", "*", "..%2F..%2Fetc%2Fpasswd", "%2e%2e", "x.jsonl"])
def test_unknown_and_traversing_ids_are_404(ask_client, ran: str, run_id: str):
    for path in (f"/trails/{run_id}", f"/trails/{run_id}/export?format=csv"):
        response = ask_client.get(f"/api/collections/{NAME}{path}")
        assert response.status_code == 404, path
        assert response.json()["error"]
    page = ask_client.get(f"/trails/{NAME}/{run_id}")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert ask_client.get(f"/api/collections/nope/trails/{ran}").status_code == 404


def test_a_search_run_is_listed_shown_and_exported(ask_client, ask_setup: AskSetup):
    searched = runner.invoke(cli, ["search", "harbour fire", "-c", str(ask_setup.collection), "-k", "5"])
    assert searched.exit_code == 0, searched.output
    items = ask_client.get(f"/api/collections/{NAME}/trails").json()
    search = [i for i in items if i["kind"] == "search"]
    assert search and search[-1]["question"] == "harbour fire"
    run_id = search[-1]["run_id"]
    page = ask_client.get(f"/trails/{NAME}/{run_id}")
    assert page.status_code == 200 and "search run" in page.text
    # a search's ranking has no sub-questions or reasons: their columns are not drawn empty
    assert '<th scope="col">Accepted by</th>' not in page.text and "First reason" not in page.text
    exported = ask_client.get(f"/api/collections/{NAME}/trails/{run_id}/export", params={"format": "csv"})
    assert exported.status_code == 200 and "hostile-1" in exported.text


def test_the_timeline_is_the_run_in_order(ask_client, ask_setup: AskSetup, ran: str):
    events = read_trail(trails_by_run([ask_setup.collection])[ran])
    steps = timeline(events)
    kinds = [s.kind for s in steps]
    assert kinds[0] == "plan" and kinds[-2:] == ["rank", "result"]
    assert kinds.index("sub_question") < kinds.index("briefing") < kinds.index("rank")
    assert [s.sq for s in steps if s.kind == "sub_question"] == [0, 1]
    assert sum(len(s.events) for s in steps) == len(events) - 1  # every event but the run's own, once
    assert all(step_of(e) is None or step_of(e)[0] == s.kind for s in steps for e in s.events)
    plan = steps[0]
    assert [e.kind for e in plan.events] == ["llm_call", "plan"]  # the plan's model call, then the plan
    assert all(c.purpose in ("action", "review") for s in steps if s.kind == "sub_question" for c in s.calls)

    page = ask_client.get(f"/trails/{NAME}/{ran}")
    assert page.status_code == 200
    html = page.text
    assert html.count('<details class="llm-call">') == sum(len(s.calls) for s in steps) > 0
    assert "Sub-question 1: harbour fire" in html and "Final rank" in html
    assert '<th scope="col">Accepted by</th>' in html  # an agent's ranking: accepted by its sub-questions
    for fmt in ("csv", "ris", "csl-json"):
        assert f"/api/collections/{NAME}/trails/{ran}/export?format={fmt}" in html
    # the hostile letter's title and quote are text
    assert "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt; A letter" in html
    assert "<script>alert" not in html and "<img src=x" not in html
    listing = ask_client.get("/trails")
    assert listing.status_code == 200 and f'href="/trails/{NAME}/{ran}"' in listing.text


def test_trails_of_a_read_only_collection_are_found_in_the_private_folder(ask_setup: AskSetup, tmp_path: Path):
    from tracerag.collection import private_root

    settings = ask_setup.settings
    private = private_root(ask_setup.collection, settings) / "trails"
    private.mkdir(parents=True, exist_ok=True)
    recorded = next(iter(trails_by_run([ask_setup.collection]).values()))
    moved = private / "20000101T000001-a1b2c3.jsonl"
    lines = recorded.read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0]) | {"run_id": "20000101T000001-a1b2c3"}
    moved.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n", encoding="utf-8")
    try:
        config = ServerConfig(collections=(ask_setup.collection,), settings=settings)
        with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
            assert "20000101T000001-a1b2c3" in [
                i["run_id"] for i in client.get(f"/api/collections/{NAME}/trails").json()
            ]
            assert client.get(f"/api/collections/{NAME}/trails/20000101T000001-a1b2c3").status_code == 200
    finally:
        moved.unlink()


FIXTURE_TRAILS = Path(__file__).parents[1] / "fixtures" / "trails"


def test_every_kind_of_run_shows_as_a_timeline(ask_setup: AskSetup, ask_config: ServerConfig, tmp_path: Path):
    """The recorded trails of tests/fixtures (an agent run, a catalog conversation, a search, judge, review and
    two answer runs, one withdrawn, and an assistant's call), each listed by its kind and shown by its own steps."""
    copy = tmp_path / NAME
    shutil.copytree(ask_setup.collection, copy, ignore=shutil.ignore_patterns("trails"))
    (copy / "trails").mkdir()
    fixtures = [FIXTURE_TRAILS / "agent.jsonl", FIXTURE_TRAILS / "catalog.jsonl"]
    fixtures += sorted((FIXTURE_TRAILS / "research").glob("*.jsonl"))
    for path in fixtures:
        shutil.copy(path, copy / "trails" / f"{read_trail(path)[0].run_id}.jsonl")
    config = ServerConfig(collections=(copy,), settings=ask_config.settings)
    # what each kind's timeline shows: its steps, and a line only that kind has
    expected = {
        "ask": (["plan", "sub_question"], "Sub-question 1: "),
        "catalog": (["turn"], "Turn 1"),
        "search": (["search", "result"], "expansion"),
        "judge": (["judge"], "/10"),
        "review": (["review"], "decision"),
        "answer": (["answer"], "Cited draft and its check"),
        "call": (["call"], "asks the call again"),
    }
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        items = client.get(f"/api/collections/{NAME}/trails").json()
        assert sorted(i["kind"] for i in items) == sorted([*expected, "answer"])  # an answer withdrawn too
        for item in items:
            steps, shown = expected[item["kind"]]
            events = read_trail(copy / "trails" / f"{item['run_id']}.jsonl")
            kinds = [s.kind for s in timeline(events)]
            assert all(k in kinds for k in steps), (item["kind"], kinds)
            assert "other" not in kinds, item["kind"]
            page = client.get(f"/trails/{NAME}/{item['run_id']}")
            assert page.status_code == 200, item
            assert shown in page.text, item["kind"]
            calls = sum(1 for e in events if e.kind == "llm_call")
            assert page.text.count('<details class="llm-call">') == calls
            withdrawn = any(e.kind == "withdrawn" for e in events)
            assert ("<strong>Withdrawn</strong>, no answer: none of the draft" in page.text) == withdrawn
