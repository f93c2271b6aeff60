"""The web UI's pages, server-rendered from templates/, one module per page group; each has a `router`."""

from __future__ import annotations

from fastapi import APIRouter


def routers() -> list[APIRouter]:
    from tracerag.server.pages import ask, catalog, review, search, trails

    return [m.router for m in (search, ask, review, trails, catalog)]
