"""POST /api/collections/{name}/ask as a background job with the replay model: its events in order through the
event stream, ending with `end`; the job's result equal to what the run's trail says, and served again by run id
(from the trail, so after the job registry and a restart too); the warm-start path without a model; errors."""

from __future__ import annotations

import pytest

from tests.server.ask_setup import (  # noqa: F401  (fixtures)
    NAME,
    QUESTION,
    AskSetup,
    ask,
    ask_client_fixture,
    ask_config_fixture,
    ask_setup_fixture,
)
from tracerag.server import ServerConfig, create_app
from tracerag.server.api.ask import ask_result
from tracerag.server.api.trails import trail_file
from tracerag.server.state import NotFoundError
from tracerag.trail import read_trail, trails_by_run
from tracerag.trail.events import LLMCallEvent, ResultEvent, VerdictEvent


def test_an_ask_job_streams_its_progress_in_order_and_its_result_is_the_trail(ask_client, ask_setup: AskSetup):
    job, events = ask(ask_client)
    assert job["status"] == "done", job["error"]
    kinds = [e["kind"] for e in events]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert kinds[0] == "run" and kinds[-1] == "end" and kinds.count("end") == 1
    assert kinds.index("run") < kinds.index("plan") < kinds.index("sub_question") < kinds.index("verdicts")
    assert kinds.index("verdicts") < kinds.index("result") < kinds.index("end")
    run_id = events[0]["run_id"]
    plan = next(e for e in events if e["kind"] == "plan")
    assert plan["sub_questions"] == ["harbour fire", "guerre"]
    assert [e["sq"] for e in events if e["kind"] == "sub_question"] == [0, 1]

    result = job["result"]
    assert result["run_id"] == run_id and result["status"] == "complete" and result["question"] == QUESTION
    # the result is what the trail says: its ranking, verdict counts and totals
    trail = read_trail(trails_by_run([ask_setup.collection])[run_id])
    final = next(e for e in trail if isinstance(e, ResultEvent))
    assert [s["doc_id"] for s in result["sources"]] == [r.doc_id for r in sorted(final.ranking, key=lambda r: r.rank)]
    assert [s["doc_id"] for s in result["sources"]] == ask_setup.recorded_sources  # replayed as recorded
    assert result["verdicts"] == {
        "accepted": len(final.accepted),
        "held": len(final.held),
        "rejected": len(final.rejected),
    }
    calls = [e for e in trail if isinstance(e, LLMCallEvent)]
    assert result["llm_calls"] == len(calls) > 0
    assert result["tokens"] == sum(c.prompt_tokens + c.completion_tokens for c in calls)
    assert result["cost_usd"] > 0
    # the progress said the same, as it went: the last llm event's totals and the last verdict counts
    last_llm = [e for e in events if e["kind"] == "llm"][-1]
    assert (last_llm["calls"], last_llm["tokens"]) == (len(calls), result["tokens"])
    assert abs(last_llm["cost_usd"] - result["cost_usd"]) < 1e-6
    verdicts = [e for e in trail if isinstance(e, VerdictEvent)]
    assert sum(1 for e in events if e["kind"] == "verdicts") >= len(verdicts)
    done = next(e for e in events if e["kind"] == "result")
    assert (done["accepted"], done["held"], done["rejected"]) == tuple(result["verdicts"].values())

    # each source: its verdict, reasons and the quote, the document's text at its span
    hostile = next(s for s in result["sources"] if s["doc_id"] == "hostile-1")
    assert hostile["verdict"] == "accept" and hostile["reasons"] and hostile["sub_questions"] == ["harbour fire"]
    start, end = hostile["span"]
    assert hostile["quote"] == "Dear editor, the harbour"[: end - start] and start == 0
    assert hostile["title"].startswith("<script>")  # data, as the document has it: escaping is the page's job
    assert {s["verdict"] for s in result["sources"]} <= {"accept", "hold", "reject", None}

    # the same result again by run id, from the trail
    again = ask_client.get(f"/api/collections/{NAME}/runs/{run_id}")
    assert again.status_code == 200
    assert again.json() == result


def test_a_run_is_served_from_its_trail_by_a_fresh_server(ask_client, ask_config: ServerConfig):
    job, _events = ask(ask_client)
    run_id = job["result"]["run_id"]
    from fastapi.testclient import TestClient

    with TestClient(create_app(ask_config), base_url="http://127.0.0.1") as fresh:  # no jobs: a restart
        assert fresh.get("/api/jobs").json() == []
        response = fresh.get(f"/api/collections/{NAME}/runs/{run_id}")
    assert response.status_code == 200 and response.json() == job["result"]


def test_without_a_model_the_job_is_the_warm_start_and_says_so(ask_setup: AskSetup):
    from fastapi.testclient import TestClient

    settings = ask_setup.settings.model_copy(update={"llm": ask_setup.settings.llm.model_copy(update={"model": None})})
    config = ServerConfig(collections=(ask_setup.collection,), settings=settings)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        assert 'id="ask-no-model"' in client.get("/ask").text  # said before a run, not only after one
        job, events = ask(client, "harbour fire")
    assert job["status"] == "done"
    assert events[0]["kind"] == "note" and "no language model" in events[0]["message"]
    result = job["result"]
    assert result["status"] == "no_llm" and result["llm"] is None and result["llm_calls"] == 0
    assert "No language model is configured" in result["message"]
    assert result["sources"] and result["sources"][0]["doc_id"] == "hostile-1"
    assert all(s["origin"] == "warm_start" and s["verdict"] is None for s in result["sources"])


def test_bad_requests_name_the_field_and_start_nothing(ask_client):
    for body, field in (({"question": "   "}, "question"), ({"question": "x", "k": 0}, "k"), ({}, "question")):
        response = ask_client.post(f"/api/collections/{NAME}/ask", json=body)
        assert response.status_code == 422, body
        assert response.json()["field"] == field
    response = ask_client.post("/api/collections/nope/ask", json={"question": "x"})
    assert response.status_code == 404 and "nope" in response.json()["error"]
    assert ask_client.get("/api/jobs", params={"kind": "ask"}).json() == []


def test_a_run_id_is_looked_up_never_used_as_a_path(ask_client, ask_setup: AskSetup):
    # ids that reach the route as they are (an HTTP client normalises a bare "..", so the state is asked too)
    for run_id in ("20990101T000000-abcdef", "*", "2", "..%2F..%2Fetc%2Fpasswd", "%2e%2e%2ftrails"):
        response = ask_client.get(f"/api/collections/{NAME}/runs/{run_id}")
        assert response.status_code == 404, run_id
        assert response.json()["error"], run_id
    state = ask_client.app.state.server
    real = next(iter(trails_by_run([ask_setup.collection])))
    for run_id in ("..", "../newspapers/trails/" + real, f"trails/{real}", f"{real}.jsonl", real[:8], real + "*"):
        with pytest.raises(NotFoundError):
            trail_file(state, NAME, run_id)
    assert trail_file(state, NAME, real).stem == real


def test_a_run_of_another_kind_is_not_an_ask_result(ask_client, ask_setup: AskSetup):
    from tracerag.trail.events import RunKind

    recorded = next(iter(trails_by_run([ask_setup.collection]).values()))
    events = read_trail(recorded)
    search_run = [events[0].model_copy(update={"run": RunKind.SEARCH}), *events[1:]]
    with pytest.raises(NotFoundError, match="a search run, not an ask run"):
        ask_result(NAME, search_run, {})
    with pytest.raises(NotFoundError, match="no result"):
        ask_result(NAME, [e for e in events if not isinstance(e, ResultEvent)], {})


def test_a_model_that_cannot_be_built_is_refused_before_any_job(ask_setup: AskSetup, tmp_path):
    from fastapi.testclient import TestClient

    llm = ask_setup.settings.llm.model_copy(update={"model": f"replay:{tmp_path / 'no-such-folder'}"})
    config = ServerConfig(
        collections=(ask_setup.collection,), settings=ask_setup.settings.model_copy(update={"llm": llm})
    )
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        response = client.post(f"/api/collections/{NAME}/ask", json={"question": "harbour fire"})
        assert response.status_code == 502 and "no-such-folder" in response.json()["error"]
        assert client.get("/api/jobs").json() == []


def test_the_ask_page_offers_each_served_collection(ask_setup: AskSetup, server_collection, ask_config):
    from fastapi.testclient import TestClient

    config = ServerConfig(collections=(ask_setup.collection, server_collection), settings=ask_config.settings)
    names = sorted(create_app(config).state.server.collections)
    assert len(names) == 2
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        page = client.get("/ask", params={"collection": names[1], "run": "<x>"})
        assert page.status_code == 200
        assert [f'<option value="{n}"' in page.text for n in names] == [True, True]
        assert f'<option value="{names[1]}" selected>' in page.text
        assert 'data-run="&lt;x&gt;"' in page.text  # a run id from the address is data: escaped, then looked up
        assert '<script src="/static/ask.js" defer></script>' in page.text and "<script>" not in page.text
        missing = client.get("/ask", params={"collection": "nope"})
        assert missing.status_code == 404 and "nope" in missing.text
    with TestClient(create_app(ask_config), base_url="http://127.0.0.1") as client:
        single = client.get("/ask").text
        assert 'id="ask-no-model"' not in single  # a model is set: no note that none is
        assert f'type="hidden" id="ask-collection" name="collection" value="{NAME}"' in single
