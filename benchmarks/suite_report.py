"""Read the per-test times benchmarks/suite_timer.py wrote for two runs of the suite (before and after a change)
and print, as markdown: each run's totals (CPU and wall seconds; per worker under pytest-xdist, whose busiest
worker bounds the run's wall time on an idle machine), the slowest 20 tests of each by CPU seconds, and the CPU
seconds of the tests both runs reached (a run stopped half-way is compared on what it ran).

    python benchmarks/suite_report.py /tmp/times-before /tmp/times-after
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def load(folder: Path) -> dict[str, list[dict]]:
    """Each process's records (`main` without xdist, `gw0`, `gw1`... with it)."""
    return {
        f.stem: [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        for f in sorted(folder.glob("*.jsonl"))
    }


def cost(record: dict) -> float:
    return float(record["cpu"]) + float(record["child_cpu"])


def tests_of(runs: dict[str, list[dict]]) -> dict[str, dict]:
    return {r["test"]: r for records in runs.values() for r in records if "test" in r}


def totals(name: str, runs: dict[str, list[dict]]) -> list[str]:
    lines = [f"### {name}", "", "| process | tests | test CPU s | start-up CPU s | wall s (first to last test) |"]
    lines.append("|---|---:|---:|---:|---:|")
    for proc, records in runs.items():
        tests = [r for r in records if "test" in r]
        collected = next((r for r in records if r.get("event") == "collected"), None)
        startup = collected["cpu"] if collected else 0.0
        span = (tests[-1]["t"] - collected["t"]) if tests and collected else 0.0
        lines.append(f"| {proc} | {len(tests)} | {sum(map(cost, tests)):.0f} | {startup:.0f} | {span:.0f} |")
    return [*lines, ""]


def slowest(name: str, runs: dict[str, list[dict]], n: int = 20) -> list[str]:
    lines = [f"### Slowest {n} tests, {name} (CPU seconds, the process's own and its children's)", ""]
    lines += ["| CPU s | wall s | test |", "|---:|---:|---|"]
    for r in sorted(tests_of(runs).values(), key=cost, reverse=True)[:n]:
        lines.append(f"| {cost(r):.1f} | {r['wall']:.1f} | `{r['test']}` |")
    return [*lines, ""]


def compared(before: dict[str, list[dict]], after: dict[str, list[dict]]) -> list[str]:
    b, a = tests_of(before), tests_of(after)
    both = sorted(set(b) & set(a))
    per_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for test in both:
        per_file[test.split("::")[0]][0] += cost(b[test])
        per_file[test.split("::")[0]][1] += cost(a[test])
    cpu_b, cpu_a = sum(cost(b[t]) for t in both), sum(cost(a[t]) for t in both)
    lines = [f"### The {len(both)} tests both runs reached: {cpu_b:.0f} CPU s before, {cpu_a:.0f} after", ""]
    lines += ["| file | CPU s before | CPU s after |", "|---|---:|---:|"]
    for file, (x, y) in sorted(per_file.items(), key=lambda kv: -kv[1][0])[:25]:
        lines.append(f"| `{file}` | {x:.1f} | {y:.1f} |")
    return [*lines, ""]


def main(argv: list[str]) -> None:
    before, after = load(Path(argv[0])), load(Path(argv[1]))
    out = totals("Before", before) + totals("After", after)
    out += slowest("before", before) + slowest("after", after) + compared(before, after)
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
