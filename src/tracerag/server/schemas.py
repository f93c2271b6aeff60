"""Request and response bodies shared by several API modules (each module defines its own besides)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    """Every error answer of the API."""

    error: str = Field(description="What went wrong, naming the bad field or thing.")
    field: str | None = Field(None, description="The request field at fault, for a request that did not validate.")
    kind: str | None = Field(None, description="The error's kind (the TRACE error class), when it is one.")


class JobInfo(BaseModel):
    """A background job (an ingest, an agent run): follow it at /api/jobs/{id}/events."""

    id: str = Field(description="The job's id.")
    kind: str = Field(description="What the job does: ingest, ask or judge.")
    collection: str | None = Field(description="The collection it works on (None: none).")
    status: str = Field(description="running, done or failed")
    started: float = Field(description="When it started (Unix time, seconds).")
    finished: float | None = Field(description="When it ended (Unix time, seconds); None while running.")
    events: int = Field(description="Progress events so far.")
    error: str | None = Field(description="Why it failed, if it did.")
    result: dict[str, Any] | None = Field(
        description="What it produced, when done (an ask run's `AskResult`, a judge's result, an ingest's counts)."
    )


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (400, 401, 403, 404, 409, 413, 422, 429, 503)
}
