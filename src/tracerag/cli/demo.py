"""`tracerag demo`: the main job on a small collection, lexical first, then with the dense channel."""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from tracerag.cli.app import ExitCode, HostOpt, PortOpt, app, data_text, err, friendly, out
from tracerag.cli.views import embed_missing, print_ingest_report, render, run_ingest
from tracerag.errors import ConfigError
from tracerag.text import safe_line

if TYPE_CHECKING:
    from tracerag.collection import Collection
    from tracerag.demo_data import DemoQuery

# The first pass searches before any vector exists, so it asks for the lexical channels by name.
DEMO_LEXICAL = ("bm25", "date", "phrase")
DEMO_K = 3


@app.command()
@friendly
def demo(
    data: Annotated[
        Path | None,
        typer.Option(
            "--data", metavar="DIR", help="Local copy of the three HIPE-2022 v2.1 demo files (or TRACERAG_DEMO_DATA)."
        ),
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
    serve: Annotated[
        bool, typer.Option("--serve", help="Then open the demo collection in the web app (as `tracerag serve`).")
    ] = False,
    host: HostOpt = None,
    port: PortOpt = None,
) -> ExitCode | None:
    """The main job on a small collection: ingest (lexical first), explained searches, then vectors and the same
    questions with the dense channel. Uses the packaged sample unless HIPE-2022 is at hand; never the network
    unless --download."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.demo_data import COMMIT, resolve_demo_source

    if not serve and (host is not None or port is not None):
        raise ConfigError("--host and --port are where --serve listens: give them with --serve")

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
        report = run_ingest(col, records, dense=False)
        print_ingest_report(report, False)
        lexical = _demo_searches(col, source.queries, DEMO_LEXICAL, "2. explained searches, lexical channels")
        if no_dense:
            out.print(data_text(f"\n--no-dense: no vectors (`tracerag embed -c {target}` adds them later)"))
        elif not col.dim:
            out.print("\nthis collection has no embedding model: lexical channels only")
        else:
            out.rule("3. vectors for the dense channel")
            embed_missing(col)
            again = [q for q in source.queries if q.hybrid]
            _demo_searches(col, again, None, "4. the same questions with the dense channel", before=lexical)
    hint = f'try `tracerag search "..." -c {target} --explain`; the next demo reuses it'
    out.print(data_text(f"\ncollection kept in {target}: {hint}"))
    if serve:  # after the writer closed it: the server reads it like any other collection
        from tracerag.server.run import run_server
        from tracerag.server.state import ServerConfig

        config = ServerConfig(
            (target,),
            settings,
            host=host or settings.server.host,
            port=settings.server.port if port is None else port,
        )
        run_server(config, lambda line: out.print(data_text(line), soft_wrap=True))
        err.print("stopped")
    return ExitCode.PARTIAL if report.skipped else None


def _demo_searches(
    col: Collection,
    queries: Sequence[DemoQuery],
    channels: tuple[str, ...] | None,
    title: str,
    *,
    before: dict[str, dict] | None = None,
) -> dict[str, dict]:
    """Run and print each query explained, and what changed since `before` (the same queries' earlier results);
    returns each query's explained result."""
    from tracerag.retrieval import Retriever, SearchRequest
    from tracerag.retrieval.explain import explain

    out.rule(title)
    retriever = Retriever(col)
    results = {}
    for query in queries:
        # The command as a user would type it, collection included: copied, it runs the same search.
        command = ["tracerag", "search", query.text, "-c", str(col.path), "--explain"]
        command += ["--channels", ",".join(channels)] if channels else []
        command += ["--windows", query.windows] if query.windows else []
        out.print(Text.assemble("\n$ ", (safe_line(shlex.join(command)), "bold")))
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


def _print_change(lexical: dict, hybrid: dict) -> None:
    from tracerag.demo_data import describe_change

    dense = {r["doc_id"]: c["rank"] for r in hybrid["results"] for c in r["channels"] if c["channel"] == "dense"}
    lines = describe_change([r["doc_id"] for r in lexical["results"]], [r["doc_id"] for r in hybrid["results"]], dense)
    out.print(Text("\n  what the dense channel changed:", style="bold"))
    for line in lines:
        out.print(Text.assemble("    ", data_text(line)))
