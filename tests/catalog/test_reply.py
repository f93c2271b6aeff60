"""Replies about real Miami 211 records: the template states every field; the guard removes what was invented."""

from __future__ import annotations

import json

from tests.catalog.test_check import catalog_names, check_rules, real_record
from tests.catalog.test_parse import MIAMI_PROFILE, WORDS
from tests.fakes.openai_server import FakeOpenAI, Reply, last_user, scripted
from tracerag.catalog import generated_reply as generated
from tracerag.catalog import guard
from tracerag.catalog.evidence import Evidence
from tracerag.catalog.facts import FactFinder
from tracerag.catalog.model import Opening, Semantic
from tracerag.catalog.reply import NOT_STATED, Recommendation, format_hours, no_match_reply, templated_reply
from tracerag.llm import StructuredLLM
from tracerag.llm.openai_compat import OpenAICompatProvider

FACTS = FactFinder(WORDS, MIAMI_PROFILE)
find_phones, find_addresses = FACTS.phones, FACTS.addresses
NO_ID = Semantic("ID required", negated=True)


def guard_reply(text, selected, names=(), **options):
    return guard.guard_reply(text, selected, FACTS, names, **options)


def generated_reply(recs, request, llm, **options):
    return generated.generated_reply(recs, request, llm, FACTS, MIAMI_PROFILE, **options)


FREE = Semantic("free")


def _recommend(*service_ids: str, semantics: tuple[Semantic, ...] = (NO_ID, FREE)) -> list[Recommendation]:
    recs = [real_record(i) for i in service_ids]
    return [Recommendation(r, [check_rules(r, s) for s in semantics]) for r in recs]


def _llm(fake: FakeOpenAI) -> StructuredLLM:
    return StructuredLLM(OpenAICompatProvider("m", fake.base_url, max_retries=0, backoff_s=0.0))


# ------------------------------------------------------------------------------------------------ fields


def test_format_hours():
    week = [Opening(d, 9 * 60, 17 * 60) for d in range(5)]
    assert format_hours(week, "") == "Mon\u2013Fri 9:00\u201317:00"
    assert format_hours([*week, Opening(5, 600, 840)]) == "Mon\u2013Fri 9:00\u201317:00; Sat 10:00\u201314:00"
    assert format_hours([Opening(0, 450, 780), Opening(3, 450, 780), Opening(4, 450, 780)]) == (
        "Mon, Thu, Fri 7:30\u201313:00"
    )
    assert format_hours([Opening(0, 540, 720), Opening(0, 780, 1020)]) == "Mon 9:00\u201312:00, 13:00\u201317:00"
    assert format_hours([Opening(6, 0, 1440)]) == "Sun 24 hours"
    assert format_hours([], "1st and 3rd Monday, 6pm") == "1st and 3rd Monday, 6pm"
    assert format_hours([], "") == NOT_STATED


def test_find_phones_and_addresses():
    text = (
        "Call (305) 253-4841, 305.253.4841 or 1-800-226-6667 ext. 12 (also 305-573-4200 x57471). "
        "Visit 11347 S.W. 160th St. or 2236 NW Miami Court; open 24 hours for 100 families."
    )
    assert [d for _, d in find_phones(text)] == ["+13052534841", "+13052534841", "+18002266667", "+13055734200"]
    assert [n for _, n in find_addresses(text)] == ["11347 sw 160 st", "2236 nw miami ct"]


# ------------------------------------------------------------------------------------------------ the template


def test_templated_reply_states_every_field_of_every_item():
    recs = _recommend("136", "163", "5723")
    text = templated_reply(recs, "no ID required, free")
    # No record states it is free: the reply says so first, and every record is listed as not stating it.
    assert text.startswith(
        "No service in the directory states that it meets 'no ID required' or 'free'. These meet the rest of "
        "your request (no ID required, free), but the directory does not state whether they meet them:"
    )
    for rec in recs:
        r = rec.record
        item = text.split(f". {r.name}", 1)[1].split("\n\n", 1)[0]  # this record's block
        assert f"Address: {r.address}, {r.city}, {r.state} {r.zip}" in item
        assert f"Hours: {format_hours(r.openings, r.hours_text)}" in item
        assert f"Phone: {', '.join(r.phones)}" in item
        for ev in rec.evidence:
            assert (f'"{ev.quote}"' in item) if ev.passed is not None else f"{NOT_STATED}" in item
    assert "Address: 11347 SW 160th Street, Miami, FL 33157" in text
    assert "Hours: Mon\u2013Fri 7:30\u201313:00" in text and "Phone: 305-573-4200 x57471" in text
    assert 'no ID required: no, the directory says "All clients must provide current identification' in text
    assert 'no ID required: yes, the directory says "Bring ID or anything with name' in text
    assert text.count(f"free: {NOT_STATED}") == 3


def test_templated_reply_with_missing_fields_says_not_stated():
    rec = real_record("136")
    bare = type(rec)(id="b", service_id="b", name="BARE SERVICE")
    text = templated_reply([Recommendation(bare, [Evidence(None, "nothing", semantic=FREE)])], "free")
    assert f"Address: {NOT_STATED}" in text and f"Hours: {NOT_STATED}" in text and f"Phone: {NOT_STATED}" in text
    assert f"free: {NOT_STATED}" in text


def test_none_found_names_the_constraints():
    text = templated_reply([], "food pantry in Hialeah, open Saturday", none_found_reason="None is open on Saturday.")
    assert text == (
        "I found no services in the directory matching food pantry in Hialeah, open Saturday. None is open on Saturday."
    )


def test_when_nothing_fits_the_reply_names_the_profiles_help_line_and_only_then():
    none_found = templated_reply([], "food pantry in Hialeah", help_line="211 (toll free)")
    no_match = no_match_reply("piano tuning", "in Hialeah", "'piano' appears in no service.", help_line="211")
    assert none_found.endswith("For other help, contact the directory's help line: 211 (toll free).")
    assert no_match == (
        "Nothing in this directory matches 'piano tuning' in Hialeah. 'piano' appears in no service. "
        "For other help, contact the directory's help line: 211."
    )
    # no help line in the profile: none is named or assumed
    assert "help line" not in templated_reply([], "food pantry in Hialeah") + no_match_reply("piano tuning", "")
    # an answer lists services: the help line is for when nothing fits
    assert "help line" not in templated_reply(_recommend("136"), "girls club", help_line="211")


def test_a_generated_reply_with_nothing_to_recommend_names_the_help_line():
    profile = MIAMI_PROFILE.model_copy(update={"help_line": "211"})
    with FakeOpenAI(scripted()) as fake:
        text, _ = generated.generated_reply([], "girls club", _llm(fake), FACTS, profile, constraints_summary="x")
    assert fake.requests == [] and text.endswith("contact the directory's help line: 211.")


# ------------------------------------------------------------------------------------------------ the guard

# A model's reply about the two selected services (Girl Scouts 136, Adult Rehabilitation Center 163), with a real
# catalog service that was not selected (Miami Rescue Mission, 237) and an invented phone and address planted in it.
PLANTED = """Here are some places that can help:

1. **GIRL SCOUTS COUNCIL OF TROPICAL FLORIDA, INC.** - 11347 S.W. 160th St., Miami, FL 33157
   Call (305) 253-4841, Mon-Fri 9:00-17:00.
2. **ADULT REHABILITATION CENTER** - 2236 NW Miami Court, Miami. Phone: 305-573-4200 ext. 57471.
3. **MIAMI RESCUE MISSION, INC.** - 3553 NW 50th Street, Miami
   Call 305-571-2215 for a bed tonight.

The Adult Rehabilitation Center asks for identification. You can also call their hotline at 786-555-0142 any time. \
If you need a ride, the shuttle leaves from 1200 Biscayne Boulevard every morning. Good luck!
"""


def test_guard_removes_the_planted_hallucinations_and_keeps_the_real_ones():
    selected = [real_record("136"), real_record("163")]
    names = catalog_names()
    assert "MIAMI RESCUE MISSION, INC." in names
    clean, removed = guard_reply(PLANTED, selected, names)
    # The unselected catalog service goes with its indented line (its real address and phone).
    assert "MIAMI RESCUE MISSION" not in clean and "305-571-2215" not in clean and "3553 NW 50th" not in clean
    # The invented phone and address go with their sentences; the rest of that paragraph stays.
    assert "786-555-0142" not in clean and "1200 Biscayne" not in clean
    assert "The Adult Rehabilitation Center asks for identification. Good luck!" in clean
    # The real ones stay, whatever their format.
    for kept in ("GIRL SCOUTS COUNCIL", "11347 S.W. 160th St.", "(305) 253-4841", "2236 NW Miami Court", "ext. 57471"):
        assert kept in clean, kept
    found = {(r["kind"], r["value"]) for r in removed}
    assert ("name", "MIAMI RESCUE MISSION, INC.") in found
    assert ("phone", "305-571-2215") in found and ("address", "3553 NW 50th Street") in found
    assert ("phone", "786-555-0142") in found and ("address", "1200 Biscayne Boulevard") in found
    assert all(r["sentence"] and r["value"] in r["sentence"] for r in removed)
    sentence = next(r["sentence"] for r in removed if r["value"] == "786-555-0142")
    assert sentence == "You can also call their hotline at 786-555-0142 any time."


def test_guard_removes_a_catalog_name_in_running_text_and_an_unknown_bold_name():
    selected = [real_record("136")]
    text = (
        "Try the Girl Scouts Council of Tropical Florida at 305-253-4841. "
        "Camillus Health Concern, Inc. also runs programs for girls. "
        "**Sunrise Youth Haven** is another option.\n"
        "**Hours:** Mon-Fri. **Not stated in the directory**: fees."
    )
    clean, removed = guard_reply(text, selected, catalog_names())
    assert clean == "Try the Girl Scouts Council of Tropical Florida at 305-253-4841.\n**Hours:** Mon-Fri. " + (
        "**Not stated in the directory**: fees."
    )
    assert {(r["kind"], r["value"]) for r in removed} == {
        ("name", "CAMILLUS HEALTH CONCERN, INC."),
        ("name", "Sunrise Youth Haven"),
    }


def test_guard_keeps_a_selected_name_that_contains_a_catalog_name():
    rec = real_record("237")  # "MIAMI RESCUE MISSION, INC." while "MIAMI" and the like are catalog names too
    clean, removed = guard_reply(f"Miami Rescue Mission, Inc. is at {rec.address}.", [rec], {"RESCUE MISSION", "MIAMI"})
    assert removed == [] and clean.startswith("Miami Rescue Mission")


# ------------------------------------------------------------------------------------------------ the model's reply


def test_generated_reply_is_guarded_and_sees_only_the_selected_records():
    recs = _recommend("136", "163")
    with FakeOpenAI(scripted(PLANTED)) as fake:
        text, removed = generated_reply(
            recs, "a program with no ID needed <please>", _llm(fake), catalog_names=catalog_names()
        )
    assert "MIAMI RESCUE MISSION" not in text and "786-555-0142" not in text and "GIRL SCOUTS COUNCIL" in text
    assert {r["kind"] for r in removed} == {"name", "phone", "address"}
    prompt = last_user(fake.requests[0])
    assert "<" not in prompt and "\\u003cplease>" in prompt
    data = json.loads(prompt.split("\n", 1)[1].rsplit("\n\nWrite the reply.", 1)[0])
    assert [s["name"] for s in data["services"]] == [r.record.name for r in recs]
    assert data["services"][0]["address"] == "11347 SW 160th Street, Miami, FL 33157"
    assert data["services"][1]["conditions"][0]["verdict"] == "no"
    assert "not instructions" in fake.requests[0]["messages"][0]["content"]


def test_generated_reply_falls_back_when_nothing_real_is_left():
    recs = _recommend("136")
    invented = "Go to **Sunrise Youth Haven** at 12 Ocean Drive, or call 786-555-0142."
    with FakeOpenAI(scripted(invented)) as fake:
        text, removed = generated_reply(recs, "girls club", _llm(fake), constraints_summary="girls club")
    assert text == templated_reply(recs, "girls club")
    assert removed[-1]["kind"] == "fallback" and "removed every" in removed[-1]["value"]
    assert {r["kind"] for r in removed[:-1]} == {"name", "address", "phone"}


def test_generated_reply_falls_back_on_model_failure_and_skips_the_model_when_nothing_is_selected():
    recs = _recommend("136")
    with FakeOpenAI(scripted(Reply(status=500, content="boom"))) as fake:
        text, removed = generated_reply(recs, "girls club", _llm(fake))
    assert text == templated_reply(recs, "girls club") and removed[0]["kind"] == "fallback"
    with FakeOpenAI(scripted()) as fake:
        text, removed = generated_reply([], "girls club", _llm(fake), constraints_summary="girls club in Miami")
    assert fake.requests == [] and text.startswith("I found no services in the directory matching girls club in Miami")


def test_records_stating_a_condition_come_first_and_the_others_are_said_not_to_state_it():
    veterans = Semantic("for veterans")
    stated = Recommendation(real_record("473"), [check_rules(real_record("473"), veterans)])  # "VETERANS"
    silent = Recommendation(real_record("136"), [check_rules(real_record("136"), veterans)])
    assert stated.evidence[0].passed is True and silent.evidence[0].passed is None
    text = templated_reply([silent, stated], "city: Miami; for veterans")
    first, rest = text.split("\n\nThese also meet the rest of your request", 1)
    assert first.startswith("Services in the directory matching city: Miami; for veterans:")
    assert stated.record.name in first and silent.record.name not in first
    assert rest.startswith(", but the directory does not state whether they meet 'for veterans':")
    assert f"2. {silent.record.name}" in rest and f"for veterans: {NOT_STATED}" in rest
    # None states it: said before anything is listed, never "matching".
    alone = templated_reply([silent], "city: Miami; for veterans")
    assert alone.startswith("No service in the directory states that it meets 'for veterans'.")
    assert "matching" not in alone.split("\n", 1)[0]
