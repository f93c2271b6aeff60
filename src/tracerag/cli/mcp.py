"""`tracerag mcp`: the collections and the catalog as a Model Context Protocol server for other assistants (a
desktop chat client, an IDE, an agent framework), over stdio (the default) or streamable HTTP; with `--replay RUN`,
an assistant's recorded call asked again (`mcp/replay.py`).

`--replay` is an option, as `tracerag ask --replay` is, rather than a sub-command: `tracerag mcp` stays the one
command it is (a group would make `tracerag mcp -c DIR` share its words with sub-command names), and the replay
takes the same -c, --config and --llm as the server it stands in for."""

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
    replay_run: Annotated[
        str | None,
        typer.Option(
            "--replay",
            metavar="RUN",
            help="Ask a recorded call (or an assistant's search) again and say whether the answer is the same.",
        ),
    ] = None,
) -> ExitCode | None:
    """Serve the collections and catalog as MCP tools (search, document, ask, selections, export, catalog_chat)
    over stdio, or streamable HTTP with --http; every call is recorded in the trail with the client's name.
    With --replay RUN, ask a recorded call again over -c DIR instead: exit 0 when the answer is the same, 1 when
    it differs, 2 when the run is none it can replay."""
    import anyio

    from tracerag.mcp.server import ToolServer, serve_stdio
    from tracerag.server.state import ServerConfig, ServerState

    if replay_run is not None:
        serving = {"--catalog": catalog, "--http": http or None, "--host": host, "--port": port, "--token": token}
        given = [flag for flag, value in serving.items() if value is not None] + (["--read-only"] if read_only else [])
        if given:
            raise ConfigError(f"{', '.join(given)}: for serving; --replay asks one recorded call again")
        if collection is not None and len(collection) > 1:
            raise ConfigError("--replay reads one collection's trail: give one -c DIR")
        return _replay(replay_run, collection[0] if collection else Path("."), config, llm, base_url)
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


def _replay(run: str, collection: Path, config: Path | None, llm: str | None, base_url: str | None) -> ExitCode:
    """`--replay RUN`: the call asked again over `collection`, what differs said line by line."""
    from tracerag.collection import Collection
    from tracerag.mcp.replay import replay_run
    from tracerag.server.state import ServerConfig, ServerState
    from tracerag.trail.show_text import plural

    if not Collection.exists(collection):
        raise ConfigError(f"-c {collection}: not a TRACE collection (no collection.toml); see `tracerag ingest`")
    state = ServerState(ServerConfig(collections=(collection,), settings=settings_with_llm(config, llm, base_url)))
    try:
        (name,) = state.collections
        replayed = replay_run(state, name, run)
    finally:
        state.close()
    who = f" asked by {replayed.client}" if replayed.client else ""
    out.print(data_text(f"{replayed.kind} run {replayed.run_id}{who}: {replayed.asked}"))
    for note in replayed.notes:
        err.print(data_text(note, "yellow"))
    if replayed.same:
        sha = f" (digest {replayed.digest_now[:12]})" if replayed.digest_now else ""
        named = plural(len(replayed.now), "document")
        out.print(data_text(f"the same answer as recorded{sha}: {named} named", "green"))
        return ExitCode.OK
    for line in replayed.differences():
        out.print(data_text(line, "red"))
    return ExitCode.PARTIAL
