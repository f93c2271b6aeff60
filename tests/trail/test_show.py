"""Showing a trail in a terminal: header, plan, sub-questions, verdicts, guards, re-evaluation, briefing,
re-plan, ranking; LLM calls when verbose; and document or model text rendered as data, never as markup."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from tests.trail import MISSING_ID, QUESTION, small_collection, write_trail
from tracerag.trail import read_trail
from tracerag.trail.show import print_trail, render_trail


@pytest.fixture(scope="module")
def col(tmp_path_factory, datasets_dir):
    return small_collection(tmp_path_factory, datasets_dir)


@pytest.fixture(scope="module")
def case(col):
    return write_trail(col)


@pytest.fixture(scope="module")
def events(case):
    return read_trail(case.path)


def _render(events, documents=None, verbose=False, **console) -> str:
    out = Console(record=True, width=120, **console)
    for renderable in render_trail(events, documents, verbose):
        out.print(renderable)
    return out.export_text(styles=bool(console))


def test_the_whole_run_is_shown(col, case, events):
    text = _render(events, col.documents)
    flat = " ".join(text.split())
    exp, topres, sonar = col.hipe_ids
    # header
    assert QUESTION in flat and case.run_id in text and str(col.path) in text
    assert "replay/gpt-4o-mini" in text and "complete" in text
    assert "3 calls (1 failed)" in flat and "3,438" in text and "$0.0006" in text and "4.5 s" in text
    # plan, sub-questions and their target corpora, the re-plan's new one
    assert "Fires reported in French newspapers" in text and "hipe2020/exp" in text and "topres19th/*" in text
    assert "Sub-question 2: Fires of 1881 in the Swiss and French press → demo/*" in text
    # searches, skipped searches, guards
    assert 'hybrid_search(query="incendie panique", k=10)' in text and "12 results, 12 new" in text
    assert "skipped: the same query was already run" in text
    assert "guard repeat_query" in text and "guard budget" in text
    # verdicts with reasons and quoted evidence, the promotion, briefing, re-rank
    assert "Reports the panic of the elephants during the parade." in flat
    assert all(word in text for word in ("ACCEPT", "HOLD", "REJECT"))
    assert "A masthead, no report." in text
    assert "Re-evaluation of held chunks" in text and "promoted from hold" in text
    assert "Briefing after sub-question 0" in text and "British reports" in text
    assert "Re-plan after sub-question 1" in text and "2. Fires in Swiss newspapers" in text
    assert re.search(r"Elapsed +12.3 s", text)
    assert "Re-rank" in text and "cross-encoder" in text
    assert "“FAITS DIVERS La panique" in flat
    # final ranking: every source, its count of accepting sub-questions, its origin
    ranking = text[text.index("Final ranking") :]
    for doc_id in case.ranking:
        assert doc_id in ranking
    assert re.search(rf"│\s+1 │ {re.escape(exp)}\s+│\s+2 │ agent", ranking)
    assert re.search(rf"│\s+7 │ {re.escape(sonar)}\s+│\s+0 │ warm_start", ranking)
    assert "agent (promoted)" in ranking and "not in the collection" in ranking
    # verbose-only parts stay out
    assert "channel lexical" not in text and "fusion rrf" not in text
    assert "not json at all" not in text and "1800+210" not in text


def test_document_and_model_text_render_literally(col, events):
    text = _render(events, col.documents, verbose=True)
    # the hostile reason (from the model) and document (quote, derived title), and a model response
    for literal in (
        "[bold]Mentions",
        "[/]",
        "[red]twice[/red]",
        ":thumbs_up:",
        "[bold]INCENDIE[/bold]",
        "[italic]no",
        "[bold]not",
        "[/bold]",
    ):
        assert literal in text, literal
    assert "👍" not in text


def test_hostile_text_takes_no_style(col, events):
    ansi = _render(events, col.documents, force_terminal=True, color_system="standard")
    assert "[bold]INCENDIE[/bold]" in ansi and "[bold]Mentions the fire[/]" in ansi
    # the verdicts are coloured: green accept, yellow hold, red reject
    assert re.search(r"\x1b\[[0-9;]*32mACCEPT", ansi)
    assert re.search(r"\x1b\[[0-9;]*33mHOLD", ansi)
    assert re.search(r"\x1b\[[0-9;]*31mREJECT", ansi)
    # "[red]twice[/red]" from the model did not turn "twice" red
    assert not re.search(r"\x1b\[[0-9;]*31mtwice", ansi)


def test_verbose_adds_channels_fusion_and_llm_calls(col, events):
    text = _render(events, col.documents, verbose=True)
    assert "channel lexical" in text and "fusion rrf" in text
    calls = text[text.rindex("LLM calls") :]
    assert "plan" in calls and "review" in calls and "1800+210" in calls and "2.50 s" in calls
    assert "not json at all (2 attempts)" in calls and "error: no valid JSON after 2 attempts" in calls
    assert '"max_steps": 4' in text  # the run's config


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
