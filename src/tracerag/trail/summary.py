"""What a list of runs says of each: its kind, question and status, from its trail's events (`tracerag trail
list`, the web app's trail list and the header of `trail show`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from tracerag.trail.events import (
    CallEvent,
    CatalogParseEvent,
    CitationCheckEvent,
    DecisionEvent,
    DraftEvent,
    Event,
    JudgmentEvent,
    RunEvent,
    RunKind,
    WithdrawalEvent,
)
from tracerag.trail.export import result_event, run_event
from tracerag.trail.show_text import data, plural


@dataclass(frozen=True)
class TrailSummary:
    """What a list of runs says of one (`tracerag trail list`, the web app's trail list)."""

    run_id: str
    kind: str  # the run's `RunKind` value, or "catalog" for a catalog conversation (its run event says "ask")
    question: str  # a catalog conversation's first request
    started: str  # the run event's time (UTC, ISO 8601)
    status: str  # the result's status, what a research run came to, "catalog · N turns", or "unfinished"
    client: str | None = None  # the assistant that asked for it (`RunEvent.client`); None: the CLI or web app


def summarise(events: Sequence[Event]) -> TrailSummary:
    """A trail's kind, question and status. An agent run: its result's status ("unfinished" before one); a
    catalog conversation has no result, only turns: "catalog · N turns", and its first request."""
    run = run_event(events)
    requests = [e.request for e in events if isinstance(e, CatalogParseEvent)]
    if requests or any(e.kind.startswith("catalog_") for e in events):
        return TrailSummary(
            run.run_id,
            "catalog",
            requests[0] if requests else "",
            run.time,
            f"catalog · {plural(len(requests), 'turn')}",
            run.client,
        )
    result = result_event(events)
    if run.run is RunKind.CALL:  # an assistant's call: answered when its call event is there
        call = next((e for e in events if isinstance(e, CallEvent)), None)
        question = call_line(call) if call is not None else run.question
        return TrailSummary(
            run.run_id, run.run.value, question, run.time, "answered" if call else "unfinished", run.client
        )
    status = str(result.status) if result else research_status(events) or "unfinished"
    return TrailSummary(run.run_id, run.run.value, run.question, run.time, status, run.client)


def call_line(call: CallEvent) -> str:
    """A call as a list of runs shows it: the tool and the arguments that hold something (`document
    doc_id="x" max_chars=20000`), each value as JSON, so that a reader sees what was asked without the
    arguments left empty or off."""
    given = [
        f"{name}={json.dumps(value, ensure_ascii=False)}"
        for name, value in sorted(call.arguments.items())
        if value is not False and value not in (None, "", [], {})  # `is`: 0 is a value, not off
    ]
    return " ".join([call.tool, *given])


def research_status(events: Sequence[Event]) -> str:
    """What a judge, answer or review run came to (they end without a result event); "" for any other run."""
    judged = [e for e in events if isinstance(e, JudgmentEvent)]
    if judged:
        failed = sum(e.score is None for e in judged)
        return f"judge · {plural(len(judged), 'judgment')}" + (f", {failed} failed" if failed else "")
    drafts = [e for e in events if isinstance(e, DraftEvent)]
    if drafts:
        checks = [e for e in events if isinstance(e, CitationCheckEvent)]
        flagged = sum(not (e.located and e.supported is True) for e in checks)
        if any(isinstance(e, WithdrawalEvent) for e in events):
            return f"answer · withdrawn, {flagged} citation(s) flagged"
        return "answer · " + ("abstained" if drafts[-1].abstained else f"drafted, {flagged} citation(s) flagged")
    decisions = [e for e in events if isinstance(e, DecisionEvent)]
    run = events[0] if events and isinstance(events[0], RunEvent) else None
    if decisions or (run is not None and run.run == "review"):
        return _review_status(decisions, run)
    return ""


def _review_status(decisions: Sequence[DecisionEvent], run: RunEvent | None) -> str:
    """How many decisions a review made, what each source came to, and the run it reviewed."""
    now = {e.doc_id: e.decision for e in decisions}  # each source as the review left it
    counts = Counter(d.value if d is not None else "taken back" for d in now.values())
    source = run.config.get("from_run") if run is not None else None
    told = ", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "nothing decided"
    return f"review · {plural(len(decisions), 'decision')} ({told})" + (f" of run {data(source)}" if source else "")
