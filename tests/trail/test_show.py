"""Showing a trail in a terminal, on trails recorded from real runs (tests/fixtures/trails/, rewritten by
`python -m tests.fixtures.record_trails`): header, plan, sub-questions, verdicts, guards, re-evaluation,
briefing, re-plan, ranking; LLM calls when verbose; a catalog conversation; and document or model text rendered
as data, never as markup."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from tests.fixtures.record_trails import QUESTION
from tests.trail import AGENT_TRAIL, CATALOG_TRAIL, MISSING_ID, recorded, small_collection
from tracerag.trail import read_trail
from tracerag.trail.events import LLMCallEvent, ResultEvent, RunEvent
from tracerag.trail.show import print_trail, render_trail


@pytest.fixture(scope="module")
def col(tmp_path_factory, datasets_dir):
    return small_collection(tmp_path_factory, datasets_dir)


@pytest.fixture(scope="module")
def case(col):
    return recorded(AGENT_TRAIL, col.path)


@pytest.fixture(scope="module")
def events(case):
    return case.events


def _render(events, documents=None, verbose=False, **console) -> str:
    out = Console(record=True, width=120, **console)
    for renderable in render_trail(events, documents, verbose):
        out.print(renderable)
    return out.export_text(styles=bool(console))


def test_the_whole_run_is_shown(col, case, events):
    text = _render(events, col.documents)
    flat = " ".join(text.split())
    exp, poole, sonar = col.hipe_ids
    run, result = events[0], events[-1]
    assert isinstance(run, RunEvent) and isinstance(result, ResultEvent)
    calls = [e for e in events if isinstance(e, LLMCallEvent)]
    # header: what was asked, where, with which model, what it cost
    assert QUESTION in flat and case.run_id in text and run.collection in text
    assert "policy/scripted-policy" in text and "complete" in text
    tokens = sum(c.prompt_tokens + c.completion_tokens for c in calls)
    assert f"{len(calls)} calls (1 failed)" in flat and f"tokens {tokens:,}" in flat
    assert f"${sum(c.cost_usd for c in calls):.4f}" in text
    assert f"latency {sum(c.latency_s for c in calls):.1f} s" in text
    assert re.search(rf"Elapsed +{result.totals['wall_s']:.1f} s", text)
    assert "4 accepted · 1 held · 1 rejected" in text
    # the plan with its target corpora; the re-planned sub-question under its new text
    assert "La panique des éléphants" in text and "Munich, Hagenbeck" in text and "demo/hostile" in text
    assert "Sub-question 2: Un incendie en 1881 → any" in text
    # searches, skipped searches, guards
    assert 'search_bm25(query="panique", corpus="hipe2020")' in text and "1 results, 0 new" in text
    assert "skipped: identical to an earlier search" in flat
    assert "skipped: this collection has no vectors: semantic search unavailable" in flat
    for guard in ("finish_refused", "bad_arguments", "empty_searches"):
        assert f"guard {guard}" in text
    assert "date_from 'spring 1881' is not a date" in flat
    # verdicts with reasons and quoted evidence; a verdict carried over; the failure of an unusable review
    assert all(word in text for word in ("ACCEPT", "HOLD", "REJECT"))
    assert "“FAITS DIVERS La panique des éléphants au grand”" in flat
    assert "(verdict of sub-question 0)" in text and "(verdict of sub-question 1)" in text
    assert "no usable verdict: held (no usable verdict: attempt 2: the answer holds no JSON object." in flat
    # re-evaluation, briefing, re-plan, re-rank
    assert "Re-evaluation of held chunks 1 chunk, 1 promoted" in flat and "promoted from hold" in text
    assert "Re-evaluation of held chunks 1 chunk, 0 promoted" in flat
    assert "Briefing after sub-question 0" in text and "scripted briefing" in text
    assert "Re-plan after sub-question 1" in text and "2. Les feux de 1881 en Suisse" in text
    assert re.search(r"Re-rank.*3 sub-questions +single.*1 sub-question +llm +gaz-1881-05-27 2, gone-42 1", flat)
    # final ranking: every source, its count of accepting sub-questions, its origin
    ranking = text[text.index("Final ranking") :]
    for ranked in result.ranking:
        assert ranked.doc_id in ranking
    assert re.search(rf"│\s+1 │ {re.escape(exp)}\s+│\s+3 │ agent", ranking)
    assert re.search(rf"│\s+7 │ {re.escape(sonar)}\s+│\s+0 │ warm_start", ranking)
    assert "agent (promoted)" in ranking and "not in the collection" in ranking
    # verbose-only parts stay out
    assert "channel bm25" not in text and "fusion rrf" not in text
    assert "I am not sure what you want" not in text and "437+14" not in text


def test_document_and_model_text_render_literally(col, events):
    text = _render(events, col.documents, verbose=True)
    # the hostile document (quoted, and in its derived title) and the model's reasons and answers quoting it
    for literal in ("[bold]INCENDIE[/bold]", ":thumbs_up:", "[red]théâtre[/red]", "[/]", "[link=https://evil.example]"):
        if literal.startswith("[link"):
            assert literal not in text  # beyond every quote and title: never shown, so never a link either
        else:
            assert literal in text, literal
    assert "👍" not in text
    answers = text[text.rindex("LLM calls") :]
    assert "[bold]INCENDIE[/bold]" in answers and "[red]th" in answers  # the model's answers, as they came


def test_hostile_text_takes_no_style(col, events):
    ansi = _render(events, col.documents, force_terminal=True, color_system="standard")
    assert "[bold]INCENDIE[/bold]" in ansi and "[red]théâtre[/red]" in ansi
    # the verdicts are coloured: green accept, yellow hold, red reject
    assert re.search(r"\x1b\[[0-9;]*32mACCEPT", ansi)
    assert re.search(r"\x1b\[[0-9;]*33mHOLD", ansi)
    assert re.search(r"\x1b\[[0-9;]*31mREJECT", ansi)
    # "[red]théâtre[/red]" from the document did not turn "théâtre" red, nor "[bold]INCENDIE" bold
    assert not re.search(r"\x1b\[[0-9;]*31mthéâtre", ansi) and not re.search(r"\x1b\[[0-9;]*1mINCENDIE", ansi)


def test_verbose_adds_channels_fusion_and_llm_calls(col, events):
    text = _render(events, col.documents, verbose=True)
    assert "channel bm25" in text and "(merged from fr)" in text
    assert "fusion combsum(bm25 max, dense minmax, date max, phrase max, entity max)" in text
    calls = text[text.rindex("LLM calls") :]
    for purpose in ("plan", "action", "review", "reeval", "briefing", "rerank"):
        assert purpose in calls
    assert "437+14" in calls and "0.50 s" in calls and "(2 attempts)" in calls
    cells = " ".join(calls.replace("│", " ").split())  # a response wrapped over rows of its cell, read as one
    assert "I am not sure what you want. (2 attempts)" in cells and "error: attempt 2: the answer holds no" in cells
    assert '"rerank": "llm"' in text  # the run's config


def test_without_documents_and_without_a_result(events):
    text = _render(events)
    assert "Final ranking" in text and MISSING_ID in text and "not in the collection" not in text
    assert "“" not in text  # no quotes without the documents
    unfinished = _render(events[:-1])
    assert "unfinished" in unfinished and "Final ranking" not in unfinished


def test_print_trail_prints_what_render_trail_renders(col, events):
    console = Console(record=True, width=120)
    print_trail(events, console, col.documents)
    assert console.export_text() == _render(events, col.documents)


def test_a_catalog_conversation_is_shown_turn_by_turn():
    events = read_trail(CATALOG_TRAIL)
    text = _render(events)
    flat = " ".join(text.split())
    assert "catalog conversation: 4 turn(s) (1 clarify, 1 answer, 1 none_found, 1 no_match)" in flat
    assert "none: rule-based parsing, templated replies" in text
    assert "turn 0 I need a food pantry → service_type=BD-1800" in flat
    assert "turn 1 variant location+hours, pre-filter on city, service_type: 2 records, 2 candidates ranked" in flat
    assert "turn 3 no_match" in flat and "Nothing in this directory matches 'piano tuning' in Miami" in flat
    # the evidence of the topic decision: the service type that holds it, or each word and how many records hold it
    assert "topic food pantry held (service_type): service type Emergency Food (79 records)" in flat
    assert "topic piano tuning not held (nothing): 'piano' in 8 records, 'tuning' in 2 records" in flat
    assert "Final ranking" not in text  # a conversation has no result


def test_a_search_run_shows_its_expansion_and_says_what_kind_of_run_it_is():
    """The recorded search run (tests/fixtures/trails/research/search.jsonl): its variants, each with where it came
    from, its weight and its first documents; no agent wording (no verdicts, no "hybrid warm start")."""
    from tests.trail import RESEARCH_TRAILS

    events = read_trail(RESEARCH_TRAILS / "search.jsonl")
    text = _render(events)
    assert "Kind" in text and "search run" in text
    assert "expansion searched" in text and "original (original, weight" in text
    assert re.search(r"variant 1 \(llm/[a-z_]+, weight 1\)", text)
    assert "Verdicts" not in text and "hybrid warm start" not in text
    review = _render(read_trail(RESEARCH_TRAILS / "review.jsonl"))
    assert "review run" in review and "the researcher decides" in review
