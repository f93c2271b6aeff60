"""The tool server over streamable HTTP. On 127.0.0.1 without a token the SDK's client works as it is; with
`tracerag mcp --http --token T` (a subprocess, as a user starts it) a request without the token or with a wrong
one is answered 401, one with `Authorization: Bearer T` is served; a Host header other than the loopback's is
refused (the SDK's DNS-rebinding guard: 421), token or not."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp import run_async
from tests.mcp.conftest import CLIENT, NAME, STAMP, Setup, opening, run_trail
from tracerag.mcp.http import http_app
from tracerag.mcp.server import ToolServer
from tracerag.server.run import bind
from tracerag.server.state import ServerConfig, ServerState

WAIT_S = 120  # a cold start on a loaded machine is slow; a hang fails instead of stalling the run
TOKEN = "s3cret-token-for-the-tests"
HELLO = {  # a whole initialize request, so that what refuses it is the guard, not a malformed body
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(url: str, **headers: str) -> httpx.Response:
    return httpx.post(url, json=HELLO, headers={**ACCEPT, **headers}, timeout=WAIT_S)


def searched(url: str, headers: dict[str, str] | None = None) -> tuple[list[str], dict[str, Any]]:
    """The tools listed and a search, through the SDK's own client (with these HTTP headers)."""

    async def main() -> tuple[list[str], dict[str, Any]]:
        with anyio.fail_after(WAIT_S):
            async with httpx2.AsyncClient(headers=headers or {}, timeout=WAIT_S) as http:
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport, client_info=CLIENT) as client:
                    tools = [t.name for t in (await client.list_tools()).tools]
                    found = await client.call_tool("search", {"query": "harbour fire", "k": 2})
                    assert not found.is_error, found.content
                    return tools, found.structured_content

    return run_async(main)


@pytest.fixture(scope="module")
def open_server(setup: Setup) -> Iterator[str]:
    """The HTTP app on 127.0.0.1 without a token, served by uvicorn in a thread."""
    tool_server = ToolServer(ServerState(ServerConfig(collections=(setup.collection,), settings=setup.settings())))
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(http_app(tool_server, None, "127.0.0.1"), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_S
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    server.should_exit = True
    thread.join(30)
    tool_server.close()


def test_on_loopback_without_a_token_the_sdks_client_is_served(open_server: str, setup: Setup):
    tools, found = searched(open_server)
    assert "search" in tools and found["collection"] == NAME and found["results"]
    assert opening(run_trail(setup.collection, found["run_id"])).client == STAMP


def test_a_foreign_host_header_is_refused(open_server: str):
    assert post(open_server).status_code == 200  # the same request, from the loopback's own name
    assert post(open_server, Host="attacker.example").status_code == 421


class Served:
    """`tracerag mcp --http` in a subprocess; its address read from what it says on stderr."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tracerag.cli", "mcp", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.said: queue.Queue[str | None] = queue.Queue()
        self.stdout = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.said.put(line)
        self.said.put(None)

    def address(self) -> str:
        seen = []
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            line = self.said.get(timeout=WAIT_S)
            assert line is not None, f"the server ended:\n{''.join(seen)}"
            seen.append(line)
            if found := re.search(r"MCP over HTTP at (http://\S+)", line):
                return found.group(1)
        raise AssertionError(f"no address in:\n{''.join(seen)}")

    def stop(self) -> None:
        self.proc.terminate()
        self.stdout, _ = self.proc.communicate(timeout=WAIT_S)


@pytest.fixture(scope="module")
def guarded(setup: Setup) -> Iterator[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACERAG_")}
    env["TRACERAG_CACHE_DIR"] = str(setup.cache)
    served = Served(["-c", str(setup.collection), "--http", "--port", "0", "--token", TOKEN], env)
    try:
        yield served.address()
    finally:
        served.stop()
    assert served.stdout == ""  # what it says goes to stderr


def test_with_a_token_a_request_without_it_or_with_another_is_refused(guarded: str):
    assert guarded.startswith("http://127.0.0.1:") and guarded.endswith("/mcp")
    for headers in (
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": TOKEN},
        {"Authorization": f"Basic {TOKEN}"},
    ):
        refused = post(guarded, **headers)
        assert refused.status_code == 401, headers
        assert refused.headers["www-authenticate"] == "Bearer"
        # a wrong bearer is said apart from none: the person typed one, and it is not this server's
        wrong = headers.get("Authorization", "").startswith("Bearer ")
        said = "the token sent is not this server's" if wrong else "Authorization: Bearer"
        assert said in refused.json()["error"], headers


def test_with_a_token_the_sdks_client_sending_it_is_served(guarded: str, setup: Setup):
    tools, found = searched(guarded, {"Authorization": f"Bearer {TOKEN}"})
    assert tools == ["search", "document", "ask", "add_to_selection", "selection", "export"]
    assert opening(run_trail(setup.collection, found["run_id"])).client == STAMP


def test_with_a_token_a_foreign_host_is_still_refused(guarded: str):
    bearer = f"Bearer {TOKEN}"
    assert post(guarded, Authorization=bearer).status_code == 200
    assert post(guarded, Authorization=bearer, Host="attacker.example").status_code == 421
