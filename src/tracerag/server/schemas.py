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

    id: str
    kind: str
    collection: str | None
    status: str = Field(description="running, done or failed")
    started: float
    finished: float | None
    events: int = Field(description="Progress events so far.")
    error: str | None
    result: dict[str, Any] | None


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (400, 401, 403, 404, 409, 413, 422, 429, 503)
}
