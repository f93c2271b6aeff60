"""The criteria judge over HTTP: a job of kind `judge` over a search run's candidates, with a scripted model behind
a real OpenAI-compatible HTTP endpoint (tests/fakes/openai_server.py): one progress event per candidate, the
scores the model gave, an unusable answer recorded as a failure without a score (never a default one), the
judge run in the trail, its scores on the review board; and the requests refused before any job starts."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.fakes.openai_server import FakeOpenAI, Reply, json_reply, last_user
from tests.server.browser import axe, chromium, page  # noqa: F401
from tests.server.conftest import LiveServer
from tests.server.test_review import NAME, app_client, research_dir, search_run  # noqa: F401
from tracerag.config import Settings, load_settings
from tracerag.server import ServerConfig
from tracerag.trail import read_trail
from tracerag.trail.events import JudgmentEvent, RunEvent, RunKind

CRITERIA = "Reports of a fire: a building, a ship or a town burning."
POISON = "harbour master"  # the excerpt that gets an unusable answer: the hostile letter's


def judge_answer(body: dict, n: int) -> Reply:
    """A judge that reads its one excerpt: 9 when it speaks of fire, 2 otherwise; the hostile letter gets prose
    that is no JSON (a model that did not follow the schema)."""
    excerpt = last_user(body).split("Excerpt:", 1)[-1].lower()
    if POISON in excerpt:
        return Reply(content="It is about a fire, I would say eight out of ten.")
    score = 9 if "fire" in excerpt else 2
    return json_reply(
        {"reasoning": f"the excerpt {'speaks' if score == 9 else 'does not speak'} of a fire", "score": score}
    )


@pytest.fixture()
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(judge_answer, model="scripted-judge") as server:
        yield server


def with_model(settings: Settings, fake: FakeOpenAI) -> Settings:
    llm = {"model": "openai:scripted-judge", "base_url": fake.base_url, "repair_rounds": 0, "max_retries": 0}
    return load_settings(cache_dir=str(settings.cache_dir), server={"rate_per_minute": 100_000}, llm=llm)


def finished(client: TestClient, job_id: str, timeout_s: float = 60) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = client.get(f"/api/jobs/{job_id}").json()
        if job["status"] != "running":
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} still running after {timeout_s} s")


def test_a_judge_job_scores_each_candidate_and_records_the_failure(research_dir, server_settings, fake):  # noqa: F811
    run_id = search_run(research_dir, server_settings, "fire harbour flames", k=6)
    with app_client(research_dir, with_model(server_settings, fake)) as client:
        body = {"from_run": run_id, "criteria": CRITERIA, "k": 5, "no_cache": True}
        started = client.post(f"/api/collections/{NAME}/judge", json=body)
        assert started.status_code == 202, started.text
        job = finished(client, started.json()["id"])
        assert job["status"] == "done", job
        result = job["result"]
        stream = client.get(f"/api/jobs/{job['id']}/events").text
        events = [json.loads(line[6:]) for line in stream.splitlines() if line.startswith("data: ")]
        board = client.get(f"/api/collections/{NAME}/selections/{run_id}", params={"judge": result["run_id"]}).json()
        as_run = client.get(f"/api/collections/{NAME}/selections/{result['run_id']}").json()
    judged = [e for e in events if e["kind"] == "judged"]
    assert [e["done"] for e in judged] == [1, 2, 3, 4, 5] and all(e["total"] == 5 for e in judged)
    assert events[-1]["kind"] == "end" and events[-1]["status"] == "done"
    judgments = result["judgments"]
    assert len(judgments) == 5 and result["calls"] == 5 and len(fake.requests) == 5  # one call per candidate
    failed = [j for j in judgments if j["score"] is None]
    assert [j["doc_id"] for j in failed] == ["hostile-1"] and result["failures"] == 1
    assert failed[0]["failure"] and not failed[0]["reasoning"]  # the failure, never a made-up score
    assert {j["score"] for j in judgments if j["score"] is not None} <= {2, 9}
    assert any(j["score"] == 9 for j in judgments)
    assert next(e for e in judged if e["doc_id"] == "hostile-1")["failure"]
    # the judge run's trail: its run event and a judgment per candidate, the failure too
    trail = read_trail(research_dir / "trails" / f"{result['run_id']}.jsonl")
    head = trail[0]
    assert isinstance(head, RunEvent) and head.run is RunKind.JUDGE and head.config["from"] == run_id
    recorded = [e for e in trail if isinstance(e, JudgmentEvent)]
    assert [(e.doc_id, e.score) for e in recorded] == [(j["doc_id"], j["score"]) for j in judgments]
    # the board shows each judged candidate's score beside it, from the judge run or as the judge run itself
    scores = {c["doc_id"]: c["judge"]["score"] for c in board["candidates"] if c["judge"]}
    assert scores == {j["doc_id"]: j["score"] for j in judgments}
    assert as_run["run_id"] == run_id  # a judge run is reviewed as the run it judged, its notes beside
    assert {c["doc_id"]: c["judge"]["score"] for c in as_run["candidates"] if c["judge"]} == scores


def test_requests_that_cannot_run_are_refused_before_a_job(research_dir, server_settings, fake):  # noqa: F811
    run_id = search_run(research_dir, server_settings, "fire harbour flames", k=6)
    url = f"/api/collections/{NAME}/judge"
    with app_client(research_dir, server_settings) as plain:  # no model configured
        no_model = plain.post(url, json={"from_run": run_id, "criteria": CRITERIA})
        assert no_model.status_code == 400 and "needs a model" in no_model.json()["error"]
    with app_client(research_dir, with_model(server_settings, fake)) as client:
        bad_toml = client.post(url, json={"from_run": run_id, "criteria": 'counts = ["x"]\nexclude = 3\n',
                                          "criteria_format": "toml"})  # fmt: skip
        assert bad_toml.status_code == 400 and "criteria:2" in bad_toml.json()["error"], bad_toml.text
        unknown = client.post(url, json={"from_run": "20200101T000000-abcdef", "criteria": CRITERIA})
        assert unknown.status_code == 404
        both = client.post(url, json={"criteria": CRITERIA})
        assert both.status_code == 400 and "from_run" in both.json()["error"]
        bad_k = client.post(url, json={"from_run": run_id, "criteria": CRITERIA, "k": 0})
        assert bad_k.status_code == 422 and bad_k.json()["field"] == "k"
        assert client.get("/api/jobs", params={"kind": "judge"}).json() == []
    assert fake.requests == []


def test_the_board_judges_its_candidates_in_the_browser(research_dir, server_settings, fake, page):  # noqa: F811
    run_id = search_run(research_dir, server_settings, "fire harbour flames", k=6)
    with LiveServer(ServerConfig(collections=(research_dir,), settings=with_model(server_settings, fake))) as live:
        page.goto(f"{live.url}/review/{NAME}/{run_id}")
        page.locator(".judge-panel summary").click()
        page.fill("#criteria", CRITERIA)
        page.fill("#judge-k", "4")
        page.locator("#criteria").press("a")  # typing in the criteria is typing, never a decision
        page.locator("#judge-button").click()
        page.wait_for_url("**judge=*")  # the board again, with the judge run's scores beside the candidates
        judged = page.locator(".card .judge")
        assert judged.count() == 4
        texts = judged.all_inner_texts()
        assert sum("9/10" in t for t in texts) >= 1 and sum("no score" in t for t in texts) == 1
        assert page.locator('[data-count="accepted"]').inner_text() == "0"
        assert axe(page) == [] and page.js_errors == []
    assert len(fake.requests) == 4
