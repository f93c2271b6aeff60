"""What the ask and trail tests share: a collection of their own (the served one must not gain trails), the
agent's answers recorded once from the scripted policy (tests/agent/policy.py), and the settings that serve them
back as the replay model (`llm.model = "replay:DIR"`), so that every run the server makes is deterministic and
goes through the real model interface, trail and job machinery."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.agent.policy import Policy, PolicyProvider
from tests.server.conftest import _documents
from tracerag.agent import Agent
from tracerag.collection import Collection
from tracerag.config import Settings, load_settings
from tracerag.llm import StructuredLLM
from tracerag.llm.replay import RecordingProvider
from tracerag.model import RunStatus
from tracerag.server import ServerConfig, create_app

QUESTION = "the harbour fire and the war"
NAME = "newspapers"  # the collection's name on the server: its folder's
PRICES = {"scripted-policy": (1.0, 2.0)}  # dollars per million tokens: a run costs something, as a real one does


def policy() -> Policy:
    """Two sub-questions; the hostile letter (markup and script in its text and title) is accepted, so that its
    title and quote reach every page that shows a run."""
    return Policy(
        sub_questions=[{"question": "harbour fire", "target_corpus": None}, {"question": "guerre"}],
        accept=("harbour", "guerre"),
        hold=("fire",),
        actions=[
            {"tool": "review"},
            {"tool": "search_bm25", "query": "harbour warehouses"},
            {"tool": "review"},
            {"tool": "finish"},
            {"tool": "review"},
            {"tool": "finish"},
        ],
    )


@dataclass(frozen=True)
class AskSetup:
    collection: Path
    answers: Path  # the recorded answers
    settings: Settings  # with the replay model
    recorded_sources: list[str]  # the recorded run's ranking (doc ids): what every replayed run must give


def build(hipe_dir: Path, root: Path) -> AskSetup:
    collection, answers = root / "newspapers", root / "answers"
    cache = str(root / "cache")
    plain = load_settings(cache_dir=cache)
    with Collection.open(collection, plain, mode="write", create=True, embed_model="none") as col:
        col.ingest(_documents(hipe_dir), dense=False)
    llm = StructuredLLM(RecordingProvider(PolicyProvider(policy(), latency_s=0.01), answers), prices=PRICES)
    with Collection.open(collection, plain, mode="read") as col:
        recorded = Agent(col, llm, trail_dir=root / "recording-trails").run(QUESTION, 6)
    assert recorded.status is RunStatus.COMPLETE and recorded.accepted, recorded.message
    settings = load_settings(
        cache_dir=cache,
        server={"rate_per_minute": 100_000},
        llm={"model": f"replay:{answers}", "prices": PRICES},
    )
    return AskSetup(collection, answers, settings, [r.doc_id for r in recorded.ranking])


_BUILT: dict[str, AskSetup] = {}


@pytest.fixture(scope="session", name="ask_setup")
def ask_setup_fixture(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> AskSetup:
    """Built once per session for every test module that imports this fixture (a few seconds). The fixtures
    are imported under their function names (`ask_setup_fixture`...) and asked for by their `name`."""
    if "setup" not in _BUILT:
        _BUILT["setup"] = build(hipe_dir, tmp_path_factory.mktemp("ask"))
    return _BUILT["setup"]


@pytest.fixture(scope="session", name="ask_config")
def ask_config_fixture(ask_setup: AskSetup) -> ServerConfig:
    return ServerConfig(collections=(ask_setup.collection,), settings=ask_setup.settings)


@pytest.fixture(name="ask_client")
def ask_client_fixture(ask_config: ServerConfig) -> Iterator[TestClient]:
    with TestClient(create_app(ask_config), base_url="http://127.0.0.1") as c:
        yield c


def follow(client: TestClient, job_id: str) -> list[dict]:
    """A job's events as its event stream sends them, to the end."""
    events = []
    with client.stream("GET", f"/api/jobs/{job_id}/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if events[-1]["kind"] == "end":
                    break
    return events


def ask(client: TestClient, question: str = QUESTION, k: int = 6) -> tuple[dict, list[dict]]:
    """Start an ask job, follow it to its end; the job as it ended, and its events."""
    response = client.post(f"/api/collections/{NAME}/ask", json={"question": question, "k": k})
    assert response.status_code == 202, response.text
    job = response.json()
    events = follow(client, job["id"])
    return client.get(f"/api/jobs/{job['id']}").json(), events
