"""GET /api/health: the server is up, what it serves, and whether each collection can be read now."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from tracerag import __version__
from tracerag.server.deps import State

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str = Field(description='"ok" when the server answers.')
    version: str = Field(description="The tracerag version serving.")
    collections: list[str] = Field(description="The collections served, by name.")
    catalog: bool = Field(description="True when a catalog is served (/api/catalog).")
    jobs_running: int = Field(description="Background jobs running now.")


@router.get("/health", summary="Whether the server is up and what it serves", response_model=Health)
def health(state: State) -> Health:
    """The server's status, its version, the collections it serves, whether a catalog is served, and how many background
    jobs are running. Needs no collection to be readable; a monitor can poll it."""
    return Health(
        status="ok",
        version=__version__,
        collections=sorted(state.collections),
        catalog=state.config.catalog is not None,
        jobs_running=sum(1 for j in state.jobs.list() if j.status.value == "running"),
    )
