"""`tracerag answer` on real HIPE documents: from a researcher's selection (research/selection.py) with a recorded
drafter replayed, and from a real agent run's accepted sources without a model (extractive, checked lexically).
The draft cites only the accepted sources, is labelled a draft to check, flags what its check could not confirm,
abstains where the sources cannot answer, and writes its trail (run kind `answer`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fixtures.record_trails import QUESTION
from tests.trail import AGENT_TRAIL, RESEARCH_TRAILS, recorded, small_collection
from tracerag.cli import app
from tracerag.cli.answer import print_support
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.llm import RawAnswer, StructuredLLM, Usage
from tracerag.llm.replay import RecordingProvider
from tracerag.research.answer import DRAFT_LABEL, draft
from tracerag.research.citecheck import check
from tracerag.research.selection import Decision, open_selections
from tracerag.research.sources import load_chunks, refs_from_selection
from tracerag.research.support import from_events
from tracerag.trail import Trail, read_trail
from tracerag.trail.events import CitationCheckEvent, DraftEvent, RunEvent, RunKind, WithdrawalEvent

runner = CliRunner()
FRENCH, HOSTILE, GAZETTE, GONE = "EXP-1888-08-03-a-i0030", "hostile-1", "gaz-1881-05-27", "gone-42"


class Writer:
    """Drafts one paraphrase citing the first words of S1, and one citing a label outside the sources; checks
    every citation as supported."""

    name, model = "scripted", "scripted-writer"

    def generate(self, messages, *, json_schema, temperature, max_tokens) -> RawAnswer:
        user = messages[-1].content
        if "Sources:" in user:
            first = json.loads(user.split("<documents>\n", 1)[1].split("\n")[0])
            quote = " ".join(first["text"].split()[:6])
            answer = {
                "abstain": False,
                "sentences": [
                    {"text": quote, "kind": "paraphrase", "citations": [{"source": "S1", "quote": quote}]},
                    {"text": "Something else.", "kind": "inference", "citations": [{"source": "S7", "quote": "x y z"}]},
                ],
            }
        else:
            answer = {"reasoning": "the passage states it", "supported": True}
        return RawAnswer(json.dumps(answer), Usage(10, 10), 0.0, self.model)


@pytest.fixture(scope="module")
def case(tmp_path_factory, datasets_dir):
    shared = small_collection(tmp_path_factory, datasets_dir)
    root = tmp_path_factory.mktemp("answer-cli")
    path = root / "collection"
    shutil.copytree(shared.path, path)
    run = recorded(AGENT_TRAIL, path)
    with open_selections(path, load_settings(), write=True) as store:
        store.decide(QUESTION, GAZETTE, Decision.ACCEPTED, who="historian")
        store.decide(QUESTION, FRENCH, Decision.ACCEPTED, who="historian")
        store.decide(QUESTION, HOSTILE, Decision.REJECTED, who="historian")
    folder = root / "recorded"
    _record(path, Writer(), folder)
    return path, run, folder


def _record(path: Path, model, folder: Path) -> None:
    """`model`'s draft from the selection's accepted sources and its checks, recorded in `folder` through the
    library, for the command to replay (a replay answers only what was recorded)."""
    with Collection.open(path, load_settings(), mode="read") as col:
        _, refs = refs_from_selection(path, load_settings(), QUESTION)
        sources = load_chunks(col, refs).chunks
        llm = StructuredLLM(RecordingProvider(model, folder))
        check(draft(QUESTION, sources, llm, Trail(), language="en", evidence_share=None), llm, Trail())


def test_a_draft_from_the_selection_cites_only_it_and_flags_what_fails(case):
    path, _, folder = case
    args = ["answer", QUESTION, "--selection", QUESTION[:20], "-c", str(path), "--llm", f"replay:{folder}"]
    result = runner.invoke(app, [*args, "--language", "en", "--json"])
    assert result.exit_code == 1, result.output  # a flagged citation
    report = json.loads(result.stdout)
    assert report["label"] == DRAFT_LABEL and not report["abstained"]
    assert {s["doc_id"] for s in report["sources"]} == {GAZETTE, FRENCH}  # the rejected one is not a source
    cited = {c["doc_id"] for s in report["sentences"] for c in s["citations"]}
    assert cited <= {GAZETTE, FRENCH, None}
    assert [(c["sentence"], c["flagged"]) for c in report["checks"]] == [(0, False), (1, True)]
    events = read_trail(Path(report["trail"]))
    assert isinstance(events[0], RunEvent) and events[0].run is RunKind.ANSWER
    assert len([e for e in events if isinstance(e, DraftEvent)]) == 1
    assert len([e for e in events if isinstance(e, CitationCheckEvent)]) == 2
    shown = runner.invoke(app, [*args, "--language", "en"])
    text = " ".join(shown.output.split())
    assert DRAFT_LABEL in text and "[paraphrase]" in text and "[inference]" in text and "FLAGGED:" in text
    trail = runner.invoke(app, ["trail", "show", report["run_id"], "-c", str(path)])
    assert trail.exit_code == 0, trail.output
    rendered = " ".join(trail.output.split())
    assert "1. [paraphrase]" in rendered and "S7 not located" in rendered
    assert "sentence 1" in rendered and "sentence 2" in rendered and "FLAGGED" in rendered


def test_the_agent_accepted_sources_drafted_without_a_model(case, tmp_path):
    path, run, _ = case
    empty = tmp_path / "settings.toml"
    empty.write_text("", encoding="utf-8")
    args = ["answer", "fire", "--from", run.run_id, "--agent-accepted", "-c", str(path), "--config", str(empty)]
    result = runner.invoke(app, [*args, "--json"])
    report = json.loads(result.stdout)
    assert report["method"] == "extractive" and report["missing"] == [GONE]
    assert result.exit_code == 1  # a source the collection no longer holds was left out, and said
    accepted = set(run.events[-1].accepted) - {GONE}  # type: ignore[union-attr]
    assert {s["doc_id"] for s in report["sources"]} == accepted
    for sentence in report["sentences"]:
        assert sentence["kind"] == "quotation"
        assert all(c["doc_id"] in accepted and c["span"] for c in sentence["citations"])
    unanswerable = "Qu'a dit le pape sur les chemins de fer bavarois en 1850 ?"
    abstain = runner.invoke(app, ["answer", unanswerable, *args[2:]])
    assert abstain.exit_code == 1 and "abstained:" in abstain.output


def test_bad_usage_exits_2(case):
    path, run, _ = case
    assert runner.invoke(app, ["answer", "q", "-c", str(path)]).exit_code == 2
    no_flag = runner.invoke(app, ["answer", "q", "--from", run.run_id, "-c", str(path)])
    assert no_flag.exit_code == 2 and "--agent-accepted" in no_flag.output
    unknown = runner.invoke(app, ["answer", "q", "--selection", "no such question", "-c", str(path)])
    assert unknown.exit_code == 2


def test_runs_without_accepted_sources_say_what_to_do(case, tmp_path):
    """Found by a new user: a search run holds no agent verdicts, and an answer run no candidates to review."""
    path, _, _ = case
    empty = tmp_path / "settings.toml"
    empty.write_text("", encoding="utf-8")
    searched = runner.invoke(app, ["search", "fire", "-c", str(path), "--json", "--config", str(empty)])
    search_run = json.loads(searched.stdout)["run_id"]
    args = ["--agent-accepted", "-c", str(path), "--config", str(empty)]
    drafted = runner.invoke(app, ["answer", "fire", "--from", search_run, *args])
    said = " ".join(drafted.output.split())  # the console wraps at 80 columns
    assert drafted.exit_code == 2 and "search run" in said and f"tracerag review {search_run}" in said
    answered = runner.invoke(app, ["answer", QUESTION, "--selection", QUESTION, "-c", str(path), "--json"])
    answer_run = json.loads(answered.stdout)["run_id"]
    reviewed = runner.invoke(app, ["review", answer_run, "-c", str(path)], input="q")
    said = " ".join(reviewed.output.split())
    assert reviewed.exit_code == 2 and "is an answer run" in said and "did not finish" not in said


def test_explain_prints_each_sentence_its_citations_and_verdict(case):
    path, _, folder = case
    args = ["answer", QUESTION, "--selection", QUESTION[:20], "-c", str(path), "--llm", f"replay:{folder}"]
    result = runner.invoke(app, [*args, "--language", "en", "--explain"])
    assert result.exit_code == 1, result.output  # the flagged citation still sets the exit code
    lines = result.output.splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines)
    text = " ".join(result.output.split())
    assert DRAFT_LABEL in text
    assert "1. [paraphrase]" in text and "supports (model): the passage states it" in text
    assert "verdict: supported (its citation supports it)" in text
    assert "2. [inference] Something else. S7 not located “x y z”" in text
    assert "does not support (model): S7 is not one of the draft's sources" in text
    assert "verdict: unsupported (its citation does not support it)" in text
    assert "2 sentences: 1 supported · 0 partly supported · 1 unsupported · 0 not checked" in text
    report = json.loads(runner.invoke(app, [*args, "--language", "en", "--json"]).stdout)
    assert [s["verdict"] for s in report["support"]] == ["supported", "unsupported"]
    assert report["verdicts"] == {"supported": 1, "partly supported": 0, "unsupported": 1, "not checked": 0}


def test_explain_on_the_recorded_answer_run():
    """The printer `--explain` uses, on tests/fixtures/trails/research/answer.jsonl, at 80 columns."""
    from io import StringIO

    from rich.console import Console

    buffer = StringIO()
    print_support(from_events(read_trail(RESEARCH_TRAILS / "answer.jsonl")), Console(file=buffer, width=80))
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    assert all(len(line) <= 80 for line in lines)
    assert lines == [
        "1. [quotation] « Un incendie a ravagé le quartier »",
        "   S1 gone-42:0-32 “Un incendie a ravagé le quartier”",
        "     supports (model): the passage states it",
        "   verdict: supported (its citation supports it)",
        "2. [paraphrase] Le théâtre fut sauvé des flammes.",
        "   S2 gaz-1881-05-27:22-61 “détruit les entrepôts du port. Gazette”",
        "     does not support (model): the passage says no such thing",
        "   verdict: unsupported (its citation does not support it)",
        "3. [inference] Les incendies de 1881 furent nombreux.",
        "   S1 gone-42 not located “détruit les entrepôts du port. Gazette”",
        "     does not support (model): the quote is not in gone-42's text at the cited",
        "     place",
        "   S9 not located “trois maisons”",
        "     does not support (model): S9 is not one of the draft's sources",
        "   verdict: unsupported (0 of 2 citations support it)",
        "3 sentences: 1 supported · 0 partly supported · 2 unsupported · 0 not checked",
    ]


class Doubter(Writer):
    """Drafts as `Writer` does, but finds no citation supported: the draft is withdrawn."""

    model = "scripted-doubter"

    def generate(self, messages, *, json_schema, temperature, max_tokens) -> RawAnswer:
        answer = super().generate(messages, json_schema=json_schema, temperature=temperature, max_tokens=max_tokens)
        if "Sources:" in messages[-1].content:
            return answer
        text = json.dumps({"reasoning": "the passage is about something else", "supported": False})
        return RawAnswer(text, Usage(10, 10), 0.0, self.model)


def test_a_draft_none_of_whose_citations_holds_up_is_withdrawn_yet_shown_and_kept_in_the_trail(case, tmp_path):
    path, _, _ = case
    folder = tmp_path / "doubter"
    _record(path, Doubter(), folder)
    args = ["answer", QUESTION, "--selection", QUESTION[:20], "-c", str(path), "--llm", f"replay:{folder}"]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    why = "none of the draft's 2 citations holds up under the check (1 not found in the source, 1 unsupported)"
    assert (
        f"no answer, withdrawn: {why}" in text and "the withdrawn draft, as written:" in text and "[paraphrase]" in text
    )
    as_json = json.loads(runner.invoke(app, [*args, "--json"]).output)
    assert as_json["withdrawn"] == why and not as_json["abstained"] and len(as_json["sentences"]) == 2
    events = read_trail(Path(as_json["trail"]))
    (withdrawn,) = [e for e in events if isinstance(e, WithdrawalEvent)]
    assert withdrawn.reason == why and withdrawn.sentences == 2
    shown = runner.invoke(app, ["trail", "show", as_json["run_id"], "-c", str(path)])
    assert "draft withdrawn: none of the draft's 2 citations" in " ".join(shown.output.split())
