"""The trail viewer: `/trails` (the runs of each collection) and `/trails/{collection}/{run_id}` (one run as a
timeline: plan → each sub-question's searches and verdicts → re-evaluation → briefing and re-plan → rank →
result, each step with its events and its model calls, each call expandable with its prompt, answer, tokens and
latency; export links). The served catalog's conversations are listed in a section of their own and shown at
`/catalog/trails/{run_id}` (not under `/trails/...`, where a collection named "catalog" lives). Research runs
(search, judge, review, answer) and catalog conversations are shown by the same steps, by what their events are.

Nothing is decided here: the steps are the trail's own events, grouped in the order they happened by what they
belong to (`step_of`). Every text from a trail (questions, reasons, prompts, answers, quotes) reaches the page
through Jinja's autoescaping only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import Response

from tracerag.model import Document, SubQuestion
from tracerag.server.api.trails import (
    catalog_roots,
    documents_of,
    items_of,
    read_served_trail,
    torn_note,
    trail_file,
    trail_items,
)
from tracerag.server.deps import State
from tracerag.server.pages.search import document_href
from tracerag.trail import Event
from tracerag.trail.events import (
    CatalogCheckEvent,
    CatalogFilterEvent,
    CatalogParseEvent,
    CatalogReplyEvent,
    LLMCallEvent,
    LLMPurpose,
    PlanEvent,
    ReplanEvent,
    RunKind,
)
from tracerag.trail.export import derived_title, replanned, result_event, run_event
from tracerag.trail.summary import research_status, summarise

router = APIRouter(include_in_schema=False)

# the step a model call belongs to, by what it was for (None: the step it happened in, as a catalog call)
CALL_STEPS: dict[LLMPurpose, str | None] = {
    LLMPurpose.PLAN: "plan",
    LLMPurpose.ACTION: "sub_question",
    LLMPurpose.REVIEW: "sub_question",
    LLMPurpose.REEVAL: "reeval",
    LLMPurpose.BRIEFING: "briefing",
    LLMPurpose.RERANK: "rank",
    LLMPurpose.VARIANTS: "search",
    LLMPurpose.TRANSLATE: "search",
    LLMPurpose.JUDGE: "judge",
    LLMPurpose.DRAFT: "answer",
    LLMPurpose.CITE_CHECK: "answer",
}
EVENT_STEPS = {
    "plan": "plan",
    "reeval": "reeval",
    "briefing": "briefing",
    "replan": "briefing",
    "rerank": "rank",
    "result": "result",
    "expansion": "search",
    "judgment": "judge",
    "draft": "answer",
    "cite_check": "answer",
    "withdrawn": "answer",
    "decision": "review",
    "call": "call",
}
SEARCH_KINDS = {"search", "channel", "fusion", "windows", "review", "verdict", "memory", "guard"}
EXPORT_LABELS = {"csv": "CSV", "ris": "RIS", "csl-json": "CSL-JSON"}
CatalogEvent = CatalogParseEvent | CatalogFilterEvent | CatalogCheckEvent | CatalogReplyEvent


@dataclass
class Step:
    """One step of the timeline: what it is (`kind`, for its heading and style), which sub-question or catalog
    turn it belongs to, and its events in order."""

    kind: str
    sq: int | None
    title: str
    events: list[Event] = field(default_factory=list)

    @property
    def calls(self) -> list[LLMCallEvent]:
        return [e for e in self.events if isinstance(e, LLMCallEvent)]


def step_of(event: Event) -> tuple[str, int | None] | None:
    """The step `event` belongs to; None: the step it happened in (a catalog's model call, say)."""
    if isinstance(event, LLMCallEvent):
        kind = CALL_STEPS.get(event.purpose)
        return None if kind is None else (kind, event.sq if kind in ("sub_question", "reeval", "briefing") else None)
    if isinstance(event, CatalogEvent):
        return ("turn", event.turn)
    if event.kind in EVENT_STEPS:
        kind = EVENT_STEPS[event.kind]
        return (kind, event.sq if kind in ("reeval", "briefing") else None)
    if event.kind in SEARCH_KINDS:
        if event.sq is not None:
            return ("sub_question", event.sq)
        return ("guard", None) if event.kind == "guard" else ("search", None)
    return ("other", None)


def _title(kind: str, sq: int | None, questions: Sequence[SubQuestion]) -> str:
    n = "" if sq is None else f" {sq + 1}"
    if kind == "sub_question":
        question = questions[sq] if sq is not None and 0 <= sq < len(questions) else None
        if question is None:
            return f"Sub-question{n}"
        return f"Sub-question{n}: {question.question} → {question.target_corpus or 'any corpus'}"
    return {
        "plan": "Plan",
        "reeval": f"Re-evaluation of the held documents (sub-question{n})" if n else "Re-evaluation",
        "briefing": f"Briefing and re-plan after sub-question{n}" if n else "Briefing and re-plan",
        "rank": "Final rank",
        "result": "Result",
        "search": "Search",
        "judge": "Judging against the criteria",
        "answer": "Cited draft and its check",
        "review": "The researcher's decisions",
        "call": "The assistant's call and what it got",
        "turn": f"Turn{n}",
        "guard": "Guard",
    }.get(kind, "Other events")


def timeline(events: Sequence[Event]) -> list[Step]:
    """The run's events after its `run` event, as steps in the order they happened: consecutive events of the
    same step together (a step that comes back later, as a sub-question after a guard, is a new step)."""
    steps: list[Step] = []
    questions: list[SubQuestion] = []
    agent_run = summarise(events).kind == "ask"
    for event in events[1:]:
        if isinstance(event, PlanEvent):
            questions = list(event.sub_questions)
        key = step_of(event)
        if key is None and steps:
            steps[-1].events.append(event)
            continue
        kind, sq = key or ("other", None)
        if not steps or (steps[-1].kind, steps[-1].sq) != (kind, sq):
            title = _title(kind, sq, questions)
            if agent_run and kind == "search":  # the agent's searches belong to sub-questions; these did not
                title = "Searches outside any sub-question"
            steps.append(Step(kind, sq, title))
        steps[-1].events.append(event)
        if isinstance(event, ReplanEvent):
            questions = replanned(questions, event)
    return steps


@dataclass
class RunFacts:
    """The timeline's header: what `trail show` puts in its panel."""

    kind: str
    llm: str | None
    status: str
    calls: int
    failed_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    totals: dict[str, float]
    verdicts: dict[str, int] | None
    question: str  # what was asked: the run's question, a call's tool and the arguments that hold something


def run_facts(events: Sequence[Event]) -> RunFacts:
    run, result = run_event(events), result_event(events)
    calls = [e for e in events if isinstance(e, LLMCallEvent)]
    summary = summarise(events)
    status = summary.status
    if result is not None and result.message:
        status += f": {result.message}"
    elif result is None and not research_status(events) and summary.kind not in ("catalog", "call"):
        status = "unfinished: the trail has no result"
    verdicts = None
    if result is not None and run.run is RunKind.ASK and summary.kind == "ask":
        verdicts = {"accepted": len(result.accepted), "held": len(result.held), "rejected": len(result.rejected)}
    return RunFacts(
        kind=summary.kind,
        llm="/".join(run.llm.values()) if run.llm else None,
        status=status,
        calls=len(calls),
        failed_calls=sum(1 for c in calls if c.error),
        prompt_tokens=sum(c.prompt_tokens for c in calls),
        completion_tokens=sum(c.completion_tokens for c in calls),
        cost_usd=sum(c.cost_usd for c in calls),
        latency_s=sum(c.latency_s for c in calls),
        totals=dict(result.totals) if result is not None else {},
        verdicts=verdicts,
        question=summary.question if summary.kind == "call" else run.question,
    )


class Documents:
    """The documents a trail names, for the template: a title, the document view's address at a span, and the
    quoted evidence (the document's text at the span; None when it is not there)."""

    def __init__(self, collection: str, documents: dict[str, Document]):
        self.collection = collection
        self.documents = documents

    def has(self, doc_id: str) -> bool:
        return doc_id in self.documents

    def title(self, doc_id: str) -> str:
        doc = self.documents.get(doc_id)
        if doc is None:
            return doc_id
        return " ".join(doc.title.split()) if doc.title and doc.title.strip() else derived_title(doc.text) or doc_id

    def href(self, doc_id: str, span: Sequence[int] | None = None) -> str:
        if span is not None and len(span) == 2:
            return document_href(self.collection, doc_id, int(span[0]), int(span[1]))
        return document_href(self.collection, doc_id)

    def quote(self, doc_id: str, span: Sequence[int] | None) -> str | None:
        doc = self.documents.get(doc_id)
        if doc is None or span is None or len(span) != 2:
            return None
        start, end = int(span[0]), int(span[1])
        return doc.text[start:end] if 0 <= start < end <= len(doc.text) else None


def per_document(ranking: Sequence[Sequence[Any]]) -> list[tuple[str, int, int]]:
    """A channel's chunk ranking ((doc_id, chunk_id, score), best first) as its documents: (doc_id, the rank of
    its best chunk, how many of its chunks), in the order of their best chunk. One document's chunks side by side
    would read as that many documents."""
    found: dict[str, list[int]] = {}
    for rank, (doc_id, *_rest) in enumerate(ranking, 1):
        found.setdefault(doc_id, [rank, 0])[1] += 1
    return [(doc_id, best, n) for doc_id, (best, n) in found.items()]


def as_json(value: Any) -> str:
    """An argument of a call as JSON, its letters as typed (Jinja's `tojson` writes é as \\u00e9)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _render(request: Request, template: str, context: dict[str, Any]) -> Response:
    context = {"page": "trails", "per_document": per_document, "as_json": as_json, **context}
    return request.app.state.templates.TemplateResponse(request, template, context)


@router.get("/trails")
def trails_page(request: Request, state: State) -> Response:
    collections = [(name, trail_items(state, name)) for name in sorted(state.collections)]
    catalog = state.config.catalog
    context = {
        "collections": collections,
        "catalog": None if catalog is None else (catalog.name, items_of(catalog_roots(state))),
    }
    return _render(request, "trails.html", context)


@router.get("/trails/{collection}/{run_id}")
def trail_page(request: Request, collection: str, run_id: str, state: State) -> Response:
    trail = read_served_trail(trail_file(state, collection, run_id))
    events = trail.events
    run = run_event(events)
    exports = []
    if result_event(events) is not None:
        base = f"/api/collections/{quote(collection, safe='')}/trails/{quote(run.run_id, safe='')}/export"
        exports = [(label, f"{base}?format={fmt}") for fmt, label in EXPORT_LABELS.items()]
    context = {
        "collection": collection,
        "run": run,
        "facts": run_facts(events),
        "steps": timeline(events),
        "docs": Documents(collection, documents_of(state, collection, events)),
        "exports": exports,
        "damaged": None if trail.torn is None else torn_note(trail.torn),
    }
    return _render(request, "trail.html", context)


@router.get("/catalog/trails/{run_id}")
def catalog_trail_page(request: Request, run_id: str, state: State) -> Response:
    """A catalog conversation's trail, by the same timeline (its turns are steps; it names records, not
    documents of a served collection)."""
    roots = catalog_roots(state)
    trail = read_served_trail(trail_file(state, "catalog", run_id, roots))
    events = trail.events
    context = {
        "collection": f"Catalog: {roots[0].name}",
        "run": run_event(events),
        "facts": run_facts(events),
        "steps": timeline(events),
        "docs": Documents("", {}),
        "exports": [],
        "damaged": None if trail.torn is None else torn_note(trail.torn),
    }
    return _render(request, "trail.html", context)
