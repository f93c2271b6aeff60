"""The catalog assistant end to end on the real Miami 211 directory: clarify → answer over two turns, state kept
across turns, the next-batch loop, strict structural satisfaction in every structured-index variant, the guard
against a planted hallucination in a generated reply (fake OpenAI-compatible server), and the trail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.fakes.openai_server import FakeOpenAI, Reply
from tracerag.catalog import filters
from tracerag.catalog.assistant import VARIANTS, CatalogAssistant
from tracerag.catalog.model import ConstraintKind
from tracerag.cli import app
from tracerag.config import load_settings
from tracerag.llm import load_llm
from tracerag.trail import read_trail
from tracerag.trail.events import CatalogOutcome

SATURDAY = 5


@pytest.fixture
def assistant(catalog: Path, tmp_path: Path):
    with CatalogAssistant(catalog, load_settings(), today=SATURDAY, trail_dir=tmp_path) as a:
        yield a


def test_no_location_gets_a_clarifying_question_then_the_answer_keeps_the_topic(assistant):
    first = assistant.ask("I need a food pantry")
    assert first.outcome == "clarify" and "city or postal code" in first.reply and not first.recommendations
    second = assistant.ask("in Hialeah")
    assert second.outcome == "answer" and second.recommendations
    for rec in second.recommendations:
        assert rec.record.city == "Hialeah"
        assert any(t.startswith("BD-1800") for t, _ in rec.record.taxonomy)  # food pantries, kept from turn 1
        assert rec.record.name in second.reply and rec.record.phones[0] in second.reply


def test_a_later_turn_replaces_the_weekday_and_keeps_the_city(assistant):
    assistant.ask("food pantry in Hialeah open on Monday")
    later = assistant.ask("what about Saturday?")
    kinds = {s.kind: s.values for s in later.constraints.structural}
    assert kinds[ConstraintKind.CITY] == ("Hialeah",) and kinds[ConstraintKind.WEEKDAY] == (str(SATURDAY),)
    assert later.outcome == "none_found"  # Hialeah's two food pantries are closed on Saturdays
    assert "Without weekday 'Saturday': 2 service(s)" in later.reply


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_recommendation_satisfies_every_structural_constraint_in_every_variant(catalog, tmp_path, variant):
    requests = [
        "legal services in Miami Beach",
        "Spanish speaking counseling in Miami open on Tuesday",
        "food pantry in Homestead",
        "wheelchair accessible clinic in Miami open at 6pm",
        "shelter near 33157",
    ]
    answered = 0
    with CatalogAssistant(catalog, load_settings(), variant=variant, k=5, trail_dir=tmp_path) as a:
        for text in requests:
            a.reset()
            turn = a.ask(text)
            assert isinstance(turn.outcome, CatalogOutcome)  # the trail's closed set, not a string of its own
            answered += turn.outcome == CatalogOutcome.ANSWER
            for rec in turn.recommendations:
                assert filters.satisfies(rec.record, turn.constraints.structural), (text, rec.record.id)
                assert a.store.get([rec.record.id])  # a catalog record, never anything else
    assert answered >= (3 if variant != "none" else 1)


def test_semantic_check_moves_to_the_next_batch_until_enough_pass(catalog, tmp_path):
    with CatalogAssistant(catalog, load_settings(), k=2, batch=3, trail_dir=tmp_path) as a:
        turn = a.ask("food in Miami for seniors")
    assert turn.checked > 3  # more than one batch was checked
    passed = [r for r in turn.recommendations if all(e.passed for e in r.evidence)]
    assert passed, turn.reply
    for rec in passed:
        for ev in rec.evidence:
            start, end = ev.span
            assert rec.record.text()[start:end] == ev.quote


def test_a_generated_reply_loses_a_planted_hallucination(catalog, tmp_path):
    planted = "SALVATION ARMY"  # a real catalog name that is not among the selected Hialeah pantries

    def handler(body: dict, n: int) -> Reply:
        if body.get("response_format"):  # the parse: propose nothing beyond the rules
            return Reply(content=json.dumps({"cities": ["Hialeah"], "service_types": ["food pantry"]}))
        services = json.loads(
            body["messages"][-1]["content"].split("\n", 1)[1].rsplit("\n\nWrite", 1)[0].replace("\\u003c", "<")
        )
        first = services["services"][0]
        return Reply(
            content=f"Try {first['name']} at {first['phones'][0] if first.get('phones') else ''}.\n"
            f"You could also call {planted} at 305-555-0199, 1200 Fake Street."
        )

    with FakeOpenAI(handler) as fake:
        settings = load_settings(llm={"model": "openai:fake", "base_url": fake.base_url, "json_schema": True})
        with CatalogAssistant(catalog, settings, llm=load_llm(settings), trail_dir=tmp_path) as a:
            turn = a.ask("a food pantry in Hialeah")
            trail = read_trail(a.trail_path)
    assert turn.outcome == "answer"
    assert planted not in turn.reply and "305-555-0199" not in turn.reply
    assert {r["kind"] for r in turn.removed} >= {"name"} or {r["kind"] for r in turn.removed} >= {"phone"}
    assert turn.recommendations[0].record.name in turn.reply
    reply_event = [e for e in trail if e.kind == "catalog_reply"][-1]
    assert reply_event.removed == turn.removed and reply_event.generated
    assert any(e.kind == "llm_call" for e in trail)


def test_trail_and_cli(catalog, tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["chat", "--catalog", str(catalog), "--once", "food pantry in Hialeah", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["outcome"] == "answer" and payload["recommendations"]
    events = read_trail(Path(payload["trail"]))
    kinds = [e.kind for e in events]
    assert kinds[0] == "run" and {"catalog_parse", "catalog_filter", "catalog_check", "catalog_reply"} <= set(kinds)
    # wide: at 80 columns Rich wraps the message inside the tmp path, wherever that path's length puts the fold
    bad = runner.invoke(app, ["chat", "--catalog", str(tmp_path), "--once", "x"], env={"COLUMNS": "400"})
    assert bad.exit_code == 2 and "not a catalog" in bad.output


# -- requests for what the catalog does not hold --------------------------------------------------------


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("piano tuning in Miami", "Nothing in this directory matches 'piano tuning' in Miami."),
        ("helicopter rental in Hialeah", "Nothing in this directory matches 'helicopter rental' in Hialeah."),
        ("helicopter rental in Hialeh", "Nothing in this directory matches 'helicopter rental' in Hialeah."),
        (
            "where can I find a yacht charter near 33157?",
            "Nothing in this directory matches 'yacht charter' in postal code",
        ),
        ("tattoo removal in Homestead open on Monday", "Nothing in this directory matches 'tattoo removal' in Home"),
        ("I need a sushi restaurant", "Nothing in this directory matches 'sushi restaurant'."),  # no place asked
    ],
)
def test_a_request_the_catalog_does_not_hold_says_so_and_recommends_nothing(assistant, request_text, expected):
    turn = assistant.ask(request_text)
    assert turn.outcome == "no_match" and not turn.recommendations, turn.reply
    assert turn.reply.startswith(expected), turn.reply
    assert "Hialeh " not in turn.reply and "Hialeh." not in turn.reply  # the place as the catalog spells it
    assert turn.topic_match is not None and not turn.topic_match.held


def test_the_profiles_help_line_is_named_when_nothing_fits(catalog, tmp_path):
    with CatalogAssistant(catalog, load_settings(), trail_dir=tmp_path) as a:
        assert a.profile.help_line is None
        assert "help line" not in a.ask("piano tuning in Miami").reply  # the profile names none: none assumed
        a.profile = a.profile.model_copy(update={"help_line": "211"})  # as `catalog ingest --help-line 211` sets
        a.reset()
        no_match = a.ask("piano tuning in Miami")
        a.reset()
        none_found = a.ask("food pantry in Hialeah open on Saturday")
        a.reset()
        answer = a.ask("food pantry in Hialeah")
    assert no_match.outcome == CatalogOutcome.NO_MATCH and no_match.reply.endswith("help line: 211.")
    assert none_found.outcome == CatalogOutcome.NONE_FOUND and none_found.reply.endswith("help line: 211.")
    assert answer.outcome == CatalogOutcome.ANSWER and "help line" not in answer.reply


def test_a_follow_up_place_keeps_saying_nothing_matches_until_the_topic_changes(assistant):
    first = assistant.ask("I need piano tuning")
    assert first.outcome == "no_match" and first.reply.startswith("Nothing in this directory matches 'piano tuning'.")
    again = assistant.ask("in Hialeh")
    assert again.outcome == "no_match" and again.reply.startswith(
        "Nothing in this directory matches 'piano tuning' in Hialeah."
    )
    moved = assistant.ask("what about in Homestead?")
    assert moved.outcome == "no_match" and "'piano tuning' in Homestead." in moved.reply and not moved.recommendations
    changed = assistant.ask("what about a food pantry?")
    assert changed.outcome == "answer" and changed.recommendations
    for rec in changed.recommendations:
        assert rec.record.city == "Homestead" and any(t.startswith("BD-1800") for t, _ in rec.record.taxonomy)


def test_the_trail_records_which_words_matched_nothing_and_the_evidence(catalog, tmp_path):
    with CatalogAssistant(catalog, load_settings(), trail_dir=tmp_path) as a:
        a.ask("piano tuning in Miami")
        trail = read_trail(a.trail_path)
    parse = next(e for e in trail if e.kind == "catalog_parse")
    match = parse.topic_match
    assert match["held"] is False and match["via"] == "nothing" and match["unmatched"] == ["piano", "tuning"]
    words = {w["word"]: w for w in match["words"]}
    assert words["piano"]["records"] > 0 and words["tuning"]["records"] > 0  # each is used, never together
    reply = next(e for e in trail if e.kind == "catalog_reply")
    assert reply.outcome == "no_match" and reply.recommended == []
    assert "never appear together" in reply.text
    assert not [e for e in trail if e.kind in ("catalog_filter", "catalog_check")]  # nothing was looked up


@pytest.mark.parametrize(
    "request_text",
    [
        "food pantry in Hialeah",
        "legal help in Miami Beach",
        "I lost my job in Homestead",
        "my landlord is evicting me in Miami",
        "a place to shower in Miami",
        "help with a drinking problem in Miami",
        "flu shots in Miami",
        "RADIO LOLLIPOP in Miami",
        "services in Miami",
        "somewhere to sleep tonight in Miami",  # held ("sleep" is in the texts), though not as shelters: see report
        "cheap glasses for my eyes in Miami",
        "help for my autistic son in Miami",
        "help paying for my medicine in Miami",
        "where can I take my kids to play in Miami",
    ],
)
def test_requests_for_what_the_catalog_holds_are_not_refused(assistant, request_text):
    turn = assistant.ask(request_text)
    assert turn.outcome != "no_match", (turn.reply, turn.topic_match and turn.topic_match.to_dict())


def test_a_topic_held_only_by_its_words_recommends_only_records_stating_them(assistant):
    turn = assistant.ask("a place to shower in Miami")
    assert turn.outcome == "answer" and turn.recommendations
    for rec in turn.recommendations:  # no unrelated service pads the list to k
        assert "shower" in rec.record.text().casefold(), rec.record.name


def test_a_condition_no_record_states_is_never_passed_off_as_met(assistant):
    # Arlington has one service stating it serves veterans (TAPS) and others that say nothing about veterans.
    turn = assistant.ask("veterans in Arlington")
    assert turn.outcome == "answer" and turn.recommendations
    verdicts = [r.evidence[0].passed for r in turn.recommendations]
    assert True in verdicts and None in verdicts and False not in verdicts
    assert verdicts == sorted(verdicts, key=lambda v: v is not True)  # stated first, then the unstated
    first_unstated = next(r for r in turn.recommendations if r.evidence[0].passed is None)
    said_so = "the directory does not state whether they meet 'for veterans'"
    assert said_so in turn.reply and turn.reply.index(said_so) < turn.reply.index(first_unstated.record.name)


def test_a_transposed_city_is_the_catalogs_and_is_named_as_it_spells_it(assistant):
    turn = assistant.ask("legal help in Bethseda")
    assert turn.constraints.of(ConstraintKind.CITY).values == ("Bethesda",)
    assert "Bethesda" in turn.reply and "Bethseda" not in turn.reply


def test_a_reply_says_a_negated_condition_and_none_found_once_each(assistant):
    """A negated condition reads as the evidence lines say it ("no ID required", never "not ID required"), and
    a reply that found nothing says so once, then what would find something."""
    turn = assistant.ask("food pantry in Miami, no ID required")
    assert "no ID required" in turn.reply and "not ID required" not in turn.reply, turn.reply
    assistant.reset()
    none_found = assistant.ask("food pantry in Hialeah open on Saturday")
    assert none_found.outcome == CatalogOutcome.NONE_FOUND
    assert none_found.reply.startswith("I found no services in the directory matching ")
    assert "No service meets" not in none_found.reply and "Without weekday" in none_found.reply, none_found.reply
