"""`tracerag demo`: the main job on a small collection, lexical first, then with the dense channel."""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from tracerag.cli.app import ExitCode, HostOpt, PortOpt, app, data_text, err, friendly, out
from tracerag.cli.views import (
    embed_missing,
    kwic_text,
    marking,
    print_ingest_report,
    print_time_windows,
    print_wrapped,
    run_ingest,
)
from tracerag.errors import ConfigError
from tracerag.text import safe_line

if TYPE_CHECKING:
    from tracerag.collection import Collection
    from tracerag.demo_data import DemoQuery

# The first pass searches before any vector exists, so it asks for the lexical channels by name.
DEMO_LEXICAL = ("bm25", "date", "phrase")
DEMO_K = 3
# How to read the searches, said once before them rather than shown in full for each.
READING = (
    "Each search is the command that shows its whole explanation; here, each result's channels (#rank) and "
    "words in context, and each note once."
)


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
        out.print(data_text(READING, "dim"))
        noted: set[str] = set()  # the notes printed so far: each once
        lexical = _demo_searches(
            col, source.queries, DEMO_LEXICAL, "2. explained searches, lexical channels", noted=noted
        )
        if no_dense:
            embed_later = shlex.join(["tracerag", "embed", "-c", str(target)])
            # the words wrap, the command is one line of its own, whole (copied from a terminal or a pipe)
            out.print()
            print_wrapped(data_text("--no-dense: no vectors; this command adds them later:"), out, indent="")
            out.print(data_text(f"  {embed_later}"), soft_wrap=True)
        elif not col.dim:
            out.print("\nthis collection has no embedding model: lexical channels only")
        else:
            out.rule("3. vectors for the dense channel")
            embed_missing(col)
            again = [q for q in source.queries if q.hybrid]
            _demo_searches(
                col, again, None, "4. the same questions with the dense channel", before=lexical, noted=noted
            )
    try_it = f'tracerag search "..." -c {shlex.quote(str(target))} --explain'
    # one line, the command whole inside it (two would take the demo past its 120 lines on a fresh machine)
    out.print(data_text(f"\ncollection kept in {target}: try `{try_it}`; the next demo reuses it"), soft_wrap=True)
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
    noted: set[str],
) -> dict[str, dict]:
    """Run and print each query, explained in brief, and what changed since `before` (the same queries' earlier
    results); returns each query's explained result. A note the explanation repeats from one search to the next
    (`noted`: the notes printed so far) is printed once; the copied command shows it all."""
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
        # one line however long, so that it is copied whole from a terminal or a pipe
        out.print(Text.assemble("\n$ ", (safe_line(shlex.join(command)), "bold")), soft_wrap=True)
        if query.shows not in noted:  # what the query shows, said the first time it is asked
            noted.add(query.shows)
            print_wrapped(Text(safe_line(query.shows), style="italic"), out, indent="  ")
        start = time.perf_counter()
        ranking = retriever.search(SearchRequest(query=query.text, k=DEMO_K, channels=channels, windows=query.windows))
        result = explain(ranking, col)
        result["seconds"] = round(time.perf_counter() - start, 4)
        _print_brief(result, query, noted, idle=before is None)
        if before is not None and query.text in before:
            _print_change(before[query.text], result)
        results[query.text] = result
    return results


def _print_brief(result: dict, query: DemoQuery, noted: set[str], *, idle: bool) -> None:
    """One search in brief: the notes not printed before (the time windows where the query asks for them; with
    `idle`, also why a channel did nothing, which the lexical pass says), then each result with the channels that
    found it and its words in context."""
    params = result["params"]
    notes = (
        [f"date in query: {params['query_date'][0]} … {params['query_date'][1]}"] if params.get("query_date") else []
    )
    if params.get("fusion"):
        from tracerag.retrieval.explain import fusion_summary

        # how the channels are fused, each clause once; the weights and what this query moved, each time new
        fusion = params["fusion"]
        method = fusion_summary({**fusion, "weights": {}, "why": ""}).removesuffix(": ")
        why, _, moved = str(fusion.get("why") or "").partition("; this query: ")
        clauses = [c for c in why.split("; ") if c]
        notes += [f"fusion: {method}" + (f": {clauses[0]}" if clauses else "")]
        notes += [f"fusion: {clause}" for clause in clauses[1:]]
        weights = " · ".join(f"{c} {w:.2f}" for c, w in (params["fusion"].get("weights") or {}).items())
        this = "; ".join(x for x in (weights and f"weights {weights}", moved and f"this query: {moved}") if x)
        notes += [f"fusion, {this}"] if this else []
    # the channels' readings of the query, each kind once ("a phrase (2 words…)" and "(4 words…)" are one kind);
    # page regions are not part of the demo (its documents have none)
    readings = params.get("channel_readings", {})
    notes += [f"{name}: {reading['why']}" for name, reading in readings.items() if idle or reading["acts"]]
    for note in notes:
        kind = re.sub(r"\d+", "N", note) if note.partition(":")[0] in readings else note
        if kind not in noted:
            noted.add(kind)
            # wrapped under its own indent, with no padding to the console's width (a pipe got trailing spaces)
            print_wrapped(data_text(note, "dim"), out, indent="  ")
    if query.windows and params.get("time_windows"):
        print_time_windows(params["time_windows"], out)
    for r in result["results"]:
        head = Text.assemble(f"  {r['rank']:>2}. ", (safe_line(r["doc_id"]), "bold"))
        for part in (r["corpus"], r["date"], r["language"], r["window"] and f"window {r['window']}"):
            if part and head.cell_len + len(safe_line(part)) + 3 <= out.width:  # on one line: what fits of it
                head.append(("  " if head.plain.endswith(safe_line(r["doc_id"])) else " · ") + safe_line(part))
        out.print(head, no_wrap=True, overflow="ellipsis")
        out.print(_in_context(r, query.text), no_wrap=True, overflow="ellipsis")


def _in_context(result: dict, query: str) -> Text:
    """The channels that found the result (`bm25 #1`), then its best chunk around the query's words as the index
    matched them, marked as `search` marks them (`views.kwic_text`: in colour on a terminal, between [ ] when
    piped). One line, narrower than `search`'s snippets, cut at the console's edge."""
    from tracerag.retrieval.kwic import snippet

    finds = " · ".join(f"{c['channel']} #{c['rank']}" for c in result["channels"])
    chunk = result["best_chunk"]
    found = snippet(chunk["text"], [query], result["language"], width=max(30, out.width - len(finds) - 12))
    shown = {"text": found.text, "spans": found.spans, "cut_before": found.cut_before, "cut_after": found.cut_after}
    return Text.assemble("      ", (safe_line(finds), "green"), "  ", kwic_text(shown, marking(out)))


def _print_change(lexical: dict, hybrid: dict) -> None:
    from tracerag.demo_data import describe_change

    dense = {r["doc_id"]: c["rank"] for r in hybrid["results"] for c in r["channels"] if c["channel"] == "dense"}
    lines = describe_change([r["doc_id"] for r in lexical["results"]], [r["doc_id"] for r in hybrid["results"]], dense)
    out.print(Text("  what the dense channel changed:", style="bold"))
    dropped = [line.partition(": ")[2] for line in lines if line.startswith("out of the top")]
    lines = [line for line in lines if not line.startswith("out of the top")]
    if dropped:  # one line for the documents it pushed out
        lines.append(f"out of the top {len(hybrid['results'])}: {', '.join(dropped)}")
    for line in lines:
        out.print(Text.assemble("    ", data_text(line)))
