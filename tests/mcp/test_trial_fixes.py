"""What the trial of `tracerag mcp` (benchmarks/mcp_trial/) found wrong, each kept fixed: a search repeated by
another client left no trace of that client, and two errors did not name the argument they were about."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from tests.built_once import private_copy
from tests.mcp import run_async
from tracerag.catalog.ingest import build_catalog
from tracerag.collection import Collection
from tracerag.config import Settings, load_settings
from tracerag.ingest import read_documents
from tracerag.mcp.server import ToolServer
from tracerag.model import Document
from tracerag.server.state import ServerConfig, ServerState
from tracerag.trail import read_trail, trails_by_run


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return load_settings(cache_dir=str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def collection(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory, settings: Settings) -> Path:
    """A dozen real English newspaper documents, lexical channels only."""

    def build(path: Path) -> None:
        docs = (d for d in read_documents(hipe_dir / "HIPE-2022-v2.1-topres19th-dev-en.tsv", "hipe"))
        with Collection.open(path, settings, mode="write", create=True, embed_model="none") as col:
            col.ingest(islice((d for d in docs if isinstance(d, Document)), 12), dense=False)

    return private_copy(tmp_path_factory, "mcp-trial-fixes", "papers", build)[0]


@pytest.fixture(scope="module")
def catalog(datasets_dir: Path, tmp_path_factory: pytest.TempPathFactory, settings: Settings) -> Path:
    # the web app's tests build the same one (same key): a whole run builds it once
    return private_copy(
        tmp_path_factory, "served-catalog", "miami", lambda t: build_catalog(datasets_dir / "miami211", t, settings,
                                                                           dense=False)
    )[0]  # fmt: skip


@pytest.fixture()
def tool_server(collection: Path, catalog: Path, settings: Settings) -> Iterator[ToolServer]:
    server = ToolServer(ServerState(ServerConfig(collections=(collection,), settings=settings, catalog=catalog)))
    try:
        yield server
    finally:
        server.close()


def call(server: ToolServer, client: str, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    async def go() -> types.CallToolResult:
        async with Client(server.server, client_info=types.Implementation(name=client, version="1")) as c:
            return await c.call_tool(tool, arguments)

    return run_async(go)


def test_a_search_repeated_by_another_client_is_trailed_with_that_client(tool_server: ToolServer, collection: Path):
    query = {"query": "London", "k": 3}
    first = call(tool_server, "client-A", "search", query)
    again = call(tool_server, "client-B", "search", query)
    assert again.structured_content is not None and first.structured_content is not None
    assert again.structured_content["repeated"] is True  # the search's own run is client-A's
    assert again.structured_content["run_id"] == first.structured_content["run_id"]
    call_run = (again.meta or {}).get("tracerag/call_run")
    assert call_run, "the repeated search left no run naming client-B"
    events = read_trail(trails_by_run([collection])[call_run])
    assert events[0].client == "mcp: client-B 1"  # type: ignore[union-attr]
    assert events[1].tool == "search" and events[1].arguments["query"] == "London"  # type: ignore[union-attr]
    assert events[1].doc_ids == [h["doc_id"] for h in again.structured_content["results"]]  # type: ignore[union-attr]


def test_an_unknown_conversation_names_conversation_id(tool_server: ToolServer):
    result = call(tool_server, "c", "catalog_chat", {"text": "show me more", "conversation_id": "../../etc/passwd"})
    assert result.is_error
    assert result.content[0].text.startswith("catalog_chat: conversation_id: ")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("selection", {"question": "Shipwrecks?"}),
        ("selection", {"question": ""}),
        ("export", {"question": "Shipwrecks?", "format": "csv"}),
    ],
)
def test_a_selection_not_found_names_question(tool_server: ToolServer, tool: str, arguments: dict[str, Any]):
    result = call(tool_server, "c", tool, arguments)
    assert result.is_error
    assert result.content[0].text.startswith(f"{tool}: question: ")  # type: ignore[union-attr]


def test_a_question_retyped_goes_to_the_same_selection(tool_server: ToolServer):
    """A model retypes the question (case, punctuation): the trial's second decision started a selection beside
    the first. The same question folded is the same selection; a new one says it is new."""
    found = call(tool_server, "c", "search", {"query": "London", "k": 2}).structured_content
    assert found is not None
    first, second = (h["doc_id"] for h in found["results"][:2])
    made = call(tool_server, "c", "add_to_selection", {"question": "ships lost near london", "doc_id": first})
    again = call(tool_server, "c", "add_to_selection", {"question": "Ships lost near London?", "doc_id": second})
    assert made.structured_content is not None and again.structured_content is not None
    assert made.structured_content["new_selection"] is True
    assert again.structured_content["new_selection"] is False
    assert again.structured_content["question"] == "ships lost near london"
    assert again.structured_content["counts"]["accept"] == 2


def test_a_catalog_turn_names_its_trail_as_a_resource(tool_server: ToolServer):
    turn = call(tool_server, "c", "catalog_chat", {"text": "food pantry in Miami"}).structured_content
    assert turn is not None
    assert turn["trail"] == f"tracerag://catalog/trails/{turn['run_id']}"
