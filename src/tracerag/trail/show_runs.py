"""The lines of the runs that are not an agent's: a catalog conversation's turns, a judge's judgments, an answer's
draft and citation checks, a review's decisions, an assistant's tool call. Text from the run comes through
`show_text` only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from tracerag.model import Document
from tracerag.trail.events import (
    CallEvent,
    CatalogCheckEvent,
    CatalogFilterEvent,
    CatalogOutcome,
    CatalogParseEvent,
    CatalogReplyEvent,
    CitationCheckEvent,
    DecisionEvent,
    DraftEvent,
    JudgmentEvent,
)
from tracerag.trail.show_text import Part, chunk_label, clip, compact_json, data, plural, quote, text

CatalogEvent = CatalogParseEvent | CatalogFilterEvent | CatalogCheckEvent | CatalogReplyEvent


OUTCOME_STYLE = {
    CatalogOutcome.ANSWER: "green",
    CatalogOutcome.NONE_FOUND: "yellow",
    CatalogOutcome.NO_MATCH: "yellow",
    CatalogOutcome.CLARIFY: "cyan",
}


def research_line(event: JudgmentEvent | CitationCheckEvent) -> Text:
    """A judgment (score and reasoning, or its failure) or a citation check (flagged when it could not confirm)."""
    if isinstance(event, JudgmentEvent):
        where = f"#{event.rank} " if event.rank is not None else ""
        judged: list[Part] = [("judged ", "bold"), where, data(chunk_label(event.doc_id, event.chunk_id))]
        if event.score is None:
            return text(*judged, (" failed: ", "red"), (data(clip(event.failure, 160)), "red"))
        cached = (" (cached)", "dim") if event.cached else ""
        return text(*judged, " ", (f"{event.score}/10", "bold"), cached, ": ", data(clip(event.reasoning, 160)))
    ok = event.located and event.supported is True
    span = f"{event.doc_id}:{event.span[0]}-{event.span[1]}" if event.span else data(event.doc_id or "?")
    verdict = ("ok", "green") if ok else ("FLAGGED", "bold red")
    return text(
        ("check ", "bold"),
        f"sentence {event.sentence + 1} ",
        span,
        " ",
        verdict,
        f" ({event.method}): ",
        data(clip(event.reason, 160)),
    )


def draft(event: DraftEvent) -> Text:
    """A cited draft, each sentence with its kind and citations; an abstention with what is missing."""
    if event.abstained:
        why = f" ({data(event.failure)})" if event.failure else ""
        return text(("draft abstained", "bold yellow"), ": ", data(event.abstention), why)
    lines = text(("draft", "bold"), f" ({event.language}, {plural(len(event.sources), 'source')})")
    if event.evidence is not None:  # checked before the model drafted: how much of the question a source holds
        e = event.evidence
        which = "names and numbers" if e.cross_lingual else "words"
        lines.append_text(text((f"\n  a source holds {e.share:.0%} of the question's {which}", "dim"),
                               (f" ({e.needed:.0%} wanted)", "dim")))  # fmt: skip
    for i, sentence in enumerate(event.sentences, start=1):
        cites = ", ".join(
            f"{c.label} {c.doc_id}:{c.span[0]}-{c.span[1]}" if c.span else f"{c.label} not located"
            for c in sentence.citations
        )
        lines.append_text(text(f"\n  {i}. [{sentence.kind}] ", data(sentence.text), (f"  [{data(cites)}]", "dim")))
    return lines


DIGEST_SHOWN = 12  # hex digits of an answer's digest: enough to tell two answers apart by eye


def call_block(event: CallEvent, documents: Mapping[str, Document] | None) -> Text:
    """An assistant's tool call: the tool, each argument on its line (as JSON), the documents the answer named
    (with their titles when the collection holds them) and the answer's digest, short."""
    lines = text(("call ", "bold"), (data(event.tool), "bold"))
    for name, value in sorted(event.arguments.items()):
        lines.append_text(text("\n  ", (data(name), "cyan"), " = ", data(compact_json(value, 160))))
    named = plural(len(event.doc_ids), "document")
    lines.append_text(text("\n", ("answered ", "bold"), f"{event.chars:,} characters of JSON naming {named}"))
    for doc_id in event.doc_ids:
        doc = (documents or {}).get(doc_id)
        title = " ".join(doc.title.split()) if doc is not None and doc.title else ""
        lines.append_text(text("\n  ", data(doc_id), (f"  {data(clip(title, 80))}" if title else "", "dim")))
    lines.append_text(text("\n", ("digest ", "bold"), (event.digest[:DIGEST_SHOWN], "dim"), ("…", "dim")))
    return lines


_DECISION_STYLES = {"accepted": "green", "rejected": "red", "undecided": "yellow"}


def decision_line(event: DecisionEvent, documents: Mapping[str, Document] | None) -> Text:
    """One decision of a review run: the source, what it became (from what), who, the note, the cited span."""
    decided = event.decision.value if event.decision is not None else "no decision"
    parts: list[Part] = [
        ("undo " if event.undo else "decision ", "bold"),
        (data(event.doc_id), "bold"),
        " → ",
        (decided, _DECISION_STYLES.get(decided, "dim")),
    ]
    if event.previous is not None:
        parts.append((f" (was {event.previous.value})", "dim"))
    parts += [" by ", data(event.who)]
    if event.note:
        parts += [": ", data(event.note)]
    quoted = quote(documents, event.doc_id, event.span)
    if quoted:
        parts += ["  ", ("“" + data(clip(quoted, 100)) + "”", "italic")]
    return text(*parts)


def catalog_line(event: CatalogEvent) -> Text:
    """One line per catalog dialogue event; request and reply text are data, shown literally."""
    turn = f"turn {event.turn} "
    if isinstance(event, CatalogParseEvent):
        state = event.state
        parts = [f"{c['kind']}={'|'.join(c['values'])}" for c in state["structural"]]
        parts += [("not " if c["negated"] else "") + c["text"] for c in state["semantic"]]
        line = text((turn, "bold"), data(event.request), (" → ", "dim"), data("; ".join(parts) or "nothing"))
        if event.topic_match:
            line.append("\n")
            line.append(_topic_match(event.topic_match))
        return line
    if isinstance(event, CatalogFilterEvent):
        return text(
            (turn, "bold"),
            f"variant {event.variant}, pre-filter on {', '.join(event.sql_kinds) or 'nothing'}: "
            f"{event.allowed} records, {len(event.ranked)} candidates ranked",
        )
    if isinstance(event, CatalogCheckEvent):
        mark = ("✓ ", "green") if event.selected else ("✗ ", "red")
        why = "; ".join(event.violations) or "; ".join(str(s.get("reason", "")) for s in event.semantic)
        return text((turn, "bold"), mark, data(event.record_id), " ", (data(why), "dim"))
    outcome = OUTCOME_STYLE.get(event.outcome, "")
    removed = f" ({len(event.removed)} removed from the generated reply)" if event.removed else ""
    # The reply is a paragraph: kept with its line breaks, made safe by `_text`.
    return text((turn, "bold"), (event.outcome, outcome), removed, "\n", event.text)


def _topic_match(match: Mapping[str, Any]) -> Text:
    """Whether the catalog holds the request's topic, with the evidence that decided it: the passage that holds
    its words together, or each specific word with the number of records holding it."""
    held = bool(match.get("held"))
    head = text(
        ("  topic ", "dim"),
        data(str(match.get("topic", ""))),
        (" held" if held else " not held", "green" if held else "yellow"),
        (f" ({match.get('via', '')})", "dim"),
    )
    passage = match.get("passage")
    if passage:
        head.append_text(
            text(
                ": ",
                data(str(passage.get("record_id", ""))),
                f" {passage.get('field', '')} ",
                ("“", "dim"),
                data(str(passage.get("quote", ""))),
                ("”", "dim"),
            )
        )
    types = [t for t in match.get("service_types", []) if t.get("name")]
    if types and not passage:
        named = ", ".join(f"{t['name']} ({t.get('records', 0)} records)" for t in types)
        head.append_text(text(": service type ", (data(named), "dim")))
    words = [w for w in match.get("words", []) if not w.get("common")]
    if words and not passage and not types:
        counts = ", ".join(f"'{w.get('word')}' in {w.get('records')} records" for w in words)
        head.append_text(text(": ", (data(counts), "dim")))
    return head
