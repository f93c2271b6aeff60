"""Trails as a new user meets them: a run killed mid-write (its last line torn) shows its good events and says the
last line is damaged; a damaged line in the middle is 409 "damaged", not 404; runs of one second are listed by
their start time, not by the random part of their ids; the served catalog's conversations are listed under
"Catalog: NAME" and each is shown by the same timeline at /catalog/trails/{run_id} (and /api/catalog/trails)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.server.ask_setup import (  # noqa: F401  (fixtures)
    NAME,
    AskSetup,
    ask,
    ask_client_fixture,
    ask_config_fixture,
    ask_setup_fixture,
)
from tracerag.server import ServerConfig, create_app
from tracerag.trail import read_trail, trails_by_run


@pytest.fixture(scope="module")
def copied(ask_setup: AskSetup, ask_config: ServerConfig, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the ask collection with one replayed ask run in it (the tests damage its trails)."""
    copy = tmp_path_factory.mktemp("damaged") / NAME
    shutil.copytree(ask_setup.collection, copy)
    config = ServerConfig(collections=(copy,), settings=ask_config.settings)
    with TestClient(create_app(config), base_url="http://127.0.0.1") as client:
        job, _events = ask(client)
    assert job["status"] == "done", job["error"]
    return copy


def client_of(collection: Path, ask_config: ServerConfig) -> TestClient:
    return TestClient(
        create_app(ServerConfig(collections=(collection,), settings=ask_config.settings)), base_url="http://127.0.0.1"
    )


def copy_run(collection: Path, run_id: str, lines: list[str]) -> None:
    (collection / "trails" / f"{run_id}.jsonl").write_text("".join(lines), encoding="utf-8")


def run_lines(path: Path, run_id: str, time: str | None = None) -> list[str]:
    """The lines of the trail at `path` as run `run_id`'s (its run event at `time`, if given)."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        event = json.loads(line)
        event["run_id"] = run_id
        if n == 0 and time is not None:
            event["time"] = time
        out.append(json.dumps(event) + "\n")
    return out


def test_a_torn_last_line_shows_the_good_events_and_says_so(copied: Path, ask_config: ServerConfig):
    trails = trails_by_run([copied])
    # the latest ask run (the fixture's): a search run recorded in the same second may sort after it
    source = next(trails[r] for r in sorted(trails, reverse=True) if read_trail(trails[r])[0].run == "ask")
    good = run_lines(source, "20300101T000000-aaaaaa")
    torn = good[-1][: len(good[-1]) // 2]  # killed while writing its last line
    copy_run(copied, "20300101T000000-aaaaaa", [*good[:-1], torn])
    with client_of(copied, ask_config) as client:
        body = client.get(f"/api/collections/{NAME}/trails/20300101T000000-aaaaaa")
        assert body.status_code == 200, body.text
        run = body.json()["run"]
        assert run["damaged"].startswith(f"the last line ({len(good)}) is damaged, not JSON")
        assert len(body.json()["events"]) == len(good) - 1
        assert [e["kind"] for e in body.json()["events"]] == [e.kind for e in read_trail(source)][:-1]
        page = client.get(f"/trails/{NAME}/20300101T000000-aaaaaa")
        assert page.status_code == 200
        assert "Damaged trail: the last line" in page.text and "Sub-question 1" in page.text
        listed = next(i for i in client.get(f"/api/collections/{NAME}/trails").json() if i["run_id"].startswith("2030"))
        assert listed["kind"] == "ask" and listed["status"] == "unfinished" and "last line" in listed["damaged"]


def test_a_damaged_line_in_the_middle_is_409_damaged_not_404(copied: Path, ask_config: ServerConfig):
    source = trails_by_run([copied])[sorted(trails_by_run([copied]))[0]]
    good = run_lines(source, "20300101T000001-bbbbbb")
    copy_run(copied, "20300101T000001-bbbbbb", [*good[:3], '{"kind": "plan"\n', *good[3:]])
    with client_of(copied, ask_config) as client:
        answer = client.get(f"/api/collections/{NAME}/trails/20300101T000001-bbbbbb")
        assert answer.status_code == 409
        assert answer.json()["error"].endswith(
            "20300101T000001-bbbbbb.jsonl:4: not JSON (EOF while parsing an object at column 15)"
        )
        assert client.get(f"/trails/{NAME}/20300101T000001-bbbbbb").status_code == 409
        assert client.get(f"/api/collections/{NAME}/trails/20300101T000001-cccccc").status_code == 404
        listed = next(i for i in client.get(f"/api/collections/{NAME}/trails").json() if i["run_id"].endswith("bbbbbb"))
        assert listed["status"] == "damaged" and listed["damaged"].startswith("line 4: not JSON")


def test_runs_of_one_second_are_listed_by_their_start_time(copied: Path, ask_config: ServerConfig):
    source = trails_by_run([copied])[sorted(trails_by_run([copied]))[0]]
    # the id's random part says the opposite of the start times
    copy_run(
        copied, "20300102T000000-ffffff", run_lines(source, "20300102T000000-ffffff", "2030-01-02T00:00:00.100000Z")
    )
    copy_run(
        copied, "20300102T000000-000000", run_lines(source, "20300102T000000-000000", "2030-01-02T00:00:00.900000Z")
    )
    with client_of(copied, ask_config) as client:
        ids = [i["run_id"] for i in client.get(f"/api/collections/{NAME}/trails").json()]
    assert ids.index("20300102T000000-ffffff") < ids.index("20300102T000000-000000")


def test_the_catalog_conversations_are_listed_and_shown(client: TestClient, server_catalog: Path):
    conversation = client.post("/api/catalog/conversations", json={}).json()["id"]
    turn = client.post(f"/api/catalog/conversations/{conversation}/turns", json={"text": "a food pantry in Miami"})
    assert turn.status_code == 200, turn.text

    listed = client.get("/api/catalog/trails")
    assert listed.status_code == 200
    mine = next(i for i in listed.json() if i["run_id"] == conversation)
    assert mine["kind"] == "catalog" and mine["question"] == "a food pantry in Miami"
    body = client.get(f"/api/catalog/trails/{conversation}")
    assert body.status_code == 200
    assert [e["kind"] for e in body.json()["events"]][:2] == ["run", "catalog_parse"]
    assert client.get("/api/catalog/trails/20000101T000000-nope00").status_code == 404

    trails = client.get("/trails")
    assert f"Catalog: {server_catalog.name}" in trails.text
    assert f'href="/catalog/trails/{conversation}"' in trails.text
    page = client.get(f"/catalog/trails/{conversation}")
    assert page.status_code == 200
    assert f"Trail of run {conversation}" in page.text and "Turn 1" in page.text
    assert "a food pantry in Miami" in page.text and "nothing to export" not in page.text
    assert client.get("/catalog/trails/..%2F..%2Fetc").status_code == 404


def test_no_catalog_no_catalog_trails(ask_client: TestClient):
    assert ask_client.get("/api/catalog/trails").status_code == 404
    assert "Catalog:" not in ask_client.get("/trails").text
