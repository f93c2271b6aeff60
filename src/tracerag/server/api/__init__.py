"""The HTTP API, one module per resource; each has a `router`, mounted under /api."""

from __future__ import annotations

from fastapi import APIRouter


def routers() -> list[APIRouter]:
    from tracerag.server.api import (
        ask,
        catalog,
        collections,
        health,
        ingest,
        jobs,
        research,
        search,
        selections,
        trails,
    )

    return [m.router for m in (health, collections, ingest, search, jobs, ask, research, selections, trails, catalog)]
