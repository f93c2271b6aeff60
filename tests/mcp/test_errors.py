"""What a wrong call gets: a bad argument (out of range, unknown, of the wrong type, missing) or a collection not
served is a protocol error (invalid params, -32602) naming the field, before anything runs: no run recorded, no
selection changed. A call that fails during its work (a document the collection lacks) answers `is_error` with
the reason, and leaves the selections and the trails as they were, even when it fails after deciding."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.mcp.conftest import K, Setup, connected, selections, trails
from tests.server.ask_setup import QUESTION
from tracerag.errors import TraceError
from tracerag.mcp import tools
from tracerag.mcp.server import ToolServer
from tracerag.server.state import ServerConfig, ServerState
from tracerag.trail import trails_by_run

INVALID_PARAMS = -32602
DOC = "injection-1"

BAD = [  # (tool, arguments, the field the error must name)
    ("search", {"query": "fire", "k": 0}, "k"),
    ("search", {"query": "fire", "colour": "red"}, "colour"),
    ("search", {"query": ["fire"]}, "query"),
    ("search", {}, "query"),
    ("search", {"query": "fire", "date_from": "the year of the fire"}, "date_from"),
    ("document", {"doc_id": DOC, "max_chars": "many"}, "max_chars"),
    ("document", {"doc_id": ""}, "doc_id"),
    ("ask", {"question": QUESTION, "k": 0}, "k"),
    ("ask", {"k": K}, "question"),
    ("add_to_selection", {"doc_id": DOC}, "question"),
    ("add_to_selection", {"question": "fires", "doc_id": DOC, "decision": "maybe"}, "decision"),
    ("add_to_selection", {"question": "fires", "doc_id": DOC, "who": "someone else"}, "who"),
    ("selection", {"question": 1891}, "question"),
    ("export", {"question": "fires", "format": "bibtex"}, "format"),
    ("export", {}, "question"),  # neither a selection nor a run
    ("catalog_chat", {"text": "food", "place": "Miami"}, "place"),
]
ELSEWHERE = [  # every collection tool, naming a collection not served
    ("search", {"query": "fire"}),
    ("document", {"doc_id": DOC}),
    ("ask", {"question": QUESTION, "k": K}),
    ("add_to_selection", {"question": "fires", "doc_id": DOC}),
    ("selection", {}),
    ("export", {"question": "fires"}),
]


@pytest.fixture(scope="module")
def tool_server(setup: Setup, catalog) -> Iterator[ToolServer]:
    server = ToolServer(ServerState(ServerConfig(collections=(setup.collection,), settings=setup.settings(),
                                                 catalog=catalog)))  # fmt: skip
    yield server
    server.close()


def refused(tool_server: ToolServer, tool: str, arguments: dict[str, Any]) -> MCPError:
    async def body(client: Client) -> MCPError:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(tool, arguments)
        return raised.value

    return connected(tool_server, body)


@pytest.mark.usefixtures("no_writes")
@pytest.mark.parametrize(("tool", "arguments", "field"), BAD, ids=[f"{t}-{f}" for t, _, f in BAD])
def test_a_bad_argument_is_a_protocol_error_naming_the_field(tool_server, tool, arguments, field):
    error = refused(tool_server, tool, arguments).error
    assert error.code == INVALID_PARAMS
    assert error.message.startswith(f"{tool}: ") and f"{field}: " in error.message, error.message


@pytest.mark.usefixtures("no_writes")
@pytest.mark.parametrize(("tool", "arguments"), ELSEWHERE, ids=[t for t, _ in ELSEWHERE])
def test_a_collection_not_served_is_a_protocol_error_naming_the_field(tool_server, tool, arguments):
    error = refused(tool_server, tool, {**arguments, "collection": "elsewhere"}).error
    assert error.code == INVALID_PARAMS
    assert error.message.startswith(f"{tool}: collection: ") and "'elsewhere'" in error.message, error.message
    assert "newspapers" in error.message  # what is served, so that the assistant can correct itself


@pytest.mark.usefixtures("no_writes")
def test_an_unknown_tool_is_a_protocol_error_naming_those_offered(tool_server):
    error = refused(tool_server, "delete_everything", {}).error
    assert error.code == INVALID_PARAMS and "'delete_everything'" in error.message and "search" in error.message


@pytest.mark.usefixtures("no_writes")
@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("add_to_selection", {"question": "fires", "doc_id": "no-such-document"}, "'no-such-document'"),
        ("add_to_selection", {"question": "fires", "doc_id": DOC, "run_id": "20260101T000000-000000"}, "no such run"),
        ("document", {"doc_id": "no-such-document"}, "'no-such-document'"),
        ("selection", {"question": "never asked"}, "question: no selection for the question 'never asked'"),
        ("export", {"question": "never asked"}, "question: no selection for the question 'never asked'"),
        ("export", {"run_id": "20260101T000000-000000"}, "no such run"),
        ("catalog_chat", {"text": "food", "conversation_id": "20260101T000000-000000"}, "conversation_id: "),
    ],
    ids=["add-unknown-document", "add-unknown-run", "document", "selection", "export", "export-run", "catalog"],
)
def test_a_call_that_fails_in_its_work_answers_an_error_and_changes_nothing(tool_server, tool, arguments, said):
    async def body(client: Client):
        return await client.call_tool(tool, arguments)

    result = connected(tool_server, body)
    assert result.is_error and result.structured_content is None
    assert result.content[0].type == "text" and result.content[0].text.startswith(f"{tool}: ")
    assert said in result.content[0].text


def test_a_decision_whose_review_run_cannot_be_recorded_is_taken_back(tool_server, setup: Setup, monkeypatch):
    """The decision is made in the selection, then its review run written: when that fails, the source goes
    back to what it was (here: accepted, with its note), and the call says it failed."""

    async def decide(client: Client, decision: str, note: str):
        return await client.call_tool(
            "add_to_selection", {"question": "fires", "doc_id": DOC, "decision": decision, "note": note}
        )

    kept = connected(tool_server, lambda client: decide(client, "accept", "the letter names the fire"))
    assert not kept.is_error
    before_trails, before = trails(setup), selections(setup)

    def disk_full(*_args: object, **_kwargs: object) -> str:
        raise TraceError("no space left on device")

    monkeypatch.setattr(tools, "_record_decision", disk_full)
    failed = connected(tool_server, lambda client: decide(client, "reject", "changed my mind"))
    assert failed.is_error and "no space left on device" in failed.content[0].text
    assert selections(setup) == before and trails(setup) == before_trails
    assert [d[:3] for d in before["fires"] if d[0] == DOC] == [(DOC, "accepted", "the letter names the fire")]


def test_with_several_collections_served_a_call_names_one(setup: Setup, tmp_path):
    other = tmp_path / "gazettes"
    shutil.copytree(setup.collection, other, ignore=shutil.ignore_patterns("trails", "selections.sqlite*"))
    server = ToolServer(ServerState(ServerConfig(collections=(setup.collection, other), settings=setup.settings())))

    async def body(client: Client):
        with pytest.raises(MCPError) as unnamed:
            await client.call_tool("search", {"query": "harbour"})
        named = await client.call_tool("search", {"query": "harbour", "collection": "gazettes"})
        return unnamed.value, named

    try:
        unnamed, named = connected(server, body)
    finally:
        server.close()
    assert unnamed.error.code == INVALID_PARAMS
    assert unnamed.error.message == "search: collection: several are served, name one: gazettes, newspapers"
    run_id = named.structured_content["run_id"]
    assert named.structured_content["collection"] == "gazettes"
    assert run_id in trails_by_run([other]) and run_id not in trails_by_run([setup.collection])
