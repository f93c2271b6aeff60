"""The HTTP API, one module per resource; each has a `router`, mounted under /api."""

from __future__ import annotations

from fastapi import APIRouter


def routers() -> list[APIRouter]:
    from tracerag.server.api import ask, catalog, collections, health, jobs, research, search, trails

    return [m.router for m in (health, collections, search, jobs, ask, research, trails, catalog)]
