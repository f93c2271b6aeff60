"""How much of the exact dense top k a faiss HNSW graph finds, on real embeddings (the choice of HNSW_EF in
engine/vector_index.py). The eval collections are small enough to be searched exactly, so this builds a graph over
one collection's stored vectors (every vector its store holds) and asks it the benchmark's real questions.

    python benchmarks/dense_recall.py --benchmark xling-hipe --collection ~/.cache/tracerag/eval/xling-hipe-*
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import time
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--collection", type=Path, required=True, help="an eval collection whose store holds vectors")
    ap.add_argument("--efs", default="16,64,128,256,512")
    ap.add_argument("--k", default="10,100")
    ap.add_argument("--m", type=int, help="graph degree (default: the engine's)")
    ap.add_argument("--ef-build", type=int, help="efConstruction (default: the engine's)")
    ap.add_argument("--datasets", type=Path, default=Path("../shared/datasets"))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    import faiss

    from tracerag.config import load_settings
    from tracerag.embed import load_embedder
    from tracerag.engine.vector_index import HNSW_EF_BUILD, HNSW_M
    from tracerag.eval.datasets import load_benchmark

    db = sqlite3.connect(f"file:{args.collection / 'store.sqlite'}?mode=ro", uri=True)
    blobs = [row[0] for row in db.execute("SELECT vector FROM vectors")]
    vectors = np.stack([np.frombuffer(b, dtype=np.float32) for b in blobs])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    bench = load_benchmark(args.benchmark, args.datasets)
    settings = load_settings(None)
    embedder = load_embedder(settings.embed, cache_dir=settings.cache_dir)
    texts = [q.text for q in bench.queries.values()]
    queries = np.asarray(embedder.encode_queries(texts), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)

    faiss.omp_set_num_threads(1)
    m, ef_build = args.m or HNSW_M, args.ef_build or HNSW_EF_BUILD
    graph = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = ef_build
    start = time.perf_counter()
    graph.add(vectors)
    build_s = time.perf_counter() - start
    ks = [int(k) for k in args.k.split(",")]
    exact = np.argsort(-(queries @ vectors.T), axis=1)
    rows = []
    for ef in (int(e) for e in args.efs.split(",")):
        for k in ks:
            params = faiss.SearchParametersHNSW(efSearch=max(ef, k))
            start = time.perf_counter()
            _, found = graph.search(queries, k, params=params)
            ms = (time.perf_counter() - start) * 1000 / len(queries)
            recall = statistics.mean(len(set(found[i]) & set(exact[i, :k])) / k for i in range(len(queries)))
            rows.append({"ef": ef, "k": k, "recall": round(recall, 4), "ms_per_query": round(ms, 3)})
    report = {
        "benchmark": args.benchmark,
        "vectors": len(vectors),
        "queries": len(queries),
        "m": m,
        "ef_build": ef_build,
        "build_s": round(build_s, 2),
        "rows": rows,
    }
    print(
        f"{args.benchmark}: {len(vectors):,} vectors, {len(queries)} real questions; graph M {m}, efConstruction "
        f"{ef_build} built in {build_s:.1f} s; recall of the exact top k"
    )
    for r in rows:
        print(f"  ef {r['ef']:>4}  k {r['k']:>3}  recall {r['recall']:.4f}  {r['ms_per_query']:.2f} ms/query")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
