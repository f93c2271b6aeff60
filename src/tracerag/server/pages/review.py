"""The review board: `/review` picks a collection's selection or run, `/review/{collection}/{selection}` shows its
candidates (title, date, the cited span in context, the agent's reasons and verdict, the judge's score) to accept,
reject or skip by click or key (static/review.js), the counts, the export links and the draft from the accepted
sources, with links back to the search and to the run in the trail. The page is rendered from the same view as
`GET /api/.../selections/{selection}`, so a reload shows what is decided; text from documents and models goes
through Jinja's autoescape only."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from tracerag.collection import trail_roots
from tracerag.server.api.search import recorded_as
from tracerag.server.api.selections import selection_list, selection_view
from tracerag.server.deps import State
from tracerag.server.state import ServerState
from tracerag.trail import trails_by_run

router = APIRouter(include_in_schema=False)


def back_links(state: ServerState, name: str, question: str, run_id: str | None) -> dict[str, str | None]:
    """Where the board came from: the search (the page's own address when the web app recorded the run, which
    shows that run; else the question searched again) and the run in the trail."""
    quoted = quote(name, safe="")
    search = "/?" + urlencode({"c": name, "q": question})
    trail = None
    if run_id is not None:
        path = trails_by_run(trail_roots(state.path_of(name), state.settings)).get(run_id)
        address = recorded_as(path).get("address", "") if path is not None else ""
        if address.startswith("/?"):
            search = address + "&" + urlencode({"run": run_id})
        trail = f"/trails/{quoted}/{quote(run_id, safe='')}"
    return {"search_href": search, "trail_href": trail}


@router.get("/review", response_class=HTMLResponse)
def review_index(request: Request, state: State) -> Response:
    listed = [(name, selection_list(state, name)) for name in sorted(state.collections)]
    return request.app.state.templates.TemplateResponse(
        request, "review.html", {"page": "review", "collections": listed}
    )


@router.get("/review/{collection}/{selection}", response_class=HTMLResponse)
def review_board(
    request: Request,
    collection: str,
    selection: str,
    state: State,
    run: Annotated[str | None, Query(max_length=200)] = None,
    judge: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    view = selection_view(state, collection, selection, run, judge)
    return request.app.state.templates.TemplateResponse(
        request,
        "review_board.html",
        {
            "page": "review",
            "collection": collection,
            "selection": selection,
            "board": view,
            "has_model": state.settings.llm.model is not None,
            **back_links(state, collection, view.question, view.run_id),
        },
    )
