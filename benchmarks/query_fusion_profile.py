"""Where fusion per query's time goes in a fused search, on a collection `scale.py` kept (issue 23).

    python benchmarks/query_fusion_profile.py <corpus>/size-100000 --seconds 40

Over the size's queries (BM25 + dense, query vector given, as `scale.py`'s pairs): the CPU time of the steps that
only `retrieval.query_weights = true` runs, each wrapped and summed (the query's evidence, `Retriever._evidence`,
and inside it the engine's term statistics; the per-query weights, `FusionPlan.query_weights`, which the fusion
and the ranking's params each ask), per search, against the whole search's CPU time, 'on' and 'off' in turn; then
a py-spy profile (sampling) of the 'on' searches, the share of samples in those steps. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import DEPTH, GivenQueryVectors, K, Size, start_pyspy, stop_pyspy, summarise_profile  # noqa: E402

STEPS = ("Retriever._evidence", "field_stats", "FusionPlan.", "(query_fusion.py)")  # frames of the steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size_dir", type=Path, help="A size folder of scale.py (its trace-dense or trace-lex collection).")
    ap.add_argument("--seconds", type=float, default=40.0, help="Length of the profiled loop of 'on' searches.")
    ap.add_argument("--rounds", type=int, default=3, help="Passes over the queries of the timed steps.")
    args = ap.parse_args()
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.retrieval.search import FusionPlan, Retriever, SearchRequest

    size = Size(args.size_dir.parent, args.size_dir, 0)
    path = args.size_dir / "trace-dense"
    if not (path / "collection.toml").exists():
        path = args.size_dir / "trace-lex"
    col = Collection.open(path, load_settings(), mode="read")
    queries = [q["text"] for q in size.queries]
    col._embedder = GivenQueryVectors(col.embedder, dict(zip(queries, size.qvec, strict=True)))  # type: ignore[assignment]
    base = col.settings.retrieval
    on = Retriever(col, base.model_copy(update={"query_weights": True}))
    off = Retriever(col, base.model_copy(update={"query_weights": False}))
    spent: dict[str, float] = {}
    calls: dict[str, int] = {}

    def timed(label, fn):
        def wrapper(*a, **kw):
            c = time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                name = label()
                spent[name] = spent.get(name, 0.0) + time.process_time() - c
                calls[name] = calls.get(name, 0) + 1

        return wrapper

    channels = ("bm25", "dense")
    for q in queries:  # warm both (document frequencies cached, pages read)
        on.search(SearchRequest(q, k=K, channels=channels))
        off.search(SearchRequest(q, k=K, channels=channels))
    real_qw, real_fs = FusionPlan.query_weights, col.engine.field_stats
    whole = {"on": 0.0, "off": 0.0}
    side = ["on"]  # whose search runs now: the engine and the plan's class are shared
    for r in (on, off):
        r._evidence = timed(lambda: f"{side[0]}: Retriever._evidence", r._evidence)  # type: ignore[method-assign]
    FusionPlan.query_weights = timed(lambda: f"{side[0]}: FusionPlan.query_weights", real_qw)  # type: ignore
    col.engine.field_stats = timed(lambda: f"{side[0]}: engine.field_stats (merge, evidence)", real_fs)  # type: ignore[method-assign]
    for i in range(args.rounds * len(queries)):  # in turn, query by query, the order alternating
        q = queries[i % len(queries)]
        for side[0] in ("on", "off") if (i + i // len(queries)) % 2 == 0 else ("off", "on"):
            r = on if side[0] == "on" else off
            c = time.process_time()
            r.search(SearchRequest(q, k=K, channels=channels))
            whole[side[0]] += time.process_time() - c
    for r in (on, off):
        del r._evidence
    FusionPlan.query_weights = real_qw  # type: ignore[method-assign]
    col.engine.field_stats = real_fs  # type: ignore[method-assign]
    n = args.rounds * len(queries)
    out: dict = {
        "collection": str(path),
        "searches_each": n,
        "depth": DEPTH,
        "cpu_ms_per_search": {k: round(1000 * v / n, 3) for k, v in whole.items()},  # wrappers' cost included
        "steps_cpu_ms_per_search": {k: round(1000 * v / n, 4) for k, v in sorted(spent.items())},
        "steps_calls_per_search": {k: round(v / n, 2) for k, v in sorted(calls.items())},
    }
    prof = args.size_dir / "profile-trace-fused-query-weights.txt"
    p = start_pyspy(prof, rate=250)
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        for q in queries:
            on.search(SearchRequest(q, k=K, channels=channels))
    stop_pyspy(p)
    summary = summarise_profile(prof, top=400)
    if summary.get("samples"):
        out["pyspy_on"] = {
            "samples": summary["samples"],
            "rate_hz": 250,
            "steps_inclusive_pct": [[f, pct] for f, pct in summary["inclusive_pct"] if any(s in f for s in STEPS)],
            "top_inclusive_pct": summary["inclusive_pct"][:15],
        }
    else:
        out["pyspy_on"] = summary
    col.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
