"""One writer and many reader processes on one collection (issue 24): does a reader slow down when others read and
one writes, and does every reader see a consistent collection?

    python benchmarks/many_readers.py --docs 2000 --more 3000 --readers 8 --out benchmarks/results

1. A lexical collection of `--docs` documents of the scale benchmark's corpus (benchmarks/scale_corpus.py; made
   by `benchmarks/scale.py` under --workdir) is ingested.
2. A lone reader process runs the queries (lexical `Retriever.search`, k 10, BM25 + phrase channels) and its
   latencies are taken (after a warm-up).
3. A writer process ingests `--more` documents more while `--readers` reader processes run the same queries at
   once, each process opening the collection itself; each reader also counts the chunks it sees after every query.
4. At the end the collection is checked: the engine holds every stored chunk once (count, and the chunk ids of a
   listing by document).

Reported: each reader's p50 and p90 against the lone reader's, errors, whether each reader's counts only grew,
and the final check. On 2 cores, 9 busy processes share 2 cores: the ratio then measures the CPU shared as much as
the engine, so the run also reports the readers' p50 with only the readers (no writer) for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
READER = r"""
import json, sys, time
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.retrieval.search import Retriever, SearchRequest
path, queries, warm, pause = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
col = Collection.open(path, load_settings(), mode="read")
retriever = Retriever(col)
lat, counts, errors = [], [], []
for i, q in enumerate(queries):
    start = time.perf_counter()
    try:
        retriever.search(SearchRequest(q, k=10, channels=("bm25", "phrase")))
    except Exception as exc:
        errors.append(repr(exc)[:200])
        continue
    if i >= warm:
        lat.append((time.perf_counter() - start) * 1000)
    counts.append(col.engine.count())
    time.sleep(pause)
print(json.dumps({"lat": lat, "counts": counts, "errors": errors}))
col.close()
"""
WRITER = r"""
import json, sys
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.model import Document
path, docs = sys.argv[1], sys.argv[2]
col = Collection.open(path, load_settings(), mode="write")
records = [Document(id=d["id"], text=d["text"], corpus=d["corpus"], language=d.get("language"), date=d.get("date"))
           for d in map(json.loads, open(docs, encoding="utf-8"))]
report = col.ingest(records, dense=False)
print(json.dumps({"chunks": report.chunks, "seconds": report.seconds}))
col.close()
"""


def run_readers(path: Path, queries: list[str], n: int, env: dict[str, str], warm: int, pause: float) -> list[dict]:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(path), json.dumps(queries), str(warm), str(pause)],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        for _ in range(n)
    ]
    return [json.loads(p.communicate()[0]) for p in procs]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", type=Path, default=Path("/work/bench-cache/many-readers"))
    ap.add_argument("--corpus", type=Path, default=Path("/work/bench-cache/scale/corpus-seed13-noise0.03"))
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--more", type=int, default=3000)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument(
        "--pause", type=float, default=0.0, help="seconds each reader waits between queries (0: back to back)"
    )
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    import shutil

    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.engine.embedded import EmbeddedEngine
    from tracerag.model import Document

    env = dict(os.environ)
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = args.workdir / "collection"
    shutil.rmtree(path, ignore_errors=True)
    lines = (args.corpus / "docs.jsonl").read_text(encoding="utf-8").splitlines()[: args.docs + args.more]
    first, more = lines[: args.docs], lines[args.docs :]
    (args.workdir / "more.jsonl").write_text("\n".join(more) + "\n", encoding="utf-8")
    settings = load_settings(None)
    settings = settings.model_copy(update={"embed": settings.embed.model_copy(update={"model": "none"})})
    docs = [json.loads(line) for line in first]
    with Collection.open(path, settings, mode="write", create=True) as col:
        col.ingest(
            [
                Document(id=d["id"], text=d["text"], corpus=d["corpus"], language=d.get("language"), date=d.get("date"))
                for d in docs
            ],
            dense=False,
        )
    words = [w for d in docs[:400] for w in d["text"].split() if w.isalpha() and len(w) > 4]
    queries = [" ".join(words[i * 7 % len(words) : i * 7 % len(words) + 1 + i % 3]) for i in range(args.queries)]
    warm = 10

    lone = run_readers(path, queries, 1, env, warm, args.pause)[0]
    readers_only = run_readers(path, queries, args.readers, env, warm, args.pause)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(args.workdir / "more.jsonl")],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    time.sleep(1.0)  # the writer is at work before the readers start
    beside = run_readers(path, queries, args.readers, env, warm, args.pause)
    written = json.loads(writer.communicate()[0])

    with Collection.open(path, settings, mode="read") as col:
        stored = col.store.count_chunks()
        indexed = col.engine.count()
        engine = col.engine
        assert isinstance(engine, EmbeddedEngine)
        listed = engine.chunk_ids()
        per_doc_hits = len(set(listed)) == len(listed) == stored

    def summary(results: list[dict]) -> dict:
        p50s = [statistics.median(r["lat"]) for r in results if r["lat"]]
        return {
            "p50_ms_median_of_readers": round(statistics.median(p50s), 2),
            "p50_ms_worst_reader": round(max(p50s), 2),
            "p90_ms_median_of_readers": round(statistics.median(pct(r["lat"], 0.9) for r in results), 2),
            "errors": sum(len(r["errors"]) for r in results),
            "counts_only_grew": all(r["counts"] == sorted(r["counts"]) for r in results),
        }

    lone_p50 = statistics.median(lone["lat"])
    report = {
        "docs": args.docs,
        "more_docs": args.more,
        "readers": args.readers,
        "queries_per_reader": len(queries),
        "pause_s": args.pause,
        "cores": os.cpu_count(),
        "load_average": os.getloadavg(),
        "lone_reader_p50_ms": round(lone_p50, 2),
        "readers_only": summary(readers_only),
        "readers_beside_writer": summary(beside),
        "writer": written,
        "final": {"stored_chunks": stored, "indexed_chunks": indexed, "each_chunk_once": per_doc_hits},
    }
    report["ratio_beside_writer"] = round(report["readers_beside_writer"]["p50_ms_median_of_readers"] / lone_p50, 2)
    report["ratio_readers_only"] = round(report["readers_only"]["p50_ms_median_of_readers"] / lone_p50, 2)
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "many_readers.json").write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
