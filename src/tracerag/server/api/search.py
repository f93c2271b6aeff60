"""POST /api/collections/{name}/search: a search with every option `tracerag search` has, run as the CLI runs it
(`search/report.py`: recorded as a run in the trail, its id returned; the same search twice in a row is
recorded once), answered as
`retrieval/explain.py`'s data with each result's keyword-in-context snippet (`retrieval/kwic.py`)."""

from __future__ import annotations

import hashlib
import json
import threading
from contextlib import nullcontext
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, field_validator

from tracerag.collection import trail_roots
from tracerag.config import Channel, window_years
from tracerag.dates import parse_partial_date
from tracerag.options import SearchOptions
from tracerag.retrieval import SearchRequest
from tracerag.retrieval.search_filter import API_NAMES, OptionNames, search_filter
from tracerag.retrieval.synonyms import SynonymMap
from tracerag.search.report import explained_search
from tracerag.server.api.collections import Region, source_link, web_link
from tracerag.server.deps import CollectionName, State
from tracerag.server.schemas import ERRORS
from tracerag.server.state import ServerState
from tracerag.trail import trails_by_run
from tracerag.trail.events import EVENT_ADAPTER, RunEvent, RunKind

router = APIRouter(tags=["search"], responses=ERRORS)


class SearchBody(SearchOptions):
    """A search: the options of `tracerag search`, by the same names (`from`/`to` are `date_from`/`date_to`)."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("date_from", "date_to")
    @classmethod
    def _partial_date(cls, value: str | None) -> str | None:
        if value is not None and value.strip():
            parse_partial_date(value.strip())  # a ValueError names the date; the error edge names the field
            return value.strip()
        return None

    @field_validator("windows")
    @classmethod
    def _window(cls, value: str | None) -> str | None:
        if value:
            window_years(value)  # '' turns windowing off; anything else is a number of years
        return value


SearchBody.model_rebuild(_types_namespace={"Channel": Channel})  # the settings' channel names (tracerag.options)


class ChannelFind(BaseModel):
    channel: str = Field(description="The channel that found the document.")
    rank: int = Field(description="Its rank in that channel's ranking (1 is first).")
    score: float = Field(description="Its score in that channel (the channel's own scale: BM25, cosine similarity...).")
    chunk_id: str = Field(description="The chunk the channel found.")
    span: list[int] = Field(description="The chunk's [start, end] in the document text.")
    field: str | None = Field(None, description="The text field (language) that ranked it, for a lexical channel.")
    field_rank: int | None = Field(
        None, description="Its rank within that text field, for a lexical channel (1 is first)."
    )


class BestChunk(BaseModel):
    chunk_id: str = Field(description="The chunk's id.")
    start: int = Field(description="Character offset of the chunk in the document text.")
    end: int = Field(description="Character offset of the chunk's end in the document text (exclusive).")
    text: str = Field(description="The chunk's text.")


class Kwic(BaseModel):
    """The query's words in context: `text` is the document's text from `start` to `end`; `spans` the matched
    words, as [start, end] offsets into `text`."""

    text: str = Field(description="The snippet: the document's text from `start` to `end`.")
    start: int = Field(description="Character offset of the snippet in the document text.")
    end: int = Field(description="Character offset of the snippet's end (exclusive).")
    spans: list[list[int]] = Field(description="The matched words, as [start, end] offsets into `text`.")
    cut_before: bool = Field(description="True when the document's text goes on before the snippet.")
    cut_after: bool = Field(description="True when it goes on after the snippet.")
    line: int | None = Field(
        default=None, description="The source file's line the snippet starts on, where its reader recorded lines."
    )


class SearchResult(BaseModel):
    rank: int = Field(description="Its place in the results, from 1.")
    doc_id: str = Field(description="The document's id in the collection.")
    score: float = Field(description="The fused score (by params.fusion.method).")
    corpus: str = Field(description="The sub-corpus the document belongs to.")
    date: str | None = Field(
        description="The document's date (ISO 8601, may be partial: 1848, 1848-03); None when undated."
    )
    language: str | None = Field(description="The document's language (ISO 639-1); None when unknown.")
    title: str = Field(description="The document's title, else its first words, else its id (`title_source`).")
    title_source: str = Field(description="document, text or doc_id.")
    window: str | None = Field(description="The time window the document fell in, when windowing.")
    source: dict[str, str | int | float | bool] = Field(
        description="The source's plain metadata values (nested ones left out)."
    )
    source_url: str | None = Field(description="The document's own http(s) link, if any.")
    fields: dict[str, Any] = Field(description="The document's extra fields, as ingested.")
    ocr: dict[str, Any] | None = Field(description="The OCR-quality estimate and its parts.")
    ocr_quality_stated: float | None = Field(description="What the source itself says of its OCR quality, if anything.")
    best_chunk: BestChunk = Field(description="The chunk that ranked the document.")
    kwic: Kwic = Field(description="The best of `snippets`.")
    snippets: list[Kwic] = Field(description="The best chunk's windows with the most query words, best first.")
    regions: list[Region] = Field(description="The best chunk's page regions (IIIF), when the collection keeps boxes.")
    channels: list[ChannelFind] = Field(description="Each channel that found the document, with its rank there.")


class WindowRow(BaseModel):
    window: str = Field(description='The time window, "1850-1859", or "undated".')
    results: int = Field(description="Results in the window.")
    result_share: float = Field(description="The window's share of the results (0-1).")
    documents: int = Field(description="Documents of the window among those searched.")
    corpus_share: float = Field(description="The window's share of the documents searched (0-1).")
    ratio: float | None = Field(
        description="result_share / corpus_share: above 1, the window is over-represented; null when no document of "
        "the window was counted (its results come from documents an ingest still running has not committed)."
    )


class TimeWindows(BaseModel):
    """Each time window's share of the results against its share of the documents searched."""

    window: str = Field(description='The window length, "10y".')
    chosen: str | None = Field(None, description="Where the window size came from.")
    results: int = Field(description="Results of the search.")
    searched: int = Field(description="Documents searched.")
    rows: list[WindowRow] = Field(description="One row per window, in time order, undated last.")


class SearchAnswer(BaseModel):
    run_id: str | None = Field(
        description="The search's run in the trail (GET /api/trails/{run_id}; judge or review it); None for a search "
        "not recorded (the search page's GET)."
    )
    repeated: bool = Field(
        False,
        description="True: the same search as the collection's last run, whose id `run_id` is; not recorded twice.",
    )
    collection: str = Field(description="The collection searched.")
    query: str = Field(description="The query as sent.")
    seconds: float = Field(description="How long the search took, in seconds.")
    results: list[SearchResult] = Field(description="The results, best first.")
    time_windows: TimeWindows | None = Field(description="Where the results fall in time (None: windows off).")
    expansion: dict[str, Any] | None = Field(description="What was searched: the query, its variants, weights.")
    failures: list[str] = Field(description="What could not be done (an expansion); the search went on without it.")
    params: dict[str, Any] = Field(description="The search as run: channels, fusion, filter, readings of each channel.")
    channel_rankings: dict[str, list[dict[str, Any]]] | None = Field(
        None, description="With explain: each channel's top chunks before fusion."
    )
    field_rankings: dict[str, dict[str, list[dict[str, Any]]]] | None = Field(
        None, description="With explain: each lexical channel's text fields before they were merged."
    )


def request_key(body: SearchBody) -> str:
    """The search as asked, normalised (spaces in the query, the order of listed options): two requests with one
    key search alike. `explain` and `iiif_base` change what is shown, not what is searched."""
    data = body.model_dump(mode="json", exclude={"explain", "iiif_base"})
    data["query"] = " ".join(body.query.split())
    for key, value in data.items():
        if isinstance(value, list):
            data[key] = sorted(value)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:24]


# The search page's query parameters by the request field each fills: short names, the CLI's where it has one
# (`from`, `to`), so that an address reads like the command line it matches.
PAGE_LISTS = {"corpus": "corpus", "language": "language", "channel": "channels", "expand": "expand", "add": "add"}
PAGE_PLAIN = {"q": "query", "k": "k", "from": "date_from", "to": "date_to", "windows": "windows", "filter": "filter"}
PAGE_PLAIN |= {"min_ocr": "min_ocr"}


def page_address(name: str, body: SearchBody) -> str:
    """The search page's address for `body` over collection `name` (what differs from the defaults)."""
    pairs: list[tuple[str, str]] = [("c", name)]
    defaults = SearchBody(query=body.query)
    for param, key in PAGE_PLAIN.items():
        value = getattr(body, key)
        if value is not None and (key == "query" or value != getattr(defaults, key)):
            pairs.append((param, str(value)))
    for param, key in PAGE_LISTS.items():
        pairs += [(param, str(v)) for v in getattr(body, key) or []]
    pairs += [("field", f"{k}={v}") for k, v in body.fields.items()]
    return "/?" + urlencode(pairs)


def _first_event(path: Path) -> RunEvent | None:
    try:
        with path.open("rb") as fh:
            event = EVENT_ADAPTER.validate_json(fh.readline())
    except (OSError, ValueError):
        return None
    return event if isinstance(event, RunEvent) else None


def recorded_as(path: Path) -> dict[str, str]:
    """What the web app recorded a search run's request as (`key`, `address`; the trail's first line only); empty
    for any other run."""
    event = _first_event(path)
    if event is None or event.run != RunKind.SEARCH:
        return {}
    asked = event.config.get("asked")
    return {k: v for k, v in asked.items() if isinstance(v, str)} if isinstance(asked, dict) else {}


def recorded_key(path: Path) -> str | None:
    return recorded_as(path).get("key")


def repeats(state: ServerState, name: str, body: SearchBody) -> str | None:
    """The collection's last run when it is this same search, recorded by the web app (its `asked` key), else
    None. A search with a language model's variants is never the same twice: it is not matched."""
    if {"llm", "translate"} & set(body.expand):
        return None
    runs = trails_by_run(trail_roots(state.path_of(name), state.settings))
    if not runs:
        return None
    # run ids sort by their start to the second; within the newest second, by the run event's own time
    second = max(runs)[:15]
    started = {rid: _first_event(runs[rid]) for rid in runs if rid[:15] == second}
    last = max(started, key=lambda rid: (e.time, rid) if (e := started[rid]) is not None else ("", rid))
    return last if recorded_key(runs[last]) == request_key(body) else None


def run(
    state: ServerState, name: str, body: SearchBody, names: OptionNames = API_NAMES, *, record: bool = True
) -> SearchAnswer:
    """The search `body` over collection `name`, explained (shared by the API and the page, which passes `names`:
    its form's labels, so that an error names the box a person typed in). `record`: kept in the trail as a run,
    unless the collection's last run is this same search (its id is answered, `repeated`); the page's GET passes
    False (a GET changes nothing)."""
    # the same request twice at once (a double click) is one run: the check and the record hold its lock
    with _SAME_REQUEST[hash((name, request_key(body))) % len(_SAME_REQUEST)] if record else nullcontext():
        return _run(state, name, body, names, record=record)


# striped locks: two identical requests share one; two different ones rarely do, and then only wait
_SAME_REQUEST = [threading.Lock() for _ in range(64)]


def _run(state: ServerState, name: str, body: SearchBody, names: OptionNames, *, record: bool) -> SearchAnswer:
    previous = repeats(state, name, body) if record else None
    flt = search_filter(
        corpora=body.corpus,
        date_from=body.date_from,
        date_to=body.date_to,
        languages=body.language,
        fields=body.fields.items(),
        doc_ids=body.doc_ids,
        names=names,
    )
    request = SearchRequest(
        query=body.query,
        k=body.k,
        filter=flt,
        channels=tuple(body.channels) if body.channels else None,
        windows=body.windows,
        min_ocr_quality=body.min_ocr,
    )
    synonyms = SynonymMap.parse(body.synonyms, "synonyms") if body.synonyms else None
    model = None
    if {"llm", "translate"} & set(body.expand):
        model = state.model()  # None without `serve --llm`: the search says so in its failures
    with state.reading(name) as col:
        result, _ = explained_search(
            col,
            request,
            expand=body.expand,
            variants=body.variants,
            llm=model,
            synonyms=synonyms,
            added=body.add,
            filter_expression=body.filter,
            iiif_base=body.iiif_base,
            names=names,
            record=record and previous is None,
            asked={"key": request_key(body), "address": page_address(name, body)},
        )
    if previous is not None:
        return answer(name, body, result, previous, repeated=True)
    return answer(name, body, result, result["run_id"] if record else None)


def answer(
    name: str, body: SearchBody, result: dict[str, Any], run_id: str | None, *, repeated: bool = False
) -> SearchAnswer:
    results = []
    for r in result["results"]:
        windows = [Kwic(**sn) for sn in r["snippets"]]  # the CLI's (retrieval/explain.add_snippets), best first
        results.append(
            SearchResult(
                **{k: v for k, v in r.items() if k not in ("regions", "channels", "snippets")},
                source_url=source_link(r["source"]),
                kwic=windows[0],
                snippets=windows,
                regions=[Region(**{**g, "url": web_link(g.get("url"))}) for g in r["regions"]],
                channels=[ChannelFind(**c) for c in r["channels"]],
            )
        )
    params = result["params"]
    return SearchAnswer(
        run_id=run_id,
        repeated=repeated,
        collection=name,
        query=body.query,
        seconds=result["seconds"],
        results=results,
        time_windows=params.get("time_windows"),
        expansion=result["expansion"],
        failures=result["failures"],
        params={k: v for k, v in params.items() if k != "time_windows"},
        channel_rankings=result["channel_rankings"] if body.explain else None,
        field_rankings=result["field_rankings"] if body.explain else None,
    )


@router.post("/collections/{name}/search", summary="Search a collection", response_model=SearchAnswer)
def search(name: CollectionName, body: SearchBody, state: State) -> SearchAnswer:
    """Run one search (the options of `tracerag search`) and answer the ranked documents with their best chunk,
    snippets, channels and time windows; the search is recorded as a run in the collection's trails (not twice when
    repeated). 404 for an unknown collection; 422 naming the field for an invalid option."""
    return run(state, name, body)
