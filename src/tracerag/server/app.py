"""The FastAPI application: the guards, the error edge, the API routers under /api, the pages and their static
files. The interactive API browsers FastAPI offers load their scripts from a CDN, so they are off; the OpenAPI
schema is served at /api/openapi.json (see the README)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from tracerag import __version__
from tracerag.server import errors
from tracerag.server.security import LOOPBACK, Guard, RateLimiter
from tracerag.server.state import ServerConfig, ServerState
from tracerag.text import hidden_ranges, safe_block

HERE = Path(__file__).parent


def create_app(config: ServerConfig) -> FastAPI:
    """The app serving `config`'s collections and catalog. Its state is `app.state.server` (a `ServerState`)."""
    from tracerag.server.api import routers as api_routers
    from tracerag.server.pages import routers as page_routers

    state = ServerState(config)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        state.close()

    app = FastAPI(
        title="TRACE",
        version=__version__,
        description="Accountable source discovery: search, ask, judge, review, answer, trails and catalog chat.",
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.server = state
    app.state.templates = templates()
    errors.install(app)
    for router in api_routers():
        app.include_router(router, prefix="/api")
    for router in page_routers():
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    server = config.settings.server
    app.add_middleware(
        Guard,
        token=config.token,
        loopback_only=config.token is None or config.host in LOOPBACK,
        max_body=server.max_request_kb * 1024,
        max_upload=server.max_upload_mb * 1024 * 1024,
        limiter=RateLimiter(server.rate_per_minute, max(10, server.rate_per_minute // 10)),
    )
    return app


def templates() -> Jinja2Templates:
    """The pages' templates. Autoescaping is on for every template (document text is data, never markup)."""
    t = Jinja2Templates(directory=HERE / "templates")
    t.env.autoescape = True
    t.env.globals["version"] = __version__
    # `shown`: the one rule for untrusted text in a page, as in a terminal (tracerag.text.safe_block): controls and
    # invisible format characters, the bidi overrides and isolates among them, are shown as their escape
    # (`\u202e`), so that none reverses or hides the words after it. Its element isolates it (`dir="auto"`, <bdi>).
    t.env.filters["shown"] = safe_block
    # The same set for the pages' scripts (trace.shown in static/app.js), as a regular-expression class.
    t.env.globals["hidden_characters"] = "".join(
        f"\\u{{{lo:x}}}" + (f"-\\u{{{hi:x}}}" if hi > lo else "") for lo, hi in hidden_ranges()
    )
    return t
