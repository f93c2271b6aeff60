"""Exporting the sources a run found, for a spreadsheet (CSV) or a reference manager (RIS, CSL-JSON).

The sources are the `ranking` of the trail's `result` event, in rank order, joined with their documents from the
collection: title, date, publication, and the exact evidence the agent quoted (`document.text[start:end]`). A
document the collection no longer holds is still exported with what the trail knows, and flagged.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tracerag.dates import date_parts
from tracerag.errors import TrailError
from tracerag.ingest.alto_regions import PageRegion, page_regions
from tracerag.model import Document, SubQuestion
from tracerag.text import csv_cell, document_title, json_dumps
from tracerag.text import derived_title as derived_title  # its home moved to text.py; imported from here too
from tracerag.trail.events import (
    CallEvent,
    DecisionEvent,
    Event,
    JudgmentEvent,
    PlanEvent,
    ReevalEvent,
    ReplanEvent,
    ResultEvent,
    RunEvent,
    VerdictEvent,
)

if TYPE_CHECKING:
    from tracerag.store import DocumentStore

FORMATS = ("csv", "ris", "csl-json")


NOT_IN_COLLECTION = "not in the collection: exported from the trail only"
SPAN_OUTSIDE = "evidence span lies outside the document text"


# -- reading what a trail says --------------------------------------------------------------------------------


def run_event(events: Sequence[Event]) -> RunEvent:
    """The trail's `run` event (its first)."""
    for event in events:
        if isinstance(event, RunEvent):
            return event
    raise TrailError("the trail has no 'run' event")


def result_event(events: Sequence[Event]) -> ResultEvent | None:
    """The trail's last `result` event, or None when the run did not finish."""
    for event in reversed(events):
        if isinstance(event, ResultEvent):
            return event
    return None


def replanned(current: Sequence[SubQuestion], event: ReplanEvent) -> list[SubQuestion]:
    """The sub-questions after a `replan` event. The agent re-plans after sub-question `sq` is done, and `before`
    and `after` are the sub-questions still to come: sub-questions 0..sq stay, `after` follows them."""
    if event.failure:
        return list(current)
    if event.sq is None:
        return list(event.after)
    return list(current[: event.sq + 1]) + list(event.after)


def sub_questions(events: Sequence[Event]) -> list[SubQuestion]:
    """The sub-questions as they stood at the end of the run, indexed as events' `sq`."""
    current: list[SubQuestion] = []
    for event in events:
        if isinstance(event, PlanEvent):
            current = list(event.sub_questions)
        elif isinstance(event, ReplanEvent):
            current = replanned(current, event)
    return current


def named_documents(events: Sequence[Event]) -> list[str]:
    """The ids of the documents a trail speaks of (its ranking, verdicts, decisions, judgments, a call's answer),
    sorted: what to fetch from the collection to show their titles and quoted evidence."""
    ids = {r.doc_id for e in events if isinstance(e, ResultEvent) for r in e.ranking}
    ids |= {e.doc_id for e in events if isinstance(e, VerdictEvent | ReevalEvent | DecisionEvent | JudgmentEvent)}
    ids |= {doc_id for e in events if isinstance(e, CallEvent) for doc_id in e.doc_ids}  # what a call answered
    return sorted(ids)


# -- one exported source --------------------------------------------------------------------------------------


@dataclass
class ExportedSource:
    run_id: str
    question: str
    rank: int
    doc_id: str
    chunk_id: str | None
    title: str
    title_source: str  # "document": its own title; "text": its first words; "doc_id": nothing else was known
    date: str | None
    corpus: str | None
    language: str | None
    publication: str | None
    place: str | None
    page: str | None
    file: str | None
    url: str | None
    ark: str | None
    iiif: str | None
    origin: str
    promoted_from_hold: bool
    score: float
    accepted_by: list[int]
    accepted_questions: list[str]
    reasons: list[str]
    span: tuple[int, int] | None
    quote: str
    in_collection: bool
    flags: list[str] = field(default_factory=list)
    # where the evidence lies on the page scans, one per page (ingest/alto_regions.py): empty without boxes
    regions: list[PageRegion] = field(default_factory=list)

    @property
    def title_note(self) -> str | None:
        if self.title_source == "text":
            return "Title derived from the first words of the document (it has none)."
        if self.title_source == "doc_id":
            return "Title is the document id (the document is not in the collection)."
        return None


def _first(source: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = source.get(key)
        if value not in (None, "", [], {}):
            return str(value)
    return None


def collect_sources(events: Sequence[Event], documents: Mapping[str, Document]) -> list[ExportedSource]:
    """The final sources of the run, in rank order, joined with their documents."""
    run = run_event(events)
    result = result_event(events)
    if result is None:
        raise TrailError(f"run {run.run_id} has no 'result' event: it did not finish, there are no sources to export")
    questions = sub_questions(events)
    return [
        joined_source(
            run_id=run.run_id,
            question=run.question,
            rank=ranked.rank,
            doc_id=ranked.doc_id,
            chunk_id=ranked.chunk_id,
            span=ranked.span,
            doc=documents.get(ranked.doc_id),
            origin=ranked.origin,
            promoted_from_hold=ranked.promoted_from_hold,
            score=ranked.score,
            accepted_by=list(ranked.accepted_by),
            accepted_questions=[
                questions[i].question if 0 <= i < len(questions) else f"#{i}" for i in ranked.accepted_by
            ],
            reasons=list(ranked.reasons),
        )
        for ranked in sorted(result.ranking, key=lambda r: r.rank)
    ]


def joined_source(
    *,
    run_id: str,
    question: str,
    rank: int,
    doc_id: str,
    chunk_id: str | None,
    span: tuple[int, int] | None,
    doc: Document | None,
    origin: str,
    reasons: list[str],
    score: float = 0.0,
    promoted_from_hold: bool = False,
    accepted_by: list[int] | None = None,
    accepted_questions: list[str] | None = None,
) -> ExportedSource:
    """One source joined with its document (None: the collection no longer holds it, exported flagged): its
    title, date and publication, and the evidence `doc.text[start:end]`. A run's sources and a researcher's
    selection (research/selection_export.py) are both exported through it."""
    flags: list[str] = []
    src: Mapping[str, Any] = doc.source if doc is not None else {}
    quote = ""
    if doc is None:
        flags.append(NOT_IN_COLLECTION)
        title, title_source = doc_id, "doc_id"
    else:
        title, title_source = document_title(doc.title, doc.text, doc_id)
        if span is not None:
            start, end = span
            if 0 <= start <= end <= len(doc.text):
                quote = doc.text[start:end]
            else:
                flags.append(f"{SPAN_OUTSIDE} ({start}, {end}; the text has {len(doc.text)} characters)")
    return ExportedSource(
        run_id=run_id,
        question=question,
        rank=rank,
        doc_id=doc_id,
        chunk_id=chunk_id,
        title=title,
        title_source=title_source,
        date=doc.date if doc else None,
        corpus=doc.corpus if doc else None,
        language=doc.language if doc else None,
        publication=_first(src, "publication", "newspaper", "journal"),
        place=_first(src, "place_publication", "place"),
        page=_first(src, "page"),
        file=_first(src, "file"),
        url=_first(src, "url", "URL", "link"),
        ark=_first(src, "ark"),
        iiif=_first(src, "iiif", "iiif_manifest", "manifest"),
        origin=origin,
        promoted_from_hold=promoted_from_hold,
        score=score,
        accepted_by=list(accepted_by or []),
        accepted_questions=list(accepted_questions or []),
        reasons=reasons,
        span=span,
        quote=quote,
        in_collection=doc is not None,
        flags=flags,
    )


# -- formats --------------------------------------------------------------------------------------------------

CSV_COLUMNS = (
    "run_id",
    "question",
    "rank",
    "doc_id",
    "chunk_id",
    "title",
    "title_source",
    "date",
    "corpus",
    "language",
    "publication",
    "place",
    "page",
    "file",
    "url",
    "ark",
    "iiif",
    "origin",
    "promoted_from_hold",
    "score",
    "accepted_by",
    "sub_questions",
    "reasons",
    "span_start",
    "span_end",
    "quote",
    "in_collection",
    "flags",
    "page_regions",
)


def _accepted(s: ExportedSource) -> str:
    return " | ".join(f"[{i}] {q}" for i, q in zip(s.accepted_by, s.accepted_questions, strict=True))


# Cells this module writes from numbers: a negative score is a number, not a formula, and stays sortable.
_NUMBERS = frozenset({"rank", "score", "span_start", "span_end"})


def to_csv(sources: Sequence[ExportedSource]) -> str:
    """One row per source. Document text and model output go into cells, and a spreadsheet runs a cell that
    begins with `=`, `+`, `-` or `@` as a formula: every text cell goes through `csv_cell` (OWASP's remedy, a
    leading `'`); the csv module quotes separators, quotes and line breaks."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, quoting=csv.QUOTE_MINIMAL)
    writer.writeheader()
    for s in sources:
        row = {
            "run_id": s.run_id,
            "question": s.question,
            "rank": s.rank,
            "doc_id": s.doc_id,
            "chunk_id": s.chunk_id or "",
            "title": s.title,
            "title_source": s.title_source,
            "date": s.date or "",
            "corpus": s.corpus or "",
            "language": s.language or "",
            "publication": s.publication or "",
            "place": s.place or "",
            "page": s.page or "",
            "file": s.file or "",
            "url": s.url or "",
            "ark": s.ark or "",
            "iiif": s.iiif or "",
            "origin": s.origin,
            "promoted_from_hold": str(s.promoted_from_hold).lower(),
            "score": f"{s.score:g}",
            "accepted_by": ";".join(map(str, s.accepted_by)),
            "sub_questions": _accepted(s),
            "reasons": " | ".join(s.reasons),
            "span_start": "" if s.span is None else s.span[0],
            "span_end": "" if s.span is None else s.span[1],
            "quote": s.quote,
            "in_collection": str(s.in_collection).lower(),
            "flags": "; ".join(s.flags),
            "page_regions": " | ".join(_region_text(r) for r in s.regions),
        }
        writer.writerow({key: value if key in _NUMBERS else csv_cell(value) for key, value in row.items()})
    return buf.getvalue()


_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x1f\x7f]")


def one_line(value: str) -> str:
    """A value fit for one RIS line: every kind of line break becomes a space, control characters go."""
    return _CONTROL.sub("", _LINE_BREAKS.sub(" ", value)).strip()


def _note(s: ExportedSource) -> str:
    parts = [f"Rank {s.rank} ({s.origin}{', promoted from hold' if s.promoted_from_hold else ''})."]
    if s.reasons:
        parts.append("Reasons: " + " | ".join(s.reasons))
    if s.span is not None:
        evidence = f'"{s.quote}"' if s.in_collection and s.quote else "(text not available)"
        parts.append(f"Evidence, characters {s.span[0]}-{s.span[1]}: {evidence}")
    if s.regions:
        parts.append("Page region: " + " | ".join(_region_text(r) for r in s.regions))
    if s.accepted_by:
        parts.append("Accepted by sub-questions: " + _accepted(s))
    parts.append(f"Run {s.run_id}, question: {s.question}")
    parts.append(f"Document id: {s.doc_id}" + (f", chunk {s.chunk_id}" if s.chunk_id else ""))
    if s.title_note:
        parts.append(s.title_note)
    parts.extend(f"Warning: {flag}." for flag in s.flags)
    return " ".join(p if p.endswith((".", "?", "!", '"')) else p + "." for p in parts)


def _ris_date(parts: list[int]) -> str:
    y, mo, d = (parts + [None, None])[:3]
    return f"{y:04d}/" + (f"{mo:02d}" if mo else "") + "/" + (f"{d:02d}" if d else "") + "/"


def to_ris(sources: Sequence[ExportedSource]) -> str:
    lines: list[str] = []

    def tag(name: str, value: Any) -> None:
        if value is None:
            return
        text = one_line(str(value))
        if text:
            lines.append(f"{name}  - {text}")

    for s in sources:
        lines.append(f"TY  - {'NEWS' if s.publication else 'GEN'}")
        tag("TI", s.title)
        parts = date_parts(s.date)
        if parts:
            tag("PY", f"{parts[0]:04d}")
            tag("DA", _ris_date(parts))
        tag("T2", s.publication)
        tag("CY", s.place)
        tag("SP", s.page)
        tag("LA", s.language)
        tag("ID", s.doc_id)
        tag("UR", s.url)
        for region in s.regions:  # RIS repeats UR: the scan's region of the evidence, after the source's own URL
            tag("UR", region.url)
        tag("KW", s.corpus)
        tag("N1", _note(s))
        tag("AB", s.quote)
        lines.append("ER  - ")
        lines.append("")
    return "\n".join(lines)


def to_csl_json(sources: Sequence[ExportedSource]) -> str:
    items = []
    for s in sources:
        item: dict[str, Any] = {
            "id": s.doc_id,
            "type": "article-newspaper" if s.publication else "document",
            "title": s.title,
        }
        if s.publication:
            item["container-title"] = s.publication
        parts = date_parts(s.date)
        if parts:
            item["issued"] = {"date-parts": [parts]}
        elif s.date:
            item["issued"] = {"raw": s.date}
        if s.language:
            item["language"] = s.language
        if s.place:
            item["publisher-place"] = s.place
        if s.page:
            item["page"] = s.page
        item["note"] = _note(s)
        if s.quote:
            item["abstract"] = s.quote
        linked = [r.url for r in s.regions if r.url]
        if s.url or linked:  # one URL in CSL: the source's own, else the scan's region of the evidence
            item["URL"] = s.url or linked[0]
        items.append(item)
    return json_dumps(items, indent=2) + "\n"  # exact text; C1 and invisible format characters as \u escapes


def _region_text(r: PageRegion) -> str:
    """A page region in a cell or note: its link, else where it is and why there is no link."""
    where = f"page {r.page_id}"
    if r.url:
        return f"{where}: {r.url}"
    box = ",".join(f"{v:g}" for v in r.box)
    return f"{where}: box {box} ({r.unit or 'unit not stated'}; {r.note})"


def with_regions(sources: Sequence[ExportedSource], regions: Sequence[list[PageRegion]]) -> list[ExportedSource]:
    """The sources with the page regions of their evidence, `regions[i]` for `sources[i]` (`source_regions`)."""
    return [replace(s, regions=list(found)) for s, found in zip(sources, regions, strict=True)]


def source_regions(
    sources: Sequence[ExportedSource],
    documents: Mapping[str, Document],
    boxes_in: Callable[[str, int, int], list[tuple[int, float, float, float, float]]],
    *,
    chunk_spans: Mapping[str, tuple[int, int]] | None = None,
    iiif_base: str | None = None,
    dpi: float | None = None,
) -> list[list[PageRegion]]:
    """Where each source's evidence lies on the page scans: its quoted span, else its chunk's (`chunk_spans`: a
    source filled in from the warm start has a chunk but no quote), from the store's String boxes
    (`DocumentStore.boxes_in`) and the document's pages and own IIIF base. No boxes, no regions."""
    out: list[list[PageRegion]] = []
    for s in sources:
        doc = documents.get(s.doc_id)
        span = s.span or (chunk_spans or {}).get(s.chunk_id or "")
        if doc is None or span is None:
            out.append([])
            continue
        boxes = boxes_in(s.doc_id, *span)
        out.append(page_regions(s.doc_id, doc.source, boxes, iiif_base=iiif_base, dpi=dpi))
    return out


def store_regions(
    store: DocumentStore, documents: Mapping[str, Document], *, iiif_base: str | None, dpi: float | None
) -> Callable[[Sequence[ExportedSource]], list[list[PageRegion]]]:
    """The `regions` argument of `export_sources` for a collection's store: each source's page regions from its
    String boxes, a source without a quoted span taking its chunk's span. `iiif_base` is the caller's choice
    (`--iiif-base`, else the collection's `regions.iiif_base`)."""

    def regions(sources: Sequence[ExportedSource]) -> list[list[PageRegion]]:
        chunks = store.get_chunks(sorted({s.chunk_id for s in sources if s.chunk_id and s.span is None}))
        return source_regions(
            sources,
            documents,
            store.boxes_in,
            chunk_spans={c.id: (c.start, c.end) for c in chunks.values()},
            iiif_base=iiif_base,
            dpi=dpi,
        )

    return regions


_WRITERS = {"csv": to_csv, "ris": to_ris, "csl-json": to_csl_json}


def write_sources(sources: Sequence[ExportedSource], fmt: str) -> str:
    """Sources as `fmt`: csv, ris or csl-json."""
    writer = _WRITERS.get(fmt.lower().strip())
    if writer is None:
        raise TrailError(f"unknown export format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return writer(sources)


def export_sources(
    events: Sequence[Event],
    documents: Mapping[str, Document],
    fmt: str,
    *,
    regions: Callable[[Sequence[ExportedSource]], Sequence[list[PageRegion]]] | None = None,
) -> str:
    """The final sources of the run in `events` (a trail as `read_trail` returns it) as `fmt`: csv, ris or
    csl-json. `documents` maps doc ids to the collection's documents; ids it lacks are exported flagged.
    `regions`, given the sources, returns the page regions of each one's evidence (`source_regions`)."""
    if fmt.lower().strip() not in _WRITERS:  # before the trail is read: a wrong format is the first thing said
        return write_sources([], fmt)
    sources = collect_sources(events, documents)
    if regions is not None:
        sources = with_regions(sources, regions(sources))
    return write_sources(sources, fmt)
