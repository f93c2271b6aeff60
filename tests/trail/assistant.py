"""An assistant's calls over a collection, made as `tracerag mcp` makes them (`tools.perform`: the tool's work in
the client's context, a `call` run for a call no run of its own records), in-process and without a client: a
search (a search run marked with the client), a document read and the selections listed (call runs). What the
trail, CLI and web tests list, show and replay."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tracerag.config import load_settings
from tracerag.mcp import models as m
from tracerag.mcp.tools import TOOLS, Env, perform
from tracerag.server.state import ServerConfig, ServerState

CLIENT = "mcp: Claude Desktop 1.2"
# typed as a person types it: no accents, a word the collection spells otherwise ("théâtre", "incendie")
QUERY = "incendie au theatre"
DOC_ID = "lpj-1881-a"  # the in-code document with a title (record_trails.IN_CODE_DOCUMENTS)
SPECS = {t.name: t for t in TOOLS}


@dataclass(frozen=True)
class AssistantRuns:
    search: str  # the search run (its own kind, marked with the client)
    document: str  # call runs
    selection: str


def call(collection: Path, tool: str, args: object, client: str = CLIENT) -> tuple[object, str | None]:
    """One call of `tool` over `collection` as an assistant named `client` makes it: its output and its call run."""
    state = ServerState(ServerConfig(collections=(collection,), settings=load_settings()))
    try:
        called, _answer, call_run = perform(Env(state, None, client), SPECS[tool], args)  # type: ignore[arg-type]
    finally:
        state.close()
    return called.output, call_run


def assistant_runs(collection: Path) -> AssistantRuns:
    searched, _ = call(collection, "search", m.SearchIn(query=QUERY, k=5))
    _, document = call(collection, "document", m.DocumentIn(doc_id=DOC_ID, max_chars=400))
    _, selection = call(collection, "selection", m.SelectionIn())
    assert isinstance(searched, m.SearchOut) and document is not None and selection is not None
    return AssistantRuns(searched.run_id, document, selection)
