"""`tracerag mcp`: the collections and the catalog as a Model Context Protocol server for other assistants (a
desktop chat client, an IDE, an agent framework), over stdio (the default) or streamable HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tracerag.cli.app import BaseUrlOpt, ConfigOpt, ExitCode, HostOpt, PortOpt, app, data_text, err, friendly
from tracerag.cli.serve import TokenOpt
from tracerag.errors import ConfigError


@app.command()
@friendly
def mcp(
    collection: Annotated[
        list[Path] | None,
        typer.Option("--collection", "-c", metavar="DIR", help="Collection directory to offer (repeatable)."),
    ] = None,
    catalog: Annotated[
        Path | None, typer.Option("--catalog", metavar="DIR", help="Catalog directory for the catalog_chat tool.")
    ] = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio (127.0.0.1 by default).")
    ] = False,
    host: HostOpt = None,
    port: PortOpt = None,
    token: TokenOpt = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Offer no tool that writes (add_to_selection); runs are still trailed.")
    ] = False,
    llm: Annotated[
        str | None,
        typer.Option("--llm", metavar="MODEL", help="Model for ask and the catalog: openai:MODEL, local, replay:DIR."),
    ] = None,
    base_url: BaseUrlOpt = None,
    config: ConfigOpt = None,
) -> ExitCode | None:
    """Serve the collections and catalog as MCP tools (search, document, ask, selections, export, catalog_chat)
    over stdio, or streamable HTTP with --http; every call is recorded in the trail with the client's name."""
    import anyio

    from tracerag.cli.app import settings_with_llm
    from tracerag.cli.serve import checked_sources
    from tracerag.mcp.server import ToolServer, serve_stdio
    from tracerag.server.state import ServerConfig, ServerState

    checked_sources(collection, catalog)
    if not http and (host is not None or port is not None or token is not None):
        raise ConfigError("--host, --port and --token are for --http; stdio needs none of them")
    settings = settings_with_llm(config, llm, base_url)
    server_config = ServerConfig(
        collections=tuple(collection or ()),
        settings=settings,
        catalog=catalog,
        token=token,
        host=host or settings.server.host,
        port=settings.server.port if port is None else port,
    )
    tool_server = ToolServer(ServerState(server_config), read_only=read_only)
    try:
        if http:
            from tracerag.mcp.http import serve_http

            serve_http(tool_server, server_config, lambda line: err.print(data_text(line), soft_wrap=True))
        else:
            anyio.run(serve_stdio, tool_server)
    except KeyboardInterrupt:
        pass
    finally:
        tool_server.close()
    return None
