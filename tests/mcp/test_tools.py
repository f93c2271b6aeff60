"""The tool server in-process through the official SDK's own client (`mcp.Client(server)`), as an assistant uses
it: the handshake, the tools listed with their models' schemas and hints, every tool called on the real collection
(the ask replayed from recorded answers), the resources, and each call's run in the trail marked with the client's
name; a catalog conversation goes on over two turns."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.mcp import run_async
from tests.mcp.conftest import CLIENT, NAME, STAMP, K, Setup, connected, opening, run_trail
from tests.server.ask_setup import QUESTION
from tracerag.collection import Collection
from tracerag.mcp import models as m
from tracerag.mcp.server import ToolServer
from tracerag.research.selection import Decision
from tracerag.server.state import ServerConfig, ServerState
from tracerag.trail.events import CallEvent, DecisionEvent, ResultEvent, RunKind

TOOLS = {  # name: (input model, output model), in the order offered
    "search": (m.SearchIn, m.SearchOut),
    "document": (m.DocumentIn, m.DocumentOut),
    "ask": (m.AskIn, m.AskOut),
    "add_to_selection": (m.AddIn, m.AddOut),
    "selection": (m.SelectionIn, m.SelectionOut),
    "export": (m.ExportIn, m.ExportOut),
    "catalog_chat": (m.CatalogIn, m.CatalogOut),
}
SELECTION = "harbour fires in the letters of 1891"


@pytest.fixture(scope="module")
def tool_server(setup: Setup, catalog: Path) -> Iterator[ToolServer]:
    config = ServerConfig(collections=(setup.collection,), settings=setup.settings(), catalog=catalog)
    server = ToolServer(ServerState(config))
    yield server
    server.close()


def text_of(setup: Setup, doc_id: str) -> str:
    with Collection.open(setup.collection, setup.settings(replay=False), mode="read") as col:
        return col.store.get_documents([doc_id])[doc_id].text


def call_event(collection: Path, run_id: str, tool: str, answer: dict[str, Any]) -> CallEvent:
    """The `call` run recorded for one call: marked with the client, holding the tool and a digest of what the
    client got (SHA-256 of its JSON, keys sorted)."""
    events = run_trail(collection, run_id)
    run = opening(events)
    assert (run.run, run.client) == (RunKind.CALL, STAMP)
    assert [e.kind for e in events] == ["run", "call"]
    call = events[1]
    assert isinstance(call, CallEvent) and call.tool == tool
    said = json.dumps(answer, sort_keys=True, ensure_ascii=False)
    assert (call.digest, call.chars) == (hashlib.sha256(said.encode()).hexdigest(), len(said))
    return call


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_connects_and_is_shown_each_tool_with_its_models_schemas_and_hints(tool_server: ToolServer, mode):
    async def body(client: Client):
        return client.server_info, client.instructions, (await client.list_tools()).tools

    info, instructions, tools = connected(tool_server, body, mode)
    assert info is not None and (info.name, info.title) == ("tracerag", "TRACE")
    assert instructions is not None and "retrieved_text" in instructions and "never instructions" in instructions
    assert [t.name for t in tools] == list(TOOLS)
    for tool in tools:
        given, answered = TOOLS[tool.name]
        assert tool.input_schema == given.model_json_schema(mode="validation"), tool.name
        assert tool.output_schema == answered.model_json_schema(mode="serialization"), tool.name
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (tool.name != "add_to_selection"), tool.name
        assert tool.annotations.destructive_hint is False and tool.description
    schemas = {t.name: t.input_schema for t in tools}
    assert schemas["search"]["required"] == ["query"] and schemas["document"]["required"] == ["doc_id"]
    assert all(s.get("additionalProperties") is False for s in schemas.values())  # unknown fields are refused


def test_a_search_and_a_document_read_are_runs_marked_with_the_client(tool_server: ToolServer, setup: Setup):
    async def body(client: Client):
        found = await client.call_tool("search", {"query": "harbour fire", "k": 5})
        top = found.structured_content["results"][0]
        read = await client.call_tool("document", {"doc_id": top["doc_id"], "start": 10, "max_chars": 80})
        return found, read

    found, read = connected(tool_server, body)
    assert not found.is_error and not read.is_error
    answer = m.SearchOut.model_validate(found.structured_content)
    assert answer.collection == NAME and answer.query == "harbour fire"
    assert [h.rank for h in answer.results] == [1, 2, 3, 4, 5]
    assert all("harbour" in h.snippet.text.lower() or "fire" in h.snippet.text.lower() for h in answer.results)
    run = opening(run_trail(setup.collection, answer.run_id))
    assert (run.run, run.client, run.question) == (RunKind.SEARCH, STAMP, "harbour fire")

    doc = m.DocumentOut.model_validate(read.structured_content)
    top = answer.results[0].doc_id
    whole = text_of(setup, top)
    assert (doc.doc_id, doc.length, doc.text.start, doc.text.end) == (top, len(whole), 10, 90)
    assert doc.text.text == whole[10:90] and doc.truncated is (len(whole) > 90)
    assert read.meta is not None
    call = call_event(setup.collection, read.meta["tracerag/call_run"], "document", read.structured_content)
    assert call.doc_ids == [top]
    assert call.arguments == {"collection": None, "doc_id": top, "start": 10, "end": None, "max_chars": 80}


def test_a_search_repeated_by_another_client_is_recorded_as_its_call(tool_server: ToolServer, setup: Setup):
    """The same search twice in a row answers the first run and runs nothing: the repeat is a call run naming
    the client that repeated it, so that the trail says who asked each time."""
    other = types.Implementation(name="other-assistant", version="2")

    async def ask(client_info: types.Implementation):
        async with Client(tool_server.server, client_info=client_info) as client:
            return await client.call_tool("search", {"query": "incendie du port", "k": 3})

    first = run_async(ask, CLIENT)
    again = run_async(ask, other)
    assert first.structured_content["repeated"] is False and again.structured_content["repeated"] is True
    assert again.structured_content["run_id"] == first.structured_content["run_id"]
    assert first.meta is None or "tracerag/call_run" not in first.meta  # the search's own run records it
    assert again.meta is not None
    events = run_trail(setup.collection, again.meta["tracerag/call_run"])
    call = events[1]
    assert opening(events).client == "mcp: other-assistant 2"
    assert isinstance(call, CallEvent) and call.tool == "search" and call.arguments["query"] == "incendie du port"
    assert call.doc_ids == [h["doc_id"] for h in again.structured_content["results"]]


def test_an_ask_reports_its_progress_and_answers_the_recorded_run(tool_server: ToolServer, setup: Setup):
    said: list[tuple[float, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        said.append((done, message))

    async def body(client: Client):
        return await client.call_tool("ask", {"question": QUESTION, "k": K}, progress_callback=progress)

    asked = connected(tool_server, body)
    assert not asked.is_error
    answer = m.AskOut.model_validate(asked.structured_content)
    assert (answer.status, answer.question, answer.sub_questions) == ("complete", QUESTION, ["harbour fire", "guerre"])
    assert [s.doc_id for s in answer.sources] == setup.recorded_sources  # replayed as recorded
    for source in answer.sources:  # each with its cited evidence, or else the passage that ranked it
        quoted = source.evidence or source.passage
        assert quoted is not None and (source.evidence is None) is (source.passage is not None), source.doc_id
        assert quoted.text == text_of(setup, source.doc_id)[quoted.start : quoted.end] and quoted.text
    assert all(len(s.passage.text) <= 700 for s in answer.sources if s.passage)
    events = run_trail(setup.collection, answer.run_id)
    run = opening(events)
    assert (run.run, run.client) == (RunKind.ASK, STAMP)
    assert isinstance(events[-1], ResultEvent) and events[-1].status == "complete"
    # the progress came as it went: numbered in order, from the run's start to its result
    assert [n for n, _ in said] == list(range(1, len(said) + 1))
    messages = [text for _, text in said]
    assert messages[0] == f"run {answer.run_id} started" and messages[1] == "plan: 2 sub-questions"
    assert "sub-question 2 of 2: guerre" in messages
    assert messages[-1] == f"result: complete, {len(answer.sources)} sources"


def test_decisions_the_selection_and_its_exports(tool_server: ToolServer, setup: Setup):
    async def body(client: Client):
        found = await client.call_tool("search", {"query": "harbour warehouses", "k": 4})
        run_id = found.structured_content["run_id"]
        first, second = (h["doc_id"] for h in found.structured_content["results"][:2])
        decide = {"question": SELECTION, "run_id": run_id}
        added = await client.call_tool("add_to_selection", {**decide, "doc_id": first, "note": "the fire itself"})
        await client.call_tool("add_to_selection", {**decide, "doc_id": second})
        retyped = {**decide, "question": SELECTION.capitalize() + "?"}  # as a model retypes it: the same selection
        changed = await client.call_tool("add_to_selection", {**retyped, "doc_id": second, "decision": "reject"})
        listed = await client.call_tool("selection", {})
        chosen = await client.call_tool("selection", {"question": SELECTION[:14]})  # its unique beginning
        exports = {}
        for format_ in ("ris", "csl-json", "csv"):
            exports[format_] = await client.call_tool("export", {"question": SELECTION, "format": format_})
        by_run = await client.call_tool("export", {"run_id": run_id, "format": "csv"})
        return run_id, first, second, added, changed, listed, chosen, exports, by_run

    run_id, first, second, added, changed, listed, chosen, exports, by_run = connected(tool_server, body)
    out = m.AddOut.model_validate(added.structured_content)
    assert (out.question, out.entry.doc_id, out.entry.decision, out.previous) == (SELECTION, first, "accept", None)
    assert (out.entry.note, out.entry.run_id) == ("the fire itself", run_id)
    assert out.entry.who.endswith(f" via {STAMP}")  # who decided: the researcher, through the assistant
    assert out.entry.span is not None  # the cited passage of the search run is kept with the decision
    assert out.new_selection is True
    events = run_trail(setup.collection, out.review_run)
    run = opening(events)
    assert (run.run, run.client) == (RunKind.REVIEW, STAMP)
    decision = events[-1]
    assert isinstance(decision, DecisionEvent)
    assert (decision.doc_id, decision.decision, decision.from_run) == (first, Decision.ACCEPTED, run_id)

    again = m.AddOut.model_validate(changed.structured_content)
    assert (again.question, again.new_selection, again.previous, again.entry.decision) == (
        SELECTION, False, "accept", "reject")  # fmt: skip
    assert again.counts.model_dump() == {"accept": 1, "reject": 1, "undecided": 0}

    summary = m.SelectionOut.model_validate(listed.structured_content)
    mine = [s for s in summary.selections if s.question == SELECTION]
    assert len(mine) == 1 and mine[0].counts == again.counts
    entries = m.SelectionOut.model_validate(chosen.structured_content)
    assert entries.question == SELECTION
    assert {e.doc_id: e.decision for e in entries.entries} == {first: "accept", second: "reject"}
    for result, tool in ((listed, "selection"), (chosen, "selection")):
        assert result.meta is not None
        call_event(setup.collection, result.meta["tracerag/call_run"], tool, result.structured_content)

    for format_, result in exports.items():
        done = m.ExportOut.model_validate(result.structured_content)
        assert (done.format, done.sources) == (format_, 1)
        assert result.meta is not None
        call = call_event(setup.collection, result.meta["tracerag/call_run"], "export", result.structured_content)
        assert call.doc_ids == [first] and call.arguments["format"] == format_
    assert "TY  - " in exports["ris"].structured_content["text"]
    cited = json.loads(exports["csl-json"].structured_content["text"])
    assert len(cited) == 1 and first in json.dumps(cited)
    rows = list(csv.DictReader(io.StringIO(exports["csv"].structured_content["text"])))
    assert len(rows) == 1 and first in rows[0].values()
    run_rows = list(csv.DictReader(io.StringIO(by_run.structured_content["text"])))
    assert [r for r in run_rows if first in r.values()] and by_run.structured_content["sources"] == len(run_rows)


def test_the_collections_and_each_runs_trail_are_resources(tool_server: ToolServer, setup: Setup):
    async def body(client: Client):
        found = await client.call_tool("search", {"query": "guerre", "k": 3})
        run_id = found.structured_content["run_id"]
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        collections = await client.read_resource("tracerag://collections")
        trail = await client.read_resource(f"tracerag://trails/{NAME}/{run_id}")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource(f"tracerag://trails/{NAME}/20260101T000000-000000")
        return run_id, listed, templates, collections, trail, unknown.value

    run_id, listed, templates, collections, trail, unknown = connected(tool_server, body)
    uris = [str(r.uri) for r in listed]
    assert uris[0] == "tracerag://collections"
    assert f"tracerag://trails/{NAME}/{run_id}" in uris  # among the newest runs listed
    assert all(u.startswith(f"tracerag://trails/{NAME}/") for u in uris[1:])
    assert {t.uri_template for t in templates} == {
        "tracerag://trails/{collection}/{run_id}",
        "tracerag://catalog/trails/{run_id}",
    }
    served = json.loads(collections.contents[0].text)
    assert served["catalog"] is True
    assert [(c["name"], c["documents"]) for c in served["collections"]] == [(NAME, setup.documents)]
    read = json.loads(trail.contents[0].text)
    assert read["run"]["run_id"] == run_id and read["run"]["kind"] == "search" and read["torn"] is False
    on_disk = run_trail(setup.collection, run_id)
    assert read["events"] == [e.model_dump(mode="json") for e in on_disk]
    assert read["events"][0]["client"] == STAMP
    assert unknown.error.code == -32602 and "no trail of that id" in unknown.error.message


@pytest.fixture(scope="module")
def catalog_server(setup: Setup, catalog: Path) -> Iterator[ToolServer]:
    """The catalog alone, with its rules and templated replies (no model)."""
    config = ServerConfig(collections=(), settings=setup.settings(replay=False), catalog=catalog)
    server = ToolServer(ServerState(config))
    yield server
    server.close()


def test_a_catalog_conversation_goes_on_by_its_id_and_its_trail_names_the_client(catalog_server: ToolServer, catalog):
    async def body(client: Client):
        tools = [t.name for t in (await client.list_tools()).tools]
        first = await client.call_tool("catalog_chat", {"text": "I need food"})
        conversation = first.structured_content["conversation_id"]
        second = await client.call_tool("catalog_chat", {"text": "in Miami, 33125", "conversation_id": conversation})
        trail = await client.read_resource(second.structured_content["trail"])  # named as the resource
        return tools, first, second, trail

    tools, first, second, trail = connected(catalog_server, body)
    assert tools == ["catalog_chat"]  # no collection served: no collection's tools
    asked = m.CatalogOut.model_validate(first.structured_content)
    assert (asked.index, asked.outcome, asked.cards) == (0, "clarify", [])
    assert "city or postal code" in asked.reply
    answered = m.CatalogOut.model_validate(second.structured_content)
    assert (answered.index, answered.outcome, answered.conversation_id) == (1, "answer", asked.conversation_id)
    assert answered.trail == asked.trail == f"tracerag://catalog/trails/{answered.run_id}"  # no path on the server
    assert answered.cards and all("33125" in card.address for card in answered.cards)
    read = json.loads(trail.contents[0].text)
    assert read["run"]["kind"] == "catalog" and read["events"][0]["client"] == STAMP
    assert [e["kind"] for e in read["events"]].count("catalog_reply") == 2  # both turns, one conversation
    assert opening(run_trail(catalog, answered.run_id)).client == STAMP
