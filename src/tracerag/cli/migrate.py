"""`tracerag migrate`: a collection's index made again from its store (no re-embedding): in the embedded engine, for
a collection made by the previous one, or on a Qdrant server."""

from __future__ import annotations

import shlex
from pathlib import Path
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
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="tantivy|qdrant",
            help="Where the index goes: tantivy (embedded, the default) or qdrant (a server).",
        ),
    ] = "tantivy",
    url: Annotated[
        str | None, typer.Option("--url", help="The Qdrant server of --to qdrant (REST, e.g. http://qdrant:6333).")
    ] = None,
    api_key: ApiKeyOpt = None,
    qdrant_collection: QdrantCollectionOpt = None,
    restart: Annotated[
        bool, typer.Option("--restart", help="Drop what an interrupted migration wrote and start over.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    wait: WaitOpt = False,
    config: ConfigOpt = None,
) -> ExitCode:
    """Make a collection's index again from its document store, nothing re-embedded. --to tantivy (default):
    convert a collection made by the previous embedded engine (Qdrant Edge). --to qdrant --url URL: move it to a
    Qdrant server, in batches, resumable (run it again after Ctrl-C or a failure), counts checked at the end; only
    then does the collection use the server. Shards, replicas and write consistency: engine.* settings."""
    from tracerag.config import load_settings

    if to == "tantivy":
        return _to_embedded(collection, config, wait, json_out)
    if to != "qdrant":
        raise ConfigError(f"--to {to!r}: expected 'tantivy' (embedded) or 'qdrant' (a Qdrant server)")
    if url is None:
        raise ConfigError("--to qdrant needs --url (the Qdrant server, e.g. http://qdrant:6333)")
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
            err.print(
                data_text(f"interrupted: {moved}; run `{again}` again to continue where it stopped", "yellow"),
                soft_wrap=True,
            )
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


def _to_embedded(collection: Path, config: Path | None, wait: bool, json_out: bool) -> ExitCode:
    from tracerag.config import load_settings
    from tracerag.migrate import migrate_to_embedded

    settings = load_settings(config)
    with progress_bar() as progress:
        task = progress.add_task("migrate", total=None, extra="")
        report = migrate_to_embedded(
            collection,
            settings,
            wait=wait,
            progress=lambda done, total: progress.update(task, completed=done, total=total),
        )
    if json_out:
        write_json(report.to_dict())
        return ExitCode.OK
    if report.finished_swap:
        out.print(data_text(f"{collection}: the index an interrupted run had built is now in place"))
        return ExitCode.OK
    speed = f"{report.chunks / report.seconds:,.0f} chunks/s" if report.seconds else ""
    out.print(
        data_text(
            f"{collection}: index made again from the store, {report.chunks:,} chunks ({report.with_vectors:,} with "
            f"vectors) in {report.seconds:.1f} s, {speed}; counts checked; the old index removed"
        )
    )
    return ExitCode.OK
