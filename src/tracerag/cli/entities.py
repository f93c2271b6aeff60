"""`tracerag entities`: find the named entities of every chunk not yet looked at (a collection made without
them, or documents added since), for the entity channel. Nothing is re-embedded or re-indexed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from tracerag.cli.app import (
    CollectionOpt,
    ConfigOpt,
    ExitCode,
    WaitOpt,
    app,
    data_text,
    friendly,
    out,
    progress_bar,
    write_json,
)
from tracerag.errors import ConfigError

if TYPE_CHECKING:
    from rich.progress import TaskID


@app.command()
@friendly
def entities(
    collection: CollectionOpt,
    json_out: Annotated[bool, typer.Option("--json", help="Print what was found as JSON.")] = False,
    wait: WaitOpt = False,
    config: ConfigOpt = None,
) -> ExitCode | None:
    """Find named entities in the chunks not yet looked at (spaCy for the languages of ingest.entity_pipelines,
    the collection's own gazetteer for the others), so that the entity channel can search them."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.ingest.entities import spacy_missing

    missing = spacy_missing()
    if missing is not None:
        raise ConfigError(f"cannot find entities: {missing}")
    with Collection.open(collection, load_settings(config), mode="write", wait=wait) as col:
        with progress_bar() as bar:
            tasks: dict[str, TaskID] = {}
            began = time.perf_counter()

            def update(what: str, done: int, total: int) -> None:
                if what not in tasks:
                    tasks[what] = bar.add_task(what, total=total, extra="")
                rate = done / max(time.perf_counter() - began, 1e-9)
                bar.update(tasks[what], completed=done, total=max(total, done), extra=f"{rate:,.0f} chunks/s")

            report = col.find_entities(update)
        looked_at, chunks = col.store.count_chunks_for_entities()
    if json_out:
        write_json(report.to_dict() | {"chunks_looked_at": looked_at, "chunks_total": chunks})
    else:
        found = ", ".join(f"{n:,} chunks by {finder}" for finder, n in report.chunks.items()) or "nothing new"
        out.print(
            data_text(
                f"{found}: {report.mentions:,} mentions in {report.seconds:.1f} s "
                f"({report.docs_per_second:.1f} documents/s)"
            )
        )
        out.print(data_text(f"{looked_at:,} of {chunks:,} chunks looked at for entities"))
        for language, why in report.left.items():
            out.print(data_text(f"{language}: not looked at: {why}", "yellow"))
    return ExitCode.PARTIAL if report.left else None
