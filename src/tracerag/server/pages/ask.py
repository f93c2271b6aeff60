"""The ask page (`/ask`): a question form, then the agent's live progress (the job's event stream, followed by
static/ask.js), then the ranked sources with verdict, reason and quote, each linked to the document view at its
quoted span, and a link to the run's trail. `/ask?collection=NAME&run=RUN` shows a past run's result."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from tracerag.server.deps import State

router = APIRouter(include_in_schema=False)


@router.get("/ask")
def ask_page(
    request: Request,
    state: State,
    collection: Annotated[str | None, Query(description="The collection to ask (default: the first).")] = None,
    run: Annotated[str | None, Query(description="A past ask run to show.")] = None,
) -> Response:
    names = sorted(state.collections)
    if collection is not None:
        state.path_of(collection)  # an unknown name is a 404 page, not a form that fails later
    selected = collection or (names[0] if names else None)
    context = {
        "page": "ask",
        "collections": names,
        "selected": selected,
        "run": run or "",
        "model": state.settings.llm.model,  # said before a run, not only after one ends without a plan
    }
    return request.app.state.templates.TemplateResponse(request, "ask.html", context)
