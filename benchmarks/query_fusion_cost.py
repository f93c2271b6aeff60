"""What fusion per query (`retrieval.query_weights`) adds to a fused search, from a run of `scale.py` (issue 23).

    python benchmarks/scale.py --sizes 100000 --stacks trace --queries 200 --filtered 60 --out /tmp/scale-100k
    python benchmarks/query_fusion_cost.py /tmp/scale-100k/scale.json --out benchmarks/results

`scale.py` times TRACE's fused search (BM25 + dense, query vector given) with the per-query weights on and off,
query by query in turn in its search child (`query_fusion_cost`); this writes that measurement alone, with the
run's hardware, commit and size, as `query_fusion_cost.json` and `.md`, so that the figure has a page of its own
without rewriting `scale.md`, whose peers were measured in another run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale_report import _fmt, query_fusion_lines  # noqa: E402

TARGET_MS = 1.0  # issue 23: fusion per query adds at most 1 ms to a search at 100k chunks


def extract(res: dict) -> dict:
    """The run's context and each size's paired measurement."""
    sizes = []
    for entry in res["sizes"]:
        search = entry["results"].get("trace", {}).get("trace_search") or {}
        if "query_fusion_cost" in search:
            sizes.append(
                {
                    "n_chunks": entry["n_chunks"],
                    "n_docs": entry["n_docs"],
                    "load_avg_1min": search.get("load_avg_1min"),
                    "fused_hybrid_given": search["latency"]["fused_hybrid_given"],
                    "query_fusion_cost": search["query_fusion_cost"],
                }
            )
    if not sizes:
        raise SystemExit("no size of this run has TRACE's query_fusion_cost (a scale.py older than it?)")
    keys = ("started", "command", "hardware", "versions", "git", "k", "depth")
    return {**{k: res[k] for k in keys if k in res}, "target_ms": TARGET_MS, "sizes": sizes}


def markdown(out: dict) -> str:
    hw = out["hardware"]
    lines = [
        "# What fusion per query costs a search",
        "",
        f"From `{out['command']}` ({out['started']}), then `python benchmarks/query_fusion_cost.py`; tracerag commit "
        f"{out['git']['commit']}" + (" with local changes in src/" if out["git"]["src_modified"] else "") + ". "
        f"{hw['cpu']}, {hw['nproc']} cores, {hw['ram_gib']} GiB RAM, shared with other work; Python {hw['python']}. "
        "Corpus, queries and collection as in `scale.md` (benchmarks/README.md, `scale.py`); k = "
        f"{out['k']}, channels' depth {out['depth']}.",
        "",
        f"Target (issue 23): fusion per query adds at most {_fmt(out['target_ms'])} ms to a search at 100k chunks. "
        "The figure is the median of the per-query differences (on − off), each query searched with both settings "
        "one after the other in one process, so that the machine's noise falls on both alike; the p50s of each "
        "side are shown too, but their difference is noisier than the paired one.",
    ]
    for s in out["sizes"]:
        c = s["query_fusion_cost"]
        p50 = c["difference_ms"]["p50"]
        verdict = "met" if p50 <= out["target_ms"] else "MISSED"
        lines += [
            "",
            f"## N = {s['n_chunks']:,} chunks ({s['n_docs']:,} documents)",
            "",
            f"**{_fmt(p50)} ms** (p50 of {c['pairs']} paired differences): {verdict}. Load average (1 min) at the "
            f"search child's start and end: {s['load_avg_1min']}.",
            *query_fusion_lines(c),
        ]
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("result", type=Path, help="A scale.py result JSON (scale.json of its --out).")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="Folder for query_fusion_cost.json/.md.")
    args = ap.parse_args()
    out = extract(json.loads(args.result.read_text()))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "query_fusion_cost.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    (args.out / "query_fusion_cost.md").write_text(markdown(out))
    print(f"wrote {args.out / 'query_fusion_cost.md'}")


if __name__ == "__main__":
    main()
