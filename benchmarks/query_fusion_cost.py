"""What fusion per query (`retrieval.query_weights`) adds to a fused search, from a run of `scale.py` (issue 23).

    python benchmarks/scale.py --sizes 100000 --stacks trace --queries 200 --filtered 60 --out /tmp/scale-100k
    python benchmarks/query_fusion_cost.py /tmp/scale-100k/scale.json --out benchmarks/results

    # the search measured again on the collection that run kept (its size folder), and where the time goes:
    python benchmarks/scale.py --child trace_search --corpus <corpus> --size-dir <corpus>/size-100000 --fusion-rounds 8
    python benchmarks/query_fusion_profile.py <corpus>/size-100000 > benchmarks/results/query_fusion_profile.json
    python benchmarks/query_fusion_cost.py /tmp/scale-100k/scale.json --out benchmarks/results --search
        <corpus>/size-100000/result-trace_search.json --profile benchmarks/results/query_fusion_profile.json

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


def extract(res: dict, again: Path | None = None, profile: Path | None = None) -> dict:
    """The run's context and each size's paired measurement; `again`: a search child's result measured later on
    one of the run's size folders, which replaces that size's; `profile`: `query_fusion_profile.py`'s JSON on one
    of them."""
    prof = json.loads(profile.read_text()) if profile else None
    later = json.loads(again.read_text()) if again else None
    later_n = json.loads((again.parent / "size.json").read_text())["n_chunks"] if again else None
    sizes = []
    for entry in res["sizes"]:
        search = entry["results"].get("trace", {}).get("trace_search") or {}
        if later is not None and entry["n_chunks"] == later_n:
            search = {**later, "measured_again": str(again)}
        if "query_fusion_cost" in search:
            sizes.append(
                {
                    "n_chunks": entry["n_chunks"],
                    "n_docs": entry["n_docs"],
                    "load_avg_1min": search.get("load_avg_1min"),
                    "load_avg_1min_end": search.get("child_load_avg_1min_end"),
                    "measured_again": search.get("measured_again"),
                    "child_command": search.get("child_command"),
                    "child_finished": search.get("child_finished"),
                    "fused_hybrid_given": search["latency"]["fused_hybrid_given"],
                    "query_fusion_cost": search["query_fusion_cost"],
                    "profile": prof if prof and Path(prof["collection"]).parent.name == f"size-{entry['n']}" else None,
                }
            )
    if not sizes:
        raise SystemExit("no size of this run has TRACE's query_fusion_cost (a scale.py older than it?)")
    keys = ("started", "command", "hardware", "versions", "git", "k", "depth")
    return {**{k: res[k] for k in keys if k in res}, "target_ms": TARGET_MS, "sizes": sizes}


def profile_lines(p: dict) -> list[str]:
    """Where the 'on' searches spend the extra time (`query_fusion_profile.py`'s JSON)."""
    steps = p["steps_cpu_ms_per_search"]
    calls = p["steps_calls_per_search"]
    lines = [
        "### Where the time goes",
        "",
        f"`python benchmarks/query_fusion_profile.py <size-dir>` on `{Path(p['collection']).name}`: "
        f"{p['searches_each']} searches each way, in turn; CPU time of each step summed by a wrapper (which adds "
        "its own few µs a call) and divided by the searches; the whole search "
        f"{_fmt(p['cpu_ms_per_search']['on'])} ms on, "
        f"{_fmt(p['cpu_ms_per_search']['off'])} ms off (means, wrappers included).",
        "",
        "| step | CPU ms per search | calls per search |",
        "|---|---:|---:|",
        *(f"| {k} | {_fmt(v)} | {_fmt(calls.get(k))} |" for k, v in steps.items()),
    ]
    py = p.get("pyspy_on") or {}
    if py.get("samples"):
        lines += [
            "",
            f"py-spy over the 'on' searches ({py['samples']:,} samples at {py['rate_hz']} Hz), inclusive share of "
            "the samples in the steps only fusion per query runs (and in the engine's term statistics, which the "
            "BM25 merge asks too): "
            + ", ".join(f"{f} {pct}%" for f, pct in py["steps_inclusive_pct"] if pct >= 0.1)
            + ".",
        ]
    return lines


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
        p50, ci = c["difference_ms"]["p50"], c["difference_ms"].get("p50_ci95")
        lines += ["", f"## N = {s['n_chunks']:,} chunks ({s['n_docs']:,} documents)", ""]
        head = f"**{_fmt(p50)} ms** (p50 of {c['pairs']} paired differences"
        head += f", 95% interval {_fmt(ci[0])} to {_fmt(ci[1])}): " if ci else "): "
        head += verdict(p50, ci, out["target_ms"]) + "."
        cpu = c.get("cpu_difference_ms")
        if cpu:
            head += (
                f" In CPU time, which other jobs on the machine do not lengthen: **{_fmt(cpu['p50'])} ms** (95% "
                f"interval {_fmt(cpu['p50_ci95'][0])} to {_fmt(cpu['p50_ci95'][1])}): "
                + verdict(cpu["p50"], cpu["p50_ci95"], out["target_ms"])
                + "."
            )
            stretch = c["on"]["p50_ms"] / c["cpu_on"]["p50_ms"] if c["cpu_on"].get("p50_ms") else None
            if stretch and stretch > 1.2:
                head += (
                    f" At this load a search's wall time was {stretch:.1f}× its CPU time (p50s, 'on'), so each ms of "
                    f"work added ~{stretch:.1f} ms of wall time: the CPU difference so stretched is "
                    f"{_fmt(cpu['p50'] * stretch)} ms; on an idle machine the two are alike."
                )
        if s.get("measured_again"):
            head += (
                f" The search child was run again on the run's collection (`{s['child_command']}`, finished "
                f"{s['child_finished']}; 1-min load at its end {s['load_avg_1min_end']})."
            )
        elif s.get("load_avg_1min"):
            head += f" Load average (1 min) at the search child's start and end: {s['load_avg_1min']}."
        lines += [head, *query_fusion_lines(c)]
        if s.get("profile"):
            lines += profile_lines(s["profile"])
    return "\n".join(lines).rstrip() + "\n"


def verdict(p50: float, ci: list[float] | None, target: float) -> str:
    """Met only when the interval lies under the target too: on a noisy machine a median under it may be luck."""
    if p50 > target:
        return "MISSED"
    if ci is not None and ci[1] > target:
        return "under the target, but its interval reaches above it"
    return "met"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("result", type=Path, help="A scale.py result JSON (scale.json of its --out).")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="Folder for query_fusion_cost.json/.md.")
    ap.add_argument(
        "--search",
        type=Path,
        help="A result-trace_search.json that `scale.py --child trace_search` wrote later in one of the run's size "
        "folders: it replaces that size's search.",
    )
    ap.add_argument("--profile", type=Path, help="The JSON `query_fusion_profile.py` printed for one of the sizes.")
    args = ap.parse_args()
    out = extract(json.loads(args.result.read_text()), args.search, args.profile)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "query_fusion_cost.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    (args.out / "query_fusion_cost.md").write_text(markdown(out))
    print(f"wrote {args.out / 'query_fusion_cost.md'}")


if __name__ == "__main__":
    main()
