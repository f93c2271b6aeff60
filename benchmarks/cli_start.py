"""Start-up of the command line: whole `tracerag` processes, timed as a user meets them, before and after a change.

    python benchmarks/cli_start.py --before f564c37 --out benchmarks/results     # ~3 min on 2 cores
    python benchmarks/cli_start.py --runs 5 --warmup 1                           # this checkout alone, quick

Each command runs `--runs` times (after `--warmup` runs not counted) as a fresh process of the `tracerag` script
(`python -m tracerag.cli` where no script is installed), its output thrown away:

- `tracerag --help` and `tracerag search --help`;
- a lexical search of the demo collection (`tracerag demo --no-dense`: chunks without vectors, so the search runs
  its lexical channels);
- a default search of the demo collection with its vectors (`tracerag demo`): the query is embedded.

The demo collections are built first, by the code measured (each side builds its own: an index made by one
engine need not open with another), from the packaged sample (`TRACERAG_DATASETS` points at an empty folder, so
HIPE-2022 is not used even when at hand). `--before` names a second checkout (a folder, or a git commit that is
checked out in a temporary worktree and removed at the end); its `src/` goes first on `PYTHONPATH` as this
checkout's does, and the runs of the two alternate (before, after, then after, before, ...), so that both meet
the same load. The table gives each command's median wall time, its 10th and 90th percentiles, and the ratio of
the medians. Results: `cli_start.json` and `cli_start.md` in `--out`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUERY = "police regulation about dogs"  # one of the demo sample's questions


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def tracerag_cli() -> list[str]:
    exe = Path(sys.executable).with_name("tracerag")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "tracerag.cli"]


def commit_of(path: Path) -> str:
    """The checkout's commit, with `+changes` when its `src/` differs from it."""
    head = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(path), "status", "--porcelain", "src"], capture_output=True, text=True)
    return head.stdout.strip() + (" +changes" if dirty.stdout.strip() else "")


class Side:
    """One checkout measured: its source on PYTHONPATH, its demo collections in its own folder."""

    def __init__(self, name: str, root: Path, work: Path, environment: dict[str, str]):
        self.name, self.root, self.work = name, root, work
        self.env = environment | {"PYTHONPATH": str(root / "src")}

    def run(self, args: list[str], *, check: bool = False) -> tuple[float, float]:
        """Seconds of one whole process: its wall time, and its CPU time (user + system, its threads and children
        included), which a loaded machine stretches less."""
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([*tracerag_cli(), *args], env=self.env, cwd=self.work, capture_output=True)
        wall = time.perf_counter() - start
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        if check and done.returncode != 0:
            failed = f"{self.name}: tracerag {' '.join(args)} exited {done.returncode}"
            raise SystemExit(f"{failed}:\n{done.stderr.decode()}")
        return wall, (now.ru_utime - used.ru_utime) + (now.ru_stime - used.ru_stime)

    def build_demo(self) -> None:
        for kind, extra in (("lexical", ["--no-dense"]), ("dense", [])):
            if not (self.work / kind).exists():
                say(f"{self.name}: tracerag demo {' '.join(extra)} -c {kind}")
                self.run(["demo", *extra, "-c", kind], check=True)


COMMANDS: tuple[tuple[str, list[str]], ...] = (
    ("tracerag --help", ["--help"]),
    ("tracerag search --help", ["search", "--help"]),
    ("search, lexical demo", ["search", QUERY, "-c", "lexical"]),
    ("search, default (dense) demo", ["search", QUERY, "-c", "dense"]),
)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile, linear between the closest ranks (numpy's default)."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 4),
        "p10": round(percentile(values, 0.1), 4),
        "p90": round(percentile(values, 0.9), 4),
        "runs": len(values),
    }


def measure(sides: list[Side], runs: int, warmup: int) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """(wall, CPU) seconds of each run, by command and side."""
    times: dict[str, dict[str, list[tuple[float, float]]]] = {
        label: {s.name: [] for s in sides} for label, _ in COMMANDS
    }
    for label, args in COMMANDS:
        for side in sides:
            side.run(args, check=True)  # a command that fails is not timed
            for _ in range(warmup - 1):
                side.run(args)
        say(f"{label}: {runs} runs each of {', '.join(s.name for s in sides)}")
        for i in range(runs):
            for side in sides if i % 2 == 0 else sides[::-1]:  # alternate who goes first
                times[label][side.name].append(side.run(args))
    return times


def cell(s: dict[str, float]) -> str:
    return f"{s['median']:.2f} ({s['p10']:.2f}-{s['p90']:.2f})"


def table(results: dict[str, dict[str, dict[str, dict[str, float]]]], names: list[str], kind: str) -> list[list[str]]:
    """One row per command: each side's median (p10-p90) of `kind` ("wall" or "cpu"), and before / after."""
    rows = []
    for label, by_side in results.items():
        row = [label, *(cell(by_side[n][kind]) for n in names)]
        if len(names) == 2:
            row.append(f"{by_side[names[0]][kind]['median'] / by_side[names[1]][kind]['median']:.1f}x")
        rows.append(row)
    return rows


def header(names: list[str]) -> list[str]:
    return ["command", *(f"{n}, s" for n in names), *(["ratio"] if len(names) == 2 else [])]


def text_table(rows: list[list[str]], head: list[str]) -> str:
    """The table for a terminal: the command left, the figures right, two spaces between (fits 80 columns)."""
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
        for r in [head, *rows]
    )


def machine() -> str:
    """The CPU model, the cores this process may use, and Python's version."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")), None)
    return f"{model or platform.machine()}, {len(os.sched_getaffinity(0))} cores; Python {platform.python_version()}"


def markdown(report: dict, names: list[str]) -> str:
    head = header(names)
    out = [
        "# CLI start-up: whole processes",
        "",
        f"Run {report['date']} with `{report['command']}`; whole run {report['minutes']} min.",
        "",
        f"**Hardware**: {report['machine']}. The machine is shared: 1-minute load average {report['load'][0]} at the "
        f"start, {report['load'][1]} at the end (2 would mean both cores busy).",
        "",
        f"**Checkouts**: {', '.join(f'{n} = {c}' for n, c in report['commits'].items())}. Each figure is the "
        f"median (10th-90th percentile) of {report['runs']} fresh `tracerag` processes, after {report['warmup']} "
        "not counted, the two sides' runs alternating; the demo collections are the packaged sample's (`tracerag "
        "demo --no-dense` for the lexical one, `tracerag demo` for the one with vectors), searched for "
        f'"{QUERY}". Ratio: before / after, of the medians.',
    ]
    for kind, title in (("wall", "Wall time"), ("cpu", "CPU time (user + system, threads included)")):
        out += ["", f"**{title}**, seconds:", "", "| " + " | ".join(head) + " |"]
        out.append("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
        out += ["| " + " | ".join(r) + " |" for r in table(report["results"], names, kind)]
    return "\n".join(out) + "\n"


def checkout(before: str, into: Path) -> tuple[Path, bool]:
    """A folder holding the `before` code: the folder itself, or a temporary worktree of the commit (True)."""
    if Path(before).is_dir():
        return Path(before).resolve(), False
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(into), before], check=True)
    return into, True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--before", help="the checkout to compare with: a folder, or a git commit (a worktree)")
    parser.add_argument("--out", type=Path, help="write cli_start.json and cli_start.md here")
    parser.add_argument("--workdir", type=Path, help="where the demo collections are built (default: a temp dir)")
    args = parser.parse_args()
    if args.warmup < 1 or args.runs < 3:
        parser.error("--warmup 1 or more (the first run of each command checks it works), --runs 3 or more")

    started = time.perf_counter()
    load = [round(os.getloadavg()[0], 1)]
    work = args.workdir or Path(tempfile.mkdtemp(prefix="cli_start_"))
    empty = work / "no-datasets"  # the demo's data: the packaged sample, whatever the datasets folder holds
    empty.mkdir(parents=True, exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if k not in ("TRACERAG_DEMO_DATA", "PYTHONPATH")}
    environment |= {"TRACERAG_DATASETS": str(empty), "COLUMNS": "80"}
    made_worktree = False
    sides: list[Side] = []
    try:
        if args.before:
            before, made_worktree = checkout(args.before, work / "before-checkout")
            (work / "before").mkdir(exist_ok=True)
            sides.append(Side("before", before, work / "before", environment))
        (work / "after").mkdir(exist_ok=True)
        sides.append(Side("after", REPO, work / "after", environment))
        for side in sides:
            side.build_demo()
        times = measure(sides, args.runs, args.warmup)
        commits = {s.name: commit_of(s.root) for s in sides}
    finally:
        if made_worktree:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(work / "before-checkout")])
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    load.append(round(os.getloadavg()[0], 1))

    names = [s.name for s in sides]
    results = {
        label: {n: {"wall": summary([w for w, _ in v]), "cpu": summary([c for _, c in v])} for n, v in by_side.items()}
        for label, by_side in times.items()
    }
    print("wall time of a whole process, seconds: median (p10-p90)")
    print(text_table(table(results, names, "wall"), header(names)))
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python benchmarks/cli_start.py " + " ".join(sys.argv[1:]),
        "minutes": round((time.perf_counter() - started) / 60, 1),
        "machine": machine(),
        "load": load,
        "commits": commits,
        "runs": args.runs,
        "warmup": args.warmup,
        "query": QUERY,
        "results": results,
        "seconds": {
            label: {n: [[round(w, 4), round(c, 4)] for w, c in v] for n, v in by.items()} for label, by in times.items()
        },
    }
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "cli_start.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        (args.out / "cli_start.md").write_text(markdown(report, names), encoding="utf-8")
        say(f"wrote {args.out / 'cli_start.md'}")


if __name__ == "__main__":
    main()
