"""`tracerag mcp --replay RUN`: what an assistant asked (a document read, the selections listed, a search, each
made as `tracerag mcp` makes it) asked again over the collection, and whether the answer is the same: exit 0
when it is; 1, saying what differs, when the recorded digest was edited, the selections changed since, a
document the call read is gone, or a document added since comes up in the search; 2 for a run it does not
replay (an ask run: `tracerag ask --replay`; a search from the command line) and for serving options."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.trail import AGENT_TRAIL, MISSING_ID, RESEARCH_TRAILS, recorded, small_collection
from tests.trail.assistant import CLIENT, DOC_ID, QUERY, assistant_runs, call
from tracerag.cli import app
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.mcp import models as m
from tracerag.model import Document
from tracerag.trail import read_trail, trails_by_run
from tracerag.trail.events import CallEvent, ResultEvent

runner = CliRunner()


@pytest.fixture()
def path(tmp_path, tmp_path_factory, datasets_dir) -> Path:
    """A copy of the small collection of its own (a test may change it)."""
    copy = tmp_path / "collection"
    # without its trails: other tests place recorded runs in the shared collection's
    shutil.copytree(
        small_collection(tmp_path_factory, datasets_dir).path, copy, ignore=shutil.ignore_patterns("trails")
    )
    return copy


def _replay(path: Path, run: str, *more: str) -> tuple[int, str]:
    """The exit code and the output, its lines joined (a console wraps them at its width)."""
    result = runner.invoke(app, ["mcp", "--replay", run, "-c", str(path), *more])
    return result.exit_code, " ".join(result.output.split())


def _ranked(path: Path, run: str) -> list[str]:
    (result,) = [e for e in read_trail(trails_by_run([path])[run]) if isinstance(e, ResultEvent)]
    return [r.doc_id for r in sorted(result.ranking, key=lambda r: r.rank)]


def _call_event(path: Path, run: str) -> CallEvent:
    (event,) = [e for e in read_trail(trails_by_run([path])[run]) if isinstance(e, CallEvent)]
    return event


def test_what_the_collection_answers_alike_is_the_same(path):
    runs = assistant_runs(path)
    for run, asked in ((runs.document, f'document doc_id="{DOC_ID}" max_chars=400'), (runs.selection, "selection")):
        code, said = _replay(path, run)
        assert code == 0, said
        assert said.startswith(f"call run {run} asked by {CLIENT}: {asked} ")
        assert f"the same answer as recorded (digest {_call_event(path, run).digest[:12]})" in said
    code, said = _replay(path, runs.search)
    assert code == 0, said
    ranked = _ranked(path, runs.search)
    assert said.startswith(f"search run {runs.search} asked by {CLIENT}: {QUERY} ") and len(ranked) > 1
    assert f"the same answer as recorded: {len(ranked)} documents named" in said
    assert set(trails_by_run([path])) == {runs.search, runs.document, runs.selection}  # a replay records nothing


def test_a_search_with_the_options_its_address_does_not_hold_is_asked_again_whole(path):
    """The documents allowed are not in the recorded page address: the run's config gives them back, and the
    request asked again is the one recorded (its key), narrowed as it was."""
    allowed = ["hostile-1", "gaz-1881-05-27"]
    out, _ = call(path, "search", m.SearchIn(query="Incendie", k=3, doc_ids=allowed, language=["fr"]))
    assert isinstance(out, m.SearchOut) and {h.doc_id for h in out.results} == set(allowed)
    code, said = _replay(path, out.run_id)
    assert code == 0, said
    assert "the same answer as recorded: 2 documents named" in said
    assert "does not hold the whole request" not in said


def test_a_repeated_search_recorded_as_a_call_is_asked_again(path):
    """The same search twice in a row is answered with the first run, and the repeat recorded as a call run: its
    answer names that run, which a replay does not record, so its documents are what is compared."""
    first, _ = call(path, "search", m.SearchIn(query="Incendie", k=3))
    again, call_run = call(path, "search", m.SearchIn(query="Incendie", k=3))
    assert isinstance(first, m.SearchOut) and isinstance(again, m.SearchOut) and call_run is not None
    assert again.repeated and again.run_id == first.run_id
    code, said = _replay(path, call_run)
    assert code == 0, said
    # the arguments that hold something: explain=false and the empty lists left out
    assert said.startswith(f'call run {call_run} asked by {CLIENT}: search k=3 query="Incendie" ')
    assert f"the same answer as recorded: {len(again.results)} documents named" in said
    assert len(trails_by_run([path])) == 2  # the search and the repeat's call run; the replay recorded nothing


def test_an_edited_digest_differs(path):
    runs = assistant_runs(path)
    trail = trails_by_run([path])[runs.document]
    lines = trail.read_text(encoding="utf-8").splitlines()
    call_line = json.loads(lines[1])
    real = call_line["digest"]
    lines[1] = json.dumps(call_line | {"digest": "0" * 64})
    trail.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, said = _replay(path, runs.document)
    assert code == 1, said
    assert f"the answer differs: digest then 000000000000, now {real[:12]}" in said
    assert f"documents named: {DOC_ID}, then and now, in the same order; the rest of the answer changed" in said


def test_a_selection_changed_since_differs(path):
    runs = assistant_runs(path)
    call(path, "add_to_selection", m.AddIn(question="Salons de peinture en 1881", doc_id=DOC_ID, note="le Salon"))
    code, said = _replay(path, runs.selection)
    assert code == 1, said
    assert "the answer differs: digest then" in said
    # listing the selections names no document, then as now: the digest alone tells the answers apart
    assert "documents named: none, then and now, in the same order; the rest of the answer changed" in said


def test_a_document_gone_since_fails_the_call_now(path):
    """The recorded fixture read a document (MISSING_ID) the collection no longer holds."""
    case = recorded(RESEARCH_TRAILS / "call.jsonl", path)
    code, said = _replay(path, case.run_id)
    assert code == 1, said
    assert f"the call fails now: doc_id: document {MISSING_ID!r} is not in collection" in said
    assert f"documents then: {MISSING_ID}" in said


def test_a_document_added_since_comes_up_in_the_search(path):
    runs = assistant_runs(path)
    then = _ranked(path, runs.search)
    added = Document(
        id="theatre-1882",
        text="Incendie au théâtre: le theatre municipal a brûlé, incendie éteint au matin.",
        corpus="demo/new",
        date="1882",
        language="fr",
    )
    with Collection.open(path, load_settings(), mode="write") as col:
        col.ingest(iter([added]), dense=False)
    code, said = _replay(path, runs.search)
    assert code == 1, said
    assert f"documents then: {', '.join(then)}" in said
    assert "named now only: theatre-1882" in said


def test_runs_it_does_not_replay_say_what_does(path):
    agent = recorded(AGENT_TRAIL, path)
    code, said = _replay(path, agent.run_id)
    assert code == 2 and f"tracerag ask --replay {agent.run_id}" in said
    searched = runner.invoke(app, ["search", "incendie", "-c", str(path)])
    assert searched.exit_code == 0, searched.output
    (cli_run,) = set(trails_by_run([path])) - {agent.run_id}
    code, said = _replay(path, cli_run)
    assert code == 2 and "a search from the command line" in said


def test_serving_options_and_two_collections_are_refused(path, tmp_path):
    runs = assistant_runs(path)
    for more in (["--http"], ["--read-only"], ["--port", "9999"], ["-c", str(path)]):
        code, said = _replay(path, runs.document, *more)
        assert code == 2, (more, said)
    assert _replay(path, "nosuchrun")[0] == 2
    assert _replay(tmp_path / "nowhere", runs.document)[0] == 2
