"""A recommendation as a card: each structural constraint holds by the record's own value (a postal code by its
head, a day and a time by one opening), a condition by its quoted span or not at all, a constraint that does not
hold is shown as not holding; on the real Miami 211 catalog, every card of the assistant's answers agrees with
`filters.satisfies`."""

from __future__ import annotations

from pathlib import Path

from tracerag.catalog import filters
from tracerag.catalog.assistant import CatalogAssistant
from tracerag.catalog.cards import CONDITION, card_of
from tracerag.catalog.evidence import Evidence
from tracerag.catalog.model import ConstraintKind, Constraints, Opening, Semantic, ServiceRecord, Structural
from tracerag.catalog.reply import NOT_STATED, Recommendation
from tracerag.catalog.words import WordList
from tracerag.config import load_settings

WORDS = WordList.load("en")
MONDAY, SATURDAY = 0, 5


def record() -> ServiceRecord:
    return ServiceRecord(
        id="r1",
        service_id="s1",
        name=" Lakeside Pantry ",
        organization="Friends of Lakeside",
        description="Groceries for seniors every week. Bring a photo ID.",
        address="1 Main Street",
        city="Lakeside",
        state="ST",
        zip="12345-6789",
        phones=["555-0100", " "],
        languages=["Spanish", "English"],
        taxonomy=[("BD-1800.2000", "Food Pantries"), ("LH-5000", "Transport")],
        openings=[Opening(MONDAY, 9 * 60, 12 * 60), Opening(MONDAY, 14 * 60, 17 * 60), Opening(SATURDAY, 600, 720)],
    )


def test_each_structural_constraint_holds_by_the_records_own_value():
    constraints = Constraints(
        structural=[
            Structural(ConstraintKind.CITY, ("Lakeside",), "lakesde"),
            Structural(ConstraintKind.ZIP, ("12345",), "12345"),
            Structural(ConstraintKind.WEEKDAY, (str(MONDAY),), "Monday"),
            Structural(ConstraintKind.TIME, (str(15 * 60),), "3pm"),
            Structural(ConstraintKind.LANGUAGE, ("Spanish",), "in Spanish"),
            Structural(ConstraintKind.SERVICE_TYPE, ("BD-1800",), "food pantry"),
        ]
    )
    r = record()
    assert filters.satisfies(r, constraints.structural)
    card = card_of(Recommendation(r), constraints, WORDS)
    assert (card.name, card.address, card.phones) == (
        "Lakeside Pantry",
        "1 Main Street, Lakeside, ST 12345-6789",
        ("555-0100",),
    )
    why = {x.kind: x for x in card.reasons}
    assert all(x.holds for x in card.reasons) and [x.kind for x in card.reasons] == [
        str(s.kind) for s in constraints.structural
    ]
    assert (why["city"].label, why["city"].field, why["city"].quote) == ("lakesde", "city", "Lakeside")
    assert why["zip"].quote == "12345-6789"  # the record's code, met by its head
    assert why["language"].quote == "Spanish"
    assert why["service_type"].quote == "Food Pantries (BD-1800.2000)"  # the term under the one asked, not Transport
    # Monday at 3pm: the afternoon opening only, which meets both together
    assert why["weekday"].quote == why["time"].quote == "Mon 14:00\u201317:00"


def test_a_constraint_the_record_does_not_meet_is_shown_not_holding():
    constraints = Constraints(
        structural=[
            Structural(ConstraintKind.CITY, ("Hillcrest",), "Hillcrest"),
            Structural(ConstraintKind.WEEKDAY, ("6",), "Sunday"),
            Structural(ConstraintKind.WEEKDAY, ("x",), "someday"),
        ]
    )
    card = card_of(Recommendation(record()), constraints, WORDS)
    assert [(x.holds, x.quote) for x in card.reasons] == [(False, ""), (False, ""), (False, "")]


def test_a_condition_holds_by_its_span_or_is_not_stated():
    r = record()
    text = r.text()
    at = text.index("Groceries for seniors every week.")
    seniors = Semantic("for seniors")
    met = Evidence(True, "states it", (at, at + 33), text[at : at + 33], semantic=seniors)
    unknown = Evidence(None, "no sentence about it", semantic=Semantic("free"))
    card = card_of(Recommendation(r, [met, unknown]), Constraints(), WORDS)
    first, second = card.reasons
    assert (first.kind, first.label, first.holds, first.field) == (CONDITION, "for seniors", True, "text")
    assert (
        first.span is not None
        and text[first.span[0] : first.span[1]] == first.quote == "Groceries for seniors every week."
    )
    assert (second.holds, second.quote, second.reason) == (None, "", NOT_STATED)
    assert card.open_conditions == ["free"]


def test_every_card_of_the_real_catalog_agrees_with_the_filter(catalog: Path, tmp_path: Path):
    requests = [
        "food pantry in Hialeah open on Monday",
        "Spanish speaking counseling in Miami open on Tuesday",
        "wheelchair accessible clinic in Miami open at 6pm",
        "shelter near 33157",
        "food in Miami for seniors",
    ]
    seen = 0
    with CatalogAssistant(catalog, load_settings(), trail_dir=tmp_path) as a:
        for text in requests:
            a.reset()
            turn = a.ask(text)
            for rec in turn.recommendations:
                card = card_of(rec, turn.constraints, a.words)
                structural = [x for x in card.reasons if x.kind != CONDITION]
                assert len(structural) == len(turn.constraints.structural) and structural, text
                assert all(x.holds and x.quote for x in structural), (text, card)
                for x in card.reasons:
                    if x.kind == CONDITION and x.holds:
                        assert x.span and rec.record.text()[x.span[0] : x.span[1]] == x.quote
                seen += 1
    assert seen >= 15
