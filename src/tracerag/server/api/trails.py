"""The audit trails of a collection: the runs (list), one run's events (typed, as the trail schema has them), and
its sources exported as CSV, RIS or CSL-JSON by the same writers as `tracerag trail export`.

A run id from a request is only ever compared with the names of the trail files found (`trail.trails_by_run`
over `collection.trail_roots`): it never becomes a path or a glob pattern, so `../` or `*` name no trail.

A trail whose last line is torn (a run killed while writing it) is served with its good events and says so
(`damaged`); a damaged line with good lines after it is an error, 409 (`server/errors.py`): the trail exists, but
its state stops it being read, which a repair of the file can change.

The served catalog's conversations have their trails too, under `/catalog/trails` (a collection may be named
`catalog`, so they do not share the collections' `/collections/{name}/trails` or the pages' `/trails/{name}`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response
from pydantic import BaseModel, Field

from tracerag.collection import trail_roots
from tracerag.errors import TrailError
from tracerag.ingest.alto_regions import check_base
from tracerag.model import Document
from tracerag.server.deps import CollectionName, RunId, State
from tracerag.server.schemas import ERRORS
from tracerag.server.state import NotFoundError, ServerState
from tracerag.trail import Event, read_trail, trails_by_run
from tracerag.trail.events import JudgmentEvent
from tracerag.trail.export import export_sources, named_documents, result_event, store_regions
from tracerag.trail.reader import read_trail_torn
from tracerag.trail.summary import TrailSummary, summarise

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
    kind: str = Field(
        description="ask, search, judge, answer, review, call (an assistant's tool call that started no run of its "
        "own), or catalog (a catalog conversation)."
    )
    question: str = Field(
        description="The question or query (a catalog conversation's first request; a call's tool and the "
        "arguments that hold something)."
    )
    started: str = Field(description="When the run started (UTC, ISO 8601); empty for a damaged trail.")
    status: str = Field(
        description="complete, no_llm, truncated, failed, what a research run came to, answered (a call), or damaged."
    )
    client: str | None = Field(
        None,
        description="Who asked for the run over the Model Context Protocol: the assistant as it names itself "
        "(`mcp: Claude Desktop 1.2`); None for a run asked from the command line or the web app.",
    )
    results: int | None = Field(
        None,
        description="Its sources or candidates: the final ranking's length, else the documents judged (a judge "
        "run); None for a run without either (a catalog conversation, an answer or review run, an unfinished one).",
    )
    damaged: str | None = Field(
        None,
        description="What is damaged (line and reason): why the trail cannot be read (status `damaged`), or its "
        "torn last line (its other events are shown).",
    )

    @classmethod
    def of(cls, summary: TrailSummary, torn: TrailError | None = None, events: list[Event] | None = None) -> TrailItem:
        return cls(
            results=None if events is None else result_count(events),
            run_id=summary.run_id,
            kind=summary.kind,
            question=summary.question,
            started=summary.started,
            status=summary.status,
            client=summary.client,
            damaged=None if torn is None else torn_note(torn),
        )


def result_count(events: list[Event]) -> int | None:
    result = result_event(events)
    if result is not None:
        return len(result.ranking)
    judged = {e.doc_id for e in events if isinstance(e, JudgmentEvent)}
    return len(judged) if judged else None


def torn_note(torn: TrailError) -> str:
    return f"the last line ({torn.line}) is damaged, {torn.reason}: the run may have been stopped while writing it"


class TrailBody(BaseModel):
    """A run's trail: its summary and every event, in order, each typed by its `kind` (`tracerag trail schema`)."""

    run: TrailItem = Field(description="The run's summary, as the trail list shows it.")
    events: list[Event] = Field(description="The trail's events in order; the first is the `run` event.")


@dataclass(frozen=True)
class Trail:
    """A trail as read: its events, and its torn last line's error if it has one (the events are those before)."""

    events: list[Event]
    torn: TrailError | None = None


def collection_roots(state: ServerState, name: str) -> list[Path]:
    return trail_roots(state.path_of(name), state.settings)


def catalog_roots(state: ServerState) -> list[Path]:
    """Where the served catalog's conversations write their trails: the catalog's own trails/, or (catalog on
    read-only storage) where its collection's runs go (`catalog.assistant`)."""
    catalog = state.config.catalog
    if catalog is None:
        raise NotFoundError("no catalog served: start with --catalog DIR")
    return [catalog, *trail_roots(catalog / "collection", state.settings)]


def trail_file(state: ServerState, name: str, run_id: str, roots: list[Path] | None = None) -> Path:
    """The trail of run `run_id` in collection `name` (or where runs on it went while it was read-only here)."""
    path = trails_by_run(collection_roots(state, name) if roots is None else roots).get(run_id)
    if path is None:
        where = f"collection {name!r}" if roots is None else "the catalog"
        raise NotFoundError(f"run {run_id!r}: no trail of that id in {where}")
    return path


def trail_events(state: ServerState, name: str, run_id: str) -> list[Event]:
    return read_trail(trail_file(state, name, run_id))


def read_served_trail(path: Path) -> Trail:
    """A trail to show: its good events even when its last line is torn."""
    events, torn = read_trail_torn(path)
    return Trail(events=events, torn=torn)


def items_of(roots: list[Path]) -> list[TrailItem]:
    """The runs under `roots`, oldest first: by the run event's start time, then id (the id's random part would
    otherwise order the runs of one second). A damaged trail is listed as such and hides none of the others."""
    items: list[TrailItem] = []
    for run_id, path in trails_by_run(roots).items():
        try:
            trail = read_served_trail(path)
            items.append(TrailItem.of(summarise(trail.events), trail.torn, trail.events))
        except TrailError as exc:
            where = f"line {exc.line}: " if exc.line is not None else ""
            items.append(
                TrailItem(run_id=run_id, kind="", question="", started="", status="damaged", damaged=where + exc.reason)
            )
    # an unreadable trail has no start time: it goes by its id's (the time it was made, to the second)
    return sorted(items, key=lambda item: (item.started or _id_time(item.run_id), item.run_id))


def _id_time(run_id: str) -> str:
    """A run id's time (`20261201T101500-ab12cd`) as the ISO start times are written, to sort with them."""
    match = re.fullmatch(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})-.*", run_id)
    return "{}-{}-{}T{}:{}:{}".format(*match.groups()) if match else run_id


def trail_items(state: ServerState, name: str) -> list[TrailItem]:
    """The runs of collection `name`, oldest first (`items_of`)."""
    return items_of(collection_roots(state, name))


def documents_of(state: ServerState, name: str, events: list[Event]) -> dict[str, Document]:
    """The documents a trail speaks of, from the collection as it is now (one it no longer holds is absent)."""
    with state.reading(name) as col:
        return col.store.get_documents(named_documents(events))


@router.get(
    "/collections/{name}/trails", summary="List the runs recorded on a collection", response_model=list[TrailItem]
)
def list_runs(name: CollectionName, state: State) -> list[TrailItem]:
    """Every run recorded on the collection: agent runs, searches, judge, review and answer runs, catalog chats."""
    return trail_items(state, name)


@router.get("/collections/{name}/trails/{run_id}", summary="A run's trail", response_model=TrailBody)
def get_trail(name: CollectionName, run_id: RunId, state: State) -> TrailBody:
    """A run's events, as its trail file holds them (validated against the trail schema as they are read); a
    torn last line is said in `run.damaged`, the events before it are given."""
    trail = read_served_trail(trail_file(state, name, run_id))
    return TrailBody(run=TrailItem.of(summarise(trail.events), trail.torn), events=trail.events)


@router.get("/catalog/trails", summary="List the catalog's conversations", response_model=list[TrailItem])
def list_catalog_runs(state: State) -> list[TrailItem]:
    """The served catalog's conversations (404 when no catalog is served), oldest first."""
    return items_of(catalog_roots(state))


@router.get("/catalog/trails/{run_id}", summary="A catalog conversation's trail", response_model=TrailBody)
def get_catalog_trail(run_id: RunId, state: State) -> TrailBody:
    """One catalog conversation's events, as its trail holds them."""
    trail = read_served_trail(trail_file(state, "catalog", run_id, catalog_roots(state)))
    return TrailBody(run=TrailItem.of(summarise(trail.events), trail.torn), events=trail.events)


_UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")


@router.get(
    "/collections/{name}/trails/{run_id}/export",
    summary="Download a run's sources",
    response_class=Response,
    responses={
        200: {
            "description": "The run's final sources with their reasons and exact evidence spans.",
            "content": {mime.split(";")[0]: {"schema": {"type": "string"}} for mime, _ext in EXPORT_TYPES.values()},
        }
    },
)
def export_run(
    name: CollectionName,
    run_id: RunId,
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
