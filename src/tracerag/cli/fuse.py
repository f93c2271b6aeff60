"""`tracerag fuse`: saved TREC runs fused into one, as `python -m pyserini.fusion` does (same arguments)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from tracerag.cli.app import ExitCode, app, data_text, err, friendly
from tracerag.eval.fuse import DEPTH, OUTPUT_K, fuse_runs, parse_weights, read_runs
from tracerag.eval.trec import write_run
from tracerag.retrieval.fusion import RRF_K, Method, Normalisation


@app.command("fuse")
@friendly
def fuse(
    runs: Annotated[list[Path], typer.Argument(help="Two or more TREC run files.")],
    out_path: Annotated[Path, typer.Option("--out", metavar="FILE", help="The fused TREC run file to write.")],
    method: Annotated[
        Method,
        typer.Option(help="rrf (Cormack et al. 2009), wrrf (weighted RRF), combsum or combmnz (Fox & Shaw 1994)."),
    ] = Method.RRF,
    weights: Annotated[
        str | None, typer.Option(help="One weight per run, in order (wrrf, combsum, combmnz), e.g. 1,0.5.")
    ] = None,
    rrf_k: Annotated[int, typer.Option("--rrf-k", "--rrf.k", min=1, help="The RRF constant.")] = RRF_K,
    depth: Annotated[int, typer.Option(min=1, help="Documents of each run per query that enter the pool.")] = DEPTH,
    k: Annotated[int, typer.Option("--k", min=1, help="Documents per query in the fused run.")] = OUTPUT_K,
    norm: Annotated[
        Normalisation, typer.Option(help="Score normalisation of combsum and combmnz, per run and query.")
    ] = Normalisation.MINMAX,
    runtag: Annotated[str | None, typer.Option(help="Tag of the fused run (default: the method).")] = None,
) -> ExitCode:
    """Fuse saved runs (Pyserini's --depth, --k and --rrf.k), e.g. those `tracerag eval` writes in OUT/runs;
    score the result with `tracerag eval --run-file NAME=FUSED.trec`."""
    start = time.perf_counter()
    fused = fuse_runs(
        read_runs(runs),
        method,
        rrf_k=rrf_k,
        weights=parse_weights(weights) if weights is not None else None,
        depth=depth,
        k=k,
        normalisation=norm,
    )
    tag = runtag or (f"{method}_k={rrf_k}" if method in (Method.RRF, Method.WRRF) else f"{method}_{norm}")
    write_run(out_path, fused, tag)
    seconds = time.perf_counter() - start
    err.print(
        Text.assemble(
            f"fused {len(fused)} queries of {len(runs)} runs with {method} in {seconds:.2f} s "
            f"({len(fused) / max(seconds, 1e-9):,.0f} queries/s) into ",
            data_text(out_path),
        ),
        soft_wrap=True,  # one line, however long the path
    )
    return ExitCode.OK
