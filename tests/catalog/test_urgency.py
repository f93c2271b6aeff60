"""Urgency first (issue 22, part 1): a request that signals danger or immediacy is never refused, gets the services
reachable now first with their phone numbers first, and the profile's emergency and crisis numbers at the top;
with no place, the crisis lines come before the question. On the real Miami and San Francisco 211 directories
(requests as people write them, the clock set to a Tuesday night) and on a tiny directory whose every record is
known. The signal words are the word list's (`[urgency]` of words/en.toml), the numbers the profile's."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.catalog import built
from tracerag.catalog.assistant import CatalogAssistant, Turn, _urgent_outcome
from tracerag.catalog.ingest import build_catalog
from tracerag.catalog.model import ConstraintKind, ServiceRecord
from tracerag.catalog.profile import CatalogProfile, PhoneNumber
from tracerag.catalog.urgency import Urgency, always_open_by, detect
from tracerag.catalog.words import WordList
from tracerag.config import load_settings
from tracerag.trail import read_trail
from tracerag.trail.events import CatalogOutcome

TUESDAY, NIGHT, MORNING = 1, 23 * 60, 10 * 60
REFUSALS = (CatalogOutcome.NO_MATCH, CatalogOutcome.NONE_FOUND)

# Written as people write them; every one was refused or got a 9-to-5 office before catalog/urgency.py.
MIAMI_URGENT = [
    "i want to kill myself. im in hialeah",
    "I'm scared my boyfriend will hurt me tonight, I live in Miami",
    "my friend was raped last night",
    "crisis line in Miami",
    "suicide hotline",
    "my son took too many pills and wont wake up, we are in homestead",
    "i have nowhere to sleep tonight, im in miami",
    "my husband beats me and i need to get out. miami",
    "having a panic attack and need someone to talk to right now in north miami",
    "i dont want to live anymore",
]
SF_URGENT = [
    "i want to end my life, i'm in san francisco",
    "my husband hits me, san francisco",
    "someone overdosed in san francisco",
    "suicide hotline san francisco",
    "my girlfriend was raped, where can she go in SF",
]
LOOK_ALIKES = [
    "pest control to kill bugs in miami",
    "animal shelter for my dog in hialeah",
    "suicide prevention volunteer opportunities in miami",
    "domestic violence awareness training",
    "food pantry in hialeah",
    "my back hurts, i need a doctor in miami",
    "lead poisoning test for my kid",
]


def _offered_first_is_reachable_crisis_help(assistant: CatalogAssistant, turn: Turn) -> str:
    """Why the first service the reply offers fails (reachable now, serving a kind of danger), "" when it holds."""
    if not turn.offered:
        return "nothing offered"
    record = turn.offered[0].record
    if assistant.crisis.reachable_record(record, NIGHT, TUESDAY) is None:
        return f"{record.id} {record.name} is not reachable now"
    if not any(record.id in serving for kind, serving in assistant.crisis.serving.items() if kind != "right now"):
        return f"{record.id} {record.name} serves no kind of danger"
    return ""


def _check_urgent(assistant: CatalogAssistant, turn: Turn) -> list[str]:
    problems = []
    if turn.urgency is None:
        problems.append("not taken for urgent")
    if turn.outcome in REFUSALS or "Nothing in this directory matches" in turn.reply:
        problems.append(f"refused ({turn.outcome})")
    if not (turn.reply.startswith("Call 911:") and "Call 988:" in turn.reply.split("\n\n")[0]):
        problems.append("the numbers are not at the top")
    if why := _offered_first_is_reachable_crisis_help(assistant, turn):
        problems.append(why)
    return problems


# ------------------------------------------------------------------------------------------------ the signal


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("i want to kill myself", "self-harm"),
        ("I dont want to live anymore", "self-harm"),
        ("my teenage son keeps saying he wants to die", "self-harm"),
        ("he is talking about hurting himself", "self-harm"),
        ("crisis line please", "crisis"),
        ("i cant take it anymore", "crisis"),
        ("my boyfriend will hurt me tonight", "violence"),
        ("im scared of my husband", "violence"),
        ("my dad beats me", "child abuse"),
        ("i was trafficked and need to get away", "trafficking"),
        ("my friend was raped", "sexual assault"),
        ("he OD'd on heroin", "overdose"),
        ("my brother took a whole bottle of pills and wont wake up", "overdose"),
        ("sleeping in my car with my kids", "nowhere to sleep"),
        ("i need food right now", "right now"),
    ],
)
def test_the_word_list_names_the_kind(text: str, kind: str):
    urgency = detect(text, WordList.load())
    assert urgency is not None and kind in [k.name for k in urgency.kinds], text
    assert urgency.said and all(s.casefold() in text.casefold() for s in urgency.said)


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_are_not_urgent(text: str):
    assert detect(text, WordList.load()) is None


def test_a_first_person_danger_is_urgent_whatever_else_is_said():
    """`unless` words cancel their own kind only: volunteering at a crisis line is no crisis, a volunteer who wants
    to die is."""
    words = WordList.load()
    assert detect("I volunteer at a crisis line in Miami", words) is None
    urgency = detect("I volunteer at church and I want to kill myself", words)
    assert urgency is not None and [k.name for k in urgency.kinds] == ["self-harm"]


# ------------------------------------------------------------------------------------------------ a tiny directory

ROWS = [
    ["1", "Lakeside Crisis Line", "Phone counselling for anyone in crisis.", "Lakeside", "555-0100", "",
     "Suicide Prevention Hotlines"],
    ["2", "Lakeside Counseling Center", "Counseling after a suicide attempt.", "Lakeside", "555-0101",
     "9:00am-5:00pm, Mon-Fri", "Suicide Counseling"],
    ["3", "Harbor Crisis Unit", "Walk-in psychiatric crisis care.", "Harbor", "555-0102", "24 hours daily",
     "In Person Crisis Intervention"],
    ["4", "Bug Busters", "We kill bugs, roaches and termites.", "Lakeside", "555-0103", "9:00am-5:00pm, Mon-Fri",
     "Pest Control"],
    ["5", "Paws Shelter", "A shelter for lost dogs and cats.", "Lakeside", "555-0104", "9:00am-5:00pm, Mon-Fri",
     "Animal Shelters"],
    ["6", "Lakeside Food Pantry", "Free groceries.", "Lakeside", "555-0105", "9:00am-5:00pm, Mon-Fri",
     "Emergency Food"],
]  # fmt: skip
MAPPING = {
    "id": "ID",
    "name": "Name",
    "description": "Description",
    "city": "City",
    "phones": "Phone",
    "hours_text": "Hours",
    "taxonomy": "Type",
    "taxonomy_names": "Type",
    "constants": {"state": "IL"},
}


def _tiny(tmp_path: Path, *, country: bool = True) -> Path:
    source = tmp_path / "services.csv"
    with source.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["ID", "Name", "Description", "City", "Phone", "Hours", "Type"])
        writer.writerows(ROWS)
    mapping = dict(MAPPING, constants={"state": "IL", **({"country": "United States"} if country else {})})
    target = tmp_path / ("tiny" if country else "tiny-nowhere")
    build_catalog(source, target, load_settings(), mapping=mapping)
    return target


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return _tiny(tmp_path)


def _assistant(catalog: Path, tmp_path: Path, minute: int = NIGHT) -> CatalogAssistant:
    return CatalogAssistant(catalog, load_settings(), today=TUESDAY, trail_dir=tmp_path, clock=lambda: minute)


def test_the_country_gives_the_profile_its_numbers(tiny: Path):
    profile = CatalogProfile.load(tiny)
    assert [(n.label, n.number) for n in profile.crisis_numbers] == [
        ("988 Suicide & Crisis Lifeline (call or text)", "988")
    ]
    assert [n.number for n in profile.emergency_numbers] == ["911"]


def test_at_night_the_line_comes_first_with_its_phone_under_the_numbers(tiny: Path, tmp_path: Path):
    with _assistant(tiny, tmp_path) as a:
        turn = a.ask("i want to kill myself, im in lakeside")
    assert turn.outcome == CatalogOutcome.ANSWER and turn.urgency is not None
    assert [r.record.name for r in turn.offered][:1] == ["Lakeside Crisis Line"]
    assert turn.reply.startswith("Call 911: Emergency (police, fire, ambulance).\nCall 988: 988 Suicide & Crisis")
    lines = turn.reply.splitlines()
    at = next(i for i, line in enumerate(lines) if "Lakeside Crisis Line" in line)
    assert lines[at + 1].strip() == "Phone: 555-0100"  # the number before anything else of the service
    assert "Harbor Crisis Unit" not in turn.reply  # a place to walk into, in another town
    assert "Bug Busters" not in turn.reply and "Paws Shelter" not in turn.reply


def test_by_day_the_office_open_now_comes_first(tiny: Path, tmp_path: Path):
    """Open now by its stated hours comes before a line whose hours are not stated; at night it is closed and
    left after the line (the test above)."""
    with _assistant(tiny, tmp_path, MORNING) as a:
        turn = a.ask("i want to kill myself, im in lakeside")
    assert [r.record.name for r in turn.offered][:2] == ["Lakeside Counseling Center", "Lakeside Crisis Line"]
    assert "Now: open now by its hours" in turn.reply


def test_without_a_place_the_crisis_lines_come_before_the_question_and_the_place_keeps_the_urgency(
    tiny: Path, tmp_path: Path
):
    with _assistant(tiny, tmp_path) as a:
        first = a.ask("i dont want to live anymore")
        second = a.ask("Lakeside")
        trail = read_trail(a.trail_path)
    assert first.outcome == CatalogOutcome.CLARIFY and not first.recommendations
    # with no place, what can be called now wherever it is: the 24-hour unit (stated), then the line
    assert [r.record.name for r in first.crisis_lines] == ["Harbor Crisis Unit", "Lakeside Crisis Line"]
    reply = first.reply
    assert reply.index("Call 988") < reply.index("Lakeside Crisis Line") < reply.index("Which city or postal code")
    assert reply.rstrip().endswith("Which city or postal code should I look in for crisis and suicide support?")
    assert second.outcome == CatalogOutcome.ANSWER and second.urgency is not None and second.urgency.carried
    parses = [e for e in trail if e.kind == "catalog_parse"]
    assert parses[0].urgency == {
        "kinds": ["self-harm"],
        "said": ["dont want to live"],
        "carried": False,
        "by_phone": False,
    }
    assert parses[1].urgency is not None and parses[1].urgency["carried"] is True
    filters = [e for e in trail if e.kind == "catalog_filter"]
    assert "a phone or text line" in filters[0].reachable["1"]


def test_look_alikes_get_the_usual_answer(tiny: Path, tmp_path: Path):
    with _assistant(tiny, tmp_path, MORNING) as a:
        pests = a.ask("pest control to kill bugs in lakeside")
        a.reset()
        dog = a.ask("shelter for my dog in lakeside")
    assert pests.urgency is None and "Call 911" not in pests.reply
    assert [r.record.name for r in pests.recommendations] == ["Bug Busters"]
    assert dog.urgency is None and "Call 988" not in dog.reply


def test_immediacy_alone_keeps_the_topic_and_adds_the_numbers(tiny: Path, tmp_path: Path):
    with _assistant(tiny, tmp_path, MORNING) as a:
        turn = a.ask("i need food right now in lakeside")
    assert turn.urgency is not None and not turn.urgency.danger
    assert [r.record.name for r in turn.offered] == ["Lakeside Food Pantry"] and turn.reply.startswith("Call 911")


def test_a_directory_without_numbers_invents_none(tmp_path: Path):
    catalog = _tiny(tmp_path, country=False)
    assert CatalogProfile.load(catalog).crisis_numbers == ()
    with _assistant(catalog, tmp_path) as a:
        turn = a.ask("i want to kill myself, im in lakeside")
    assert "911" not in turn.reply and "988" not in turn.reply
    assert turn.outcome == CatalogOutcome.ANSWER and turn.offered[0].record.name == "Lakeside Crisis Line"


def test_numbers_edited_in_the_profile_are_the_ones_given(tiny: Path, tmp_path: Path):
    path = tiny / "profile.toml"
    text = path.read_text(encoding="utf-8").replace(
        '{ label = "988 Suicide & Crisis Lifeline (call or text)", number = "988" }',
        '{ label = "Lakeside Warmline", number = "555-0199" }',
    )
    path.write_text(text, encoding="utf-8")
    with _assistant(tiny, tmp_path) as a:
        turn = a.ask("my friend was raped last night")
    assert "Call 555-0199: Lakeside Warmline." in turn.reply and "988" not in turn.reply


# ------------------------------------------------------------------------------------------------ real directories


@pytest.fixture(scope="module")
def sf211(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built.sf211(tmp_path_factory)  # built once per run; this module's own copy


def _run(catalog: Path, tmp_path: Path, requests: list[str]) -> dict[str, list[str]]:
    # No time is asserted (a shared machine makes a timed test flaky): an urgent turn took 3 to 6 ms on Miami,
    # measured by `tracerag catalog eval --requests benchmarks/catalog_people/miami.jsonl` (latency per category).
    problems: dict[str, list[str]] = {}
    with _assistant(catalog, tmp_path) as a:
        for text in requests:
            a.reset()
            if found := _check_urgent(a, a.ask(text)):
                problems[text] = found
    return problems


def test_urgent_requests_on_miami_get_reachable_crisis_help_first_and_the_numbers(catalog: Path, tmp_path: Path):
    assert _run(catalog, tmp_path, MIAMI_URGENT) == {}


def test_urgent_requests_on_the_sf_211_export_get_reachable_crisis_help_first(sf211: Path, tmp_path: Path):
    assert _run(sf211, tmp_path, SF_URGENT) == {}


def test_look_alikes_on_miami_are_not_urgent(catalog: Path, tmp_path: Path):
    with _assistant(catalog, tmp_path) as a:
        for text in LOOK_ALIKES:
            a.reset()
            turn = a.ask(text)
            assert turn.urgency is None and "Call 988" not in turn.reply, text


def test_a_suicidal_request_in_hialeah_gets_the_24_hour_helpline_not_an_office(catalog: Path, tmp_path: Path):
    """Before: "Nothing in this directory matches 'kill myself' in Hialeah"."""
    with _assistant(catalog, tmp_path) as a:
        turn = a.ask("i want to kill myself. im in hialeah")
    assert turn.offered[0].record.name == "24 HOUR 358-HELPLINE"
    assert {r.record.city for r in turn.recommendations} == {"Hialeah"}  # the place's own, every one in it


# ------------------------------------------------------------------------------------------------ people's eval cases

WEDNESDAY, EVENING = 2, 20 * 60  # when the people-written eval asks


@pytest.mark.parametrize(
    ("text", "kind", "not_kind"),
    [
        ("my 15 yo son ran away last night and wont pick up his phone", "runaway youth", "child abuse"),
        ("im 16 and my mom kicked me out. where can i sleep tonight", "runaway youth", "violence"),
        ("i cant stop crying and i feel like im going to hurt my baby", "child abuse", "runaway youth"),
    ],
)
def test_a_young_person_away_from_home_is_its_own_kind(text: str, kind: str, not_kind: str):
    kinds = [k.name for k in (detect(text, WordList.load()) or Urgency((), ())).kinds]
    assert kind in kinds and not_kind not in kinds, kinds


def test_a_pet_that_ran_away_is_no_runaway_youth():
    urgency = detect("my dog ran away, is there a lost pet service", WordList.load())
    assert urgency is None or "runaway youth" not in [k.name for k in urgency.kinds]


def test_asking_for_someone_to_talk_to_asks_for_a_voice():
    words = WordList.load()
    talk = detect("6 months sober and i really want to use tonight. need someone to talk to", words)
    assert talk is not None and talk.by_phone and talk.to_dict()["by_phone"] is True
    bed = detect("i have nowhere to sleep tonight", words)
    assert bed is not None and not bed.by_phone


def test_a_24_hour_voice_mail_is_not_open_24_hours():
    words = WordList.load()
    assert (
        always_open_by(ServiceRecord(id="1", service_id="1", name="A", hours_text="24-hour voice mail"), words) is None
    )
    assert (
        always_open_by(ServiceRecord(id="2", service_id="2", name="B", hours_text="24 hours daily (Crisis)"), words)
        == "hours"
    )


def test_a_parent_with_children_does_not_claim_a_children_only_group():
    minors = next(g for g in WordList.load().facts.restrictions if g.group == "minors")
    assert minors.named_by("my son is 15")
    assert not minors.named_by("for families with children")
    assert not minors.named_by("me and my 2 kids need a bed")


def _evening(catalog: Path, tmp_path: Path) -> CatalogAssistant:
    return CatalogAssistant(
        catalog, load_settings(), trail_dir=tmp_path / "trails", today=WEDNESDAY, clock=lambda: EVENING
    )


@pytest.mark.parametrize(
    "text",
    [
        "my 15 yo son ran away last night and wont pick up his phone. we live in SF",
        "im 16 and my mom kicked me out. where can i sleep tonight in san francisco",
    ],
)
def test_a_runaway_teenager_gets_a_youth_service_open_now_first(sf211: Path, tmp_path: Path, text: str):
    """Before: a child-abuse prevention centre (a parents' stress line) came first."""
    with _evening(sf211, tmp_path) as a:
        turn = a.ask(text)
        first = turn.offered[0].record
        assert first.id in a.crisis.serving["runaway youth"], first.name
        assert a.crisis.reachable_record(first, EVENING, WEDNESDAY) is not None, first.name


def test_someone_to_talk_to_gets_a_line_before_a_place_open_all_night(sf211: Path, tmp_path: Path):
    """Before: a residential programme open 24 hours (for the word "sober") came before the crisis lines."""
    with _evening(sf211, tmp_path) as a:
        turn = a.ask("6 months sober and i really want to use tonight. need someone to talk to")
        first = turn.offered[0].record
        assert first.id in a.crisis.lines and a.crisis.reachable_record(first, EVENING, WEDNESDAY), first.name


def test_a_parent_afraid_to_hurt_the_baby_gets_a_line_open_now_not_a_voice_mail(sf211: Path, tmp_path: Path):
    with _evening(sf211, tmp_path) as a:
        turn = a.ask("i cant stop crying and i feel like im going to hurt my baby")
        first = turn.offered[0].record
        assert "voice mail" not in first.hours_text.casefold()
        assert a.crisis.reachable_record(first, EVENING, WEDNESDAY) is not None, first.name


def test_a_family_without_a_bed_gets_no_children_only_shelter_first(catalog: Path, tmp_path: Path):
    """Before: a youth shelter for ages 6-17 came first for a parent with two children."""
    with _evening(catalog, tmp_path) as a:
        turn = a.ask("nowhere to sleep tonight, me and my 2 kids, were in downtown miami")
        groups = [[r.group for r in a.rules.unclaimed(rec.record, a.state)] for rec in turn.offered]
    assert groups and groups[0] == [], groups
    restricted = [bool(g) for g in groups]
    assert restricted == sorted(restricted), groups  # any restricted to a group not claimed come last


def test_a_bed_tonight_with_nothing_open_in_the_place_gets_the_nearest_open_now(sf211: Path, tmp_path: Path):
    """Before: the place's 8-to-6 family shelter came first at 20:00; an all-night shelter 1 km away was left
    out for being in the next postal code."""
    with _evening(sf211, tmp_path) as a:
        turn = a.ask("i have nowhere to sleep tonight, im in 94102")
        first = turn.offered[0].record
        assert a.crisis.reachable_record(first, EVENING, WEDNESDAY) is not None, first.name
        assert first.zip != "94102" and "km from 94102, the nearest open now" in turn.reply
        # the place's own services are still there, after it
        assert any(r.record.zip == "94102" for r in turn.recommendations[1:])


def test_somewhere_to_sleep_tonight_is_a_bed_tonight_not_a_time_filter(catalog: Path, tmp_path: Path) -> None:
    # Found after the merges: "tonight" was read as an opening-time constraint on the topic "sleep", and the only
    # records open at 19:00 were an Alzheimer's helpline. Read as the need for a bed tonight, the shelters come:
    # Camillus House and the Chapman Partnership's homeless assistance centre (records read by hand).
    with _assistant(catalog, tmp_path) as a:
        turn = a.ask("somewhere to sleep tonight in Miami")
    assert turn.urgency is not None and "nowhere to sleep" in [k.name for k in turn.urgency.kinds]
    names = " ".join(r.record.name + " " + r.record.organization for r in turn.offered).upper()
    assert "CAMILLUS" in names and "CHAPMAN" in names and "ALZHEIMER" not in names


def test_a_death_threat_is_urgent(catalog: Path, tmp_path: Path) -> None:
    # Found by a trial with requests nobody on the project had written: no 911 at all before.
    with _assistant(catalog, tmp_path) as a:
        turn = a.ask("someone is threatening to kill me and he knows where i live. miami")
    assert turn.urgency is not None and turn.urgency.danger
    assert turn.reply.startswith("Call 911")


def test_the_words_that_signal_the_danger_are_no_filter_of_the_reply(catalog: Path, tmp_path: Path) -> None:
    # Found by a new user: "husband hits" and "safe" were left over as the topic and shown as a filter the person
    # set ("service_type: husband hits safe"). The label says the need; the service types still choose the services.
    with _assistant(catalog, tmp_path) as a:
        turn = a.ask("my husband hits me, i need somewhere safe tonight in Homestead")
        a.reset()
        lawyer = a.ask("my husband hits me, i need a lawyer in Homestead")
    assert turn.urgency is not None and turn.urgency.danger
    flat = " ".join(turn.reply.split())
    assert "matching safety from violence or abuse; city: Homestead:" in flat, flat
    assert "service_type" not in flat and "husband hits" not in flat
    assert turn.constraints.of(ConstraintKind.SERVICE_TYPE) is not None  # the services are still the kind's
    assert "service_type: husband hits lawyer" in " ".join(lawyer.reply.split())  # a need said beside it is shown


_NUMBERS = CatalogProfile(emergency_numbers=(PhoneNumber(label="Emergency", number="911"),))


@pytest.mark.parametrize(
    ("usual", "place", "found", "profile", "outcome"),
    [
        (None, False, True, _NUMBERS, CatalogOutcome.CLARIFY),  # "i want to kill myself": lines, then where
        (None, True, True, _NUMBERS, CatalogOutcome.ANSWER),
        (None, True, False, _NUMBERS, CatalogOutcome.ANSWER),  # nothing found: the numbers still answer
        (None, True, False, CatalogProfile(), CatalogOutcome.NONE_FOUND),  # and without numbers, nothing
        (CatalogOutcome.NONE_FOUND, True, False, _NUMBERS, CatalogOutcome.NONE_FOUND),  # "tonight" alone: as usual
        (CatalogOutcome.NONE_FOUND, True, True, _NUMBERS, CatalogOutcome.ANSWER),
        (CatalogOutcome.CLARIFY, False, True, _NUMBERS, CatalogOutcome.CLARIFY),
    ],
)
def test_urgent_outcome(
    usual: CatalogOutcome | None, place: bool, found: bool, profile: CatalogProfile, outcome: CatalogOutcome
) -> None:
    """An urgent turn is never a refusal while there is anything to say; immediacy alone keeps the usual no."""
    turn = Turn("a bed tonight", usual, "") if usual is not None else None
    assert _urgent_outcome(turn, place, found, profile) == outcome
