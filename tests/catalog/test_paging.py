"""Paging (issue 22, part 8) on the real Miami 211 catalog: "show me more" gives the next services matching the
conversation, never one shown before for the same request, and says when there is nothing more (the count shown
checked against the catalog's own strict filter); a new topic starts a fresh list; each skip is in the trail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.catalog.assistant import CatalogAssistant
from tracerag.catalog.model import ConstraintKind
from tracerag.catalog.paging import ALREADY_SHOWN, ShownLog, constraints_key, is_more_request, related_kinds
from tracerag.catalog.sentences import say
from tracerag.catalog.words import WordList
from tracerag.config import load_settings
from tracerag.trail import MemoryListener
from tracerag.trail.events import CatalogCheckEvent, CatalogParseEvent

WORDS = WordList.load().records
MORE = ["show me more", "any others?", "next", "more", "Show me more please", "what else?", "anything else"]


@pytest.fixture
def events() -> MemoryListener:
    return MemoryListener()


@pytest.fixture
def assistant(catalog: Path, tmp_path: Path, events: MemoryListener):
    with CatalogAssistant(catalog, load_settings(), trail_dir=tmp_path, listeners=[events]) as a:
        yield a


@pytest.mark.parametrize(
    "text",
    [
        *MORE,
        "other ones?",
        "any more?",
        "gimme more",
        "show more pls",
        "are there any others?",
        "other options?",
        "Next page",
    ],
)
def test_paging_requests(text: str) -> None:
    assert is_more_request(text, WORDS)


@pytest.mark.parametrize(
    "text",
    [
        "more food in Miami",
        "what about on Sunday?",
        "food pantry",
        "next to the library",
        "",
        "show me",
        "any other food banks?",
    ],
)
def test_requests_that_are_not_paging(text: str) -> None:
    assert not is_more_request(text, WORDS)


def page_through(assistant: CatalogAssistant, first: str, pages: int) -> tuple[list[list[str]], list[str]]:
    turns = [assistant.ask(first)]
    while len(turns) <= pages and turns[-1].recommendations:  # until the reply says that is all
        turns.append(assistant.ask(MORE[(len(turns) - 1) % len(MORE)]))
    return [[r.record.id for r in t.recommendations] for t in turns], [t.reply for t in turns]


@pytest.mark.parametrize(("request_", "pages"), [("food pantry in Hialeah", 4), ("food in Miami", 40)])
def test_show_me_more_never_repeats_and_ends_with_that_is_all(
    assistant: CatalogAssistant, request_: str, pages: int
) -> None:
    ids, replies = page_through(assistant, request_, pages)
    shown = [i for page in ids for i in page]
    assert len(shown) == len(set(shown))  # 0 repeats
    matching = set(assistant.store.filter(assistant.state.structural))  # the catalog's own strict filter
    exact = shown[: len(matching)]
    assert set(exact) == matching  # every matching service first, each once (Hialeah 2, Miami 32 when measured)
    # Full pages of the exact matches, but for the last of the services open to all (records for one group only
    # are left out while any is left, then shown on pages of their own that say so) and the last of them.
    exact_pages = [(page, r) for page, r in zip(ids, replies, strict=True) if page and set(page) <= matching]
    for part in (False, True):
        pages_ = [page for page, r in exact_pages if r.startswith(say("groups_only")) == part]
        assert all(len(page) == assistant.k for page in pages_[:-1])
    related = related_kinds(assistant.state, assistant.index)
    rest = shown[len(matching) :]
    if related is None:
        assert not rest
    else:  # then the services of related kinds, each new, the reply saying the exact ones are all shown
        assert set(rest) <= set(assistant.store.filter(related.structural))
        firsts = [r for r in replies if r.startswith("I have shown all")]
        assert all(f"I have shown all {len(matching)} service(s)" in r for r in firsts)
    assert (
        not ids[-1] and replies[-1].startswith("That is all") and f"I have shown {len(shown)} service(s)" in replies[-1]
    )
    if len(matching) > assistant.k:  # a second page says how many it leaves out
        assert f"({assistant.k} service(s) shown earlier for this request are not repeated.)" in replies[1]


def test_related_kinds_after_the_exact_matches(assistant: CatalogAssistant) -> None:
    """ "counseling in miami beach": 7 services are listed as counseling (Individual Counseling, General
    Counseling Services); the third page goes on with other kinds of counseling, among them 490 (a community
    mental health centre listed under "Spouse/Intimate Partner Abuse Counseling", "Alcohol Use Disorder
    Counseling"), read in the records; the related list then ends with that is all, nothing repeated."""
    ids, replies = page_through(assistant, "counseling in miami beach", 10)
    assert [len(p) for p in ids[:2]] == [5, 2]
    assert replies[2].startswith("I have shown all 7 service(s) matching city: Miami Beach; service_type: counseling.")
    assert "490" in [i for page in ids[2:] for i in page]
    shown = [i for page in ids for i in page]
    assert len(shown) == len(set(shown)) and replies[-1].startswith("That is all")
    related = related_kinds(assistant.state, assistant.index)
    assert related is not None
    names = [assistant.gazetteer.taxonomy[t] for t in related.of(ConstraintKind.SERVICE_TYPE).values]
    assert names and all("counseling" in n.casefold() for n in names)


def test_no_related_kinds_when_the_first_page_showed_them_all(assistant: CatalogAssistant) -> None:
    """ "dental clinic homestead" (the people-written eval's miami-paging-008): the first page holds all 5 services
    of those kinds in Homestead, and no other kind of the taxonomy names both "dental" and "clinic", so "other
    ones?" says that is all."""
    first = assistant.ask("dental clinic homestead")
    assert len(first.recommendations) == len(assistant.store.filter(assistant.state.structural)) == 5
    assert related_kinds(assistant.state, assistant.index) is None
    more = assistant.ask("other ones?")
    assert not more.recommendations and more.reply.startswith("That is all") and "shown 5 service(s)" in more.reply


def test_the_trail_records_what_was_skipped_as_already_shown(assistant: CatalogAssistant, events) -> None:
    first = assistant.ask("food in Miami")
    second = assistant.ask("show me more")
    first_ids = {r.record.id for r in first.recommendations}
    assert first_ids and not first_ids & {r.record.id for r in second.recommendations}
    skipped = [e for e in events.of(CatalogCheckEvent) if e.turn == 1 and ALREADY_SHOWN in e.violations]
    assert {e.record_id for e in skipped} == first_ids and not any(e.selected for e in skipped)
    parsed = events.of(CatalogParseEvent)[-1]
    assert parsed.notes == ["asks for more services matching the conversation so far"]
    assert parsed.state == events.of(CatalogParseEvent)[0].state  # the constraints are kept as they were


def test_a_new_topic_starts_a_fresh_list_and_an_old_one_goes_on(assistant: CatalogAssistant) -> None:
    food = [r.record.id for r in assistant.ask("food in Miami").recommendations]
    legal = assistant.ask("legal aid in Miami")
    assert legal.outcome == "answer" and legal.recommendations  # a fresh list, nothing skipped
    assert "not repeated" not in legal.reply
    back = [r.record.id for r in assistant.ask("food in Miami").recommendations]
    assert back and not set(back) & set(food)  # the same request again: the next services, not the same list


def test_the_same_request_again_is_not_the_same_list(assistant: CatalogAssistant) -> None:
    first = [r.record.id for r in assistant.ask("food pantry in Hialeah").recommendations]
    again = assistant.ask("food pantry in Hialeah")
    assert first and not again.recommendations and again.reply.startswith("That is all")


def test_more_as_the_first_request_is_an_ordinary_request(assistant: CatalogAssistant) -> None:
    turn = assistant.ask("more")
    assert turn.outcome == "clarify" and not turn.recommendations


def test_reset_forgets_what_was_shown(assistant: CatalogAssistant) -> None:
    first = [r.record.id for r in assistant.ask("food pantry in Hialeah").recommendations]
    assistant.reset()
    assert [r.record.id for r in assistant.ask("food pantry in Hialeah").recommendations] == first


def test_the_shown_log_is_per_request(assistant: CatalogAssistant) -> None:
    assistant.ask("food in Miami")
    log = ShownLog()
    log.add(assistant.state, ["a", "b"])
    log.add(assistant.state, ["b", "c"])
    assert log.of(assistant.state) == ["a", "b", "c"]
    assert constraints_key(assistant.state) != constraints_key(type(assistant.state)())
