"""What counting repeated query words gains and costs, on real benchmark queries.

    python benchmarks/bm25_query_tf.py --benchmarks cranfield,hipe-entities,ocr-known-item --out benchmarks/results
    python benchmarks/bm25_query_tf.py --benchmarks piaf-fr --sample 1000 --seed 0 --out /tmp/piaf

BM25 in the embedded engine (`engine/text_index.py`, tantivy) counts a repeated query word as often as the query
repeats it (as Lucene and bm25s do), each distinct term one clause boosted by its count: exact by construction
(tests/engine/test_query_tf.py checks it against BM25 by hand). For every query of each benchmark (its lexical
collection built as `tracerag eval --no-dense` builds it, in a temporary folder), this compares:
- quality: the eval's `bm25` run (nDCG@10, R@10) scoring each word once and counting repeats, same collection;
- cost: warm latency of one bm25 call (every language field, as retrieval asks) counting repeats vs scoring the
  set of words, over all queries and over those with repeats, the two in turn per query.
(The Qdrant Edge engine it was written for needed one prefetch per repeat level, so it also compared rankings
at the engine's depth with an exhaustive one; tantivy has no such depth.) Writes bm25_query_tf.json and .md in
--out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
K_DEPTH = 100  # retrieval.depth: chunks per channel before fusion


def _timed(engine, texts: list[str], k: int) -> tuple[list[float], list[float]]:
    """Milliseconds of one bm25 call per text scoring the set of words, and counting repeats: the two in turn
    for each text, so that both meet the same load on a shared machine."""
    times: dict[bool, list[float]] = {False: [], True: []}
    for text in texts:
        for query_tf in (False, True):
            engine.query_tf = query_tf
            start = time.perf_counter()
            engine.bm25(text, k)
            times[query_tf].append(1000 * (time.perf_counter() - start))
    engine.query_tf = True
    return times[False], times[True]


def _summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "n": len(ms),
        "mean_ms": round(statistics.fmean(ms), 3) if ms else 0.0,
        "p50_ms": round(ordered[len(ordered) // 2], 3) if ms else 0.0,
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 3) if ms else 0.0,
    }


def _quality(path, settings, bench, query_ids: list[str]) -> dict:
    """The eval's `bm25` run (retrieval's bm25 channel: fields merged, chunks max-pooled to documents) scoring
    each query word once and counting repeats (`retrieval.query_tf`), on the same collection: nDCG@10 and R@10,
    and per query how often counting wins or loses."""
    from tracerag.collection import Collection
    from tracerag.eval.metrics import evaluate, per_query
    from tracerag.eval.runner import RunSpec, search_all

    qrels = {q: bench.qrels[q] for q in query_ids}
    spec = RunSpec("bm25", ("bm25",))
    runs = {}
    for query_tf in (False, True):
        retrieval = settings.retrieval.model_copy(update={"query_tf": query_tf})
        with Collection.open(path, settings.model_copy(update={"retrieval": retrieval}), mode="read") as col:
            runs[query_tf] = search_all(col, bench, query_ids, spec)
    metrics = ["nDCG@10", "R@10"]
    before, after = (per_query(qrels, runs[v], metrics) for v in (False, True))
    delta = [after[q]["nDCG@10"] - before[q]["nDCG@10"] for q in before]
    return {
        "set_of_words": evaluate(qrels, runs[False], metrics),
        "query_tf": evaluate(qrels, runs[True], metrics),
        "queries_better": sum(d > 1e-9 for d in delta),
        "queries_worse": sum(d < -1e-9 for d in delta),
    }


def measure(name: str, root: Path, work: Path, sample: int | None, seed: int) -> dict:
    from tracerag.config import load_settings
    from tracerag.engine.embedded import EmbeddedEngine
    from tracerag.engine.text_index import language_of, query_terms
    from tracerag.eval.datasets import load_benchmark
    from tracerag.eval.runner import build_collection, select_queries

    settings = load_settings()
    bench = load_benchmark(name, root)
    query_ids = select_queries(bench, sample=sample, seed=seed)
    start = time.perf_counter()
    col, _ = build_collection(bench, work, settings, dense=False)
    built_s = time.perf_counter() - start
    path = col.path
    col.close()
    quality = _quality(path, settings, bench, query_ids)
    print(f"{name}: {json.dumps(quality)}")
    engine = EmbeddedEngine(path / "index", None, query_tf=True)
    try:
        chunks = engine.count()
        fields = sorted({language_of(d.language) for d in bench.documents})
        texts = [bench.queries[q].text for q in query_ids]
        repeated = [t for t in texts if any(n > 1 for f in fields for _, _, n in query_terms(t, f))]
        words = [sum(n for _, _, n in query_terms(t, "xx")) for t in texts]
        print(f"{name}: {len(texts)} queries ({len(repeated)} with repeats), {chunks} chunks, fields {fields}")

        _timed(engine, texts[:20], K_DEPTH)  # warm up
        set_all, tf_all = _timed(engine, texts, K_DEPTH)
        with_repeats = set(repeated)
        positions = [i for i, t in enumerate(texts) if t in with_repeats]
        set_rep = [set_all[i] for i in positions]
        tf_rep = [tf_all[i] for i in positions]
    finally:
        engine.close()
    result = {
        "benchmark": name,
        "queries": len(texts),
        "sample": sample,
        "seed": seed,
        "with_repeats": len(repeated),
        "mean_query_words": round(statistics.fmean(words), 1),
        "chunks": chunks,
        "collection_s": round(built_s, 1),
        "quality": quality,
        "latency_set_of_words_all": _summary(set_all),
        "latency_query_tf_all": _summary(tf_all),
        "latency_set_of_words_repeats": _summary(set_rep),
        "latency_query_tf_repeats": _summary(tf_rep),
    }
    result["latency_ratio_all"] = round(sum(tf_all) / sum(set_all), 2)
    result["latency_ratio_repeats"] = round(sum(tf_rep) / sum(set_rep), 2) if set_rep else None
    print(json.dumps(result, indent=1))
    return result


def markdown(results: list[dict], meta: dict) -> str:
    lines = [
        "# BM25 with query term frequency: gain and cost",
        "",
        f"{meta['when']}, {meta['machine']}; `python benchmarks/bm25_query_tf.py --benchmarks "
        f"{','.join(r['benchmark'] for r in results)}`. One pass, warm, the two settings in turn for each "
        f"query; bm25 at k = {K_DEPTH} over every language field. Latency ratio: total time counting repeats / "
        "scoring the set.",
        "",
        "| benchmark | queries | with repeats | words/query | chunks | nDCG@10 / R@10 set of words "
        "| nDCG@10 / R@10 query TF | queries better / worse "
        "| set of words mean ms (repeats) | query TF mean ms (repeats) | ratio all / repeats |",
        "|---|---:|---:|---:|---:|---|---|---|---:|---:|---|",
    ]
    for r in results:
        s_all, t_all = r["latency_set_of_words_all"], r["latency_query_tf_all"]
        s_rep, t_rep = r["latency_set_of_words_repeats"], r["latency_query_tf_repeats"]
        q = r["quality"]
        before, after = q["set_of_words"], q["query_tf"]
        lines.append(
            f"| {r['benchmark']} | {r['queries']} | {r['with_repeats']} | {r['mean_query_words']} | {r['chunks']} "
            f"| {before['nDCG@10']:.4f} / {before['R@10']:.4f} | {after['nDCG@10']:.4f} / {after['R@10']:.4f} "
            f"| {q['queries_better']} / {q['queries_worse']} "
            f"| {s_all['mean_ms']} ({s_rep['mean_ms']}) | {t_all['mean_ms']} ({t_rep['mean_ms']}) "
            f"| {r['latency_ratio_all']} / {r['latency_ratio_repeats']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmarks", default="cranfield")
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))
    )
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    parser.add_argument("--sample", type=int, default=None, help="a seeded sample of N judged queries per benchmark")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="bm25-qtf-") as work:
        for name in args.benchmarks.split(","):
            results.append(measure(name.strip(), args.data, Path(work), args.sample, args.seed))
    meta = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}",
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bm25_query_tf.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    (args.out / "bm25_query_tf.md").write_text(markdown(results, meta))
    print(f"wrote {args.out / 'bm25_query_tf.md'}")


if __name__ == "__main__":
    main()
