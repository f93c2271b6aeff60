"""The resources: the collections served with their sub-corpora, and a run's trail by its id (a collection's, or
a catalog conversation's). Addresses are parsed here and looked up by name, never made into paths."""

from __future__ import annotations

import re
from typing import Any

import mcp_types as types

from tracerag.server.api.collections import info_of
from tracerag.server.api.trails import catalog_roots, read_served_trail, trail_file, trail_items
from tracerag.server.state import NotFoundError, ServerState
from tracerag.trail import trails_by_run
from tracerag.trail.summary import summarise

COLLECTIONS = "tracerag://collections"
TRAIL = "tracerag://trails/{collection}/{run_id}"
CATALOG_TRAIL = "tracerag://catalog/trails/{run_id}"
LISTED_RUNS = 20  # the newest runs of each collection listed as resources (any other is read by its address)
JSON = "application/json"

TEMPLATES = [
    types.ResourceTemplate(
        uri_template=TRAIL,
        name="trail",
        title="A run's trail",
        description="Every event of one run (a search, an ask, an assistant's call...): what was asked, found, "
        "judged and answered, in order. `tracerag trail show RUN` renders the same.",
        mime_type=JSON,
    ),
    types.ResourceTemplate(
        uri_template=CATALOG_TRAIL,
        name="catalog-trail",
        title="A catalog conversation's trail",
        description="Every event of one catalog conversation: each request, what was understood, filtered, checked "
        "and replied.",
        mime_type=JSON,
    ),
]

_TRAIL = re.compile(r"tracerag://trails/([^/]+)/([^/]+)")
_CATALOG_TRAIL = re.compile(r"tracerag://catalog/trails/([^/]+)")


def listed(state: ServerState) -> list[types.Resource]:
    """The collections resource and each collection's newest runs."""
    found = [
        types.Resource(
            uri=COLLECTIONS,
            name="collections",
            title="The collections served",
            description="Each collection's documents, sub-corpora, languages and dates.",
            mime_type=JSON,
        )
    ]
    for name in sorted(state.collections):
        for item in reversed(trail_items(state, name)[-LISTED_RUNS:]):  # newest first
            found.append(
                types.Resource(
                    uri=TRAIL.format(collection=name, run_id=item.run_id),
                    name=f"{name}/{item.run_id}",
                    title=f"{item.kind} run: {item.question}"[:200],
                    mime_type=JSON,
                )
            )
    return found


def read(state: ServerState, uri: str) -> Any:
    """The resource at `uri`, as JSON data; NotFoundError for an address that names nothing here."""
    if uri == COLLECTIONS:
        return collections(state)
    if match := _TRAIL.fullmatch(uri):
        name, run_id = match.groups()
        return trail(trail_file(state, name, run_id))
    if match := _CATALOG_TRAIL.fullmatch(uri):
        (run_id,) = match.groups()
        path = trails_by_run(catalog_roots(state)).get(run_id)
        if path is None:
            raise NotFoundError(f"catalog run {run_id!r}: no such conversation")
        return trail(path)
    raise NotFoundError(f"no such resource (known: {COLLECTIONS}, {TRAIL}, {CATALOG_TRAIL})")


def collections(state: ServerState) -> dict[str, Any]:
    out = []
    for name in sorted(state.collections):
        with state.reading(name) as col:
            info = info_of(name, col)
        out.append(info.model_dump(mode="json", include=_SHOWN))
    return {"collections": out, "catalog": state.config.catalog is not None}


_SHOWN = {"name", "documents", "chunks", "corpora", "corpus_tree", "languages", "date_min", "date_max", "read_only"}


def trail(path: Any) -> dict[str, Any]:
    served = read_served_trail(path)
    summary = summarise(served.events)
    return {
        "run": {"run_id": summary.run_id, "kind": summary.kind, "status": summary.status, "question": summary.question},
        "torn": served.torn is not None,
        "events": [e.model_dump(mode="json") for e in served.events],
    }
