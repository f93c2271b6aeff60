"""How a lexical channel's per-language BM25 rankings are best joined, with and without query term frequency.

    python benchmarks/field_merge.py --benchmarks cranfield,hipe-entities,miami211-services --out benchmarks/results
    python benchmarks/field_merge.py --benchmarks piaf-fr --sample 1000 --seed 0 --out /tmp/11e/piaf
    python benchmarks/field_merge.py --benchmarks ocr-known-item --collections /tmp/11e/cols --out /tmp/11e/ocr

Each document's chunks sit in one language's BM25 index (its own N, IDF and average length); a query is scored in
every index and `retrieval.field_merge` joins the indexes' rankings (`tracerag.retrieval.fields`). For each
benchmark this runs the eval's `bm25` run (the bm25 channel alone, fields merged, chunks max-pooled to documents;
what `tracerag eval --runs bm25 --no-dense` scores) under the four settings {max_raw_score, query_idf} ×
{query_tf off, on}, on the benchmark's lexical collection as `tracerag eval` builds it (`--collections`: the eval
cache by default, reused when complete; another folder when a process is writing the cached one, since building
opens it for writing and would wait), and reports nDCG@10 and R@10 with the queries each merge wins and loses
against today's default, and the search latency of each merge over max_raw_score: the two merges in turn for
each query, on one open collection, so that both meet the same load. `query_idf` asks the engine for the query's
term statistics the first time it meets a word (a count per word and field, then cached): the timing includes it.
Writes field_merge.json and .md in --out (a run over some benchmarks merges into what --out holds).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEPTH = 100  # documents per query, as `tracerag eval` runs them
MERGES = ("max_raw_score", "query_idf")
METRICS = ["nDCG@10", "R@10"]


def _runs(path: Path, settings, bench, query_ids: list[str], query_tf: bool) -> tuple[dict, dict]:
    """Each merge's bm25 run (qid → [(doc, score)]) and its total search seconds, the merges in turn per query."""
    from tracerag.collection import Collection
    from tracerag.eval.runner import strictly_decreasing
    from tracerag.retrieval import Retriever, SearchRequest

    retrieval = settings.retrieval.model_copy(update={"query_tf": query_tf})
    runs: dict[str, dict] = {m: {} for m in MERGES}
    seconds = dict.fromkeys(MERGES, 0.0)
    with Collection.open(path, settings.model_copy(update={"retrieval": retrieval}), mode="read") as col:
        retrievers = {}
        for merge in MERGES:
            retrievers[merge] = Retriever(col)
            retrievers[merge].settings = retrieval.model_copy(update={"field_merge": merge})
        for qid in query_ids:
            request = SearchRequest(bench.queries[qid].text, k=DEPTH, channels=("bm25",), windows="")
            for merge, retriever in retrievers.items():
                start = time.perf_counter()
                ranking = retriever.search(request)
                seconds[merge] += time.perf_counter() - start
                assert ranking.params["field_merge"] == merge
                runs[merge][qid] = strictly_decreasing((d.doc_id, d.channels[0].score) for d in ranking.documents)
    return runs, seconds


def measure(name: str, root: Path, collections: Path, sample: int | None, seed: int) -> dict:
    from tracerag.config import load_settings
    from tracerag.eval.datasets import load_benchmark
    from tracerag.eval.metrics import evaluate, per_query
    from tracerag.eval.runner import build_collection, select_queries

    settings = load_settings()
    bench = load_benchmark(name, root)
    query_ids = select_queries(bench, sample=sample, seed=seed)
    qrels = {q: bench.qrels[q] for q in query_ids}
    col, _ = build_collection(bench, collections, settings, dense=False)
    path = col.path
    col.close()
    scores: dict[str, dict] = {}
    per: dict[str, dict] = {}
    latency: dict[str, float] = {}
    for query_tf in (False, True):
        runs, seconds = _runs(path, settings, bench, query_ids, query_tf)
        tf = "on" if query_tf else "off"
        for merge in MERGES:
            key = f"{merge}, query_tf {tf}"
            scores[key] = evaluate(qrels, runs[merge], METRICS)
            per[key] = per_query(qrels, runs[merge], METRICS)
            print(f"{name}: {key}: {json.dumps(scores[key])}", flush=True)
        latency[f"query_tf {tf}"] = round(seconds["query_idf"] / seconds["max_raw_score"], 2)
        latency[f"query_tf {tf} max_raw_score ms"] = round(1000 * seconds["max_raw_score"] / len(query_ids), 2)
        latency[f"query_tf {tf} query_idf ms"] = round(1000 * seconds["query_idf"] / len(query_ids), 2)
    base = per["max_raw_score, query_tf off"]
    wins = {}
    for key, values in per.items():
        delta = [values[q]["nDCG@10"] - base[q]["nDCG@10"] for q in base]
        wins[key] = [sum(d > 1e-9 for d in delta), sum(d < -1e-9 for d in delta)]
    result = {
        "benchmark": name,
        "queries": len(query_ids),
        "sample": sample,
        "seed": seed,
        "languages": sorted({d.language or "none" for d in bench.documents}),
        "scores": scores,
        "better_worse_than_default": wins,
        "latency_ratio_query_idf_over_max_raw": latency,
    }
    print(json.dumps(result, indent=1), flush=True)
    return result


def markdown(results: list[dict], meta: dict) -> str:
    keys = [f"{m}, query_tf {tf}" for m in MERGES for tf in ("off", "on")]
    lines = [
        "# Per-language BM25 fields: how their rankings are joined",
        "",
        f"{meta['when']}, {meta['machine']}; the commands are listed below. The eval's `bm25` run (the bm25 "
        "channel alone, fields merged, max-pooled to documents) on the benchmark's lexical collection; nDCG@10 / "
        "R@10, and the queries better / worse than the former default (max_raw_score, query_tf off) on nDCG@10. "
        "Latency: search time with query_idf over max_raw_score, the two in turn per query on one open collection "
        "(a machine shared with other jobs: read the ratio, not the milliseconds).",
        "",
        "| benchmark | queries | " + " | ".join(keys) + " | latency ratio (qtf off / on) |",
        "|---|---:|" + "---|" * len(keys) + "---|",
    ]
    for r in results:
        cells = []
        for key in keys:
            s, (better, worse) = r["scores"][key], r["better_worse_than_default"][key]
            cells.append(f"{s['nDCG@10']:.4f} / {s['R@10']:.4f} (+{better} −{worse})")
        lat = r["latency_ratio_query_idf_over_max_raw"]
        lines.append(
            f"| {r['benchmark']} | {r['queries']} | " + " | ".join(cells) + f" | {lat['query_tf off']} / "
            f"{lat['query_tf on']} |"
        )
    lines += ["", "Commands:", ""]
    lines += [f"- {r['benchmark']}: `{r['command']}`" for r in results]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmarks", default="cranfield")
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))
    )
    parser.add_argument("--collections", type=Path, default=None, help="where eval collections are (default: cache)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    parser.add_argument("--sample", type=int, default=None, help="a seeded sample of N judged queries per benchmark")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from tracerag.config import load_settings

    collections = args.collections or load_settings().cache_dir / "eval"
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / "field_merge.json"
    earlier = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {"results": []}
    names = args.benchmarks.split(",")
    results = [r for r in earlier["results"] if r["benchmark"] not in names]
    command = "python benchmarks/field_merge.py " + " ".join(sys.argv[1:])
    for name in names:
        results.append(measure(name, args.data, collections, args.sample, args.seed) | {"command": command})
    meta = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n", encoding="utf-8")
    (args.out / "field_merge.md").write_text(markdown(results, meta), encoding="utf-8")
    print(f"wrote {args.out / 'field_merge.md'}")


if __name__ == "__main__":
    main()
