"""The one place where errors become HTTP answers: a `TraceError` by its kind, a request that does not validate
as a message naming the field, an HTTP error as JSON. API paths answer JSON `{"error": ..., "field": ...}`;
pages answer an HTML page saying the same."""

from __future__ import annotations

import sqlite3
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from tracerag.errors import (
    CollectionBusyError,
    ConfigError,
    DataUnavailableError,
    DiskFullError,
    LLMError,
    ReadOnlyError,
    SelectionError,
    TraceError,
    TrailError,
    disk_full,
)
from tracerag.server.state import NotFoundError

# most specific first: the first class an error is an instance of decides its status
STATUS_OF: list[tuple[type[TraceError], int]] = [
    (NotFoundError, 404),
    (CollectionBusyError, 503),
    (DiskFullError, 507),  # Insufficient Storage
    (ReadOnlyError, 409),
    (LLMError, 502),
    (DataUnavailableError, 503),
    (TrailError, 404),
    (SelectionError, 400),
    (ConfigError, 400),
    (TraceError, 400),
]


def status_of(exc: TraceError) -> int:
    if isinstance(exc, TrailError) and exc.file is not None:
        # a trail that is there but damaged (a line names its file): 409, its state stops it being read, and a
        # repair of the file changes that; not 404, which would say there is no such run
        return 409
    return next(status for kind, status in STATUS_OF if isinstance(exc, kind))


def field_of(loc: tuple[Any, ...] | list[Any]) -> str:
    """A validation error's place as a user names it: `body.filter.date_from` → `filter.date_from`."""
    # only the first part says where (a body field may itself be called `query`, as the search's is)
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header", "cookie"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def validation_message(error: Any) -> str:
    """One validation error in words. A body that is no JSON at all is said as such, with where it broke (pydantic
    gives its character offset as the place: `0: JSON decode error` said nothing)."""
    if error.get("type") == "json_invalid":
        where = error.get("loc", ())
        at = f" at character {where[-1]}" if len(where) > 1 and isinstance(where[-1], int) else ""
        why = (error.get("ctx") or {}).get("error", "")
        return (
            f"not valid JSON{at}"
            + (f" ({why})" if why else "")
            + "; send a JSON object (Content-Type: application/json)"
        )
    # a validator's own ValueError reaches us as "Value error, <its words>": the words are the message
    return str(error.get("msg", "invalid")).removeprefix("Value error, ")


def error_response(request: Request, status: int, message: str, **extra: Any) -> Response:
    if request.url.path.startswith("/api"):
        return JSONResponse({"error": message, **extra}, status_code=status)
    templates = request.app.state.templates
    return templates.TemplateResponse(request, "error.html", {"status": status, "message": message}, status_code=status)


def install(app: FastAPI) -> None:
    @app.exception_handler(TraceError)
    async def trace_error(request: Request, exc: TraceError) -> Response:
        exc = disk_full(exc) or exc  # an error of ours raised from a full disk is said as one
        status = status_of(exc)
        headers = {"Retry-After": "5"} if isinstance(exc, CollectionBusyError) else None
        response = error_response(request, status, str(exc), kind=type(exc).__name__)
        if headers:
            response.headers.update(headers)
        return response

    # A full disk met where no folder was known to name it (SQLite, a native library): said as one, else the
    # error goes on to the server's own 500 (a bug). Only the kinds that such libraries raise are looked at.
    async def maybe_disk_full(request: Request, exc: Exception) -> Response:
        full = disk_full(exc)
        if full is None:
            raise exc
        return await trace_error(request, full)

    for kind in (OSError, ValueError, RuntimeError, sqlite3.Error):
        app.add_exception_handler(kind, maybe_disk_full)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = [
            {
                "field": "body" if e.get("type") == "json_invalid" else field_of(e.get("loc", ())),
                "message": validation_message(e),
            }
            for e in exc.errors()
        ]
        first = errors[0] if errors else {"field": "body", "message": "invalid request"}
        message = f"{first['field']}: {first['message']}"
        return error_response(request, 422, message, field=first["field"], errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        response = error_response(request, exc.status_code, str(exc.detail))
        for key, value in (exc.headers or {}).items():
            response.headers[key] = value
        return response
