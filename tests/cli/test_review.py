"""`tracerag review` driven by a key script on stdin, over the trail of a real agent run on real HIPE documents,
then `tracerag selection list / show / export`: the decisions land in the selection and in a review trail, the
document text and the agent's reasons are printed as data (markup stays literal), and the accepted sources
export as RIS a reference manager reads, CSL-JSON with the fields Zotero needs, and CSV with the cited spans."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from tests.fixtures.record_trails import QUESTION
from tests.trail import AGENT_TRAIL, recorded, small_collection
from tracerag.cli import app
from tracerag.config import load_settings
from tracerag.research.selection import Decision, open_selections
from tracerag.trail import read_trail
from tracerag.trail.events import DecisionEvent, RunEvent, RunKind
from tracerag.trail.export import CSV_COLUMNS

runner = CliRunner()
RIS_LINE = re.compile(r"^[A-Z][A-Z0-9]  - ")
FRENCH, HOSTILE, GAZETTE, GONE = "EXP-1888-08-03-a-i0030", "hostile-1", "gaz-1881-05-27", "gone-42"


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory, datasets_dir):
    """The recorded run reviewed once: accept, accept, reject, a note then accept (gone-42, no longer in the
    collection), then quit with three candidates left."""
    shared = small_collection(tmp_path_factory, datasets_dir)
    path = tmp_path_factory.mktemp("review") / "collection"
    shutil.copytree(shared.path, path)
    case = recorded(AGENT_TRAIL, path)
    keys = "a" + "a" + "r" + "n" + "ruined warehouses, =cmd|' /C calc'!A0\n" + "a" + "q"
    result = runner.invoke(app, ["review", case.run_id, "-c", str(path), "--who", "historian"], input=keys)
    assert result.exit_code == 0, result.output
    return path, case, result


def test_the_keys_decide_and_quit_keeps_what_was_decided(reviewed):
    path, case, result = reviewed
    with open_selections(path, load_settings()) as store:
        state = {e.doc_id: (e.decision, e.who, e.note) for e in store.entries(QUESTION)}
    assert state == {
        FRENCH: (Decision.ACCEPTED, "historian", ""),
        HOSTILE: (Decision.ACCEPTED, "historian", ""),
        GAZETTE: (Decision.REJECTED, "historian", ""),
        GONE: (Decision.ACCEPTED, "historian", "ruined warehouses, =cmd|' /C calc'!A0"),
    }
    assert "3 accepted, 1 rejected, 0 undecided of 7 candidates" in " ".join(result.output.split())


def test_the_review_is_a_trail_of_decisions(reviewed):
    path, case, _ = reviewed
    (trail,) = [p for p in (path / "trails").glob("*.jsonl") if p.stem != case.run_id]
    events = read_trail(trail)
    run = events[0]
    assert isinstance(run, RunEvent) and run.run is RunKind.REVIEW and run.question == QUESTION
    assert run.config["from_run"] == case.run_id and run.k == 7
    decisions = [e for e in events if isinstance(e, DecisionEvent)]
    assert [(e.doc_id, e.decision) for e in decisions] == [
        (FRENCH, Decision.ACCEPTED),
        (HOSTILE, Decision.ACCEPTED),
        (GAZETTE, Decision.REJECTED),
        (GONE, Decision.UNDECIDED),  # the note first: no decision yet
        (GONE, Decision.ACCEPTED),
    ]
    assert decisions[0].span == (0, 46) and decisions[0].from_run == case.run_id
    shown = runner.invoke(app, ["trail", "show", trail.stem, "-c", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "accepted" in shown.output and FRENCH in shown.output


def test_document_text_and_reasons_are_data(reviewed):
    _, _, result = reviewed
    # the agent's reason quotes markup from the document: printed as it is, never styled or turned into emoji
    assert "[bold]INCENDIE[/bold] :thumbs_up:" in result.output
    assert "FAITS DIVERS" in result.output  # the cited span of the French daily


def test_list_and_show(reviewed):
    path, _, _ = reviewed
    listed = runner.invoke(app, ["selection", "list", "-c", str(path)])
    assert listed.exit_code == 0, listed.output
    assert "Which newspapers" in listed.output
    shown = runner.invoke(app, ["selection", "show", "Which newspapers", "-c", str(path), "--json"])
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.stdout)
    assert [(r["doc_id"], r["decision"]) for r in rows][0] == (FRENCH, "accepted") and len(rows) == 4
    missing = runner.invoke(app, ["selection", "show", "Floods", "-c", str(path)])
    assert missing.exit_code == 2 and "no selection for the question" in missing.output


def test_export_ris(reviewed):
    path, _, _ = reviewed
    result = runner.invoke(app, ["selection", "export", "Which", "-c", str(path), "--format", "ris"])
    assert result.exit_code == 0, result.output
    records = [r for r in result.stdout.split("ER  - ") if r.strip()]
    assert len(records) == 3  # the accepted sources only
    for record in records:
        lines = [line for line in record.strip().splitlines() if line]
        assert lines[0].startswith("TY  - ") and all(RIS_LINE.match(line) for line in lines)
    assert "ID  - " + FRENCH in records[0] and "AB  - FAITS DIVERS" in records[0]
    assert "accepted by historian" in records[0]


def test_export_csl_json_has_what_zotero_needs(reviewed):
    path, _, _ = reviewed
    result = runner.invoke(app, ["selection", "export", "Which", "-c", str(path), "--format", "csl-json"])
    assert result.exit_code == 0, result.output
    items = json.loads(result.stdout)
    assert [i["id"] for i in items] == [FRENCH, HOSTILE, GONE]
    for item in items:
        assert {"id", "type", "title"} <= item.keys() and item["type"] in ("article-newspaper", "document")
    assert items[0]["issued"] == {"date-parts": [[1888, 8, 3]]}
    assert "ruined warehouses" in items[2]["note"] and "not in the collection" in items[2]["note"]


def test_export_csv_with_spans(reviewed, tmp_path):
    path, _, _ = reviewed
    out = tmp_path / "selection.csv"
    result = runner.invoke(app, ["selection", "export", "Which", "-c", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert tuple(rows[0].keys()) == CSV_COLUMNS
    first = rows[0]
    assert (first["doc_id"], first["span_start"], first["span_end"], first["origin"]) == (
        FRENCH,
        "0",
        "46",
        "selection",
    )
    assert first["quote"].startswith("FAITS DIVERS")
    assert rows[2]["reasons"].startswith("accepted by historian") and rows[2]["reasons"].endswith("calc'!A0")


def test_undecided_only_and_undo_from_the_keyboard(reviewed, tmp_path):
    path, case, _ = reviewed
    copy = tmp_path / "collection"
    shutil.copytree(path, copy)
    # the three undecided candidates: skip, reject, undo (the reject taken back), quit
    result = runner.invoke(app, ["review", case.run_id, "-c", str(copy), "--undecided", "--who", "b"], input="sruq")
    assert result.exit_code == 0, result.output
    assert "[1/3]" in result.output and "undone" in result.output
    with open_selections(copy, load_settings()) as store:
        assert store.get(QUESTION, "lpj-1881-a").decision is Decision.UNDECIDED
        assert store.get(QUESTION, "10169_Poole1860") is None
        assert len(store.accepted(QUESTION)) == 3


def test_a_judge_run_is_reviewed_as_the_run_it_judged_with_the_judge_beside(reviewed, tmp_path):
    from tracerag.trail.events import JudgmentEvent
    from tracerag.trail.writer import JsonlWriter, Trail

    path, case, _ = reviewed
    copy = tmp_path / "collection"
    shutil.copytree(path, copy)
    trail = Trail()
    writer = JsonlWriter(copy / "trails" / f"{trail.run_id}.jsonl")
    trail.listeners.append(writer)
    trail.emit(RunEvent(question=QUESTION, collection=str(copy), k=1, config={"from": case.run_id},
                        versions={}, run=RunKind.JUDGE))  # fmt: skip
    trail.emit(JudgmentEvent(doc_id=FRENCH, chunk_id=FRENCH + "#0", rank=1, score=9, model="m", criteria_hash="h",
                             reasoning="an eyewitness report of the panic"))  # fmt: skip
    writer.close()
    result = runner.invoke(app, ["review", trail.run_id, "-c", str(copy), "--who", "j"], input="q")
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())
    assert "judge (9/10): an eyewitness report of the panic" in shown
    assert "agent: accept: FAITS DIVERS La panique des" in shown and "[1/7]" in shown
    runs = [read_trail(p)[0] for p in (copy / "trails").glob("*.jsonl")]
    new = [r for r in runs if r.run is RunKind.REVIEW and r.config.get("who") == "j"]
    assert [r.config["from_run"] for r in new] == [case.run_id]  # the decisions are on the judged run's sources
