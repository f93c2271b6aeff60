"""`tracerag trail list` and `trail show` over a collection an assistant used (a search, a document read, the
selections listed, each made as `tracerag mcp` makes it) beside a run from the command line: who asked each run
under its question, within 80 columns, each run id whole; a call as `call · answered` with its tool and the
arguments it was given."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from tests.trail import AGENT_TRAIL, recorded, small_collection
from tests.trail.assistant import CLIENT, DOC_ID, QUERY, assistant_runs
from tracerag.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def used(tmp_path_factory, datasets_dir):
    """A copy of the small collection with the agent's recorded run (no client) and an assistant's three runs."""
    path = tmp_path_factory.mktemp("used") / "collection"
    # without its trails: other tests place recorded runs in the shared collection's
    shutil.copytree(
        small_collection(tmp_path_factory, datasets_dir).path, path, ignore=shutil.ignore_patterns("trails")
    )
    agent = recorded(AGENT_TRAIL, path)
    return path, agent.run_id, assistant_runs(path)


def _rows(output: str) -> dict[str, list[str]]:
    """Each run's row of the table, each cell's wrapped lines joined: run id → its other cells."""
    rows: dict[str, list[list[str]]] = {}
    current = None
    for line in output.splitlines():
        if not line.startswith("│"):  # the header and the borders
            continue
        cells = [c.strip() for c in line.strip()[1:-1].split("│")]
        if cells[0]:
            current = cells[0]
            rows[current] = [[] for _ in cells[1:]]
        if current is not None:
            for kept, cell in zip(rows[current], cells[1:], strict=True):
                kept.append(cell)
    return {k: [" ".join(" ".join(parts).split()) for parts in v] for k, v in rows.items()}


def test_the_list_says_who_asked_each_run_within_80_columns(used):
    path, agent_run, runs = used
    listed = runner.invoke(app, ["trail", "list", "-c", str(path)], terminal_width=80)
    assert listed.exit_code == 0, listed.output
    assert max(len(line) for line in listed.output.splitlines()) <= 80
    rows = _rows(listed.output)
    # each id whole on its line; in the order the runs were made, also within one second (the ids' random part
    # would order those by chance)
    assert list(rows) == [agent_run, runs.search, runs.document, runs.selection]
    asked = f"asked by {CLIENT}"
    # a cell wraps within its column: its parts join back with a space
    assert rows[runs.document] == ["call · answered", f'document doc_id="{DOC_ID}" max_chars=400 {asked}']
    assert rows[runs.selection] == ["call · answered", f"selection {asked}"]
    assert rows[runs.search] == ["complete", f"{QUERY} {asked}"]
    assert rows[agent_run][0] == "complete" and "asked by" not in rows[agent_run][1]


def test_show_names_the_client_and_the_call(used):
    path, _, runs = used
    shown = runner.invoke(app, ["trail", "show", runs.document, "-c", str(path)], terminal_width=80)
    assert shown.exit_code == 0, shown.output
    lines = [" ".join(line.strip("│ ").split()) for line in shown.output.splitlines()]
    assert f"Asked by {CLIENT}" in lines and "Kind call run" in lines and "Status answered" in lines
    assert f'doc_id = "{DOC_ID}"' in lines and "max_chars = 400" in lines
    # the document it named, with its title from the collection
    assert any(line.startswith(DOC_ID) and "Le Salon de 1881" in line for line in lines)
    search = runner.invoke(app, ["trail", "show", runs.search, "-c", str(path)], terminal_width=80)
    assert search.exit_code == 0 and f"Asked by {CLIENT}" in [
        " ".join(line.strip("│ ").split()) for line in search.output.splitlines()
    ]
