"""An assistant's call in a terminal: the recorded `call` run (tests/fixtures/trails/research/call.jsonl, a
`document` call as `tracerag mcp` records it) summed up for a list and shown with who asked, each argument on its
line, the documents its answer named and its digest, short; a call whose arguments hold markup and controls shows
them as data; an unanswered call says so."""

from __future__ import annotations

import pytest
from rich.console import Console

from tests.trail import RESEARCH_TRAILS, recorded, small_collection
from tracerag.trail import MemoryListener, Trail
from tracerag.trail.events import CallEvent, RunEvent, RunKind
from tracerag.trail.show import render_trail
from tracerag.trail.summary import summarise


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return recorded(RESEARCH_TRAILS / "call.jsonl", tmp_path_factory.mktemp("calls"))


def _render(events, documents=None, width=80) -> str:
    out = Console(record=True, width=width)
    for renderable in render_trail(events, documents):
        out.print(renderable)
    return out.export_text()


def _call_run(arguments: dict, *, answered: bool = True, client: str | None = "mcp: Claude Desktop 1.2"):
    events = MemoryListener()
    trail = Trail(listeners=[events])
    run = RunEvent(question="document {...}", collection="/c", k=1, config={}, versions={}, run=RunKind.CALL)
    trail.emit(run.model_copy(update={"client": client}))
    if answered:
        trail.emit(CallEvent(tool="document", arguments=arguments, doc_ids=["d-1"], digest="ab" * 32, chars=420))
    return list(events)


def test_a_call_is_summed_up_by_its_tool_and_given_arguments(case):
    summary = summarise(case.events)
    call = case.events[1]
    assert isinstance(call, CallEvent) and call.arguments["start"] is None
    assert (summary.kind, summary.status, summary.client) == ("call", "answered", "mcp: recorder 1.0")
    # the arguments left empty are left out; each value as JSON
    assert summary.question == f'document doc_id="{call.doc_ids[0]}" max_chars=400'


def test_a_call_run_shows_who_asked_each_argument_the_documents_and_the_digest(case, tmp_path_factory, datasets_dir):
    col = small_collection(tmp_path_factory, datasets_dir)
    call = case.events[1]
    assert isinstance(call, CallEvent)
    text = _render(case.events, col.documents)
    assert max(len(line) for line in text.splitlines()) <= 80
    lines = [line.strip() for line in text.splitlines()]
    assert any(line.startswith("│ Asked by") and "mcp: recorder 1.0" in line for line in lines)
    assert any("Kind" in line and "call run" in line for line in lines)
    assert any("Status" in line and "answered" in line for line in lines)
    assert any("Question" in line and "document doc_id=" in line for line in lines)
    assert "none: a tool call asks no model" in text
    # every argument on its line, the empty ones too: what the assistant sent, as validated
    for name in ("collection", "doc_id", "end", "max_chars", "start"):
        assert any(line.startswith(f"{name} = ") for line in lines), name
    assert "max_chars = 400" in lines and f'doc_id = "{call.doc_ids[0]}"' in lines
    assert f"answered {call.chars:,} characters of JSON naming 1 document" in lines
    assert call.digest[:12] + "…" in text and call.digest not in text


def test_the_documents_named_are_titled_when_the_collection_holds_them(tmp_path_factory, datasets_dir):
    col = small_collection(tmp_path_factory, datasets_dir)
    doc_id = "lpj-1881-a"
    events = _call_run({"doc_id": doc_id})
    events[1] = events[1].model_copy(update={"doc_ids": [doc_id]})
    text = _render(events, col.documents)
    assert any(line.strip().startswith(doc_id) and "Le Salon de 1881" in line for line in text.splitlines())


def test_arguments_are_data(tmp_path_factory):
    hostile = {"question": "[bold]x[/bold] :warning:\x1b[31m red", "doc_id": "d-1"}
    out = Console(record=True, width=120, force_terminal=True, color_system="truecolor")
    for renderable in render_trail(_call_run(hostile)):
        out.print(renderable)
    shown = out.export_text(styles=True)
    plain = " ".join(_render(_call_run(hostile), width=120).split())
    assert '"[bold]x[/bold] :warning:\\u001b[31m red"' in plain  # JSON's own escape: no raw ESC reaches it
    assert "\x1b[31m red" not in shown and "⚠" not in shown


def test_an_unanswered_call_says_so():
    events = _call_run({"doc_id": "d-1"}, answered=False)
    assert summarise(events).status == "unfinished"
    text = _render(events)
    assert "unfinished: the trail has no call event" in text


def test_a_run_asked_from_the_command_line_names_no_client(case):
    events = _call_run({"doc_id": "d-1"}, client=None)
    assert summarise(events).client is None
    assert "Asked by" not in _render(events)
