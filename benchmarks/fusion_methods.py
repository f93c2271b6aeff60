"""Fusion methods side by side on saved channel runs (issue 11, part 4).

For each benchmark, a `tracerag eval` report folder with `runs/channels/RUN.CHANNEL.trec` (each channel's own
document ranking from the same searches) is fused here by every method, equal weights and the weights of the
benchmark collection's calibration (`calibration.json`), and scored with the harness's metrics: nDCG@10 and R@10
over the report's queries. Nothing is searched again, so one run compares every method on exactly the same channel
rankings.

    python benchmarks/fusion_methods.py --report cranfield=reports/cranfield \
        --calibration cranfield=~/.cache/tracerag/eval/cranfield-…/calibration.json \
        --out benchmarks/results/fusion_methods

Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from tracerag.eval.datasets import load_benchmark
from tracerag.eval.metrics import evaluate
from tracerag.eval.trec import Run, read_run
from tracerag.retrieval.calibration import CANDIDATES
from tracerag.retrieval.fusion import Method, Normalisation, Normalisations, fuse_scored
from tracerag.retrieval.search import FusionPlan

DEPTH = 100  # documents of each channel per query: what a search fuses (retrieval.depth chunks, max-pooled)

METHODS = CANDIDATES  # name, method, normalisation, weighed by the calibration


def fuse(
    channels: dict[str, Run],
    method: Method,
    normalisation: Normalisations,
    weights: dict[str, float] | None,
    *,
    date_weighs_the_rest: bool = False,
) -> Run:
    """Each query's channel rankings fused as a search fuses them (`FusionPlan.weights_for`: with
    `date_weighs_the_rest`, a date channel that acted weighs as much as the others together)."""
    plan = FusionPlan(method, Normalisation.MINMAX, weights, "", "", date_weighs_the_rest)
    fused: Run = {}
    for qid in sorted({q for run in channels.values() for q in run}):
        rankings = {name: run[qid][:DEPTH] for name, run in channels.items() if run.get(qid)}
        found = plan.weights_for(rankings)
        w = {name: found.get(name, 1.0) for name in rankings} if found is not None else None
        if method is Method.WRRF and w is None:
            w = {name: 1.0 for name in rankings}
        items = fuse_scored(method, rankings, weights=w, normalisation=normalisation)
        fused[qid] = [(f.key, f.score) for f in items[:DEPTH]]
    return fused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", action="append", required=True, help="BENCHMARK=FOLDER of a tracerag eval")
    parser.add_argument("--run", default="hybrid", help="the fused run whose channel files are read")
    parser.add_argument("--calibration", action="append", default=[], help="BENCHMARK=calibration.json")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("TRACERAG_DATASETS", "../shared/datasets")))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/fusion_methods"))
    args = parser.parse_args()
    calibrations = {}
    for item in args.calibration:
        name, path = item.split("=", 1)
        calibrations[name] = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    rows = []
    for item in args.report:
        name, folder = item.split("=", 1)
        bench = load_benchmark(name, args.data)
        files = sorted((Path(folder) / "runs" / "channels").glob(f"{args.run}.*.trec"))
        channels = {f.name.removeprefix(args.run + ".").removesuffix(".trec"): read_run(f) for f in files}
        queries = sorted({q for run in channels.values() for q in run} & set(bench.qrels))
        qrels = {q: bench.qrels[q] for q in queries}
        weights = calibrations.get(name, {}).get("weights")
        row: dict = {"benchmark": name, "queries": len(queries), "weights": weights, "channels": {}, "methods": {}}
        for channel, run in channels.items():
            row["channels"][channel] = _scores(run, qrels, queries)
        for label, method, normalisation, weighted in METHODS:
            if weighted and weights is None:
                continue
            run = fuse(
                channels,
                method,
                normalisation,
                weights if weighted else None,
                date_weighs_the_rest=label == "calibrated",
            )
            row["methods"][label] = _scores(run, qrels, queries)
        rows.append(row)
        print(json.dumps(row))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    args.out.with_suffix(".md").write_text(_markdown(rows), encoding="utf-8")


def _scores(run: Run, qrels: dict[str, dict[str, int]], queries: list[str]) -> dict[str, float]:
    """nDCG@10 and R@10 over every query of the report (a query a run misses scores 0), as the harness scores."""
    found = evaluate(qrels, {q: run.get(q, []) for q in queries}, ("nDCG@10", "R@10"))
    return {metric: round(value, 4) for metric, value in found.items()}


def _markdown(rows: list[dict]) -> str:
    labels = [label for label, *_ in METHODS]
    lines = [
        "| benchmark (queries) | best channel | " + " | ".join(labels) + " |",
        "|---|---|" + "---|" * len(labels),
    ]
    for row in rows:
        best = max(row["channels"].items(), key=lambda kv: kv[1]["nDCG@10"])
        cells = [
            f"{row['benchmark']} ({row['queries']})",
            f"{best[0]} {best[1]['nDCG@10']:.3f} / {best[1]['R@10']:.3f}",
        ]
        for label in labels:
            m = row["methods"].get(label)
            cells.append(f"{m['nDCG@10']:.3f} / {m['R@10']:.3f}" if m else "–")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Weights (calibration.json): " + "; ".join(f"{r['benchmark']} {r['weights']}" for r in rows))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
