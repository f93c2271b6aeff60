"""Background jobs: their state, and their progress as server-sent events (GET /api/jobs/{id}/events; a client
that reconnects sends Last-Event-ID and gets what it missed)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query
from fastapi.responses import StreamingResponse

from tracerag.server.deps import JobId, State
from tracerag.server.jobs import Job, sse
from tracerag.server.schemas import ERRORS, JobInfo
from tracerag.server.state import NotFoundError, ServerState

router = APIRouter(tags=["jobs"], responses=ERRORS)


def job_of(state: ServerState, job_id: str) -> Job:
    job = state.jobs.get(job_id)
    if job is None:
        raise NotFoundError(f"job {job_id!r}: no such job here (finished jobs are kept a while, then forgotten)")
    return job


@router.get("/jobs", summary="List background jobs", response_model=list[JobInfo])
def list_jobs(state: State, kind: Annotated[str | None, Query(description="Only jobs of this kind.")] = None) -> list:
    """Every background job the server holds (ingests, ask and judge runs), optionally of one kind; finished jobs are
    kept a while, then forgotten."""
    return [JobInfo(**j.summary()) for j in state.jobs.list(kind)]


@router.get("/jobs/{job_id}", summary="One background job", response_model=JobInfo)
def get_job(job_id: JobId, state: State) -> JobInfo:
    """The job's status, progress count and, when done, its result or error. 404 when the server holds no such job."""
    return JobInfo(**job_of(state, job_id).summary())


@router.get(
    "/jobs/{job_id}/events",
    summary="Follow a job's events (Server-Sent Events)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "The job's events, then `end`."}},
)
def job_events(
    job_id: JobId,
    state: State,
    last_event_id: Annotated[
        int | None,
        Header(alias="Last-Event-ID", description="The last event seen: a browser's EventSource resumes after it."),
    ] = None,
    after: Annotated[int | None, Query(description="Only events numbered after this one.")] = None,
) -> StreamingResponse:
    """The job's progress as Server-Sent Events (`text/event-stream`), one per event, numbered; ends with an `end`
    event. Resume with `after` or the `Last-Event-ID` header. 404 when the server holds no such job."""
    job = job_of(state, job_id)
    start = after if after is not None else last_event_id if last_event_id is not None else -1
    return StreamingResponse(
        sse(job.follow(start, stopping=state.jobs.stopping)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store"},
    )
