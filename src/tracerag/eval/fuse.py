"""Fusion over saved TREC runs, as `python -m pyserini.fusion` does it, with the retrieval's own methods.

The meaning of each argument is Pyserini's: `depth` documents of each run per query enter the pool (its
`--depth`, default 1000), the fused list keeps `k` documents per query (its `--k`, default 1000), `rrf_k` is the
RRF constant (its `--rrf.k`, default 60), a query found in any run is fused, and equal fused scores are written
by document id. A run is read as trec_eval reads it (`trec.read_run`: by score, ties by document id), which is
Pyserini with `--resort`; for a run whose ranks follow its scores, as every run TRACE writes, the two agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tracerag.errors import ConfigError
from tracerag.eval.trec import Run, rank_run, read_run
from tracerag.retrieval.fusion import RRF_K, Method, Normalisation, fuse_scored

DEPTH = 1000  # Pyserini's defaults for --depth and --k
OUTPUT_K = 1000

__all__ = ["DEPTH", "OUTPUT_K", "fuse_runs", "parse_weights", "read_runs"]


def fuse_runs(
    runs: Sequence[Run],
    method: Method = Method.RRF,
    *,
    rrf_k: int = RRF_K,
    weights: Sequence[float] | None = None,
    depth: int = DEPTH,
    k: int = OUTPUT_K,
    normalisation: Normalisation = Normalisation.MINMAX,
) -> Run:
    """One fused run from several, per query: the first `depth` documents of each run, fused by `method`
    (`weights` one per run, in order), the best `k` written. Raises ConfigError on fewer than two runs (as
    Pyserini does), weights that do not match the runs, or a depth or k below 1."""
    if len(runs) < 2:
        raise ConfigError(f"fusion needs at least 2 runs, got {len(runs)}")
    if depth < 1 or k < 1:
        raise ConfigError(f"--depth and --k must be at least 1, got depth {depth}, k {k}")
    named_weights = None
    if weights is not None and method is Method.RRF:
        raise ConfigError("plain rrf takes no weights: weighted RRF is --method wrrf")
    if weights is not None:
        if len(weights) != len(runs):
            raise ConfigError(f"{len(weights)} weights for {len(runs)} runs: give one weight per run, in order")
        named_weights = {str(i): float(w) for i, w in enumerate(weights)}
    fused: Run = {}
    for qid in sorted({q for run in runs for q in run}):
        rankings = {str(i): run.get(qid, [])[:depth] for i, run in enumerate(runs)}
        try:
            items = fuse_scored(method, rankings, k=rrf_k, weights=named_weights, normalisation=normalisation)
        except ValueError as exc:
            raise ConfigError(f"query {qid!r}: {exc}") from exc
        fused[qid] = rank_run((f.key, f.score) for f in items)[:k]
    return fused


def read_runs(paths: Sequence[Path]) -> list[Run]:
    """The run files to fuse; a missing file is a ConfigError naming it, a malformed line a `TrecFormatError`
    naming file and line."""
    runs = []
    for path in paths:
        if not Path(path).is_file():
            raise ConfigError(f"{path}: no such run file")
        runs.append(read_run(path))
    return runs


def parse_weights(text: str) -> list[float]:
    """`--weights 1,0.5` as numbers; a ConfigError naming the value that is not one."""
    out = []
    for part in text.split(","):
        try:
            value = float(part)
        except ValueError:
            raise ConfigError(f"--weights {text!r}: {part.strip()!r} is not a number") from None
        if not value >= 0 or value == float("inf"):
            raise ConfigError(f"--weights {text!r}: {part.strip()!r} must be a finite number at least 0")
        out.append(value)
    return out
