"""Rendering a trail for a terminal: what the run asked, searched, judged and ranked, in the order it happened.

Everything that comes from a document, a model or a user (questions, reasons, quotes, queries, responses) is
data, never markup: it only ever goes into `rich.text.Text` objects, appended as plain text, which rich parses
neither for markup nor for emoji codes, so a document holding "[bold]", "[/]" or ":warning:" renders as those
characters. (Escaping it with `rich.markup.escape` as well would show the backslashes: a `Text` is literal.)
No string built here is ever parsed as markup. `_data` is the door data comes through (one line, controls shown
as escapes by `tracerag.text`), and `_text` passes every piece through `safe_block` as well, so that a field of a
hand-edited trail that did not come through `_data` still cannot reach the terminal raw.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from tracerag.model import Document, FusionMethod, SubQuestion
from tracerag.text import safe_block, safe_line
from tracerag.trail.events import (
    BriefingEvent,
    CatalogCheckEvent,
    CatalogFilterEvent,
    CatalogOutcome,
    CatalogParseEvent,
    CatalogReplyEvent,
    ChannelEvent,
    CitationCheckEvent,
    DecisionEvent,
    DraftEvent,
    Event,
    ExpansionEvent,
    FusionEvent,
    GuardEvent,
    JudgmentEvent,
    LLMCallEvent,
    MemoryEvent,
    PlanEvent,
    ReevalEvent,
    ReplanEvent,
    RerankEvent,
    ResultEvent,
    ReviewEvent,
    RunEvent,
    RunKind,
    SearchEvent,
    VerdictEvent,
    WindowShareEvent,
)
from tracerag.trail.export import derived_title, replanned, result_event, run_event

RRF_METHODS = (FusionMethod.RRF, FusionMethod.WRRF)  # the methods whose k is worth showing

CatalogEvent = CatalogParseEvent | CatalogFilterEvent | CatalogCheckEvent | CatalogReplyEvent

VERDICT_STYLE = {"accept": "bold green", "hold": "bold yellow", "reject": "bold red"}
STATUS_STYLE = {"complete": "bold green", "no_llm": "bold cyan", "truncated": "bold yellow", "failed": "bold red"}
OUTCOME_STYLE = {
    CatalogOutcome.ANSWER: "green",
    CatalogOutcome.NONE_FOUND: "yellow",
    CatalogOutcome.NO_MATCH: "yellow",
    CatalogOutcome.CLARIFY: "cyan",
}
RESPONSE_CHARS = 240
QUOTE_CHARS = 160

Part = str | tuple[str, str]


def _data(value: Any) -> str:
    """Untrusted text on one line, controls and invisible format characters shown as escapes; to be appended to
    a `Text` (never interpolated into a markup string)."""
    return safe_line(value)


def _text(*parts: Part) -> Text:
    """A Text from literal pieces, optionally styled: nothing in them is read as markup or emoji codes, and no
    control character in them reaches the terminal (newlines placed by this module stay)."""
    text = Text()
    for part in parts:
        if isinstance(part, tuple):
            text.append(safe_block(part[0]), style=part[1])
        else:
            text.append(safe_block(part))
    return text


def _clip(value: Any, limit: int) -> str:
    """One line, whitespace collapsed, cut with an ellipsis."""
    flat = " ".join(str(value).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _json(value: Any, limit: int = 160) -> str:
    return _clip(json.dumps(value, ensure_ascii=False, default=str, sort_keys=True), limit)


def _chunk(doc_id: str, chunk_id: str | None) -> str:
    if not chunk_id:
        return doc_id
    return chunk_id if chunk_id.startswith(doc_id) else f"{doc_id} ({chunk_id})"


def _quote(documents: Mapping[str, Document] | None, doc_id: str, span: Sequence[int] | None) -> str | None:
    if not documents or span is None or doc_id not in documents:
        return None
    text = documents[doc_id].text
    start, end = span
    if not 0 <= start <= end <= len(text):
        return None
    return _clip(text[start:end], QUOTE_CHARS)


def _verdict_line(
    event: VerdictEvent | ReevalEvent, documents: Mapping[str, Document] | None, prefix: str = ""
) -> Text:
    verdict = str(event.verdict)
    parts: list[Part] = []
    if prefix:
        parts.append((prefix, "dim"))
    parts += [
        (verdict.upper().ljust(6), VERDICT_STYLE.get(verdict, "bold")),
        " ",
        (_data(_chunk(event.doc_id, event.chunk_id)), "cyan"),
    ]
    if isinstance(event, ReevalEvent) and event.promoted_from_hold:
        parts.append((" promoted from hold", "bold green"))
    if isinstance(event, VerdictEvent) and event.carried_from is not None:
        parts.append((f" (verdict of sub-question {event.carried_from})", "dim"))
    parts += [" — ", _data(event.reason)]
    if event.span is not None:
        parts.append((f" [{event.span[0]}:{event.span[1]}]", "dim"))
    quote = _quote(documents, event.doc_id, event.span)
    if quote:
        parts += [" ", ("“" + _data(quote) + "”", "italic")]
    if event.failure:
        parts += [" ", ("(no usable verdict: " + _data(event.failure) + ")", "yellow")]
    return _text(*parts)


def _elapsed(events: Sequence[Event]) -> float | None:
    try:
        return (datetime.fromisoformat(events[-1].time) - datetime.fromisoformat(events[0].time)).total_seconds()
    except (ValueError, IndexError):
        return None


def _header(events: Sequence[Event], verbose: bool) -> RenderableType:
    run = run_event(events)
    result = result_event(events)
    calls = [e for e in events if isinstance(e, LLMCallEvent)]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("Question", _text(_data(run.question)))
    run_line: list[Part] = [_data(run.run_id), ("  started " + run.time, "dim")]
    if run.replay_of:
        run_line.append(("  replay of " + _data(run.replay_of), "magenta"))
    grid.add_row("Run", _text(*run_line))
    grid.add_row("Collection", _text(_data(run.collection), (f"  k={run.k}", "dim")))
    llm = "/".join(_data(v) for v in run.llm.values()) if run.llm else None
    replies = [e for e in events if isinstance(e, CatalogReplyEvent)]
    catalog = any(e.kind.startswith("catalog_") for e in events)
    # what a run of each kind does without a model (the catalog's run event says "ask": it is told by its events)
    without = (
        "none: rule-based parsing, templated replies"
        if catalog
        else {
            RunKind.SEARCH: "none: no variants asked of a model",
            RunKind.REVIEW: "none: the researcher decides",
            RunKind.ANSWER: "none: an extractive draft and a lexical check",
        }.get(run.run, "none: hybrid warm start only")
    )
    if not catalog and run.run is not RunKind.ASK:
        grid.add_row("Kind", _text(f"{run.run.value} run"))
    grid.add_row("LLM", _text(llm) if llm else _text((without, "dim")))
    if catalog:
        outcomes = ", ".join(f"{n} {o}" for o, n in Counter(e.outcome for e in replies).items())
        grid.add_row(
            "Status", _text(f"catalog conversation: {len(replies)} turn(s)" + (f" ({outcomes})" if outcomes else ""))
        )
    elif result is None and research_status(events):
        grid.add_row("Status", _text(research_status(events)))
    elif result is None:
        grid.add_row("Status", _text(("unfinished: the trail has no result", "bold red")))
    else:
        status = str(result.status)
        status_parts: list[Part] = [(status, STATUS_STYLE.get(status, "bold"))]
        if result.message:
            status_parts += ["  ", _data(result.message)]
        grid.add_row("Status", _text(*status_parts))
    prompt = sum(e.prompt_tokens for e in calls)
    completion = sum(e.completion_tokens for e in calls)
    cost = sum(e.cost_usd for e in calls)
    latency = sum(e.latency_s for e in calls)
    failed = sum(1 for e in calls if e.error)
    grid.add_row(
        "LLM calls",
        _text(
            _n(len(calls), "call") + (f" ({failed} failed)" if failed else ""),
            f" · tokens {prompt + completion:,} ({prompt:,} prompt + {completion:,} completion)",
            f" · cost ${cost:.4f} · latency {latency:.1f} s",
        ),
    )
    totals = dict(result.totals) if result is not None else {}
    elapsed = totals.pop("wall_s", None)
    if elapsed is None:
        elapsed = _elapsed(events)
    if elapsed is not None:
        grid.add_row("Elapsed", _text(f"{elapsed:.1f} s"))
    if totals:
        grid.add_row("Totals", _text(", ".join(f"{_data(k)}={v:g}" for k, v in totals.items())))
    if result is not None and run.run is RunKind.ASK:  # a search run has a ranking, not verdicts
        grid.add_row(
            "Verdicts",
            _text(
                (f"{len(result.accepted)} accepted", "green"),
                " · ",
                (f"{len(result.held)} held", "yellow"),
                " · ",
                (f"{len(result.rejected)} rejected", "red"),
            ),
        )
    if verbose:
        grid.add_row("Config", _text((_json(run.config, 400), "dim")))
        grid.add_row("Versions", _text((_json(run.versions, 400), "dim")))
    return Panel(grid, title=_text(("TRACE trail", "bold")), title_align="left", border_style="blue")


def _expansion(event: ExpansionEvent) -> RenderableType:
    """What a search ran as: the query with the researcher's additions, the filter, each variant and its top."""
    tree = Tree(_text(("expansion ", "bold"), "searched ", ("“" + _data(event.searched) + "”", "italic")))
    for applied in event.synonyms:
        added = ", ".join(_data(a) for a in applied.get("added", []))
        tree.add(
            _text(
                "synonym map: ",
                _data(str(applied.get("found", ""))),
                f" → {added}",
                (f" (line {applied.get('line')})", "dim"),
            )
        )
    if event.filter_expression:
        tree.add(_text("filter ", _data(event.filter_expression), f" → {event.allowed} documents allowed"))
    for v in event.variants:
        kind = v.source if v.kind is None else f"{v.source}/{v.kind}"
        top = ", ".join(_data(d) for d in v.ranking[:5])
        weight = event.weights.get(v.name)
        tree.add(
            _text(
                (_data(v.name), "bold"),
                f" ({kind}" + (f", weight {weight:g}" if weight is not None else "") + "): ",
                ("“" + _data(v.query) + "”", "italic"),
                (f" → {top}" if top else " → nothing", "dim"),
            )
        )
    for failure in event.failures:
        tree.add(_text(("failed: ", "bold red"), _data(failure)))
    return tree


def _plan(event: PlanEvent) -> RenderableType:
    table = Table(title=None, show_header=True, header_style="bold", expand=False, box=None, padding=(0, 1))
    table.add_column("#", justify="right", style="dim", overflow="fold")
    table.add_column("sub-question", overflow="fold")
    table.add_column("target corpus", style="cyan", overflow="fold")
    table.add_column("key entities", style="dim", overflow="fold")
    for i, sq in enumerate(event.sub_questions):
        table.add_row(
            str(i),
            _text(_data(sq.question)),
            _text(_data(sq.target_corpus or "any")),
            _text(_data(", ".join(sq.key_entities))),
        )
    parts: list[RenderableType] = [Rule(_text(("Plan", "bold")), align="left")]
    if event.analysis:
        parts.append(_text(("analysis: ", "bold"), _data(event.analysis)))
    if event.dates:
        parts.append(_text(("dates: ", "bold"), _data(", ".join(event.dates))))
    if event.fallback:
        parts.append(_text(("fell back to the question itself: ", "bold yellow"), _data(event.fallback)))
    parts.append(table)
    return Group(*parts)


def _search_line(event: SearchEvent) -> Text:
    args = ", ".join(f"{_data(k)}={_json(v, 80)}" for k, v in event.args.items())
    parts: list[Part] = [
        (f"step {event.step} ", "dim"),
        ("search ", "bold blue"),
        (_data(event.tool), "blue"),
        f"({args})",
    ]
    flt = {k: v for k, v in event.filter.items() if v not in (None, [], {}, "")}
    if flt:
        parts.append((" filter " + _json(flt, 120), "dim"))
    if event.skipped:
        parts += [" ", ("skipped: " + event.skipped.reason, "yellow")]
    else:
        parts.append(f" → {event.results} results, {event.new} new")
    return _text(*parts)


def _event_line(event: Event, documents: Mapping[str, Document] | None, verbose: bool) -> Text | None:
    """One line of a sub-question's tree, or None when the event is shown only in verbose mode."""
    step = getattr(event, "step", None)
    prefix = f"step {step} " if step is not None else ""
    if isinstance(event, SearchEvent):
        return _search_line(event)
    if isinstance(event, VerdictEvent):
        return _verdict_line(event, documents, prefix)
    if isinstance(event, GuardEvent):
        return _text(
            (prefix, "dim"), ("guard ", "bold yellow"), (_data(event.guard), "yellow"), ": ", _data(event.message)
        )
    if isinstance(event, ReviewEvent):
        return _text((prefix, "dim"), ("review ", "bold"), f"{len(event.chunks)} chunks shown to the model")
    if isinstance(event, MemoryEvent):
        return _text(
            (prefix, "dim"), ("memory ", "bold magenta"), _data(event.memory), " ", (_json(event.delta), "dim")
        )
    if not verbose:
        return None
    if isinstance(event, ChannelEvent):
        top = ", ".join(_data(doc) for doc, _chunk_id, _score in event.ranking[:5])
        fields = f" (merged from {', '.join(_data(f) for f in event.fields)})" if event.fields else ""
        return _text(
            (prefix, "dim"),
            ("channel ", "bold"),
            _data(event.channel),
            " ",
            ("“" + _data(_clip(event.query, 80)) + "”", "italic"),
            f" → {len(event.ranking)}{fields}: ",
            (top, "dim"),
        )
    if isinstance(event, FusionEvent):
        top = ", ".join(_data(item.get("doc_id", "?")) for item in event.ranking[:5])
        method = f"{event.method}(k={event.rrf_k})" if event.method in RRF_METHODS else str(event.method)
        if isinstance(event.normalisation, dict):
            method += "(" + ", ".join(f"{c} {n}" for c, n in event.normalisation.items()) + ")"
        elif event.normalisation:
            method += f"({event.normalisation})"
        if event.weights:
            method += " " + ", ".join(f"{c} {w:.2f}" for c, w in event.weights.items())
        return _text((prefix, "dim"), ("fusion ", "bold"), method, f" → {len(event.ranking)}: ", (top, "dim"))
    if isinstance(event, WindowShareEvent):
        # the windows that draw more than their share of the results: where the loudest decade pulls
        loud = sorted((r for r in event.rows if r.ratio is not None and r.ratio > 1), key=lambda r: -(r.ratio or 0))
        pulls = ", ".join(
            f"{_data(r.window)} {r.result_share:.0%} of results vs {r.corpus_share:.0%} searched" for r in loud[:3]
        )
        return _text(
            (prefix, "dim"),
            ("windows ", "bold"),
            f"{_data(event.window)} ({_data(event.chosen)}): {event.results} results of {event.searched} searched",
            (f"; over their share: {pulls}" if pulls else "", "dim"),
        )
    return None


def _reevals(events: Sequence[ReevalEvent], documents: Mapping[str, Document] | None) -> RenderableType:
    promoted = sum(1 for e in events if e.promoted_from_hold)
    title = _text(("Re-evaluation of held chunks", "bold"), f"  {_n(len(events), 'chunk')}, {promoted} promoted")
    lines: list[RenderableType] = [Rule(title, align="left")]
    for event in events:
        prefix = f"sq {event.sq} " if event.sq is not None else ""
        lines.append(_verdict_line(event, documents, prefix))
    return Group(*lines)


def _briefing(event: BriefingEvent) -> RenderableType:
    title = "Briefing" if event.sq is None else f"Briefing after sub-question {event.sq}"
    tree = Tree(_text((title, "bold")))
    tree.add(_text(_data(event.summary)))
    for label, items in (
        ("key facts", event.key_facts),
        ("confirmed dates", event.confirmed_dates),
        ("confirmed entities", event.confirmed_entities),
        ("gaps", event.gaps),
        ("search hints", event.search_hints),
    ):
        if items:
            branch = tree.add(_text((label, "bold")))
            for item in items:
                branch.add(_text(_data(item)))
    if event.failure:
        tree.add(_text(("failed: " + _data(event.failure), "yellow")))
    return tree


def _replan(event: ReplanEvent) -> RenderableType:
    """The sub-questions still to come, before and after; numbered as the sub-questions they will be."""
    first = 0 if event.sq is None else event.sq + 1
    title = "Re-plan" if event.sq is None else f"Re-plan after sub-question {event.sq}: the sub-questions to come"
    tree = Tree(_text((title, "bold")))
    if event.failure:
        tree.add(_text(("failed, the plan stands: " + _data(event.failure), "yellow")))
    before = tree.add(_text(("before", "dim")))
    for i, sq in enumerate(event.before, start=first):
        before.add(_text(f"{i}. ", _data(sq.question), (f" → {_data(sq.target_corpus or 'any')}", "cyan")))
    if not event.before:
        before.add(_text(("none", "dim")))
    after = tree.add(_text(("after", "bold")))
    old = {sq.question for sq in event.before}
    for i, sq in enumerate(event.after, start=first):
        style = "" if sq.question in old else "green"
        after.add(_text(f"{i}. ", (_data(sq.question), style), (f" → {_data(sq.target_corpus or 'any')}", "cyan")))
    if not event.after:
        after.add(_text(("none: the run ends here", "dim")))
    return tree


def _reranks(events: Sequence[RerankEvent]) -> RenderableType:
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
    table.add_column("accepted by", justify="right", overflow="fold")
    table.add_column("method", overflow="fold")
    table.add_column("order (doc, score)", overflow="fold")
    for event in events:
        order = ", ".join(f"{_data(doc)} {score:.3g}" for doc, score in event.order[:8])
        if len(event.order) > 8:
            order += f", … ({len(event.order)} in all)"
        method = f"{event.method} ({event.embedder})" if event.embedder else str(event.method)
        table.add_row(_n(event.count, "sub-question"), _text(_data(method)), _text(order))
    return Group(Rule(_text(("Re-rank", "bold")), align="left"), table)


def _source_line(doc: Document) -> Text:
    title = doc.title.strip() if doc.title and doc.title.strip() else derived_title(doc.text, 8, 60)
    bits = [b for b in (doc.date, doc.source.get("publication"), title) if b]
    return _text((" · ".join(_data(_clip(b, 60)) for b in bits), "dim"))


def _ranking(result: ResultEvent, documents: Mapping[str, Document] | None) -> RenderableType:
    table = Table(title=_text(("Final ranking", "bold")), title_justify="left", header_style="bold", expand=False)
    table.add_column("rank", justify="right", overflow="fold")
    table.add_column("document", overflow="fold")
    table.add_column("accepted by", justify="right", overflow="fold")
    table.add_column("origin", overflow="fold")
    table.add_column("first reason", overflow="fold")
    for ranked in sorted(result.ranking, key=lambda r: r.rank):
        doc_cell = _text((_data(ranked.doc_id), "cyan"))
        if documents is not None:
            doc = documents.get(ranked.doc_id)
            doc_cell.append("\n")
            doc_cell.append_text(_source_line(doc) if doc else _text(("not in the collection", "red")))
        origin = _text((ranked.origin, "green" if ranked.origin == "agent" else "dim"))
        if ranked.promoted_from_hold:
            origin.append(" (promoted)", style="yellow")
        accepted = len(ranked.accepted_by)
        table.add_row(
            str(ranked.rank),
            doc_cell,
            _text((str(accepted), "bold green" if accepted else "dim")),
            origin,
            _text(_data(_clip(ranked.reasons[0], 200)) if ranked.reasons else ("—", "dim")),
        )
    if not result.ranking:
        table.add_row("", _text(("no sources", "dim")), "", "", "")
    return table


def _llm_calls(calls: Sequence[LLMCallEvent]) -> RenderableType:
    table = Table(title=_text(("LLM calls", "bold")), title_justify="left", header_style="bold")
    table.add_column("#", justify="right", style="dim", overflow="fold")
    table.add_column("purpose", overflow="fold")
    table.add_column("sq", justify="right", overflow="fold")
    table.add_column("model", overflow="fold")
    table.add_column("tokens", justify="right", overflow="fold")
    table.add_column("latency", justify="right", overflow="fold")
    table.add_column("cost", justify="right", overflow="fold")
    table.add_column("response", overflow="fold")
    for event in calls:
        response = _text(_data(_clip(event.response, RESPONSE_CHARS)))
        if len(event.attempts) > 1:
            response.append(f" ({len(event.attempts)} attempts)", style="yellow")
        if event.error:
            response.append("\nerror: " + _data(event.error), style="red")
        table.add_row(
            str(event.seq),
            _text(_data(event.purpose)),
            "" if event.sq is None else str(event.sq),
            _text(_data(f"{event.provider}/{event.model}")),
            f"{event.prompt_tokens}+{event.completion_tokens}",
            f"{event.latency_s:.2f} s",
            f"${event.cost_usd:.4f}",
            response,
        )
    return table


_TREE_KINDS = {"search", "channel", "fusion", "review", "verdict", "memory", "guard"}


def render_trail(
    events: Sequence[Event], documents: Mapping[str, Document] | None = None, verbose: bool = False
) -> list[RenderableType]:
    """The trail as rich renderables, in the order things happened: header, plan, each sub-question's searches
    and verdicts, guards, re-evaluations, briefing, re-plan, re-rank, the final ranking, and with `verbose` the
    channels, fusions and LLM calls. `documents` (doc id → Document) adds titles and quoted evidence."""
    out: list[RenderableType] = [_header(events, verbose)]
    questions: list[SubQuestion] = []
    tree: Tree | None = None
    tree_sq: int | None = None
    pending_reevals: list[ReevalEvent] = []
    pending_reranks: list[RerankEvent] = []

    def flush() -> None:
        nonlocal tree, tree_sq
        if tree is not None:
            out.append(tree)
            tree, tree_sq = None, None
        if pending_reevals:
            out.append(_reevals(list(pending_reevals), documents))
            pending_reevals.clear()
        if pending_reranks:
            out.append(_reranks(list(pending_reranks)))
            pending_reranks.clear()

    for event in events:
        kind = event.kind
        if kind in ("run", "result", "llm_call"):
            continue
        if isinstance(event, ReevalEvent):
            if pending_reranks or tree is not None:
                flush()
            pending_reevals.append(event)
            continue
        if isinstance(event, RerankEvent):
            if pending_reevals or tree is not None:
                flush()
            pending_reranks.append(event)
            continue
        if kind in _TREE_KINDS and (event.sq is not None or kind != "guard"):
            line = _event_line(event, documents, verbose)
            if line is None:
                continue
            if tree is None or tree_sq != event.sq:
                flush()
                tree_sq = event.sq
                if event.sq is None:
                    label = _text(("Outside any sub-question", "bold"))
                else:
                    sq = questions[event.sq] if 0 <= event.sq < len(questions) else None
                    label = _text((f"Sub-question {event.sq}", "bold"))
                    if sq is not None:
                        label.append_text(
                            _text(": ", _data(sq.question), (f" → {_data(sq.target_corpus or 'any')}", "cyan"))
                        )
                tree = Tree(label)
            tree.add(line)
            continue
        flush()
        if isinstance(event, PlanEvent):
            questions = list(event.sub_questions)
            out.append(_plan(event))
        elif isinstance(event, GuardEvent):
            out.append(_text(("guard ", "bold yellow"), (_data(event.guard), "yellow"), ": ", _data(event.message)))
        elif isinstance(event, BriefingEvent):
            out.append(_briefing(event))
        elif isinstance(event, ReplanEvent):
            questions = replanned(questions, event)
            out.append(_replan(event))
        elif isinstance(event, CatalogEvent):
            out.append(_catalog_line(event))
        elif isinstance(event, DecisionEvent):
            out.append(_decision_line(event, documents))
        elif isinstance(event, JudgmentEvent | CitationCheckEvent):
            out.append(_research_line(event))
        elif isinstance(event, DraftEvent):
            out.append(_draft(event))
        elif isinstance(event, ExpansionEvent):
            out.append(_expansion(event))
    flush()

    result = result_event(events)
    if result is not None:
        out.append(_ranking(result, documents))
    if verbose:
        calls = [e for e in events if isinstance(e, LLMCallEvent)]
        if calls:
            out.append(_llm_calls(calls))
    return out


@dataclass(frozen=True)
class TrailSummary:
    """What a list of runs says of one (`tracerag trail list`, the web app's trail list)."""

    run_id: str
    kind: str  # the run's `RunKind` value, or "catalog" for a catalog conversation (its run event says "ask")
    question: str  # a catalog conversation's first request
    started: str  # the run event's time (UTC, ISO 8601)
    status: str  # the result's status, what a research run came to, "catalog · N turns", or "unfinished"


def summarise(events: Sequence[Event]) -> TrailSummary:
    """A trail's kind, question and status. An agent run: its result's status ("unfinished" before one); a
    catalog conversation has no result, only turns: "catalog · N turns", and its first request."""
    run = run_event(events)
    requests = [e.request for e in events if isinstance(e, CatalogParseEvent)]
    if requests or any(e.kind.startswith("catalog_") for e in events):
        return TrailSummary(
            run.run_id, "catalog", requests[0] if requests else "", run.time, f"catalog · {_n(len(requests), 'turn')}"
        )
    result = result_event(events)
    status = str(result.status) if result else research_status(events) or "unfinished"
    return TrailSummary(run.run_id, run.run.value, run.question, run.time, status)


def research_status(events: Sequence[Event]) -> str:
    """What a judge or answer run came to (they end without a result event); "" for any other run."""
    judged = [e for e in events if isinstance(e, JudgmentEvent)]
    drafts = [e for e in events if isinstance(e, DraftEvent)]
    if judged:
        failed = sum(e.score is None for e in judged)
        return f"judge · {_n(len(judged), 'judgment')}" + (f", {failed} failed" if failed else "")
    if drafts:
        checks = [e for e in events if isinstance(e, CitationCheckEvent)]
        flagged = sum(not (e.located and e.supported is True) for e in checks)
        return "answer · " + ("abstained" if drafts[-1].abstained else f"drafted, {flagged} citation(s) flagged")
    decisions = [e for e in events if isinstance(e, DecisionEvent)]
    if decisions or (events and isinstance(events[0], RunEvent) and events[0].run == "review"):
        now = {e.doc_id: e.decision for e in decisions}  # each source as the review left it
        counts = Counter(d.value if d is not None else "taken back" for d in now.values())
        source = events[0].config.get("from_run") if isinstance(events[0], RunEvent) else None
        told = ", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "nothing decided"
        return f"review · {_n(len(decisions), 'decision')} ({told})" + (f" of run {_data(source)}" if source else "")
    return ""


def _research_line(event: JudgmentEvent | CitationCheckEvent) -> Text:
    """A judgment (score and reasoning, or its failure) or a citation check (flagged when it could not confirm)."""
    if isinstance(event, JudgmentEvent):
        where = f"#{event.rank} " if event.rank is not None else ""
        if event.score is None:
            return _text(("judged ", "bold"), where, _data(_chunk(event.doc_id, event.chunk_id)), (" failed: ", "red"),
                         (_data(_clip(event.failure, 160)), "red"))  # fmt: skip
        cached = (" (cached)", "dim") if event.cached else ""
        return _text(("judged ", "bold"), where, _data(_chunk(event.doc_id, event.chunk_id)), " ",
                     (f"{event.score}/10", "bold"), cached, ": ", _data(_clip(event.reasoning, 160)))  # fmt: skip
    ok = event.located and event.supported is True
    span = f"{event.doc_id}:{event.span[0]}-{event.span[1]}" if event.span else _data(event.doc_id or "?")
    verdict = ("ok", "green") if ok else ("FLAGGED", "bold red")
    return _text(("check ", "bold"), f"sentence {event.sentence + 1} ", span, " ", verdict,
                 f" ({event.method}): ", _data(_clip(event.reason, 160)))  # fmt: skip


def _draft(event: DraftEvent) -> Text:
    """A cited draft, each sentence with its kind and citations; an abstention with what is missing."""
    if event.abstained:
        why = f" ({_data(event.failure)})" if event.failure else ""
        return _text(("draft abstained", "bold yellow"), ": ", _data(event.abstention), why)
    lines = _text(("draft", "bold"), f" ({event.language}, {_n(len(event.sources), 'source')})")
    for i, sentence in enumerate(event.sentences, start=1):
        cites = ", ".join(
            f"{c.label} {c.doc_id}:{c.span[0]}-{c.span[1]}" if c.span else f"{c.label} not located"
            for c in sentence.citations
        )
        lines.append_text(_text(f"\n  {i}. [{sentence.kind}] ", _data(sentence.text), (f"  [{_data(cites)}]", "dim")))
    return lines


_DECISION_STYLES = {"accepted": "green", "rejected": "red", "undecided": "yellow"}


def _decision_line(event: DecisionEvent, documents: Mapping[str, Document] | None) -> Text:
    """One decision of a review run: the source, what it became (from what), who, the note, the cited span."""
    decided = event.decision.value if event.decision is not None else "no decision"
    parts: list[Part] = [
        ("undo " if event.undo else "decision ", "bold"),
        (_data(event.doc_id), "bold"),
        " → ",
        (decided, _DECISION_STYLES.get(decided, "dim")),
    ]
    if event.previous is not None:
        parts.append((f" (was {event.previous.value})", "dim"))
    parts += [" by ", _data(event.who)]
    if event.note:
        parts += [": ", _data(event.note)]
    quote = _quote(documents, event.doc_id, event.span)
    if quote:
        parts += ["  ", ("“" + _data(_clip(quote, 100)) + "”", "italic")]
    return _text(*parts)


def _catalog_line(event: CatalogEvent) -> Text:
    """One line per catalog dialogue event; request and reply text are data, shown literally."""
    turn = f"turn {event.turn} "
    if isinstance(event, CatalogParseEvent):
        state = event.state
        parts = [f"{c['kind']}={'|'.join(c['values'])}" for c in state["structural"]]
        parts += [("not " if c["negated"] else "") + c["text"] for c in state["semantic"]]
        line = _text((turn, "bold"), _data(event.request), (" → ", "dim"), _data("; ".join(parts) or "nothing"))
        if event.topic_match:
            line.append("\n")
            line.append(_topic_match(event.topic_match))
        return line
    if isinstance(event, CatalogFilterEvent):
        return _text(
            (turn, "bold"),
            f"variant {event.variant}, pre-filter on {', '.join(event.sql_kinds) or 'nothing'}: "
            f"{event.allowed} records, {len(event.ranked)} candidates ranked",
        )
    if isinstance(event, CatalogCheckEvent):
        mark = ("✓ ", "green") if event.selected else ("✗ ", "red")
        why = "; ".join(event.violations) or "; ".join(str(s.get("reason", "")) for s in event.semantic)
        return _text((turn, "bold"), mark, _data(event.record_id), " ", (_data(why), "dim"))
    outcome = OUTCOME_STYLE.get(event.outcome, "")
    removed = f" ({len(event.removed)} removed from the generated reply)" if event.removed else ""
    # The reply is a paragraph: kept with its line breaks, made safe by `_text`.
    return _text((turn, "bold"), (event.outcome, outcome), removed, "\n", event.text)


def _topic_match(match: Mapping[str, Any]) -> Text:
    """Whether the catalog holds the request's topic, with the evidence that decided it: the passage that holds
    its words together, or each specific word with the number of records holding it."""
    held = bool(match.get("held"))
    head = _text(
        ("  topic ", "dim"),
        _data(str(match.get("topic", ""))),
        (" held" if held else " not held", "green" if held else "yellow"),
        (f" ({match.get('via', '')})", "dim"),
    )
    passage = match.get("passage")
    if passage:
        head.append_text(
            _text(
                ": ",
                _data(str(passage.get("record_id", ""))),
                f" {passage.get('field', '')} ",
                ("“", "dim"),
                _data(str(passage.get("quote", ""))),
                ("”", "dim"),
            )
        )
    types = [t for t in match.get("service_types", []) if t.get("name")]
    if types and not passage:
        named = ", ".join(f"{t['name']} ({t.get('records', 0)} records)" for t in types)
        head.append_text(_text(": service type ", (_data(named), "dim")))
    words = [w for w in match.get("words", []) if not w.get("common")]
    if words and not passage and not types:
        counts = ", ".join(f"'{w.get('word')}' in {w.get('records')} records" for w in words)
        head.append_text(_text(": ", (_data(counts), "dim")))
    return head


def print_trail(
    events: Sequence[Event],
    console: Console,
    documents: Mapping[str, Document] | None = None,
    verbose: bool = False,
) -> None:
    """Print `render_trail(...)` to `console`."""
    for renderable in render_trail(events, documents, verbose):
        console.print(renderable)
