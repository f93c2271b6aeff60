"""What the MCP tests share: a small real collection (HIPE-2022 newspapers, the web tests' hostile letter, and a
letter whose title and text try to close the `<retrieved_data>` fence and give orders), the agent's answers
recorded once on it from the scripted policy (tests/server/ask_setup.py's), served back as the replay model, and
the real Miami 211 catalog. Built once per run (tests/built_once.py); each module gets a copy of its own, since
the tools write trails and selections into it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.agent.policy import PolicyProvider
from tests.built_once import private_copy
from tests.catalog import built
from tests.mcp import run_async
from tests.server.ask_setup import PRICES, QUESTION, policy
from tests.server.conftest import _documents
from tracerag.agent import Agent
from tracerag.collection import Collection
from tracerag.collection.layout import trail_roots
from tracerag.config import Settings, load_settings
from tracerag.ingest import read_documents
from tracerag.llm import StructuredLLM
from tracerag.llm.replay import RecordingProvider
from tracerag.mcp.server import ToolServer
from tracerag.model import Document, RunStatus
from tracerag.research.selection import open_selections
from tracerag.trail import read_trail, trails_by_run
from tracerag.trail.events import Event, RunEvent

INJECTION = Path(__file__).parent / "fixtures" / "injection.jsonl"
INJECTION_ID = "injection-1"
NAME = "newspapers"  # the collection's name on the server: its folder's
K = 6  # the recorded ask's k: a replayed ask must ask the same
CLIENT = types.Implementation(name="test-assistant", version="1.0")  # how the tests' client names itself
STAMP = "mcp: test-assistant 1.0"  # what every run a call of that client starts says of it
T = TypeVar("T")


@dataclass(frozen=True)
class Setup:
    collection: Path
    answers: Path  # the recorded answers (`--llm replay:DIR`)
    cache: Path
    recorded_sources: list[str]  # the recorded run's ranking: what a replayed ask gives
    documents: int  # how many the collection holds

    def settings(self, *, replay: bool = True) -> Settings:
        llm = {"model": f"replay:{self.answers}", "prices": PRICES} if replay else {}
        return load_settings(cache_dir=str(self.cache), llm=llm)


def _build(hipe_dir: Path):  # noqa: ANN202
    def build(root: Path) -> tuple[list[str], int]:
        collection, answers = root / NAME, root / "answers"
        settings = load_settings(cache_dir=str(root / "cache"))
        injected = [d for d in read_documents(INJECTION, "jsonl") if isinstance(d, Document)]
        with Collection.open(collection, settings, mode="write", create=True, embed_model="none") as col:
            report = col.ingest([*_documents(hipe_dir), *injected], dense=False)
        assert report.added > 50 and not report.skipped
        llm = StructuredLLM(RecordingProvider(PolicyProvider(policy(), latency_s=0.01), answers), prices=PRICES)
        with Collection.open(collection, settings, mode="read") as col:
            recorded = Agent(col, llm, trail_dir=root / "recording-trails").run(QUESTION, K)
        assert recorded.status is RunStatus.COMPLETE and recorded.accepted, recorded.message
        return [r.doc_id for r in recorded.ranking], report.added

    return build


@pytest.fixture(scope="module")
def setup(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Setup:
    """This module's own copy of the collection and the answers (a few seconds the first time in a run)."""
    root, (recorded, documents) = private_copy(tmp_path_factory, "mcp-newspapers", "mcp", _build(hipe_dir))
    return Setup(root / NAME, root / "answers", root / "cache", recorded, documents)


@pytest.fixture(scope="module")
def catalog(datasets_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Miami 211 catalog (lexical), this module's copy: conversations write their trails into it."""
    return built.miami(tmp_path_factory)


def trails(setup: Setup) -> dict[str, bytes]:
    """Every trail of the collection by run id, as its bytes."""
    found = trails_by_run(trail_roots(setup.collection, setup.settings()))
    return {run: path.read_bytes() for run, path in found.items()}


def selections(setup: Setup) -> dict[str, list[tuple[str, str, str, str]]]:
    """Every selection of the collection: its question, and each decision (document, decision, note, who)."""
    with open_selections(setup.collection, setup.settings()) as store:
        return {
            s.question: [(e.doc_id, e.decision.value, e.note, e.who) for e in store.entries(s.question)]
            for s in store.questions()
        }


@pytest.fixture()
def no_writes(setup: Setup) -> Iterator[None]:
    """Asserts that the test changed no trail and no selection of the collection."""
    before, chosen = trails(setup), selections(setup)
    yield
    assert trails(setup) == before
    assert selections(setup) == chosen


def connected(
    tool_server: ToolServer,
    body: Callable[[Client], Awaitable[T]],
    mode: Literal["auto", "legacy"] = "auto",
) -> T:
    """`body(client)` with the SDK's own client connected in-process, as the tests' assistant: 'auto' speaks the
    newest protocol (no handshake), 'legacy' opens with the initialize handshake, as the stdio clients of today."""

    async def main() -> T:
        with anyio.fail_after(120):  # a hang fails, it does not stall the run
            async with Client(tool_server.server, mode=mode, client_info=CLIENT) as client:
                return await body(client)

    return run_async(main)


def run_trail(collection: Path, run_id: str) -> list[Event]:
    """The events of run `run_id` of the collection (or catalog) at `collection`."""
    return read_trail(trails_by_run([collection])[run_id])


def opening(events: list[Any]) -> RunEvent:
    first = events[0]
    assert isinstance(first, RunEvent), first
    return first
