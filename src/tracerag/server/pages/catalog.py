"""/catalog: the catalog chat page. The page is a shell (the form, the empty conversation); static/catalog.js
talks to /api/catalog/conversations and draws the turns and cards as text, never as HTML."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from tracerag.catalog.profile import CatalogProfile
from tracerag.server.api.catalog import NO_CATALOG
from tracerag.server.deps import State
from tracerag.server.state import NotFoundError

router = APIRouter()


@router.get("/catalog", response_class=HTMLResponse, include_in_schema=False)
def catalog_page(request: Request, state: State) -> Response:
    catalog = state.config.catalog
    if catalog is None:
        raise NotFoundError(NO_CATALOG)
    profile = CatalogProfile.load(catalog)
    context = {"page": "catalog", "directory": profile.name, "region": profile.region}
    return request.app.state.templates.TemplateResponse(request, "catalog.html", context)
