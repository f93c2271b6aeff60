"""`tracerag mcp` as an assistant starts it: a subprocess speaking the protocol over stdin/stdout, the ask's model
the recorded answers (`--llm replay:DIR`). Through the SDK's own stdio client: every tool once, a bad argument, a
cancelled ask; and, read raw, its stdout carries nothing but protocol messages, its progress included.

Over stdio a cancel cannot be made deterministic: the test cannot hold the subprocess's model until the server has
taken the cancel (in-process, tests/mcp/test_cancel.py does). The replayed ask may end before the cancel arrives;
either way its trail must be whole, and truncated only by the cancel."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.mcp import run_async
from tests.mcp.conftest import CLIENT, INJECTION_ID, NAME, STAMP, K, Setup, opening, run_trail
from tests.server.ask_setup import QUESTION
from tracerag.server.api.trails import read_served_trail
from tracerag.trail import trails_by_run
from tracerag.trail.events import Guard, GuardEvent, ResultEvent, RunKind

pytestmark = pytest.mark.heavy  # three subprocess starts (each imports the library and opens the collection)

WAIT_S = 120  # a cold start on a loaded machine is slow; a hang fails instead of stalling the run
TOOLS = ["search", "document", "ask", "add_to_selection", "selection", "export", "catalog_chat"]


@pytest.fixture(scope="module")
def command(setup: Setup, catalog: Path) -> list[str]:
    return ["-m", "tracerag.cli", "mcp", "-c", str(setup.collection), "--catalog", str(catalog),
            "--llm", f"replay:{setup.answers}"]  # fmt: skip


@pytest.fixture(scope="module")
def env(setup: Setup) -> dict[str, str]:
    """The subprocess's environment beyond the SDK's safe defaults: this checkout's source, a private cache."""
    env = {"TRACERAG_CACHE_DIR": str(setup.cache)}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def over_stdio(command: list[str], env: dict[str, str], errlog: Path, body):  # noqa: ANN001, ANN201
    params = StdioServerParameters(command=sys.executable, args=command, env=env)

    async def main():  # noqa: ANN202
        with anyio.fail_after(WAIT_S), errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err), client_info=CLIENT) as client:
                return await body(client)

    return run_async(main)


def test_over_stdio_every_tool_answers_and_a_bad_argument_is_refused(command, env, setup: Setup, tmp_path):
    async def body(client: Client) -> dict[str, Any]:
        got: dict[str, Any] = {"tools": [t.name for t in (await client.list_tools()).tools]}
        found = await client.call_tool("search", {"query": "harbour fire", "k": 3})
        run_id = found.structured_content["run_id"]
        got["search"] = found
        got["document"] = await client.call_tool("document", {"doc_id": INJECTION_ID, "max_chars": 100})
        got["ask"] = await client.call_tool("ask", {"question": QUESTION, "k": K})
        decision = {"question": "fires", "doc_id": INJECTION_ID, "run_id": run_id}
        got["add_to_selection"] = await client.call_tool("add_to_selection", decision)
        got["selection"] = await client.call_tool("selection", {"question": "fires"})
        got["export"] = await client.call_tool("export", {"question": "fires", "format": "csl-json"})
        got["catalog_chat"] = await client.call_tool("catalog_chat", {"text": "food in Miami 33125"})
        with pytest.raises(MCPError) as bad:
            await client.call_tool("search", {"query": "fire", "k": 0})
        got["bad"] = bad.value
        return got

    got = over_stdio(command, env, tmp_path / "stderr.txt", body)
    assert got["tools"] == TOOLS
    for tool in TOOLS:
        assert not got[tool].is_error, (tool, got[tool].content)
    assert opening(run_trail(setup.collection, got["search"].structured_content["run_id"])).client == STAMP
    assert got["document"].structured_content["text"]["text"].startswith("To the editor: the harbour fire")
    asked = got["ask"].structured_content
    assert asked["status"] == "complete" and [s["doc_id"] for s in asked["sources"]] == setup.recorded_sources
    assert opening(run_trail(setup.collection, asked["run_id"])).client == STAMP
    review = got["add_to_selection"].structured_content["review_run"]
    assert opening(run_trail(setup.collection, review)).run is RunKind.REVIEW
    assert [e["doc_id"] for e in got["selection"].structured_content["entries"]] == [INJECTION_ID]
    assert got["export"].structured_content["sources"] == 1
    assert got["catalog_chat"].structured_content["outcome"] == "answer"
    assert got["bad"].error.code == -32602 and "k: " in got["bad"].error.message
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()


def test_a_cancelled_ask_over_stdio_leaves_a_whole_trail(command, env, setup: Setup, tmp_path):
    progress: list[str] = []
    started = anyio.Event()

    async def noted(_done: float, _total: float | None, message: str | None) -> None:
        progress.append(message or "")
        started.set()

    async def body(client: Client) -> tuple[bool, Path, Any]:
        answered = False
        async with anyio.create_task_group() as tasks:
            scope = anyio.CancelScope()

            async def ask() -> None:
                nonlocal answered
                with scope:
                    await client.call_tool("ask", {"question": QUESTION, "k": K}, progress_callback=noted)
                    answered = True

            tasks.start_soon(ask)
            await started.wait()
            scope.cancel()
        run_id = progress[0].split()[1]
        path = await ended(setup.collection, run_id)  # the server still serves while the run ends
        after = await client.call_tool("selection", {})
        return answered, path, after

    answered, path, after = over_stdio(command, env, tmp_path / "stderr.txt", body)
    assert not answered and not after.is_error  # the cancelled call answered nothing; the next one is served
    served = read_served_trail(path)
    assert served.torn is None
    result = served.events[-1]
    assert isinstance(result, ResultEvent) and opening(served.events).client == STAMP
    guards = [e for e in served.events if isinstance(e, GuardEvent) and e.guard is Guard.CANCELLED]
    if result.status == "truncated":  # the cancel came in time: only it truncated the run
        assert "cancelled" in result.message and len(guards) <= 1
    else:  # the replay ended first
        assert result.status == "complete" and not guards


async def ended(collection: Path, run_id: str) -> Path:
    """The run's trail once it holds its result event (the end of a run's work)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        path = trails_by_run([collection]).get(run_id)
        if path is not None and '"kind": "result"' in path.read_text(encoding="utf-8"):
            return path
        await anyio.sleep(0.1)
    raise AssertionError(f"run {run_id} did not end")


class Raw:
    """The server as a bare subprocess, its stdout read line by line as it comes."""

    def __init__(self, command: list[str], env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **env},
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.read: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        self.proc.stdin.flush()

    def answer_to(self, request_id: int) -> dict[str, Any]:
        while True:
            line = self.lines.get(timeout=WAIT_S)
            assert line is not None, f"the server ended before answering request {request_id}"
            self.read.append(line)
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return message

    def close(self) -> int:
        """End stdin (the client leaves): the server ends by itself; what it wrote is all read."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(WAIT_S)
        while (line := self.lines.get(timeout=WAIT_S)) is not None:
            self.read.append(line)
        return code


@pytest.fixture()
def raw(command: list[str], env: dict[str, str]) -> Iterator[Raw]:
    server = Raw(command, env)
    yield server
    if server.proc.poll() is None:
        server.proc.kill()
        server.proc.wait()


def test_stdout_carries_nothing_but_the_protocol(raw: Raw):
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    raw.send({"id": 1, "method": "initialize", "params": hello})
    assert raw.answer_to(1)["result"]["serverInfo"]["name"] == "tracerag"
    raw.send({"method": "notifications/initialized"})
    raw.send({"id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "guerre"}}})
    raw.send({"id": 3, "method": "tools/call", "params": {
        "name": "ask", "arguments": {"question": QUESTION, "k": K}, "_meta": {"progressToken": "asked"}}})  # fmt: skip
    assert raw.answer_to(2)["result"]["structuredContent"]["collection"] == NAME
    assert raw.answer_to(3)["result"]["structuredContent"]["status"] == "complete"
    assert raw.close() == 0
    messages = [json.loads(line) for line in raw.read]  # every line is JSON...
    assert all(m["jsonrpc"] == "2.0" for m in messages)  # ...and a JSON-RPC message
    progress = [m for m in messages if m.get("method") == "notifications/progress"]
    assert progress and all(p["params"]["progressToken"] == "asked" for p in progress)
    assert progress[0]["params"]["message"].endswith(" started")
