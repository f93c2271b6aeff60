"""Memory and time of ingesting one huge document, and of opening a large collection to search it.

    python benchmarks/open_and_memory.py --out benchmarks/results     # 200 MB text, ~234k chunks (+ dense probe)
    python benchmarks/open_and_memory.py --quick                      # 20 MB, smoke check (writes *_quick.*)

1. **Ingest**: one text file of `--mb` MB made of real HIPE-2022 v2.1 documents (drawn at random with `--seed`,
   separated by blank lines), ingested as a user does: `tracerag ingest DIR --format txt -c C --no-dense`, in a
   child process. Peak RSS is the child's `ru_maxrss` (from `os.wait4`; the parent stays small, since Linux
   counts the parent's peak in it); seconds and chunks/s are the child's wall time and its report.
2. **Open**: in fresh child processes, `tracerag info -c C` and `tracerag search QUERY -c C` as a user runs them
   (wall time and peak RSS, imports included), and in one child the library calls alone: `Collection.open(C,
   mode="read")` and the engine's first call (opening the index's files), the RSS after it, the first search and
   the p50 of `--queries` more (spans of 2-4 words drawn from the same text, searched with the default channels).
3. **Dense probe** (`--dense-chunks`, 0 to skip): an embedded index (`EmbeddedEngine`: tantivy + faiss) of the
   first chunks of that collection, each with a random unit 384-d vector (nothing is embedded for real), written
   with `upsert` in sub-batches, optimized, and opened in a fresh child: open time, RSS after it, a dense and a
   BM25 query.

Every figure comes with the machine's load average while it was measured: the benchmark machine is shared.
Results: `open_and_memory.json` and `open_and_memory.md` (or `*_quick.*`) in `--out`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def datasets_path() -> Path:
    return Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load_average() -> float:
    return round(os.getloadavg()[0], 1)


def dir_mb(path: Path) -> float:
    """Disk used, like `du`."""
    return round(sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 2**20, 1)


# The segments of an embedded index: tantivy's per language (its meta.json) and the vector segments (state.json).
# Run in the children (as source) and here.
LAYOUT = r"""
def layout(index):
    import json
    from pathlib import Path
    index = Path(index)
    text = {
        meta.parent.name: len(json.loads(meta.read_text(encoding="utf-8"))["segments"])
        for meta in sorted((index / "text").glob("*/meta.json"))
    }
    state = index / "vectors" / "state.json"
    vectors = len(json.loads(state.read_text(encoding="utf-8"))["segments"]) if state.exists() else 0
    return {"text_segments": text, "vector_segments": vectors}
"""


def tracerag_cli() -> list[str]:
    exe = Path(sys.executable).with_name("tracerag")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "tracerag.cli"]


def run_with_rusage(cmd: list[str], *, stdout_path: Path | None = None) -> dict:
    """Run `cmd` as a child and return its wall time and peak RSS (ru_maxrss from os.wait4), MiB."""
    start = time.perf_counter()
    out = stdout_path.open("w") if stdout_path else subprocess.DEVNULL
    err = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed below, after the child's exit)
    try:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=os.environ | {"COLUMNS": "120"})
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stdout_path:
            out.close()
    wall = time.perf_counter() - start
    err.seek(0)
    stderr = err.read()
    err.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{stderr[-3000:]}")
    return {"seconds": round(wall, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "stderr": stderr}


# -- 1. the huge document --------------------------------------------------------------------------------


MAKE_TEXT = r"""
import json, random, sys
from pathlib import Path
from tracerag.ingest import read_documents
from tracerag.model import Document

path, megabytes, seed, hipe = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
docs = [d for d in read_documents(hipe, "hipe") if isinstance(d, Document)]
rng = random.Random(seed)
written = 0
path.parent.mkdir(parents=True, exist_ok=True)
with path.open("w", encoding="utf-8") as out:
    while written < megabytes * 1_000_000:
        piece = rng.choice(docs).text + "\n\n"
        out.write(piece)
        written += len(piece.encode("utf-8"))
print(json.dumps({"bytes": path.stat().st_size, "source_documents": len(docs), "seed": seed}))
"""


def make_text(path: Path, megabytes: float, seed: int, work: Path) -> dict:
    # In a child, like every measurement: the parent stays small, and Linux counts the parent's peak in each
    # child's ru_maxrss (it is folded in at exec).
    cmd = [sys.executable, "-c", MAKE_TEXT, str(path), str(megabytes), str(seed), str(datasets_path() / "hipe2022")]
    run_with_rusage(cmd, stdout_path=work / "text.json")
    return json.loads((work / "text.json").read_text())


def ingest(folder: Path, collection: Path, work: Path) -> dict:
    say(f"ingest: tracerag ingest {folder} --format txt -c {collection} --no-dense")
    load_before = load_average()
    cmd = [*tracerag_cli(), "ingest", str(folder), "--format", "txt", "-c", str(collection), "--no-dense", "--json"]
    result = run_with_rusage(cmd, stdout_path=work / "ingest.json")
    report = json.loads((work / "ingest.json").read_text())
    out = {
        "command": "tracerag ingest DIR --format txt -c C --no-dense",
        "peak_rss_mb": result["peak_rss_mb"],
        "seconds": result["seconds"],
        "ingest_seconds": report["seconds"],
        "chunks": report["chunks"],
        "chunks_per_second": round(report["chunks"] / result["seconds"], 1),
        "load_average": [load_before, load_average()],
        "index_mb": dir_mb(collection / "index"),
        "store_mb": round((collection / "store.sqlite").stat().st_size / 2**20, 1),
    }
    say(
        f"ingest: {out['chunks']:,} chunks in {out['seconds']} s ({out['chunks_per_second']} chunks/s), "
        f"peak RSS {out['peak_rss_mb']} MiB"
    )
    return out


# -- 2. opening it ----------------------------------------------------------------------------------------

OPEN_CHILD = (
    LAYOUT
    + r"""
import json, statistics, sys, time
from pathlib import Path

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

start = time.perf_counter()
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.retrieval import Retriever, SearchRequest
imported = time.perf_counter()
base = rss_mb()
col = Collection.open(Path(sys.argv[1]), load_settings(), mode="read")
opened = time.perf_counter()
points = col.engine.count()  # the first engine call opens the index's files
loaded = time.perf_counter()
after_open = rss_mb()
segments = layout(Path(sys.argv[1]) / "index")
queries = json.loads(sys.argv[2])
retriever = Retriever(col)
t = time.perf_counter(); first = retriever.search(SearchRequest(queries[0], k=10)); first_s = time.perf_counter() - t
times = []
for q in queries[1:]:
    t = time.perf_counter(); retriever.search(SearchRequest(q, k=10)); times.append(time.perf_counter() - t)
print(json.dumps({
    "import_s": round(imported - start, 3), "collection_open_s": round(opened - imported, 3),
    "engine_open_s": round(loaded - opened, 3), "open_total_s": round(loaded - imported, 3),
    "rss_before_open_mb": round(base, 1), "rss_after_open_mb": round(after_open, 1),
    "points": points, "first_search_ms": round(first_s * 1000, 1), "first_search_results": len(first.documents),
    "search_p50_ms": round(statistics.median(times) * 1000, 1), "search_max_ms": round(max(times) * 1000, 1),
    "searches": len(times), "rss_after_searches_mb": round(rss_mb(), 1), "layout": segments,
}))
col.close()
"""
)


def queries_from(text_path: Path, n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    size = text_path.stat().st_size
    out: list[str] = []
    with text_path.open("rb") as f:
        while len(out) < n:
            f.seek(rng.randrange(0, max(1, size - 2000)))
            words = [w for w in f.read(2000).decode("utf-8", "ignore").split()[1:-1] if w.isalpha() and len(w) > 2]
            if len(words) >= 4:
                i = rng.randrange(0, len(words) - 4)
                out.append(" ".join(words[i : i + rng.choice((2, 3, 4))]))
    return out


def open_collection(collection: Path, queries: list[str], work: Path) -> dict:
    out: dict = {}
    say("open: tracerag info")
    info = run_with_rusage([*tracerag_cli(), "info", "-c", str(collection)])
    out["cli_info"] = {"seconds": info["seconds"], "peak_rss_mb": info["peak_rss_mb"], "load_average": load_average()}
    say(f"open: tracerag search {queries[0]!r}")
    search = run_with_rusage([*tracerag_cli(), "search", queries[0], "-c", str(collection), "--k", "10"])
    out["cli_search"] = {
        "query": queries[0],
        "seconds": search["seconds"],
        "peak_rss_mb": search["peak_rss_mb"],
        "load_average": load_average(),
    }
    say("open: library calls in a fresh process")
    lib = run_with_rusage(
        [sys.executable, "-c", OPEN_CHILD, str(collection), json.dumps(queries)], stdout_path=work / "open.json"
    )
    out["library"] = json.loads((work / "open.json").read_text()) | {
        "peak_rss_mb": lib["peak_rss_mb"],
        "load_average": load_average(),
    }
    say(
        f"open: engine open {out['library']['engine_open_s']} s, RSS after open {out['library']['rss_after_open_mb']} "
        f"MiB; info {out['cli_info']['seconds']} s / {out['cli_info']['peak_rss_mb']} MiB"
    )
    return out


# -- 3. a dense probe -------------------------------------------------------------------------------------

DENSE_BUILD = (
    LAYOUT
    + r"""
import json, sys, time
import numpy as np
from pathlib import Path
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.engine import IndexedChunk
from tracerag.engine.embedded import EmbeddedEngine

source, target, n, dim = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), 384
rng = np.random.default_rng(0)
engine = EmbeddedEngine(target, dim, writer=True)
col = Collection.open(source, load_settings(), mode="read")
start = time.perf_counter()
done, after = 0, ("", -1)
while done < n:
    rows = col.store._db.execute(
        'SELECT c.id, c.doc_id, c.index_text, d.corpus, d.language FROM chunks c JOIN documents d ON d.id = c.doc_id '
        "WHERE (c.doc_id, c.n) > (?, ?) ORDER BY c.doc_id, c.n LIMIT ?", (*after, min(2000, n - done))).fetchall()
    if not rows:
        break
    last = rows[-1][0]
    after = (rows[-1][1], int(last.rsplit("#", 1)[1]))
    vectors = rng.standard_normal((len(rows), dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    engine.upsert([IndexedChunk(r[0], r[1], r[2], r[3], r[4], None, None, {}) for r in rows], vectors)
    done += len(rows)
    if done % 20000 < 2000:
        rate = done / (time.perf_counter() - start)
        print(f"dense probe: {done} chunks, {rate:.0f} chunks/s", file=sys.stderr, flush=True)
engine.optimize()
engine.flush()
print(json.dumps({"chunks": done, "seconds": round(time.perf_counter() - start, 1), "layout": layout(target)}))
engine.close()
col.close()
"""
)

DENSE_OPEN = (
    LAYOUT
    + r"""
import json, statistics, sys, time
import numpy as np
from pathlib import Path

def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024

from tracerag.engine.embedded import EmbeddedEngine
base = rss_mb()
t = time.perf_counter(); engine = EmbeddedEngine(Path(sys.argv[1]), 384); engine.count(); load = time.perf_counter() - t
after = rss_mb()
rng = np.random.default_rng(1)
dense, bm25 = [], []
for q in json.loads(sys.argv[2]):
    v = rng.standard_normal(384).astype(np.float32); v /= np.linalg.norm(v)
    t = time.perf_counter(); engine.dense(v, 100); dense.append(time.perf_counter() - t)
    t = time.perf_counter(); engine.bm25(q, 100); bm25.append(time.perf_counter() - t)
print(json.dumps({
    "engine_open_s": round(load, 3), "rss_before_mb": round(base, 1), "rss_after_open_mb": round(after, 1),
    "points": engine.count(), "layout": layout(Path(sys.argv[1])),
    "first_dense_ms": round(dense[0] * 1000, 1), "dense_p50_ms": round(statistics.median(dense[1:]) * 1000, 1),
    "first_bm25_ms": round(bm25[0] * 1000, 1), "bm25_p50_ms": round(statistics.median(bm25[1:]) * 1000, 1),
    "rss_after_queries_mb": round(rss_mb(), 1),
}))
engine.close()
"""
)


def dense_probe(collection: Path, n: int, queries: list[str], work: Path) -> dict:
    target = work / "dense-index"
    shutil.rmtree(target, ignore_errors=True)
    say(f"dense probe: {n:,} chunks with random unit vectors")
    build = run_with_rusage(
        [sys.executable, "-c", DENSE_BUILD, str(collection), str(target), str(n)], stdout_path=work / "dense-build.json"
    )
    built = json.loads((work / "dense-build.json").read_text())
    say("dense probe: open in a fresh process")
    opened = run_with_rusage(
        [sys.executable, "-c", DENSE_OPEN, str(target), json.dumps(queries)], stdout_path=work / "dense-open.json"
    )
    out = {
        "build": built | {"peak_rss_mb": build["peak_rss_mb"], "load_average": load_average()},
        "open": json.loads((work / "dense-open.json").read_text())
        | {"peak_rss_mb": opened["peak_rss_mb"], "load_average": load_average()},
        "index_mb": dir_mb(target),
    }
    say(f"dense probe: open {out['open']['engine_open_s']} s, RSS after open {out['open']['rss_after_open_mb']} MiB")
    return out


# -- report ----------------------------------------------------------------------------------------------


def hardware() -> dict:
    info = Path("/proc/cpuinfo").read_text()
    model = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")), "?")
    mem = next(ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal"))
    return {
        "cpu": model,
        "nproc": os.cpu_count(),
        "ram_gib": round(int(mem.split()[1]) / 2**20, 1),
        "python": platform.python_version(),
        "os": platform.platform(),
    }


def git_state() -> dict:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return {"commit": git("rev-parse", "--short", "HEAD"), "src_modified": bool(git("status", "--porcelain", "src"))}


def markdown(r: dict) -> str:
    ing, op = r["ingest"], r["open"]
    lib = op["library"]
    lines = [
        "# Huge document ingest and large collection open",
        "",
        f"Run {r['started']} with `{r['command']}`; whole run {r['minutes']} min.",
        "",
        f"**Hardware**: {r['hardware']['cpu']}, {r['hardware']['nproc']} cores, {r['hardware']['ram_gib']} GiB RAM; "
        f"Python {r['hardware']['python']}; tracerag at commit {r['git']['commit']}"
        f"{' with local changes' if r['git']['src_modified'] else ''}. The machine is shared: each row gives the "
        "1-minute load average while it ran (2 would mean both cores busy).",
        "",
        f"**Data**: one {r['text']['bytes'] / 1e6:.0f} MB text file of real HIPE-2022 v2.1 OCR (documents drawn at "
        f"random from {r['text']['source_documents']}, seed {r['text']['seed']}, separated by blank lines). One run "
        "of each measurement.",
        "",
        "| measurement | value | load avg |",
        "|---|---|---|",
        f"| `{ing['command']}`: peak RSS | {ing['peak_rss_mb']:,.0f} MiB | {ing['load_average'][1]} |",
        f"| ... wall time / chunks / throughput | {ing['seconds']:.0f} s / {ing['chunks']:,} / "
        f"{ing['chunks_per_second']:,.0f} chunks/s | {ing['load_average'][1]} |",
        f"| ... on disk: index / store | {ing['index_mb']:,.0f} / {ing['store_mb']:,.0f} MiB | |",
        f"| `tracerag info -c C`: wall time / peak RSS | {op['cli_info']['seconds']} s / "
        f"{op['cli_info']['peak_rss_mb']:,.0f} MiB | {op['cli_info']['load_average']} |",
        f"| `tracerag search QUERY -c C`: wall time / peak RSS | {op['cli_search']['seconds']} s / "
        f"{op['cli_search']['peak_rss_mb']:,.0f} MiB | {op['cli_search']['load_average']} |",
        f"| library: `Collection.open` + engine open | {lib['open_total_s']} s (engine {lib['engine_open_s']} s) | "
        f"{lib['load_average']} |",
        f"| library: RSS before / after open | {lib['rss_before_open_mb']:,.0f} / {lib['rss_after_open_mb']:,.0f} MiB "
        f"| |",
        f"| library: first search / p50 of {lib['searches']} more | {lib['first_search_ms']} / "
        f"{lib['search_p50_ms']} ms | |",
        f"| segments after the ingest | {lib['layout']} | |",
    ]
    if r.get("dense"):
        d = r["dense"]
        lines += [
            f"| dense probe: {d['build']['chunks']:,} chunks + random 384-d unit vectors, write + optimize | "
            f"{d['build']['seconds']:.0f} s, peak RSS {d['build']['peak_rss_mb']:,.0f} MiB | "
            f"{d['build']['load_average']} |",
            f"| dense probe: engine open / RSS after open | {d['open']['engine_open_s']} s / "
            f"{d['open']['rss_after_open_mb']:,.0f} MiB | {d['open']['load_average']} |",
            f"| dense probe: first / p50 dense query (k 100); first / p50 BM25 | {d['open']['first_dense_ms']} / "
            f"{d['open']['dense_p50_ms']} ms; {d['open']['first_bm25_ms']} / {d['open']['bm25_p50_ms']} ms | |",
            f"| dense probe: segments / on disk | {d['open']['layout']} / {d['index_mb']:,.0f} MiB | |",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=200.0, help="size of the one text file, MB")
    ap.add_argument("--dense-chunks", type=int, default=250_000, help="chunks of the dense probe (0: skip it)")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="20 MB text, 20k-chunk dense probe; writes *_quick.*")
    ap.add_argument("--workdir", type=Path, default=None, help="where the text and collections go (default: temp)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = ap.parse_args()
    if args.quick:
        args.mb, args.dense_chunks = 20.0, min(args.dense_chunks, 20_000)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="tracerag-open-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    result: dict = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python benchmarks/open_and_memory.py " + " ".join(sys.argv[1:]),
        "hardware": hardware(),
        "git": git_state(),
    }
    try:
        folder, collection = work / "big", work / "collection"
        shutil.rmtree(collection, ignore_errors=True)
        say(f"writing a {args.mb:g} MB text of real HIPE-2022 documents")
        result["text"] = make_text(folder / "big.txt", args.mb, args.seed, work)
        result["ingest"] = ingest(folder, collection, work)
        queries = queries_from(folder / "big.txt", args.queries + 1, args.seed)
        result["queries"] = queries
        result["open"] = open_collection(collection, queries, work)
        if args.dense_chunks:
            result["dense"] = dense_probe(collection, args.dense_chunks, queries, work)
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    result["minutes"] = round((time.perf_counter() - started) / 60, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "open_and_memory_quick" if args.quick else "open_and_memory"
    (args.out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (args.out / f"{name}.md").write_text(markdown(result), encoding="utf-8")
    say(f"wrote {args.out / name}.json and .md")


if __name__ == "__main__":
    main()
