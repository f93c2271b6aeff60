"""`tracerag serve`: the web app and HTTP API over one or more collections and a catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tracerag.cli.app import (
    BaseUrlOpt,
    ConfigOpt,
    ExitCode,
    HostOpt,
    PortOpt,
    TokenOpt,
    app,
    checked_sources,
    data_text,
    err,
    friendly,
    out,
    settings_with_llm,
)


@app.command()
@friendly
def serve(
    collection: Annotated[
        list[Path] | None,
        typer.Option("--collection", "-c", metavar="DIR", help="Collection directory to serve (repeatable)."),
    ] = None,
    catalog: Annotated[
        Path | None, typer.Option("--catalog", metavar="DIR", help="Catalog directory for the catalog chat.")
    ] = None,
    host: HostOpt = None,
    port: PortOpt = None,
    token: TokenOpt = None,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm", metavar="MODEL", help="Model for ask, judge, drafts and chat: openai:MODEL, local, replay:DIR."
        ),
    ] = None,
    base_url: BaseUrlOpt = None,
    config: ConfigOpt = None,
) -> ExitCode | None:
    """Serve the web app and the HTTP API (OpenAPI schema at /api/openapi.json) until Ctrl-C."""
    from tracerag.server.run import run_server
    from tracerag.server.state import ServerConfig

    checked_sources(collection, catalog)
    settings = settings_with_llm(config, llm, base_url)
    server_config = ServerConfig(
        collections=tuple(collection or ()),
        settings=settings,
        catalog=catalog,
        token=token,
        host=host or settings.server.host,
        port=settings.server.port if port is None else port,
    )
    run_server(server_config, lambda line: out.print(data_text(line), soft_wrap=True))
    err.print("stopped")
    return None
