"""Paging (issue 22, part 8) on the real Miami 211 catalog: "show me more" gives the next services matching the
conversation, never one shown before for the same request, and says when there is nothing more (the count shown
checked against the catalog's own strict filter); a new topic starts a fresh list; each skip is in the trail."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.catalog.assistant import CatalogAssistant
from tracerag.catalog.paging import ALREADY_SHOWN, ShownLog, constraints_key, is_more_request
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
    "text", [*MORE, "any more?", "gimme more", "show more pls", "are there any others?", "other options?", "Next page"]
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
    turns = [assistant.ask(first)] + [assistant.ask(MORE[i % len(MORE)]) for i in range(pages)]
    return [[r.record.id for r in t.recommendations] for t in turns], [t.reply for t in turns]


@pytest.mark.parametrize(("request_", "pages"), [("food pantry in Hialeah", 4), ("food in Miami", 9)])
def test_show_me_more_never_repeats_and_ends_with_that_is_all(
    assistant: CatalogAssistant, request_: str, pages: int
) -> None:
    ids, replies = page_through(assistant, request_, pages)
    shown = [i for page in ids for i in page]
    assert len(shown) == len(set(shown))  # 0 repeats
    matching = set(assistant.store.filter(assistant.state.structural))  # the catalog's own strict filter
    assert set(shown) == matching  # every matching service, each once (Hialeah 2, Miami 32 when measured)
    # Full pages, but for the last of the services open to all (records for one group only are left out while
    # any is left, then shown on pages of their own that say so) and the last page.
    for_groups = [r.startswith(say("groups_only")) for r in replies]
    for part in (False, True):
        pages_ = [page for page, g in zip(ids, for_groups, strict=True) if page and g == part]
        assert all(len(page) == assistant.k for page in pages_[:-1])
    ends = [r for page, r in zip(ids, replies, strict=True) if not page]
    assert ends and all(r.startswith("That is all") and f"I have shown {len(matching)} service(s)" in r for r in ends)
    if len(matching) > assistant.k:  # a second page says how many it leaves out
        assert f"({assistant.k} service(s) shown earlier for this request are not repeated.)" in replies[1]


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
