"""`tracerag migrate`: a collection's embedded index moved to a Qdrant server, as stored (no re-embedding)."""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from tracerag.cli.app import (
    ApiKeyOpt,
    CollectionOpt,
    ConfigOpt,
    ExitCode,
    QdrantCollectionOpt,
    WaitOpt,
    app,
    data_text,
    err,
    friendly,
    out,
    progress_bar,
    write_json,
)
from tracerag.errors import ConfigError


@app.command()
@friendly
def migrate(
    collection: CollectionOpt,
    to: Annotated[str, typer.Option("--to", help="Where the index goes: qdrant (a server or cluster).")],
    url: Annotated[str, typer.Option("--url", help="The Qdrant server (REST, e.g. http://qdrant:6333).")],
    api_key: ApiKeyOpt = None,
    qdrant_collection: QdrantCollectionOpt = None,
    restart: Annotated[
        bool, typer.Option("--restart", help="Drop what an interrupted migration wrote and start over.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    wait: WaitOpt = False,
    config: ConfigOpt = None,
) -> ExitCode:
    """Move a collection's index from Qdrant Edge to a Qdrant server: points, vectors and payload as stored (no
    re-embedding), in batches, resumable (run it again after Ctrl-C or a failure), counts checked at the end; only
    then does the collection use the server. Shards, replicas and write consistency: engine.* settings."""
    from tracerag.config import load_settings

    if to != "qdrant":
        raise ConfigError(f"--to {to!r}: the one engine a collection moves to is 'qdrant' (a Qdrant server)")
    from tracerag.migrate import migrate_to_server  # needs the `qdrant` extra

    # the server's address is checked as a setting is (an http(s) URL)
    settings = load_settings(config, engine={"url": url, "collection": qdrant_collection})
    assert settings.engine.url is not None
    reached = [0, 0]

    with progress_bar() as progress:
        task = progress.add_task("migrate", total=None, extra="")

        def update(done: int, total: int) -> None:
            reached[:] = [done, total]
            progress.update(task, completed=done, total=total)

        try:
            report = migrate_to_server(
                collection,
                settings,
                url=settings.engine.url,
                api_key=api_key,
                collection=qdrant_collection,
                restart=restart,
                wait=wait,
                progress=update,
                notify=lambda message: err.print(data_text(message)),
            )
        except KeyboardInterrupt:
            again = shlex.join(["tracerag", "migrate", "-c", str(collection), "--to", "qdrant", "--url", url])
            moved = f"{reached[0]:,} of {reached[1]:,} points moved and kept" if reached[1] else "nothing moved"
            err.print(data_text(f"interrupted: {moved}; run `{again}` again to continue where it stopped", "yellow"))
            raise typer.Exit(ExitCode.INTERRUPTED) from None
    if json_out:
        write_json(report.to_dict())
        return ExitCode.OK
    speed = f"{report.moved_now / report.seconds:,.0f} points/s" if report.seconds else ""
    resumed = " (continued an interrupted migration)" if report.resumed else ""
    out.print(
        data_text(
            f"moved {report.points:,} points ({report.with_vectors:,} with vectors) to {report.url}, collection "
            f"{report.collection}{resumed}: {report.moved_now:,} in {report.seconds:.1f} s, {speed}"
        )
    )
    fields = ", ".join(f"{language} {n:,}" for language, n in report.fields.items())
    out.print(data_text(f"counts checked on the server: points, vectors, chunks per language ({fields})"))
    out.print(
        data_text(
            f"{collection} now searches the server; its embedded index ({collection / 'index'}) is no longer used: "
            "remove it when you no longer need it"
        )
    )
    return ExitCode.OK
