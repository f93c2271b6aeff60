"""The audit trails of a collection: the runs (list), one run's events (typed, as the trail schema has them), and
its sources exported as CSV, RIS or CSL-JSON by the same writers as `tracerag trail export`.

A run id from a request is only ever compared with the names of the trail files found (`trail.trails_by_run`
over `collection.trail_roots`): it never becomes a path or a glob pattern, so `../` or `*` name no trail."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import BaseModel, Field

from tracerag.collection import trail_roots
from tracerag.errors import TrailError
from tracerag.ingest.alto_regions import check_base
from tracerag.model import Document
from tracerag.server.deps import State
from tracerag.server.schemas import ERRORS
from tracerag.server.state import NotFoundError, ServerState
from tracerag.trail import Event, read_trail, trails_by_run
from tracerag.trail.export import export_sources, named_documents, store_regions
from tracerag.trail.show import TrailSummary, summarise

router = APIRouter(tags=["trails"], responses=ERRORS)

ExportFormat = Literal["csv", "ris", "csl-json"]
# what a reference manager or a spreadsheet expects of each, and the file's extension
EXPORT_TYPES: dict[str, tuple[str, str]] = {
    "csv": ("text/csv; charset=utf-8", "csv"),
    "ris": ("application/x-research-info-systems; charset=utf-8", "ris"),
    "csl-json": ("application/vnd.citationstyles.csl+json; charset=utf-8", "json"),
}


class TrailItem(BaseModel):
    """One run recorded in a collection, as `tracerag trail list` shows it."""

    run_id: str = Field(description="The run's id (its trail file's name).")
    kind: str = Field(description="ask, search, judge, answer, review, or catalog (a catalog conversation).")
    question: str = Field(description="The question or query (a catalog conversation's first request).")
    started: str = Field(description="When the run started (UTC, ISO 8601); empty for a damaged trail.")
    status: str = Field(description="complete, no_llm, truncated, failed, what a research run came to, or damaged.")
    damaged: str | None = Field(None, description="Why the trail cannot be read (line and reason), if it cannot.")

    @classmethod
    def of(cls, summary: TrailSummary) -> TrailItem:
        return cls(
            run_id=summary.run_id,
            kind=summary.kind,
            question=summary.question,
            started=summary.started,
            status=summary.status,
        )


class TrailBody(BaseModel):
    """A run's trail: its summary and every event, in order, each typed by its `kind` (`tracerag trail schema`)."""

    run: TrailItem
    events: list[Event] = Field(description="The trail's events in order; the first is the `run` event.")


def trail_file(state: ServerState, name: str, run_id: str) -> Path:
    """The trail of run `run_id` in collection `name` (or where runs on it went while it was read-only here)."""
    path = trails_by_run(trail_roots(state.path_of(name), state.settings)).get(run_id)
    if path is None:
        raise NotFoundError(f"run {run_id!r}: no trail of that id in collection {name!r}")
    return path


def trail_events(state: ServerState, name: str, run_id: str) -> list[Event]:
    return read_trail(trail_file(state, name, run_id))


def trail_items(state: ServerState, name: str) -> list[TrailItem]:
    """The runs of collection `name`, oldest first (run ids sort by time); a damaged trail is listed as such and
    hides none of the others."""
    items: list[TrailItem] = []
    for run_id, path in sorted(trails_by_run(trail_roots(state.path_of(name), state.settings)).items()):
        try:
            items.append(TrailItem.of(summarise(read_trail(path))))
        except TrailError as exc:
            where = f"line {exc.line}: " if exc.line is not None else ""
            items.append(
                TrailItem(run_id=run_id, kind="", question="", started="", status="damaged", damaged=where + exc.reason)
            )
    return items


def documents_of(state: ServerState, name: str, events: list[Event]) -> dict[str, Document]:
    """The documents a trail speaks of, from the collection as it is now (one it no longer holds is absent)."""
    with state.reading(name) as col:
        return col.store.get_documents(named_documents(events))


@router.get("/collections/{name}/trails", response_model=list[TrailItem])
def list_runs(name: str, state: State) -> list[TrailItem]:
    """Every run recorded on the collection: agent runs, searches, judge, review and answer runs, catalog chats."""
    return trail_items(state, name)


@router.get("/collections/{name}/trails/{run_id}", response_model=TrailBody)
def get_trail(name: str, run_id: str, state: State) -> TrailBody:
    """A run's events, as its trail file holds them (validated against the trail schema as they are read)."""
    events = trail_events(state, name, run_id)
    return TrailBody(run=TrailItem.of(summarise(events)), events=events)


_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


@router.get(
    "/collections/{name}/trails/{run_id}/export",
    response_class=Response,
    responses={
        200: {
            "description": "The run's final sources with their reasons and exact evidence spans.",
            "content": {mime.split(";")[0]: {"schema": {"type": "string"}} for mime, _ext in EXPORT_TYPES.values()},
        }
    },
)
def export_run(
    name: str,
    run_id: str,
    state: State,
    fmt: Annotated[
        ExportFormat, Query(alias="format", description="csv (a spreadsheet), ris or csl-json (Zotero and others).")
    ] = "csv",
    iiif_base: Annotated[
        str | None,
        Query(
            description="An IIIF image base for page regions of the evidence (as `--iiif-base`); "
            "default: the collection's `regions.iiif_base`."
        ),
    ] = None,
) -> Response:
    """The sources of a run as `tracerag trail export` writes them, as a download."""
    base = check_base(iiif_base, "iiif_base")
    events = trail_events(state, name, run_id)
    with state.reading(name) as col:
        documents = col.store.get_documents(named_documents(events))
        regions = col.settings.regions
        text = export_sources(
            events,
            documents,
            fmt,
            regions=store_regions(col.store, documents, iiif_base=base or regions.iiif_base, dpi=regions.dpi),
        )
    mime, ext = EXPORT_TYPES[fmt]
    filename = f"trace-{_UNSAFE_IN_FILENAME.sub('_', run_id)}.{ext}"
    return Response(text, media_type=mime, headers={"Content-Disposition": f'attachment; filename="{filename}"'})
