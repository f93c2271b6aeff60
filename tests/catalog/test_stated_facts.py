"""Stated facts are constraints (issue 22, part 4) and restricted records come after open ones (part 5).

Small records reproduce each failure observed on a 211 export; people-written requests over the real Miami and
San Francisco 211 directories check, against records read by hand, that no recommendation contradicts a fact
the person stated.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.catalog import built
from tests.catalog.test_parse import MIAMI_PROFILE, WORDS
from tracerag.catalog.assistant import CatalogAssistant
from tracerag.catalog.condition_rules import RuleChecker
from tracerag.catalog.gazetteer import GazetteerIndex
from tracerag.catalog.model import Constraints, Gazetteer, Semantic, ServiceRecord
from tracerag.catalog.parse import parse_request
from tracerag.catalog.restrictions import RestrictionFinder, restriction_span
from tracerag.config import load_settings

RULES = RuleChecker(WORDS, MIAMI_PROFILE)
INDEX = GazetteerIndex.build(Gazetteer(cities={"lakeside": "Lakeside"}), WORDS, MIAMI_PROFILE)


def record(name: str, description: str = "", *, eligibility: str = "", fees: str = "", rid: str = "r") -> ServiceRecord:
    return ServiceRecord(id=rid, service_id=rid, name=name, description=description, eligibility=eligibility, fees=fees)


def conditions(request: str) -> list[str]:
    return [s.text for s in parse_request(request, INDEX).semantic]


def verdict(rec: ServiceRecord, condition: str) -> bool | None:
    ev = RULES.check(rec, Semantic(condition))
    if ev.span is not None:
        assert rec.text()[ev.span[0] : ev.span[1]] == ev.quote
    return ev.passed


# ------------------------------------------------------------------------------------- what people state


@pytest.mark.parametrize(
    ("request_text", "expected"),
    [
        ("I'm a 25 year old man and homeless", {"for people aged 25", "for men", "for people who are homeless"}),
        ("im 17 and need a place to stay in Lakeside", {"for people aged 17"}),
        ("I am 17yo", {"for people aged 17"}),
        ("shelter for me and my 2 kids", {"for families with children"}),
        ("single dad needs food", {"for men", "for families with children"}),
        ("my 4 year old needs a dentist", {"for people aged 4"}),
        ("food for people over 60", {"for people aged 60 or older"}),
        ("i'm a woman looking for rehab", {"for women"}),
        ("im pregnant and need a doctor", {"for women"}),
        ("dentist, i dont have insurance", {"for people without insurance"}),
        ("i have medicaid, need a clinic", {"accepts Medicaid"}),
        ("clinic, i cant pay anything", {"free of charge"}),
        ("i'm disabled and need housing", {"for people with disabilities"}),
        ("my son is 15 and using drugs, is there treatment", {"for people aged 15"}),  # the person it is for
        ("my daughter is 15, what programs are there for her", {"for people aged 15"}),
        ("my son is 8, after school in Lakeside", {"for people aged 8"}),
        ("i have 2 kids with me", {"for families with children"}),
    ],
)
def test_facts_a_person_states_are_read_as_conditions(request_text: str, expected: set[str]) -> None:
    assert expected <= set(conditions(request_text))


def test_words_that_are_not_facts_stay_out() -> None:
    assert "free of charge" not in conditions("i cant pay my rent in Lakeside")  # rent help, not a free service
    assert not {"for men", "for women"} & set(conditions("i'm looking for a man to fix my roof"))
    assert not [c for c in conditions("im 5 minutes away from Lakeside") if "aged" in c]
    c = parse_request("single dad looking for food in Lakeside", INDEX)
    assert "dad" not in c.topic and "single" not in c.topic  # the fact's words are not the topic


# ---------------------------------------------------------------------------- the failures observed on an export

WOMEN_SHELTER = record(
    "HOPE HOUSE", "Emergency shelter for single women. Ages 18 and older.", eligibility="Women 18 and older"
)
ADULT_MEN_SHELTER = record("CITY MISSION", "Overnight shelter for homeless men.", eligibility="Men 18 and older")
YOUTH_SHELTER = record(
    "YOUTH HAVEN", "Provides shelter for runaway and homeless children and youth (age 11-17), and their families."
)
NO_CHILDREN = record(
    "HARBOR LIGHT",
    "Transitional housing.",
    eligibility="Adults 21 or older with a disability. No provision for children.",
)


def test_a_man_is_left_out_of_a_women_only_shelter_with_the_restriction_as_reason() -> None:
    assert verdict(WOMEN_SHELTER, "for people aged 25") is True  # the age is right ...
    ev = RULES.check(WOMEN_SHELTER, Semantic("for men"))  # ... the gender is not
    assert ev.passed is False and "women" in ev.reason and "single women" in ev.quote
    assert verdict(ADULT_MEN_SHELTER, "for men") is True
    assert verdict(WOMEN_SHELTER, "for women") is True


def test_a_17_year_old_is_left_out_of_adult_shelters_and_offered_the_youth_shelter() -> None:
    assert verdict(ADULT_MEN_SHELTER, "for people aged 17") is False
    assert verdict(NO_CHILDREN, "for people aged 17") is False
    assert verdict(YOUTH_SHELTER, "for people aged 17") is True
    assert verdict(YOUTH_SHELTER, "for people aged 25") is False  # "age 11-17" leaves a 25-year-old out


def test_no_provision_for_children_is_not_evidence_for_children() -> None:
    ev = RULES.check(NO_CHILDREN, Semantic("for children and youth"))
    assert ev.passed is False, ev  # was "yes", quoting "21 or older ... No provision for children"
    assert verdict(NO_CHILDREN, "for families with children") is False


def test_a_flat_fee_is_not_free() -> None:
    flat = record("LEGAL CLINIC", "Legal advice for tenants.", fees="Flat fee; free initial consultation.")
    assert verdict(flat, "free of charge") is not True  # was "yes", quoting "Flat fee"
    assert verdict(record("X", "Mediation.", fees="$25"), "free of charge") is False
    assert verdict(record("X", "Mediation.", fees="Flat fee."), "free of charge") is False
    assert verdict(record("X", "Dental care, free transportation provided."), "free of charge") is None
    assert verdict(record("X", "Helps you stay free of health problems."), "free of charge") is None
    assert verdict(record("X", "All services are free of charge."), "free of charge") is True


def test_school_seniors_are_not_older_adults() -> None:
    scholarship = record(
        "SENIOR SCHOLARSHIP FUND", "Awards college scholarships to graduating high school seniors.", rid="s"
    )
    assert verdict(scholarship, "for seniors") is not True
    assert verdict(record("X", "Tutoring at Hialeah Senior High."), "for seniors") is not True
    assert verdict(record("X", "Hot lunches for seniors aged 60 and over."), "for seniors") is True
    found = restriction_span(scholarship, WORDS)
    assert found is not None and found.group == "high-school students"


def test_evidence_that_is_only_the_name_is_not_stated() -> None:
    named = record("SENIOR MEALS PROGRAM", "Hot lunches are served daily at the church hall.")
    ev = RULES.check(named, Semantic("for seniors"))
    assert ev.passed is None and "name" in ev.reason
    coalition = record("HOMELESS COALITION", "Advocacy and policy work.")
    assert verdict(coalition, "for people who are homeless") is None
    generic = record("PIANO LESSONS", "Weekly classes.")
    assert RULES.check(generic, Semantic("piano lessons")).passed is None  # the generic check: name only
    # A name that states whom the service is for, with nothing in its text opening it to others, says it.
    residence = record("GUM MOON WOMEN'S RESIDENCE", "Temporary residence in a safe home.")
    ev = RULES.check(residence, Semantic("for women"))
    assert ev.passed is True and "name" in ev.reason


# ------------------------------------------------------------------------------------ restrictions (part 5)

FIRE = record("DISASTER SERVICES", "Provides food, clothing and shelter to victims of house fires.", rid="fire")
HIV_FOOD = record("FOOD PROGRAM", "Home-delivered groceries for people living with HIV/AIDS in the county.", rid="hiv")
OPEN_PANTRY = record("COMMUNITY PANTRY", "Free groceries for anyone in need, once a month.", rid="open")


def test_the_restriction_span_is_the_records_own_words() -> None:
    fire = restriction_span(FIRE, WORDS)
    assert fire is not None and fire.group == "people affected by a fire or disaster"
    assert fire.said == "victims of house fires" and fire.quote in FIRE.text()
    hiv = restriction_span(HIV_FOOD, WORDS)
    assert hiv is not None and "HIV" in hiv.said
    assert restriction_span(OPEN_PANTRY, WORDS) is None
    both = record("X", "Support groups for men and women living with HIV and those at risk of infection.")
    assert restriction_span(both, WORDS) is None  # "at risk of" opens it to others


def test_a_restriction_the_request_does_not_claim_ranks_after_and_one_it_claims_does_not() -> None:
    plain = Constraints(topic="food")
    assert [r.group for r in RULES.unclaimed(FIRE, plain)] == ["people affected by a fire or disaster"]
    assert RULES.unclaimed(OPEN_PANTRY, plain) == []
    assert RULES.unclaimed(HIV_FOOD, Constraints(topic="food for people with hiv")) == []
    assert RULES.unclaimed(FIRE, Constraints(topic="help after a house fire")) == []
    seniors_only = record("X", "Congregate meals for residents over the age of 60.")
    assert [r.group for r in RULES.unclaimed(seniors_only, plain)] == ["seniors"]
    assert RULES.unclaimed(seniors_only, Constraints(topic="meals", semantic=[Semantic("for people aged 70")])) == []


def test_narrow_groups_are_found_from_the_records_own_words() -> None:
    court = record("X", "Provides residential treatment. Treatment for individuals as an alternative to incarceration.")
    immigrant = record("X", "Advocacy network for the rights of unaccompanied immigrant children in South Florida.")
    disabled = record("X", "Provides home delivered meals to low-income, home-bound persons with disabilities.")
    drop_in = record("X", "Project L is a youth drop-in center.", eligibility="Runaway, homeless and street youth")
    named = [("court", court), ("immigrant", immigrant), ("disabled", disabled), ("drop_in", drop_in)]
    found = {name: restriction_span(rec, WORDS) for name, rec in named}
    assert {name: r.group if r else None for name, r in found.items()} == {
        "court": "people sent by a court",
        "immigrant": "immigrants",
        "disabled": "people with disabilities",
        "drop_in": "youth on their own",
    }
    # Lists of groups and statements of access are no restriction.
    assert restriction_span(record("X", "Services for seniors and persons with disabilities."), WORDS) is None
    assert restriction_span(record("X", "The office is accessible to persons with disabilities."), WORDS) is None
    lawyers = record("X", "Free legal advice. Special projects to help the homeless, children, and people with AIDS.")
    assert restriction_span(lawyers, WORDS) is None
    kidcare = record("X", "Lawfully residing immigrant children are eligible for KidCare.")
    assert restriction_span(kidcare, WORDS) is None
    # Claimed by what the request says.
    assert RULES.unclaimed(immigrant, Constraints(topic="immigration lawyer")) == []
    assert RULES.unclaimed(court, Constraints(topic="court ordered rehab")) == []
    assert [r.group for r in RULES.unclaimed(court, Constraints(topic="rehab"))] == ["people sent by a court"]
    # A parent with children is not served by a drop-in for youth on their own; a 17-year-old is.
    assert verdict(drop_in, "for families with children") is False
    assert RULES.unclaimed(drop_in, Constraints(topic="shelter", semantic=[Semantic("for people aged 17")])) == []


def test_women_and_men_rank_after_but_narrow_groups_are_left_out() -> None:
    plain = Constraints(topic="shelter")
    women = record("X", "Emergency shelter for single women.")
    assert [(r.group, r.leave_out) for r in RULES.unclaimed(women, plain)] == [("women", False)]
    assert all(r.leave_out for r in RULES.unclaimed(FIRE, Constraints(topic="food")))
    by_ages_only = record("X", "Enrichment programme.", eligibility="ages 6 to 13")
    by_ages = RULES.unclaimed(by_ages_only, Constraints(topic="music"))
    assert [(r.group, r.leave_out) for r in by_ages] == [("minors", False)]
    assert RULES.unclaimed(by_ages_only, Constraints(topic="after school")) == []  # after school claims children


def test_an_age_range_written_in_the_record_decides_a_stated_age() -> None:
    adults = record("X", "Alcohol and drug treatment for anyone 18 years or older.")
    assert verdict(adults, "for people aged 15") is False
    young = record("X", "Arts programme.", eligibility="ages 0 to 5; ages 6 to 13")
    assert verdict(young, "for people aged 15") is False
    assert verdict(young, "for people aged 8") is True
    teens = record("X", "Teen programme.", eligibility="ages 14 to 17")
    assert verdict(teens, "for people aged 8") is False
    under = record("X", "Free legal services to children age 17 or under.")
    assert verdict(under, "for people aged 14") is True


def test_time_sober_is_checked_against_the_minimum_a_record_asks() -> None:
    assert "sober for 60 days" in conditions("couples counseling. she stopped drinking 2 months ago")
    assert "sober for 240 days" in conditions("counseling, i've been sober 8 months")
    asks = record("X", "Counseling for couples. Those addicted to alcohol must have at least 6 months of sobriety.")
    assert verdict(asks, "sober for 60 days") is False
    assert verdict(asks, "sober for 240 days") is True
    assert verdict(record("X", "Counseling for couples."), "sober for 60 days") is None


def test_restriction_groups_are_data() -> None:
    finder = RestrictionFinder(WORDS)
    assert {g.group for g in finder.facts.restrictions} >= {"women", "men", "veterans", "members"}
    assert all(g.only.pattern for g in finder.facts.restrictions)


# --------------------------------------------------------------------- people-written requests, real data

# Each request with the records that must not be offered: read by hand, each contradicts a fact the request
# states (the record's own words in the comment). Measured with the code before this change: 7 of these were
# recommended (see /work/helpers/readme-facts.md).
MIAMI_REQUESTS: dict[str, set[str]] = {
    "I'm a 25 year old man and homeless, need a shelter in Miami": {
        "3119",  # "support services for women, youth and children"
        "152",  # "emergency housing for women and children"
        "1600",  # "home for women in distress"
    },
    "im 17 and homeless, need a shelter in miami": set(),
    "single mom with 2 kids need food in hialeah": set(),
    "i'm 70 years old and need help with meals in Miami": set(),
    "no insurance, need a dentist in miami": {"8006", "8009"},  # "must provide ... insurance cards"
    "me and my kids need a homeless shelter in Miami": set(),
    "I'm a woman, 30, looking for substance abuse rehab in miami": {"1392"},  # "programs for 100 adult men"
    "i'm a man and need a drug rehab in miami": {"531", "103", "5691"},  # adolescent males; women only
    "im pregnant and need a doctor in miami, no insurance": set(),
    "free clinic in Miami, i cant pay anything": set(),
    "im 19 need help finding a job in miami": set(),
    "services for seniors in Miami": {"8821"},  # a senior high school
}
SF_REQUESTS: dict[str, set[str]] = {
    "I'm a 25 year old guy, homeless, need a shelter in san francisco": {"10597179", "10597108"},  # women's
    "im 16 and need counseling in San Francisco": {"10605268"},  # "(age 18 and over)"
    "I'm a man, need alcohol treatment in San Francisco": {"10605215"},  # "for women"
    "Im 30 and need a job in san francisco": {"12530830"},  # "must be between age 16-24"
    "single dad looking for food in San Francisco": set(),
    "flu shot in san francisco, i cant pay": {"10600072", "10600078"},  # "cost $10", "costs $30"
    "i'm 68, need meals in san francisco": set(),
    "I'm a woman and need a shelter in San Francisco": set(),
    "my son is 15 and using drugs, san francisco": {"10605268"},  # "(age 18 and over)"
    "im 15 and need help, san francisco": {"10595217", "10600420", "10602793", "10596824", "10597257"},
    "I'm 40 and have HIV, need food in San Francisco": set(),
    "I'm a 25 year old man and need a shelter in San Francisco": {"10597179", "10597108"},
    # "must have at least 6 months of sobriety"
    "me and my wife want couples counseling in san francisco. she stopped drinking 2 months ago": {"10605268"},
}


@pytest.fixture(scope="module")
def sf211(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built.sf211(tmp_path_factory)  # built once per run; this module's own copy


def _contradicted(catalog: Path, requests: dict[str, set[str]], tmp_path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    with CatalogAssistant(catalog, load_settings(), today=5, trail_dir=tmp_path) as assistant:
        for request, forbidden in requests.items():
            assistant.reset()
            turn = assistant.ask(request)
            assert turn.constraints.semantic, f"{request!r}: no stated fact read"
            offered = {r.record.id for r in turn.recommendations}
            if offered & forbidden:
                out[request] = sorted(offered & forbidden)
            for rec in turn.recommendations:  # a "yes" quotes the record's own words, never only its name
                for ev in rec.evidence:
                    if ev.passed is True and ev.span is not None and "name" not in ev.reason:
                        assert ev.span[0] >= len(rec.record.name), (request, rec.record.id, ev)
    return out


def test_no_recommendation_contradicts_a_stated_fact_in_miami(catalog: Path, tmp_path: Path) -> None:
    assert _contradicted(catalog, MIAMI_REQUESTS, tmp_path) == {}


def test_no_recommendation_contradicts_a_stated_fact_in_sf211(sf211: Path, tmp_path: Path) -> None:
    assert _contradicted(sf211, SF_REQUESTS, tmp_path) == {}


# Plain requests and a record restricted to a group they do not claim (read by hand; the people-written eval's
# `forbidden`): left out, since records open to all match.
MIAMI_UNCLAIMED: dict[str, set[str]] = {
    "i want to stop drinking. anything in miami?": {"1393"},  # "as an alternative to incarceration"
    "homless shelter in homstead": {"925"},  # "for youth ages 10-17"
    "free lawyer for a problem with my landlord, miami": {"2107"},  # "unaccompanied immigrant children"
    "is there someone who delivers meals to your home in miami": {"6782"},  # "home-bound persons with disabilities"
    "shelter for women in key west": {"2524"},  # "a youth drop-in center"
}


def test_records_for_a_group_the_request_does_not_claim_are_left_out_in_miami(catalog: Path, tmp_path: Path) -> None:
    with CatalogAssistant(catalog, load_settings(), today=5, trail_dir=tmp_path) as assistant:
        for request, forbidden in MIAMI_UNCLAIMED.items():
            assistant.reset()
            turn = assistant.ask(request)
            offered = {r.record.id for r in turn.recommendations}
            assert turn.recommendations and not offered & forbidden, (request, sorted(offered))
        assistant.reset()
        turn = assistant.ask("shelter for men in miami")  # a women's shelter contradicts it: never offered
        assert turn.recommendations


def test_a_contradicted_record_is_left_out_with_the_reason_in_the_trail(catalog: Path, tmp_path: Path) -> None:
    with CatalogAssistant(catalog, load_settings(), today=5, trail_dir=tmp_path) as assistant:
        assistant.ask("I'm a 25 year old man and homeless, need a shelter in Miami")
        trail = assistant.trail_path.read_text(encoding="utf-8")
    assert '"record_id":"3119"' in trail.replace(" ", "")
    assert "the text restricts it to women" in trail
