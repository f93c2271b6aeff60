"""A cancelled ask, deterministically: the client cancels after the first progress notification, once the model's
second call (the first review) is under way, and that call waits until the server has taken the cancel (the
call's stop event is set); the agent then ends at its next step. The run is in the trail whole, ending as
`truncated` with a guard saying it was cancelled, and marked with the client."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.mcp import run_async
from tests.mcp.conftest import CLIENT, NAME, STAMP, K, Setup, opening, run_trail
from tests.server.ask_setup import PRICES, QUESTION
from tracerag.llm import Message, RawAnswer, StructuredLLM
from tracerag.llm.replay import ReplayProvider
from tracerag.mcp.server import ToolServer
from tracerag.mcp.tools import Called, Env
from tracerag.server.state import ServerConfig, ServerState
from tracerag.trail.events import Guard, GuardEvent, ResultEvent, RunKind

WAIT_S = 60  # the most a blocked call waits for the cancel (a cancel that never comes fails the test, no hang)


class HeldModel:
    """The recorded answers, but call number `hold_at` waits until `stopped` is set (the server took the cancel)."""

    def __init__(self, inner: ReplayProvider, stopped: list[threading.Event], hold_at: int = 2):
        self.inner, self.name, self.model = inner, inner.name, inner.model
        self.stopped, self.hold_at, self.calls = stopped, hold_at, 0
        self.held = threading.Event()
        self.finished = threading.Event()  # the ask's work has ended (its trail written)

    def generate(self, messages: Sequence[Message], **options: Any) -> RawAnswer:
        self.calls += 1
        if self.calls == self.hold_at:
            self.held.set()
            self.stopped[0].wait(WAIT_S)
        return self.inner.generate(messages, **options)


@pytest.fixture()
def held(setup: Setup) -> Iterator[tuple[ToolServer, HeldModel]]:
    """A server whose ask uses the held model and notes its call's stop event (the server's own)."""
    state = ServerState(ServerConfig(collections=(setup.collection,), settings=setup.settings()))
    stopped: list[threading.Event] = []
    model = HeldModel(ReplayProvider.from_folder(setup.answers), stopped)
    state.model = lambda: StructuredLLM(model, prices=PRICES)  # type: ignore[method-assign]
    server = ToolServer(state)
    ask = server.tools["ask"]

    def noting(env: Env, args: Any) -> Called:
        stopped.append(env.stop)
        try:
            return ask.run(env, args)
        finally:
            model.finished.set()

    server.tools["ask"] = dataclasses.replace(ask, run=noting)
    yield server, model
    server.close()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_cancelled_ask_ends_truncated_and_whole_in_the_trail(held, setup: Setup, mode):
    server, model = held
    progress: list[str] = []
    started = anyio.Event()

    async def noted(_done: float, _total: float | None, message: str | None) -> None:
        progress.append(message or "")
        started.set()

    async def main() -> tuple[bool, dict[str, Any]]:
        answered = False
        with anyio.fail_after(WAIT_S):
            async with Client(server.server, mode=mode, client_info=CLIENT) as client:
                async with anyio.create_task_group() as tasks:
                    scope = anyio.CancelScope()

                    async def ask() -> None:
                        nonlocal answered
                        with scope:
                            await client.call_tool("ask", {"question": QUESTION, "k": K}, progress_callback=noted)
                            answered = True

                    tasks.start_soon(ask)
                    await started.wait()  # the run has begun...
                    assert await anyio.to_thread.run_sync(model.held.wait, WAIT_S)  # ...and its model is held
                    scope.cancel()  # the assistant gives up: the SDK sends notifications/cancelled
                assert await anyio.to_thread.run_sync(model.finished.wait, WAIT_S)
                run_id = progress[0].split()[1]
                trail = await client.read_resource(f"tracerag://trails/{NAME}/{run_id}")
        return answered, json.loads(trail.contents[0].text)

    answered, trail = run_async(main)
    assert not answered  # the client got no answer: it cancelled
    assert model.calls == 2  # the held call was let finish; no model call after the cancel
    assert progress[0].startswith("run ") and progress[0].endswith(" started")
    run_id = progress[0].split()[1]
    assert trail["torn"] is False and trail["run"]["status"].startswith("truncated")
    events = run_trail(setup.collection, run_id)
    assert opening(events).run is RunKind.ASK and opening(events).client == STAMP
    guards = [e for e in events if isinstance(e, GuardEvent)]
    assert [g.guard for g in guards] == [Guard.CANCELLED] and "cancelled" in guards[0].message
    result = events[-1]
    assert isinstance(result, ResultEvent)
    assert result.status == "truncated" and result.message == "cancelled in sub-question 0"
    assert result.ranking  # what was found is ranked as it stands
