"""The review board: `/review` picks a collection's selection or run, `/review/{collection}/{selection}` shows its
candidates (title, date, the cited span in context, the agent's reasons and verdict, the judge's score) to accept,
reject or skip by click or key (static/review.js), the counts, the export links and the draft from the accepted
sources. The page is rendered from the same view as `GET /api/.../selections/{selection}`, so a reload shows
what is decided; text from documents and models goes through Jinja's autoescape only."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from tracerag.server.api.selections import selection_list, selection_view
from tracerag.server.deps import State

router = APIRouter(include_in_schema=False)


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
        },
    )
