"""An agent run's steps as a terminal shows them: the plan, each sub-question's searches, verdicts and guards,
re-evaluation, briefing, re-plan, re-rank, the final ranking and the model calls (`show.render_trail` lays them out).
Text from the run comes through `show_text` only (data, never markup)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from tracerag.model import Document, FusionMethod
from tracerag.trail.events import (
    BriefingEvent,
    ChannelEvent,
    Event,
    ExpansionEvent,
    FusionEvent,
    GuardEvent,
    LLMCallEvent,
    MemoryEvent,
    PlanEvent,
    ReevalEvent,
    ReplanEvent,
    RerankEvent,
    ResultEvent,
    ReviewEvent,
    SearchEvent,
    VerdictEvent,
    WindowShareEvent,
)
from tracerag.trail.export import derived_title
from tracerag.trail.show_text import Part, chunk_label, clip, compact_json, data, plural, quote, text

RRF_METHODS = (FusionMethod.RRF, FusionMethod.WRRF)  # the methods whose k is worth showing

VERDICT_STYLE = {"accept": "bold green", "hold": "bold yellow", "reject": "bold red"}


RESPONSE_CHARS = 240


def verdict_line(event: VerdictEvent | ReevalEvent, documents: Mapping[str, Document] | None, prefix: str = "") -> Text:
    verdict = str(event.verdict)
    parts: list[Part] = []
    if prefix:
        parts.append((prefix, "dim"))
    parts += [
        (verdict.upper().ljust(6), VERDICT_STYLE.get(verdict, "bold")),
        " ",
        (data(chunk_label(event.doc_id, event.chunk_id)), "cyan"),
    ]
    if isinstance(event, ReevalEvent) and event.promoted_from_hold:
        parts.append((" promoted from hold", "bold green"))
    if isinstance(event, VerdictEvent) and event.carried_from is not None:
        parts.append((f" (verdict of sub-question {event.carried_from})", "dim"))
    parts += [" — ", data(event.reason)]
    if event.span is not None:
        parts.append((f" [{event.span[0]}:{event.span[1]}]", "dim"))
    quoted = quote(documents, event.doc_id, event.span)
    if quoted:
        parts += [" ", ("“" + data(quoted) + "”", "italic")]
    if event.failure:
        parts += [" ", ("(no usable verdict: " + data(event.failure) + ")", "yellow")]
    return text(*parts)


def plan(event: PlanEvent) -> RenderableType:
    table = Table(title=None, show_header=True, header_style="bold", expand=False, box=None, padding=(0, 1))
    table.add_column("#", justify="right", style="dim", overflow="fold")
    table.add_column("sub-question", overflow="fold")
    table.add_column("target corpus", style="cyan", overflow="fold")
    table.add_column("key entities", style="dim", overflow="fold")
    for i, sq in enumerate(event.sub_questions):
        table.add_row(
            str(i),
            text(data(sq.question)),
            text(data(sq.target_corpus or "any")),
            text(data(", ".join(sq.key_entities))),
        )
    parts: list[RenderableType] = [Rule(text(("Plan", "bold")), align="left")]
    if event.analysis:
        parts.append(text(("analysis: ", "bold"), data(event.analysis)))
    if event.dates:
        parts.append(text(("dates: ", "bold"), data(", ".join(event.dates))))
    if event.fallback:
        parts.append(text(("fell back to the question itself: ", "bold yellow"), data(event.fallback)))
    parts.append(table)
    return Group(*parts)


def expansion(event: ExpansionEvent) -> RenderableType:
    """What a search ran as: the query with the researcher's additions, the filter, each variant and its top."""
    tree = Tree(text(("expansion ", "bold"), "searched ", ("“" + data(event.searched) + "”", "italic")))
    for applied in event.synonyms:
        added = ", ".join(data(a) for a in applied.get("added", []))
        tree.add(
            text(
                "synonym map: ",
                data(str(applied.get("found", ""))),
                f" → {added}",
                (f" (line {applied.get('line')})", "dim"),
            )
        )
    if event.filter_expression:
        tree.add(text("filter ", data(event.filter_expression), f" → {event.allowed} documents allowed"))
    for v in event.variants:
        kind = v.source if v.kind is None else f"{v.source}/{v.kind}"
        top = ", ".join(data(d) for d in v.ranking[:5])
        weight = event.weights.get(v.name)
        tree.add(
            text(
                (data(v.name), "bold"),
                f" ({kind}" + (f", weight {weight:g}" if weight is not None else "") + "): ",
                ("“" + data(v.query) + "”", "italic"),
                (f" → {top}" if top else " → nothing", "dim"),
            )
        )
    for failure in event.failures:
        tree.add(text(("failed: ", "bold red"), data(failure)))
    return tree


def _search_line(event: SearchEvent) -> Text:
    args = ", ".join(f"{data(k)}={compact_json(v, 80)}" for k, v in event.args.items())
    parts: list[Part] = [
        (f"step {event.step} ", "dim"),
        ("search ", "bold blue"),
        (data(event.tool), "blue"),
        f"({args})",
    ]
    flt = {k: v for k, v in event.filter.items() if v not in (None, [], {}, "")}
    if flt:
        parts.append((" filter " + compact_json(flt, 120), "dim"))
    if event.skipped:
        parts += [" ", ("skipped: " + event.skipped.reason, "yellow")]
    else:
        parts.append(f" → {event.results} results, {event.new} new")
    return text(*parts)


def event_line(event: Event, documents: Mapping[str, Document] | None, verbose: bool) -> Text | None:
    """One line of a sub-question's tree, or None when the event is shown only in verbose mode."""
    step = getattr(event, "step", None)
    prefix = f"step {step} " if step is not None else ""
    if isinstance(event, SearchEvent):
        return _search_line(event)
    if isinstance(event, VerdictEvent):
        return verdict_line(event, documents, prefix)
    if isinstance(event, GuardEvent):
        return text(
            (prefix, "dim"), ("guard ", "bold yellow"), (data(event.guard), "yellow"), ": ", data(event.message)
        )
    if isinstance(event, ReviewEvent):
        return text((prefix, "dim"), ("review ", "bold"), f"{len(event.chunks)} chunks shown to the model")
    if isinstance(event, MemoryEvent):
        return text(
            (prefix, "dim"), ("memory ", "bold magenta"), data(event.memory), " ", (compact_json(event.delta), "dim")
        )
    return _detail_line(event, prefix) if verbose else None


def _detail_line(event: Event, prefix: str) -> Text | None:
    """The verbose lines of a sub-question's tree: each channel's ranking, the fusion, the time windows' shares."""
    if isinstance(event, ChannelEvent):
        top = ", ".join(data(doc) for doc, _chunk_id, _score in event.ranking[:5])
        fields = f" (merged from {', '.join(data(f) for f in event.fields)})" if event.fields else ""
        return text(
            (prefix, "dim"),
            ("channel ", "bold"),
            data(event.channel),
            " ",
            ("“" + data(clip(event.query, 80)) + "”", "italic"),
            f" → {len(event.ranking)}{fields}: ",
            (top, "dim"),
        )
    if isinstance(event, FusionEvent):
        top = ", ".join(data(item.get("doc_id", "?")) for item in event.ranking[:5])
        method = f"{event.method}(k={event.rrf_k})" if event.method in RRF_METHODS else str(event.method)
        if isinstance(event.normalisation, dict):
            method += "(" + ", ".join(f"{c} {n}" for c, n in event.normalisation.items()) + ")"
        elif event.normalisation:
            method += f"({event.normalisation})"
        if event.weights:
            method += " " + ", ".join(f"{c} {w:.2f}" for c, w in event.weights.items())
        return text((prefix, "dim"), ("fusion ", "bold"), method, f" → {len(event.ranking)}: ", (top, "dim"))
    if isinstance(event, WindowShareEvent):
        # the windows that draw more than their share of the results: where the loudest decade pulls
        loud = sorted((r for r in event.rows if r.ratio is not None and r.ratio > 1), key=lambda r: -(r.ratio or 0))
        pulls = ", ".join(
            f"{data(r.window)} {r.result_share:.0%} of results vs {r.corpus_share:.0%} searched" for r in loud[:3]
        )
        return text(
            (prefix, "dim"),
            ("windows ", "bold"),
            f"{data(event.window)} ({data(event.chosen)}): {event.results} results of {event.searched} searched",
            (f"; over their share: {pulls}" if pulls else "", "dim"),
        )
    return None


def reevals(events: Sequence[ReevalEvent], documents: Mapping[str, Document] | None) -> RenderableType:
    promoted = sum(1 for e in events if e.promoted_from_hold)
    title = text(("Re-evaluation of held chunks", "bold"), f"  {plural(len(events), 'chunk')}, {promoted} promoted")
    lines: list[RenderableType] = [Rule(title, align="left")]
    for event in events:
        prefix = f"sq {event.sq} " if event.sq is not None else ""
        lines.append(verdict_line(event, documents, prefix))
    return Group(*lines)


def briefing(event: BriefingEvent) -> RenderableType:
    title = "Briefing" if event.sq is None else f"Briefing after sub-question {event.sq}"
    tree = Tree(text((title, "bold")))
    tree.add(text(data(event.summary)))
    for label, items in (
        ("key facts", event.key_facts),
        ("confirmed dates", event.confirmed_dates),
        ("confirmed entities", event.confirmed_entities),
        ("gaps", event.gaps),
        ("search hints", event.search_hints),
    ):
        if items:
            branch = tree.add(text((label, "bold")))
            for item in items:
                branch.add(text(data(item)))
    if event.failure:
        tree.add(text(("failed: " + data(event.failure), "yellow")))
    return tree


def replan(event: ReplanEvent) -> RenderableType:
    """The sub-questions still to come, before and after; numbered as the sub-questions they will be."""
    first = 0 if event.sq is None else event.sq + 1
    title = "Re-plan" if event.sq is None else f"Re-plan after sub-question {event.sq}: the sub-questions to come"
    tree = Tree(text((title, "bold")))
    if event.failure:
        tree.add(text(("failed, the plan stands: " + data(event.failure), "yellow")))
    before = tree.add(text(("before", "dim")))
    for i, sq in enumerate(event.before, start=first):
        before.add(text(f"{i}. ", data(sq.question), (f" → {data(sq.target_corpus or 'any')}", "cyan")))
    if not event.before:
        before.add(text(("none", "dim")))
    after = tree.add(text(("after", "bold")))
    old = {sq.question for sq in event.before}
    for i, sq in enumerate(event.after, start=first):
        style = "" if sq.question in old else "green"
        after.add(text(f"{i}. ", (data(sq.question), style), (f" → {data(sq.target_corpus or 'any')}", "cyan")))
    if not event.after:
        after.add(text(("none: the run ends here", "dim")))
    return tree


def reranks(events: Sequence[RerankEvent]) -> RenderableType:
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1))
    table.add_column("accepted by", justify="right", overflow="fold")
    table.add_column("method", overflow="fold")
    table.add_column("order (doc, score)", overflow="fold")
    for event in events:
        order = ", ".join(f"{data(doc)} {score:.3g}" for doc, score in event.order[:8])
        if len(event.order) > 8:
            order += f", … ({len(event.order)} in all)"
        method = f"{event.method} ({event.embedder})" if event.embedder else str(event.method)
        table.add_row(plural(event.count, "sub-question"), text(data(method)), text(order))
    return Group(Rule(text(("Re-rank", "bold")), align="left"), table)


def _source_line(doc: Document) -> Text:
    title = doc.title.strip() if doc.title and doc.title.strip() else derived_title(doc.text, 8, 60)
    bits = [b for b in (doc.date, doc.source.get("publication"), title) if b]
    return text((" · ".join(data(clip(b, 60)) for b in bits), "dim"))


def ranking(result: ResultEvent, documents: Mapping[str, Document] | None) -> RenderableType:
    table = Table(title=text(("Final ranking", "bold")), title_justify="left", header_style="bold", expand=False)
    table.add_column("rank", justify="right", overflow="fold")
    table.add_column("document", overflow="fold")
    table.add_column("accepted by", justify="right", overflow="fold")
    table.add_column("origin", overflow="fold")
    table.add_column("first reason", overflow="fold")
    for ranked in sorted(result.ranking, key=lambda r: r.rank):
        doc_cell = text((data(ranked.doc_id), "cyan"))
        if documents is not None:
            doc = documents.get(ranked.doc_id)
            doc_cell.append("\n")
            doc_cell.append_text(_source_line(doc) if doc else text(("not in the collection", "red")))
        origin = text((ranked.origin, "green" if ranked.origin == "agent" else "dim"))
        if ranked.promoted_from_hold:
            origin.append(" (promoted)", style="yellow")
        accepted = len(ranked.accepted_by)
        table.add_row(
            str(ranked.rank),
            doc_cell,
            text((str(accepted), "bold green" if accepted else "dim")),
            origin,
            text(data(clip(ranked.reasons[0], 200)) if ranked.reasons else ("—", "dim")),
        )
    if not result.ranking:
        table.add_row("", text(("no sources", "dim")), "", "", "")
    return table


def llm_calls(calls: Sequence[LLMCallEvent]) -> RenderableType:
    table = Table(title=text(("LLM calls", "bold")), title_justify="left", header_style="bold")
    table.add_column("#", justify="right", style="dim", overflow="fold")
    table.add_column("purpose", overflow="fold")
    table.add_column("sq", justify="right", overflow="fold")
    table.add_column("model", overflow="fold")
    table.add_column("tokens", justify="right", overflow="fold")
    table.add_column("latency", justify="right", overflow="fold")
    table.add_column("cost", justify="right", overflow="fold")
    table.add_column("response", overflow="fold")
    for event in calls:
        response = text(data(clip(event.response, RESPONSE_CHARS)))
        if len(event.attempts) > 1:
            response.append(f" ({len(event.attempts)} attempts)", style="yellow")
        if event.error:
            response.append("\nerror: " + data(event.error), style="red")
        table.add_row(
            str(event.seq),
            text(data(event.purpose)),
            "" if event.sq is None else str(event.sq),
            text(data(f"{event.provider}/{event.model}")),
            f"{event.prompt_tokens}+{event.completion_tokens}",
            f"{event.latency_s:.2f} s",
            f"${event.cost_usd:.4f}",
            response,
        )
    return table
