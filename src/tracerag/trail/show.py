"""Rendering a trail for a terminal: what the run asked, searched, judged and ranked, in the order it happened.

This module lays the trail out (a header, then each event where it belongs); `show_steps` draws an agent run's
steps, `show_runs` the lines of the other runs (catalog, judge, answer, review), `show_text` the safe pieces
they are all built from: text from a document, a model or a user is data, never markup.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime

from rich.console import Console, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from tracerag.model import Document, SubQuestion
from tracerag.trail.events import (
    BriefingEvent,
    CallEvent,
    CatalogReplyEvent,
    CitationCheckEvent,
    DecisionEvent,
    DraftEvent,
    Event,
    ExpansionEvent,
    GuardEvent,
    JudgmentEvent,
    LLMCallEvent,
    PlanEvent,
    ReevalEvent,
    ReplanEvent,
    RerankEvent,
    ResultEvent,
    RunEvent,
    RunKind,
    WithdrawalEvent,
)
from tracerag.trail.export import replanned, result_event, run_event
from tracerag.trail.show_runs import CatalogEvent, call_block, catalog_line, decision_line, draft, research_line
from tracerag.trail.show_steps import (
    briefing,
    event_line,
    expansion,
    llm_calls,
    plan,
    ranking,
    reevals,
    replan,
    reranks,
)
from tracerag.trail.show_text import Part, compact_json, data, plural, text
from tracerag.trail.summary import call_line, research_status

STATUS_STYLE = {"complete": "bold green", "no_llm": "bold cyan", "truncated": "bold yellow", "failed": "bold red"}

# what a run of each kind does without a model (a catalog conversation's run event says "ask": its events tell it)
_WITHOUT_MODEL = {
    RunKind.SEARCH: "none: no variants asked of a model",
    RunKind.REVIEW: "none: the researcher decides",
    RunKind.ANSWER: "none: an extractive draft and a lexical check",
    RunKind.CALL: "none: a tool call asks no model",
}
_CATALOG_WITHOUT_MODEL = "none: rule-based parsing, templated replies"

Row = tuple[str, Text]


def render_trail(
    events: Sequence[Event], documents: Mapping[str, Document] | None = None, verbose: bool = False
) -> list[RenderableType]:
    """The trail as rich renderables, in the order things happened: header, plan, each sub-question's searches
    and verdicts, guards, re-evaluations, briefing, re-plan, re-rank, the final ranking, and with `verbose` the
    channels, fusions and LLM calls. `documents` (doc id → Document) adds titles and quoted evidence."""
    layout = _Layout(documents, verbose)
    layout.out.append(_header(events, verbose))
    for event in events:
        layout.add(event)
    layout.flush()
    result = result_event(events)
    if result is not None:
        layout.out.append(ranking(result, documents))
    calls = [e for e in events if isinstance(e, LLMCallEvent)]
    if verbose and calls:
        layout.out.append(llm_calls(calls))
    return layout.out


def print_trail(
    events: Sequence[Event],
    console: Console,
    documents: Mapping[str, Document] | None = None,
    verbose: bool = False,
) -> None:
    """Print `render_trail(...)` to `console`."""
    for renderable in render_trail(events, documents, verbose):
        console.print(renderable)


_TREE_KINDS = {"search", "channel", "fusion", "review", "verdict", "memory", "guard"}
_IN_HEADER = {"run", "result", "llm_call"}  # shown by the header, the ranking and the calls' table


class _Layout:
    """Where each event goes: a sub-question's searches, verdicts, guards (and, verbose, channels and fusions)
    gather in one tree; a run of re-evaluations, or of re-ranks, in one block; any other event closes what is
    open and stands alone. The plan and the re-plans keep the sub-questions a tree is labelled with."""

    def __init__(self, documents: Mapping[str, Document] | None, verbose: bool):
        self.documents = documents
        self.verbose = verbose
        self.out: list[RenderableType] = []
        self.questions: list[SubQuestion] = []
        self.tree: Tree | None = None
        self.tree_sq: int | None = None
        self.reevals: list[ReevalEvent] = []
        self.reranks: list[RerankEvent] = []

    def add(self, event: Event) -> None:
        if event.kind in _IN_HEADER:
            return
        if isinstance(event, ReevalEvent):
            if self.reranks or self.tree is not None:
                self.flush()
            self.reevals.append(event)
        elif isinstance(event, RerankEvent):
            if self.reevals or self.tree is not None:
                self.flush()
            self.reranks.append(event)
        elif event.kind in _TREE_KINDS and (event.sq is not None or event.kind != "guard"):
            self._in_tree(event)
        else:
            self.flush()
            self._alone(event)

    def flush(self) -> None:
        """Close the open tree and blocks, in that order."""
        if self.tree is not None:
            self.out.append(self.tree)
            self.tree, self.tree_sq = None, None
        if self.reevals:
            self.out.append(reevals(list(self.reevals), self.documents))
            self.reevals.clear()
        if self.reranks:
            self.out.append(reranks(list(self.reranks)))
            self.reranks.clear()

    def _in_tree(self, event: Event) -> None:
        line = event_line(event, self.documents, self.verbose)
        if line is None:
            return
        if self.tree is None or self.tree_sq != event.sq:
            self.flush()
            self.tree_sq = event.sq
            self.tree = Tree(self._label(event.sq))
        self.tree.add(line)

    def _label(self, sq: int | None) -> Text:
        if sq is None:
            return text(("Outside any sub-question", "bold"))
        label = text((f"Sub-question {sq}", "bold"))
        if 0 <= sq < len(self.questions):
            question = self.questions[sq]
            label.append_text(
                text(": ", data(question.question), (f" → {data(question.target_corpus or 'any')}", "cyan"))
            )
        return label

    def _alone(self, event: Event) -> None:
        if isinstance(event, PlanEvent):
            self.questions = list(event.sub_questions)
        elif isinstance(event, ReplanEvent):
            self.questions = replanned(self.questions, event)
        shown = _standalone(event, self.documents)
        if shown is not None:
            self.out.append(shown)


def _standalone(event: Event, documents: Mapping[str, Document] | None) -> RenderableType | None:
    """An event shown on its own, outside a sub-question's tree; None for a kind not shown."""
    if isinstance(event, PlanEvent):
        return plan(event)
    if isinstance(event, GuardEvent):
        return text(("guard ", "bold yellow"), (data(event.guard), "yellow"), ": ", data(event.message))
    if isinstance(event, BriefingEvent):
        return briefing(event)
    if isinstance(event, ReplanEvent):
        return replan(event)
    if isinstance(event, CatalogEvent):
        return catalog_line(event)
    if isinstance(event, DecisionEvent):
        return decision_line(event, documents)
    if isinstance(event, JudgmentEvent | CitationCheckEvent):
        return research_line(event)
    if isinstance(event, DraftEvent):
        return draft(event)
    if isinstance(event, WithdrawalEvent):
        return text(("draft withdrawn", "bold red"), ": ", data(event.reason))
    if isinstance(event, ExpansionEvent):
        return expansion(event)
    if isinstance(event, CallEvent):
        return call_block(event, documents)
    return None


def _header(events: Sequence[Event], verbose: bool) -> RenderableType:
    """The panel above the trail: the question, the run, the model, how it ended, what the model calls cost."""
    run = run_event(events)
    result = result_event(events)
    catalog = any(e.kind.startswith("catalog_") for e in events)
    calls = [e for e in events if isinstance(e, LLMCallEvent)]
    rows: list[Row] = [
        ("Question", text(data(_asked(events, run)))),
        ("Run", _run_line(run)),
        *([("Asked by", text(data(run.client)))] if run.client else []),
        ("Collection", text(data(run.collection), (f"  k={run.k}", "dim"))),
        *_model_rows(run, catalog),
        ("Status", _status(events, result, catalog)),
        ("LLM calls", _calls_line(calls)),
        *_total_rows(events, result),
    ]
    if result is not None and run.run is RunKind.ASK:  # a search run has a ranking, not verdicts
        rows.append(("Verdicts", _verdicts_line(result)))
    if verbose:
        rows.append(("Config", text((compact_json(run.config, 400), "dim"))))
        rows.append(("Versions", text((compact_json(run.versions, 400), "dim"))))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in rows:
        grid.add_row(label, value)
    return Panel(grid, title=text(("TRACE trail", "bold")), title_align="left", border_style="blue")


def _asked(events: Sequence[Event], run: RunEvent) -> str:
    """What the run was asked: its question, or a call's tool and the arguments that hold something."""
    call = next((e for e in events if isinstance(e, CallEvent)), None)
    return call_line(call) if call is not None else run.question


def _run_line(run: RunEvent) -> Text:
    parts: list[Part] = [data(run.run_id), ("  started " + run.time, "dim")]
    if run.replay_of:
        parts.append(("  replay of " + data(run.replay_of), "magenta"))
    return text(*parts)


def _model_rows(run: RunEvent, catalog: bool) -> list[Row]:
    """The run's kind (but for an agent's or a catalog's) and its model, or what it does without one."""
    rows: list[Row] = []
    if not catalog and run.run is not RunKind.ASK:
        rows.append(("Kind", text(f"{run.run.value} run")))
    if run.llm:
        rows.append(("LLM", text("/".join(data(v) for v in run.llm.values()))))
    else:
        without = _CATALOG_WITHOUT_MODEL if catalog else _WITHOUT_MODEL.get(run.run, "none: hybrid warm start only")
        rows.append(("LLM", text((without, "dim"))))
    return rows


def _status(events: Sequence[Event], result: ResultEvent | None, catalog: bool) -> Text:
    """How the run ended: a catalog's turns and outcomes, what a research run came to, or the result's status."""
    if catalog:
        replies = [e for e in events if isinstance(e, CatalogReplyEvent)]
        outcomes = ", ".join(f"{n} {o}" for o, n in Counter(e.outcome for e in replies).items())
        return text(f"catalog conversation: {len(replies)} turn(s)" + (f" ({outcomes})" if outcomes else ""))
    if result is None and run_event(events).run is RunKind.CALL:
        if any(isinstance(e, CallEvent) for e in events):
            return text(("answered", "bold green"))
        return text(("unfinished: the trail has no call event", "bold red"))
    if result is None:
        came_to = research_status(events)
        return text(came_to) if came_to else text(("unfinished: the trail has no result", "bold red"))
    status = str(result.status)
    parts: list[Part] = [(status, STATUS_STYLE.get(status, "bold"))]
    if result.message:
        parts += ["  ", data(result.message)]
    return text(*parts)


def _calls_line(calls: Sequence[LLMCallEvent]) -> Text:
    prompt = sum(e.prompt_tokens for e in calls)
    completion = sum(e.completion_tokens for e in calls)
    cost = sum(e.cost_usd for e in calls)
    latency = sum(e.latency_s for e in calls)
    failed = sum(1 for e in calls if e.error)
    return text(
        plural(len(calls), "call") + (f" ({failed} failed)" if failed else ""),
        f" · tokens {prompt + completion:,} ({prompt:,} prompt + {completion:,} completion)",
        f" · cost ${cost:.4f} · latency {latency:.1f} s",
    )


def _total_rows(events: Sequence[Event], result: ResultEvent | None) -> list[Row]:
    """The run's wall time (the result's, else from the first to the last event) and its other totals."""
    totals = dict(result.totals) if result is not None else {}
    elapsed = totals.pop("wall_s", None)
    if elapsed is None:
        elapsed = _elapsed(events)
    rows: list[Row] = []
    if elapsed is not None:
        rows.append(("Elapsed", text(f"{elapsed:.1f} s")))
    if totals:
        rows.append(("Totals", text(", ".join(f"{data(k)}={v:g}" for k, v in totals.items()))))
    return rows


def _elapsed(events: Sequence[Event]) -> float | None:
    try:
        return (datetime.fromisoformat(events[-1].time) - datetime.fromisoformat(events[0].time)).total_seconds()
    except (ValueError, IndexError):
        return None


def _verdicts_line(result: ResultEvent) -> Text:
    return text(
        (f"{len(result.accepted)} accepted", "green"),
        " · ",
        (f"{len(result.held)} held", "yellow"),
        " · ",
        (f"{len(result.rejected)} rejected", "red"),
    )
