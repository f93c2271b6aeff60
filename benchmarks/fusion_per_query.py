"""Fusion per query against fixed weights, on saved channel runs (issue 23).

For each benchmark: a `tracerag eval` report folder with `runs/channels/RUN.CHANNEL.trec` (each channel's own
document ranking, from one search per query) and the benchmark's collection (its calibration.json and its lexical
index, asked for each query's term statistics). Each query is fused as a search fuses it, with the collection's
calibrated weights as they are (`fixed`) and moved per query by a rule (`retrieval/query_fusion.py`), over a grid
of the rule's constants; nDCG@10 and R@10 against the best single channel. Nothing is searched again.

    python benchmarks/fusion_per_query.py --bench cranfield=reports/cranfield \
        --bench xling-piaf=reports/xling-piaf --out benchmarks/results/fusion_per_query

The collection of each benchmark is found as the eval finds it (default settings, the eval cache), or given with
`--collection NAME=DIR`. Writes OUT.json and OUT.md; `--grid` prints every rule tried, pooled over benchmarks.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
from pathlib import Path

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.engine.points import field_language, text_field
from tracerag.eval.datasets import load_benchmark
from tracerag.eval.metrics import evaluate
from tracerag.eval.runner import collection_dir
from tracerag.eval.trec import Run, read_run
from tracerag.model import Hit
from tracerag.retrieval import weights as stored
from tracerag.retrieval.fusion import fuse_scored
from tracerag.retrieval.query_fusion import CANDIDATES, DEFAULT_RULE, QueryRule, evidence, weigh
from tracerag.retrieval.search import CALIBRATED_METHOD, CALIBRATED_SCALES, FusionPlan

DEPTH = 100
METRICS = ("nDCG@10", "R@10")


def load(name: str, report: Path, collection: Path | None, data: Path) -> dict:
    """A benchmark's queries, judgments, channel runs, calibrated weights and each query's evidence."""
    bench = load_benchmark(name, data)
    settings = Settings()
    path = collection or collection_dir(settings.cache_dir / "eval", bench, settings)
    channels: dict[str, Run] = {}
    for file in sorted((report / "runs" / "channels").glob("hybrid.*.trec")):
        channels[file.stem.split(".", 1)[1]] = read_run(file)
    queries = sorted({q for run in channels.values() for q in run} & set(bench.qrels))
    with Collection.open(path, settings, mode="read") as col:
        calibration, why = stored.load(col)
        if calibration is not None:
            weights = dict(calibration.weights)
        else:  # an older format still holds the weights the eval's runs were fused with
            try:
                weights = json.loads(stored.path_of(col).read_text(encoding="utf-8"))["weights"]
            except (OSError, ValueError, KeyError):
                raise SystemExit(f"{path}: {why}") from None
        k1 = col.settings.retrieval.bm25_k1
        found = {}
        field_of = {d.id: field_language(text_field(d.language)) for d in bench.documents}
        for qid in queries:
            bm25 = channels.get("bm25", {}).get(qid, [])
            hits = (
                {"bm25": [Hit("", d, "bm25", i + 1, s) for i, (d, s) in enumerate(bm25)]} if "bm25" in channels else {}
            )
            dense = [d for d, _ in channels.get("dense", {}).get(qid, [])[:CANDIDATES]]
            indexes = [field_of[d] for d in dense if d in field_of]
            found[qid] = evidence(hits, col.engine.field_stats(bench.queries[qid].text), k1, indexes)
    return {
        "bench": bench,
        "channels": channels,
        "queries": queries,
        "weights": weights,
        "evidence": found,
    }


def fuse(loaded: dict, rule: QueryRule | None) -> Run:
    plan = FusionPlan(CALIBRATED_METHOD, dict(CALIBRATED_SCALES), loaded["weights"], "", "", True)
    run: Run = {}
    for qid in loaded["queries"]:
        rankings = {c: r[qid][:DEPTH] for c, r in loaded["channels"].items() if r.get(qid)}
        if not rankings:
            continue
        weights = plan.weights_for(rankings) or {c: 1.0 for c in rankings}
        if rule is not None:
            weights = weigh(weights, rankings, loaded["evidence"][qid], rule).weights
        fused = fuse_scored(CALIBRATED_METHOD, rankings, weights=weights, normalisation=CALIBRATED_SCALES)
        run[qid] = [(f.key, f.score) for f in fused[:DEPTH]]
    return run


def scores(loaded: dict, run: Run) -> dict[str, float]:
    qrels = {q: loaded["bench"].qrels[q] for q in loaded["queries"]}
    return evaluate(qrels, run, METRICS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", action="append", required=True, help="BENCHMARK=REPORT_FOLDER")
    parser.add_argument("--collection", action="append", default=[], help="BENCHMARK=COLLECTION_DIR")
    parser.add_argument("--data", default=os.environ.get("TRACERAG_DATASETS", "../shared/datasets"))
    parser.add_argument("--grid", action="store_true", help="try a grid of rules and print them, pooled")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    collections = dict(item.split("=", 1) for item in args.collection)
    loaded = {}
    for item in args.bench:
        name, folder = item.split("=", 1)
        loaded[name] = load(
            name, Path(folder), Path(collections[name]) if name in collections else None, Path(args.data)
        )
    table: dict[str, dict[str, dict[str, float]]] = {}
    for name, b in loaded.items():
        row = {c: scores(b, run) for c, run in b["channels"].items() if c in ("bm25", "dense")}
        row["fixed"] = scores(b, fuse(b, None))
        row["per-query"] = scores(b, fuse(b, DEFAULT_RULE))
        matched = [e.matched for e in b["evidence"].values() if e.matched is not None]
        known = [e.known_there for e in b["evidence"].values() if e.known_there is not None]
        row["evidence"] = {
            "matched_median": statistics.median(matched) if matched else float("nan"),
            "known_there_median": statistics.median(known) if known else float("nan"),
        }
        table[name] = row
        print(name, json.dumps(row, default=lambda x: round(x, 4)))
    if args.grid:
        grid = []
        # the grid the default constants were chosen from (README, Evaluation: fusion per query)
        rules = [
            QueryRule(low, high, floor, kl, kh, sure, damp)
            for low, high, floor, (kl, kh), (sure, damp) in itertools.product(
                (0.1, 0.15, 0.2),
                (0.3, 0.4),
                (0.3, 0.5),
                ((0.5, 0.8), (0.6, 0.9), (0.7, 0.95), (1.0, 1.01)),
                ((1.0, 0.0), (0.3, 0.9), (0.5, 0.9)),
            )
        ]
        for rule in rules:
            per = {n: scores(b, fuse(b, rule)) for n, b in loaded.items()}
            worst = min(
                per[n]["nDCG@10"] - max(table[n][c]["nDCG@10"] for c in ("bm25", "dense", "fixed") if c in table[n])
                for n in per
            )
            grid.append((worst, rule, per))
        grid.sort(key=lambda g: -g[0])
        for worst, rule, per in grid[:15]:
            print(f"{rule} worst-vs-best {worst:+.4f} " + " ".join(f"{n} {per[n]['nDCG@10']:.4f}" for n in per))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(table, indent=2, default=float), encoding="utf-8")


if __name__ == "__main__":
    main()
