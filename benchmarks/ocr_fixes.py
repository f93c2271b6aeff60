"""Whether the certain OCR repairs help find a known item under OCR noise, and whether the OCR-quality estimate
follows the character error rate.

    python benchmarks/ocr_fixes.py --collections /tmp/h5/cols --out benchmarks/results \
        --dense-vectors-from ~/.cache/tracerag/eval/ocr-known-item-f67c28ff1a-d0a92ebcb5a016f4

On `ocr-known-item` (HIPE-OCRepair-2026 records indexed with their noisy OCR text, HIPE-2022 documents as
distractors; each query an 8-15 word span of one record's gold transcription, that record the one relevant
document; tracerag.eval.datasets), this builds the benchmark's lexical collection twice, `ingest.ocr_fixes` off and
on (each in its own folder under --collections, as `tracerag eval --no-dense` builds it), runs the eval's `bm25` run
on each (the bm25 channel alone, per-language fields merged, chunks max-pooled to documents, depth 100), and
reports MRR per CER bucket with the queries each bucket gains and loses. With --dense-vectors-from (a collection of
the same benchmark embedded with the same model, read only: the eval cache's), the same for the `bm25+dense` run
(both channels, the default calibrated fusion, each collection calibrated on its own pseudo-queries), on two more
collections that take that collection's vectors and embed only the chunks whose index text the repairs changed
(~2 chunks/s here). Then the Spearman correlation between the estimate
(tracerag.ingest.ocr_quality, as ingest stores it) and the record's CER, over all records and per subset, and the
repairs made per kind. Writes ocr_fixes.json and .md in --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEPTH = 100  # documents per query, as `tracerag eval` runs them
BENCHMARK = "ocr-known-item"


def _dense_collection(bench, root: Path, settings, vectors_from: Path) -> Path:
    """The benchmark's collection with vectors: those `vectors_from` holds for the same index texts, the rest
    embedded here."""
    from tracerag.collection import Collection
    from tracerag.eval.runner import collection_dir
    from tracerag.retrieval import calibration

    path = collection_dir(root, bench, settings)
    with Collection.open(path, settings, mode="write", create=True, wait=True) as col:
        if not col.store.count_documents():
            print(f"adopted {col.adopt_vectors(vectors_from):,} vectors from {vectors_from}", flush=True)
        start = time.perf_counter()
        report = col.ingest(bench.documents, dense=True)
        print(f"{path.name}: {report.chunks:,} chunks indexed in {time.perf_counter() - start:.0f} s", flush=True)
        calibration.refresh(col)
    return path


def _reciprocal_ranks(path: Path, settings, bench, channels=("bm25",)) -> tuple[dict[str, float], float]:
    from tracerag.collection import Collection
    from tracerag.retrieval import Retriever, SearchRequest

    ranks: dict[str, float] = {}
    start = time.perf_counter()
    with Collection.open(path, settings, mode="read") as col:
        retriever = Retriever(col)
        for qid, query in sorted(bench.queries.items()):
            ranking = retriever.search(SearchRequest(query.text, k=DEPTH, channels=channels, windows=""))
            ids = [d.doc_id for d in ranking.documents]
            ranks[qid] = 1 / (ids.index(qid) + 1) if qid in ids else 0.0
    return ranks, time.perf_counter() - start


def _spearman(path: Path, settings, bench) -> dict:
    from scipy.stats import spearmanr

    from tracerag.collection import Collection

    with Collection.open(path, settings, mode="read") as col:
        estimates = col.store.ocr_estimates(sorted(bench.queries))
    pairs = defaultdict(list)
    unscored = Counter()
    for qid, query in bench.queries.items():
        score = estimates.get(qid, {}).get("score")
        if score is None:
            unscored[query.metadata["subset"]] += 1
            continue
        for group in ("all", query.metadata["subset"] + ":" + (query.language or "?")):
            pairs[group].append((score, query.metadata["cer"]))
    out = {}
    for group, values in sorted(pairs.items()):
        rho, p = spearmanr([v[0] for v in values], [v[1] for v in values])
        out[group] = {"records": len(values), "rho": round(float(rho), 3), "p": float(f"{p:.2g}")}
    return {"by_group": out, "unscored": dict(unscored)}


def _by_bucket(runs: dict[str, dict[str, float]], buckets: dict[str, str | None]) -> dict:
    from tracerag.eval.datasets import cer_bucket

    table = {}
    order = [cer_bucket(x) for x in (0.0, 0.1, 0.2, 0.5)]  # the benchmark's bands, cleanest first
    for bucket in sorted({b for b in buckets.values() if b}, key=order.index):
        ids = [q for q, b in buckets.items() if b == bucket]
        off = sum(runs["off"][q] for q in ids) / len(ids)
        on = sum(runs["on"][q] for q in ids) / len(ids)
        table[bucket] = {
            "queries": len(ids),
            "mrr_off": round(off, 4),
            "mrr_on": round(on, 4),
            "better": sum(runs["on"][q] > runs["off"][q] + 1e-9 for q in ids),
            "worse": sum(runs["on"][q] < runs["off"][q] - 1e-9 for q in ids),
        }
    return table


def measure(root: Path, collections: Path, vectors_from: Path | None = None) -> dict:
    from tracerag.config import load_settings
    from tracerag.eval.datasets import load_benchmark
    from tracerag.eval.runner import build_collection

    bench = load_benchmark(BENCHMARK, root)
    buckets = {qid: q.metadata["cer_bucket"] for qid, q in bench.queries.items()}
    result: dict = {"benchmark": BENCHMARK, "queries": len(bench.queries), "documents": len(bench.documents)}
    runs = {}
    for name, fixes in (("off", False), ("on", True)):
        settings = load_settings(ingest={"ocr_fixes": fixes})
        start = time.perf_counter()
        col, report = build_collection(bench, collections / f"fixes-{name}", settings, dense=False)
        path = col.path
        fixes_made: Counter[str] = Counter()
        for entry in (col.store.ocr_by_corpus() or {}).values():
            fixes_made.update(entry["fixes"])
        col.close()
        built = time.perf_counter() - start
        runs[name], seconds = _reciprocal_ranks(path, settings, bench)
        result[f"fixes_{name}"] = {
            "collection": str(path),
            "build_seconds": round(built, 1),
            "search_ms_per_query": round(1000 * seconds / len(bench.queries), 1),
            "repairs": dict(fixes_made),
        }
        if name == "on":
            result["spearman_estimate_vs_cer"] = _spearman(path, settings, bench)
        print(f"fixes {name}: built in {built:.1f} s, {seconds / len(bench.queries) * 1000:.1f} ms/query", flush=True)
    result["mrr_by_cer_bucket"] = _by_bucket(runs, buckets)
    if vectors_from is not None:
        dense_runs = {}
        for name, fixes in (("off", False), ("on", True)):
            settings = load_settings(ingest={"ocr_fixes": fixes})
            start = time.perf_counter()
            path = _dense_collection(bench, collections / f"dense-{name}", settings, vectors_from)
            built = time.perf_counter() - start
            dense_runs[name], seconds = _reciprocal_ranks(path, settings, bench, ("bm25", "dense"))
            result[f"dense_fixes_{name}"] = {
                "collection": str(path),
                "build_seconds": round(built, 1),
                "search_ms_per_query": round(1000 * seconds / len(bench.queries), 1),
            }
        result["hybrid_mrr_by_cer_bucket"] = _by_bucket(dense_runs, buckets)
    print(json.dumps(result, indent=1), flush=True)
    return result


def markdown(r: dict, meta: dict) -> str:
    lines = [
        "# OCR repairs and the OCR-quality estimate on ocr-known-item",
        "",
        f"{meta['when']}, {meta['machine']}; one run, on a machine shared with other jobs (timings rough). "
        f"`{r['command']}`",
        "",
        f"The eval's `bm25` run over {r['queries']} known-item queries ({r['documents']:,} documents), the "
        "collection built with `ingest.ocr_fixes` off and on; MRR per CER bucket of the sought record (the "
        "benchmark has no record at CER 0.15 or above), and the queries whose reciprocal rank rose / fell. "
        "Without --dense-vectors-from, dense runs are left out (re-embedding changed chunks: ~2 chunks/s here).",
        "",
        "| CER bucket | queries | MRR off | MRR on | better | worse |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for bucket, row in r["mrr_by_cer_bucket"].items():
        lines.append(
            f"| {bucket} | {row['queries']} | {row['mrr_off']:.4f} | {row['mrr_on']:.4f} | {row['better']} | "
            f"{row['worse']} |"
        )
    if "hybrid_mrr_by_cer_bucket" in r:
        lines += [
            "",
            "The `bm25+dense` run (default calibrated fusion), vectors taken from the embedded eval collection and "
            "the chunks the repairs changed embedded again "
            f"(build with repairs: {r['dense_fixes_on']['build_seconds']:.0f} s):",
            "",
            "| CER bucket | queries | MRR off | MRR on | better | worse |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for bucket, row in r["hybrid_mrr_by_cer_bucket"].items():
            lines.append(
                f"| {bucket} | {row['queries']} | {row['mrr_off']:.4f} | {row['mrr_on']:.4f} | {row['better']} | "
                f"{row['worse']} |"
            )
    lines += ["", "Repairs made (fixes on): " + ", ".join(f"{k} {n:,}" for k, n in r["fixes_on"]["repairs"].items())]
    lines += [
        "",
        "Spearman ρ between the OCR-quality estimate (lexicon share × (1 − garbage rate)) and the record's CER "
        "(negative: a higher estimate goes with fewer errors):",
        "",
        "| records | n | ρ | p |",
        "|---|---:|---:|---:|",
    ]
    for group, s in r["spearman_estimate_vs_cer"]["by_group"].items():
        lines.append(f"| {group} | {s['records']} | {s['rho']:+.3f} | {s['p']:.2g} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))
    )
    parser.add_argument("--collections", type=Path, default=Path("/tmp/tracerag-ocr-fixes"))
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    parser.add_argument(
        "--dense-vectors-from", type=Path, default=None, help="an embedded collection of the benchmark (read only)"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    result = measure(args.data, args.collections, args.dense_vectors_from) | {
        "command": "python benchmarks/ocr_fixes.py " + " ".join(sys.argv[1:])
    }
    meta = {
        "when": datetime.now(UTC).strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    (args.out / "ocr_fixes.json").write_text(json.dumps({"meta": meta, "result": result}, indent=1) + "\n")
    (args.out / "ocr_fixes.md").write_text(markdown(result, meta), encoding="utf-8")
    print(f"wrote {args.out / 'ocr_fixes.md'}")


if __name__ == "__main__":
    main()
