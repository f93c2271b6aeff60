"""A lexical ingest with its documents prepared by worker processes (`ingest.workers`) against one that prepares
them in the writing process, on the same input, in one run (alternating, so that the machine's load falls on both).

    python benchmarks/ingest_workers.py [--data DIR] [--rounds 2] [--workers 0,1] [--out benchmarks/results]

Input: all of HIPE-2022 (1,293 documents, 6,744 chunks), read in place from $TRACERAG_DATASETS/hipe2022, repeated
`--copies` times with new ids so that an ingest lasts long enough to measure. Each ingest runs `tracerag ingest ...
--no-dense --json` in a fresh folder; its own report gives the seconds of the ingest proper (opening, the final
index optimisation included; the calibration after it excluded).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _copies(source: Path, out: Path, copies: int) -> Path:
    """HIPE TSV files copied `copies` times, each copy's document ids suffixed, so that no id repeats."""
    out.mkdir(parents=True, exist_ok=True)
    for n in range(copies):
        for f in sorted(source.rglob("*.tsv")):
            text = f.read_text(encoding="utf-8")
            if n:
                text = text.replace("# hipe2022:document_id = ", f"# hipe2022:document_id = c{n}-")
            (out / f"copy{n}").mkdir(exist_ok=True)
            (out / f"copy{n}" / f.name).write_text(text, encoding="utf-8")
    return out


def _ingest(data: Path, workers: int, work: Path) -> dict:
    target = work / f"c{workers}"
    shutil.rmtree(target, ignore_errors=True)
    env = {**os.environ, "TRACERAG_INGEST__WORKERS": str(workers)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "tracerag.cli", "ingest", str(data), "--format", "hipe", "-c", str(target)]
        + ["--no-dense", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall = time.perf_counter() - start
    report = json.loads(done.stdout)
    return {"workers": workers, "seconds": report["seconds"], "wall": wall, "chunks": report["chunks"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--workers", default="0,1")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    settings = [int(w) for w in args.workers.split(",")]
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="tracerag-workers-") as tmp:
        data = _copies(args.data / "hipe2022", Path(tmp) / "data", args.copies)
        for r in range(args.rounds):
            for w in settings if r % 2 == 0 else reversed(settings):
                run = _ingest(data, w, Path(tmp))
                run["round"] = r
                run["load"] = os.getloadavg()[0]
                runs.append(run)
                print(json.dumps(run), flush=True)
    base = statistics.median(x["seconds"] for x in runs if x["workers"] == settings[0])
    rows = []
    for w in settings:
        mine = [x for x in runs if x["workers"] == w]
        secs = statistics.median(x["seconds"] for x in mine)
        chunks = mine[0]["chunks"]
        rows.append(
            {"workers": w, "seconds": secs, "chunks": chunks, "chunks_per_s": chunks / secs, "speedup": base / secs}
        )
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor(), "python": platform.python_version()},
        "command": "python benchmarks/ingest_workers.py " + " ".join(sys.argv[1:]),
        "runs": runs,
        "summary": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ingest_workers.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Ingest with documents prepared by worker processes",
        "",
        f"Run {result['when']} with `{result['command']}`; {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"all of HIPE-2022 × {args.copies} (new ids), lexical (`--no-dense`), {args.rounds} rounds alternating; "
        "seconds are the ingest's own (median), load averages per run in the JSON.",
        "",
        "| ingest.workers | seconds | chunks | chunks/s | speed-up vs first |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['workers']} | {row['seconds']:.1f} | {row['chunks']:,} | {row['chunks_per_s']:.0f} | "
            f"{row['speedup']:.2f}× |"
        )
    (args.out / "ingest_workers.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
