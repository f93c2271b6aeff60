"""Retrieval quality of the embedded engine against the one it replaced (issue 24: Qdrant Edge -> tantivy + faiss).
Results and the commands that made them: benchmarks/results/engine_quality.md.

- `table`: two `tracerag eval` report folders per benchmark (the old engine's, the new one's: same queries, same
  runs), nDCG@10 of each run recomputed from its TREC file (and checked against the report's own figure), the
  difference, how many queries moved, and for the dense run whether the new engine's cosines are at least the
  old one's where the rankings differ (exact search against HNSW):

      python benchmarks/engine_quality.py table --bench cranfield=OLD/cranfield,NEW/cranfield ...

- `dump`: one engine's raw BM25 per language index (chunk ids and scores, no field merge) and its term statistics
  for a benchmark's queries, from a collection. It uses only what both engines' code has (`Collection.open`,
  `engine.bm25`, `engine.field_stats`), so the old engine is dumped by running this file with the old code on the
  path (`PYTHONPATH=OLD_CHECKOUT/src`) on a copy of the old collection:

      python benchmarks/engine_quality.py dump --bench cranfield --collection DIR --out new.json

- `explain`: the two dumps against three BM25s computed here from the collection's store (`MODELS`): each chunk's
  index text cut into terms by Qdrant's analyser or by tantivy's, with exact lengths or with each length rounded
  down to tantivy's 1-byte field norm (Lucene's SmallFloat: exact to 39 tokens, then 8 steps per doubling). Says
  how far each engine's scores are from each, which term statistics differ from the store's, and for the
  query-fields whose top 10 differ between the engines, whether the lengths, the terms or both moved it
  (`--tokens`: the two analysers compared on every word, as `terms` does):

      python benchmarks/engine_quality.py explain --bench cranfield --collection NEWDIR --old old.json --new new.json

- `steps`: nDCG@10 of those three BM25s on a collection with one language index (the bm25 run, step by step).
- `terms`: the two analysers on every word of a collection.
- `deletes`: BM25 in a copy of a collection where chunks were written again (deleted versions not yet merged).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

K1, B = 1.2, 0.75  # BM25's constants in both engines (retrieval.bm25_k1 / bm25_b defaults; tantivy's own)
DEPTH = 10  # the ranks compared (nDCG@10)
RUNS = ("bm25", "dense", "hybrid")


def _data() -> Path:
    return Path(os.environ.get("TRACERAG_DATASETS", "../shared/datasets"))


# -- table -------------------------------------------------------------------------------------------------------


def _ndcg(bench: Any, run: dict, queries: list[str]) -> dict[str, float]:
    from tracerag.eval.metrics import per_query

    qrels = {q: bench.qrels[q] for q in queries}
    return {q: row["nDCG@10"] for q, row in per_query(qrels, run, ["nDCG@10"]).items()}


def _top(run: dict, qid: str) -> list[str]:
    from tracerag.eval.trec import rank_run

    return [d for d, _ in rank_run(run.get(qid, ()))[:DEPTH]]


def table(pairs: list[str], runs: list[str], out: Path | None) -> None:
    from tracerag.eval.datasets import load_benchmark
    from tracerag.eval.runner import select_queries
    from tracerag.eval.trec import read_run

    rows = []
    for pair in pairs:
        name, folders = pair.split("=", 1)
        old_dir, new_dir = (Path(p) for p in folders.split(","))
        bench = load_benchmark(name, _data())
        reported = {d: json.loads((d / "results.json").read_text())["runs"] for d in (old_dir, new_dir)}
        # the queries the eval scored, as it chose them: every judged one, or a sample of them (seed 0; PIAF 1,000)
        count = json.loads((new_dir / "results.json").read_text())["queries"]
        judged = sum(1 for j in bench.qrels.values() if j)
        queries = select_queries(bench, sample=count if count < judged else None, seed=0)
        for run_name in runs:
            old_run, new_run = (read_run(d / "runs" / f"{run_name}.trec") for d in (old_dir, new_dir))
            if not (set(old_run) | set(new_run)) <= set(queries):
                raise SystemExit(f"{name}: the runs hold queries the eval did not select (another --seed?)")
            old, new = _ndcg(bench, old_run, queries), _ndcg(bench, new_run, queries)
            mean_old, mean_new = statistics.fmean(old.values()), statistics.fmean(new.values())
            for d, mean in ((old_dir, mean_old), (new_dir, mean_new)):
                if abs(reported[d][run_name]["nDCG@10"] - mean) > 1e-9:
                    raise SystemExit(f"{d}: {run_name} nDCG@10 {mean} recomputed, {reported[d][run_name]} reported")
            moved = [q for q in queries if abs(old[q] - new[q]) > 1e-12]
            rows.append(
                {
                    "benchmark": name,
                    "run": run_name,
                    "queries": len(queries),
                    "old": mean_old,
                    "new": mean_new,
                    "delta": mean_new - mean_old,
                    "within": abs(mean_new - mean_old) <= 0.005,
                    "queries_up": sum(new[q] > old[q] for q in moved),
                    "queries_down": sum(new[q] < old[q] for q in moved),
                    "top10_differs": sum(_top(old_run, q) != _top(new_run, q) for q in queries),
                }
            )
            if run_name == "dense":
                rows[-1] |= _dense_check(old_run, new_run, queries)
    print("| benchmark | run | queries | old | new | Δ | within ±0.005 | queries up / down | top 10 differs |")
    print("|---|---|---:|---:|---:|---:|---|---:|---:|")
    for r in rows:
        print(
            f"| {r['benchmark']} | {r['run']} | {r['queries']:,} | {r['old']:.4f} | {r['new']:.4f} | "
            f"{r['delta']:+.4f} | {'yes' if r['within'] else '**no**'} | {r['queries_up']} / {r['queries_down']} | "
            f"{r['top10_differs']} |"
        )
    for r in rows:
        if r["run"] == "dense" and r["top10_differs"]:
            print(
                f"{r['benchmark']} dense: on {r['dense_new_not_worse']} of the {r['top10_differs']} queries whose "
                "top 10 differs, the new engine's cosine at every rank is at least the old one's (exact search "
                "against HNSW); a document both ranks has the same cosine within "
                f"{r['dense_same_doc_max_diff']:.1e}"
            )
    if out:
        out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


def _dense_check(old_run: dict, new_run: dict, queries: list[str]) -> dict:
    """Dense scores are cosines (each document's best chunk): where the top 10 differs, whether the new engine
    found at every rank a cosine at least as high (what an exact search does against an approximate one)."""
    from tracerag.eval.trec import rank_run

    not_worse, same_doc = 0, 0.0
    for q in queries:
        old, new = rank_run(old_run.get(q, ()))[:DEPTH], rank_run(new_run.get(q, ()))[:DEPTH]
        scores = dict(old)
        same_doc = max([same_doc, *(abs(s - scores[d]) for d, s in new if d in scores)])
        if [d for d, _ in old] != [d for d, _ in new]:
            not_worse += len(new) >= len(old) and all(n >= o - 1e-6 for (_, o), (_, n) in zip(old, new, strict=False))
    return {"dense_new_not_worse": not_worse, "dense_same_doc_max_diff": same_doc}


# -- dump --------------------------------------------------------------------------------------------------------


def dump(name: str, collection: Path, k: int, limit: int | None, out: Path) -> None:
    """Runs under either engine's code: only the engine API both have."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.eval.datasets import load_benchmark

    bench = load_benchmark(name, _data())
    queries = sorted(q for q, j in bench.qrels.items() if j)[:limit]
    found = {}
    with Collection.open(collection, load_settings(), mode="read") as col:
        engine = col.engine
        for qid in queries:
            text = bench.queries[qid].text
            hits = engine.bm25(text, k)
            stats = engine.field_stats(text)
            found[qid] = {
                "text": text,
                "hits": {f: [[h.chunk_id, h.doc_id, h.score] for h in hs] for f, hs in hits.items()},
                "stats": {f: [s.chunks, [[t.term, t.counted, t.chunks] for t in s.terms]] for f, s in stats.items()},
            }
    out.write_text(json.dumps({"benchmark": name, "collection": str(collection), "queries": found}), encoding="utf-8")


# -- explain -----------------------------------------------------------------------------------------------------


def norm_table() -> list[int]:
    """tantivy's 256 field-norm values (fieldnorm/code.rs), Lucene's SmallFloat.byte4ToInt: 0..23 as they are,
    then a 4-bit float (3 bits of mantissa) plus 24."""
    values = []
    for b in range(256):
        if b < 24:
            values.append(b)
            continue
        i = b - 24
        bits, shift = i & 7, (i >> 3) - 1
        values.append(24 + (bits if shift == -1 else (bits | 8) << shift))
    return values


_NORMS = norm_table()


def quantised(length: int) -> int:
    """The length tantivy scores a chunk at: the largest table value not above it."""
    lo, hi = 0, len(_NORMS) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _NORMS[mid] <= length:
            lo = mid
        else:
            hi = mid - 1
    return _NORMS[lo]


class Reference:
    """BM25 of every chunk of one language index from the store's text, cut into terms by one engine's analyser
    (`tantivy`: the new engine's; `qdrant`: the old one's, Qdrant's own, each term named by its hash)."""

    def __init__(self, language: str, texts: dict[str, str], terms: str):
        self.language = language
        self.term_of = _term_function(language, terms)
        self.tf: dict[str, Counter] = {c: Counter(self._terms(t)) for c, t in texts.items()}
        self.length = {c: sum(tf.values()) for c, tf in self.tf.items()}
        self.n = len(texts)
        self.avg = sum(self.length.values()) / self.n
        self.df: Counter = Counter(t for tf in self.tf.values() for t in tf)

    def _terms(self, text: str) -> list:
        from tracerag.engine.text_index import _WORD_PIECE

        return [t for t in (self.term_of(w) for w in _WORD_PIECE.findall(text)) if t is not None]

    def query(self, text: str) -> list[tuple[object, int]]:
        """The query's terms and how often it holds each (both engines count a repeated word)."""
        return list(Counter(self._terms(text)).items())

    def idf(self, term: object) -> float:
        n = self.df.get(term, 0)
        return math.log(1 + (self.n - n + 0.5) / (n + 0.5))

    def score(self, chunk: str, terms: list[tuple[object, int]], tantivy_norm: bool) -> float:
        tf = self.tf.get(chunk)
        if tf is None:
            return float("nan")
        length = quantised(self.length[chunk]) if tantivy_norm else self.length[chunk]
        total = 0.0
        for term, count in terms:
            f = tf.get(term, 0)
            if f:
                total += count * self.idf(term) * f * (K1 + 1) / (f + K1 * (1 - B + B * length / self.avg))
        return total

    def top(self, terms: list[tuple[object, int]], k: int, tantivy_norm: bool) -> list[str]:
        wanted = {t for t, _ in terms}
        scored = [(self.score(c, terms, tantivy_norm), c) for c, tf in self.tf.items() if wanted & tf.keys()]
        return [c for _, c in sorted(scored, key=lambda sc: (-sc[0], sc[1]))[:k]]


def _term_function(language: str, terms: str) -> Callable[[str], Any]:
    import functools

    if terms == "tantivy":
        from tracerag.engine.text_index import _token

        return functools.partial(_token, language)
    from tracerag.engine.qdrant_analysis import _analyzer

    analyse = _analyzer(language)

    @functools.lru_cache(maxsize=500_000)
    def qdrant(word: str) -> tuple[int, ...] | None:
        return tuple(analyse.embed_query(word).indices) or None

    return qdrant


def _texts(collection: Path) -> dict[str, dict[str, str]]:
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.engine.text_index import language_of

    texts: dict[str, dict[str, str]] = {}
    with Collection.open(collection, load_settings(), mode="read") as col:
        for page in col.indexed_pages(5000):
            for chunk, _ in page:
                texts.setdefault(language_of(chunk.language), {})[chunk.chunk_id] = chunk.text
    return texts


# The three BM25s computed here, from the old engine's to the new one's: each step changes one thing.
MODELS = {
    "Qdrant terms, exact lengths": ("qdrant", False),  # what the old engine computes
    "tantivy terms, exact lengths": ("tantivy", False),
    "tantivy terms, 1-byte lengths": ("tantivy", True),  # what the new engine computes
}


def explain(name: str, collection: Path, old_path: Path, new_path: Path, show: int) -> None:
    old, new = (json.loads(p.read_text())["queries"] for p in (old_path, new_path))
    texts = _texts(collection)
    refs = {(lang, terms): Reference(lang, t, terms) for lang, t in texts.items() for terms in ("qdrant", "tantivy")}
    print(
        f"# {name}: {len(new)} queries; language indexes: "
        + ", ".join(f"{lang} {len(t):,} chunks" for lang, t in sorted(texts.items()))
    )
    off: dict[tuple[str, str], list[float]] = {}
    df_diff: dict[str, set] = {"old": set(), "new": set()}
    agree: Counter[str] = Counter()
    faithful: Counter[str] = Counter()
    shown = 0
    for qid in sorted(new):
        text = new[qid]["text"]
        for field in sorted(set(old[qid]["hits"]) | set(new[qid]["hits"])):
            terms = {terms: refs[field, terms].query(text) for terms in ("qdrant", "tantivy")}
            for side, dumped in (("old", old), ("new", new)):
                for chunk, _, score in dumped[qid]["hits"].get(field, []):
                    for model, (kind, norm) in MODELS.items():
                        expected = refs[field, kind].score(chunk, terms[kind], norm)
                        off.setdefault((side, model), []).append(_relative(score, expected))
                ref = refs[field, "tantivy" if side == "new" else "qdrant"]
                stats = dumped[qid]["stats"].get(field)
                if stats:
                    for word, _, df in stats[1]:
                        exact = ref.df.get(ref.term_of(word), 0)
                        if df != exact or stats[0] != ref.n:
                            df_diff[side].add((field, word, df, exact, stats[0], ref.n))
            tops = {
                side: [c for c, _, _ in dumped[qid]["hits"].get(field, [])[:DEPTH]]
                for side, dumped in (("old", old), ("new", new))
            }
            models = {m: refs[field, kind].top(terms[kind], DEPTH, norm) for m, (kind, norm) in MODELS.items()}
            faithful["old"] += models["Qdrant terms, exact lengths"] == tops["old"]
            faithful["new"] += models["tantivy terms, 1-byte lengths"] == tops["new"]
            faithful["fields"] += 1
            if tops["old"] == tops["new"]:
                continue
            middle = models["tantivy terms, exact lengths"]
            why = "lengths" if middle == tops["old"] else "terms" if middle == tops["new"] else "both"
            agree[why] += 1
            if shown < show:
                shown += 1
                _show(qid, field, text, old, new, refs, terms, why)
    print("\n## Each engine's scores against the BM25s computed here (relative difference, every hit dumped)")
    print("| engine | against | median | 99th percentile | hits off by > 0.01% |")
    print("|---|---|---:|---:|---:|")
    for (side, model), errs in sorted(off.items()):
        errs = sorted(errs)
        p99 = errs[min(len(errs) - 1, int(0.99 * len(errs)))]
        share = sum(e > 1e-4 for e in errs) / len(errs)
        print(f"| {side} | {model} | {statistics.median(errs):.1e} | {p99:.1e} | {share:.2%} |")
    print(
        f"\nTop {DEPTH} of the BM25 computed here equal to the engine's, chunk for chunk, on {faithful['fields']} "
        f"query-fields: old (Qdrant terms, exact lengths) {faithful['old']}, new (tantivy terms, 1-byte lengths) "
        f"{faithful['new']}"
    )
    for side in ("old", "new"):
        diffs = sorted(df_diff[side])
        print(
            f"{side}: {len(diffs)} (field, query word)s whose document frequency or N differs from its own "
            "analyser's count over the store" + (", e.g.:" if diffs else "")
        )
        for field, word, df, exact, n, n_exact in diffs[:6]:
            print(f"  {field} {word!r}: engine {df} of {n}, store {exact} of {n_exact}")
    print(
        f"\nQuery-fields whose top {DEPTH} chunks differ between the engines: {sum(agree.values())}. Moving from "
        f"the old BM25 to the new one step by step, the top {DEPTH} changes with the lengths alone on "
        f"{agree['lengths']}, with the terms alone on {agree['terms']}, with both on {agree['both']}"
    )


def _show(qid: str, field: str, text: str, old: dict, new: dict, refs: dict, terms: dict, why: str) -> None:
    print(f"\n## query {qid} ({field} index): {text[:70]!r}; the top {DEPTH} moved by: {why}")
    print("| rank | old: chunk (length) | score | new: chunk (length) | score | old's chunk at 1-byte length |")
    print("|---:|---|---:|---|---:|---:|")
    oh, nh = old[qid]["hits"].get(field, []), new[qid]["hits"].get(field, [])
    t = refs[field, "tantivy"]
    for i in range(min(DEPTH, max(len(oh), len(nh)))):
        o = oh[i] if i < len(oh) else ["", "", float("nan")]
        n = nh[i] if i < len(nh) else ["", "", float("nan")]
        mark = "" if o[0] == n[0] else " ←"
        at = t.score(o[0], terms["tantivy"], True) if o[0] else float("nan")
        print(
            f"| {i + 1} | {o[0]} ({t.length.get(o[0], 0)}) | {o[2]:.4f} | {n[0]} ({t.length.get(n[0], 0)}){mark} | "
            f"{n[2]:.4f} | {at:.4f} |"
        )


def steps(name: str, collection: Path, sample: int | None) -> None:
    """nDCG@10 of the three BM25s computed here (MODELS), from the old engine's to the new one's, over a
    benchmark's judged queries (a sample of them, seed 0, as the eval draws it): how much of a change in the bm25
    run comes from the terms and how much from the lengths. A document ranks by its best chunk. Only for a
    collection with one language index, where the ranking of chunks is the channel's (with several, retrieval
    merges the indexes' rankings first)."""
    from tracerag.eval.datasets import load_benchmark
    from tracerag.eval.metrics import per_query
    from tracerag.eval.runner import select_queries

    texts = _texts(collection)
    if len(texts) != 1:
        raise SystemExit(f"{collection}: {len(texts)} language indexes; steps needs one")
    ((lang, chunk_texts),) = texts.items()
    doc_of = _doc_of(collection)
    refs = {kind: Reference(lang, chunk_texts, kind) for kind in ("qdrant", "tantivy")}
    bench = load_benchmark(name, _data())
    queries = select_queries(bench, sample=sample, seed=0)
    runs: dict[str, dict[str, list[tuple[str, float]]]] = {m: {} for m in MODELS}
    for qid in queries:
        for model, (kind, norm) in MODELS.items():
            ranked: list[tuple[str, float]] = []
            for chunk in refs[kind].top(refs[kind].query(bench.queries[qid].text), 100, norm):
                if doc_of[chunk] not in {d for d, _ in ranked}:
                    ranked.append((doc_of[chunk], float(100 - len(ranked))))
            runs[model][qid] = ranked[:DEPTH]
    qrels = {q: bench.qrels[q] for q in queries}
    print(f"# {name}: {len(queries):,} queries, one index ({lang}); nDCG@10 of each BM25 computed here")
    print("| BM25 | nDCG@10 |\n|---|---:|")
    for model, run in runs.items():
        table = per_query(qrels, run, ["nDCG@10"])
        print(f"| {model} | {statistics.fmean(r['nDCG@10'] for r in table.values()):.4f} |")


def _doc_of(collection: Path) -> dict[str, str]:
    return {c.chunk_id: c.doc_id for page in _pages(collection) for c in page}


def tokenisation(collection: Path) -> None:
    """Where the two engines' analysers cut words into different terms: each word of the collection's index text
    analysed by tantivy (the new engine) and by Qdrant's analyser (the old engine's own); a word counts when the
    words sharing its term in one engine are not the words sharing its term in the other."""
    from tracerag.engine.text_index import _WORD_PIECE

    print("\n## Terms: tantivy's analyser against Qdrant's, word by word")
    print(
        "| index | distinct words | words grouped otherwise | text whose term's frequency differs by > 1% | "
        "e.g. word (tantivy's term): with X in tantivy only / with Y in Qdrant only |"
    )
    print("|---|---:|---:|---:|---|")
    for lang, texts in sorted(_texts(collection).items()):
        counts = Counter(w for t in texts.values() for w in _WORD_PIECE.findall(t))
        new_of, old_of = _term_function(lang, "tantivy"), _term_function(lang, "qdrant")
        new_class: dict = {}
        old_class: dict = {}
        for word in counts:
            new_class.setdefault(new_of(word), set()).add(word)
            old_class.setdefault(old_of(word), set()).add(word)
        odd = [w for w in counts if new_class[new_of(w)] != old_class[old_of(w)]]
        # the text whose term is materially another: its term's frequency in the collection differs by over 1%
        # ("ein" whose tantivy term also holds one OCR'd "einet" does not count)
        freq = {
            w: (sum(counts[x] for x in new_class[new_of(w)]), sum(counts[x] for x in old_class[old_of(w)])) for w in odd
        }
        material = [w for w in odd if abs(freq[w][0] - freq[w][1]) > 0.01 * max(freq[w])]
        share = sum(counts[w] for w in material) / sum(counts.values())
        shown = "; ".join(
            f"{w} ({new_of(w)}): with {'/'.join(sorted(new_class[new_of(w)] - old_class[old_of(w)])[:3]) or '-'} "
            f"/ with {'/'.join(sorted(old_class[old_of(w)] - new_class[new_of(w)])[:3]) or '-'}"
            for w in sorted(material, key=lambda w: -counts[w])[:4]
        )
        print(f"| {lang} | {len(counts):,} | {len(odd):,} | {share:.2%} | {shown} |")


def deletes(name: str, collection: Path, every: int, out: Path) -> None:
    """tantivy counts a replaced chunk's deleted version in BM25's statistics until a merge drops it (the
    document frequencies, N and the tokens of the average length). A copy of `collection` made in `out`, every
    `every`-th chunk written again as it is (an update of its document that changed nothing in it), then each
    query's BM25 compared with the store's, before and after the engine's optimize(). `out` is left for `tracerag eval
    --collections` (its parent's parent is the eval root the harness reads)."""
    import shutil

    from tracerag.engine.embedded import EmbeddedEngine

    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(collection, out)
    texts = _texts(out)
    chunks = [c for page in _pages(out) for c in page]
    again = chunks[::every]
    refs = {lang: Reference(lang, t, "tantivy") for lang, t in texts.items()}
    # the same statistics counting the deleted copies: what tantivy's searcher reports while they are there
    counted = {lang: Reference(lang, t, "tantivy") for lang, t in texts.items()}
    for c in again:
        ref = counted[_language(c.language)]
        ref.df.update(ref.tf[c.chunk_id].keys())
    for lang, ref in counted.items():
        extra = [c for c in again if _language(c.language) == lang]
        ref.n = len(ref.tf) + len(extra)
        ref.avg = (sum(ref.length.values()) + sum(ref.length[c.chunk_id] for c in extra)) / ref.n
    engine = EmbeddedEngine(out / "index", None, writer=True)
    engine.upsert(again, None)
    engine.flush()
    bench_queries = _queries(name)
    print(f"# {name}: {len(again):,} of {len(chunks):,} chunks written again ({out})")
    for stage in ("with the deleted versions", "after optimize()"):
        if stage == "after optimize()":
            engine.optimize()
        meta = {
            lang: sum(
                s.get("deletes") is not None
                for s in json.loads((out / "index/text" / lang / "meta.json").read_text())["segments"]
            )
            for lang in texts
        }
        off: dict[str, list[float]] = {"store": [], "deleted counted": []}
        stats_off = 0
        for text in bench_queries:
            for field, hits in engine.bm25(text, DEPTH).items():
                terms = refs[field].query(text)
                for h in hits:
                    off["store"].append(_relative(h.score, refs[field].score(h.chunk_id, terms, True)))
                    off["deleted counted"].append(_relative(h.score, counted[field].score(h.chunk_id, terms, True)))
            for field, st in engine.field_stats(text).items():
                stats_off += any(t.chunks != refs[field].df.get(refs[field].term_of(t.term), 0) for t in st.terms)
        print(f"\n{stage} (segments with deletes per index: {meta}); BM25 of every hit against:")
        for model, errs in off.items():
            errs = sorted(errs)
            print(
                f"  {model}: median {statistics.median(errs):.1e}, 99th percentile "
                f"{errs[int(0.99 * (len(errs) - 1))]:.1e}, "
                f"off by > 0.01%: {sum(e > 1e-4 for e in errs) / len(errs):.1%}"
            )
        print(f"  queries whose term statistics (field_stats) differ from the store's: {stats_off}")
    engine.close()


def _pages(collection: Path) -> Iterator[list]:
    from tracerag.collection import Collection
    from tracerag.config import load_settings

    with Collection.open(collection, load_settings(), mode="read") as col:
        yield from ([c for c, _ in page] for page in col.indexed_pages(5000))


def _language(language: str | None) -> str:
    from tracerag.engine.text_index import language_of

    return language_of(language)


def _queries(name: str) -> list[str]:
    from tracerag.eval.datasets import load_benchmark

    bench = load_benchmark(name, _data())
    return [bench.queries[q].text for q in sorted(q for q, j in bench.qrels.items() if j)]


def _relative(a: float, b: float) -> float:
    if math.isnan(b):
        return math.inf
    return abs(a - b) / max(abs(b), 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("table")
    t.add_argument("--bench", action="append", required=True, help="NAME=OLD_REPORT,NEW_REPORT")
    t.add_argument("--runs", default=",".join(RUNS))
    t.add_argument("--json", type=Path)
    d = sub.add_parser("dump")
    d.add_argument("--bench", required=True)
    d.add_argument("--collection", type=Path, required=True)
    d.add_argument("--k", type=int, default=DEPTH)
    d.add_argument("--limit", type=int)
    d.add_argument("--out", type=Path, required=True)
    e = sub.add_parser("explain")
    e.add_argument("--bench", required=True)
    e.add_argument("--collection", type=Path, required=True, help="the collection whose store the BM25 is made from")
    e.add_argument("--old", type=Path, required=True)
    e.add_argument("--new", type=Path, required=True)
    e.add_argument("--show", type=int, default=3, help="queries whose rankings differ, shown rank by rank")
    e.add_argument("--tokens", action="store_true", help="also compare the two analysers on every word")
    st = sub.add_parser("steps")
    st.add_argument("--bench", required=True)
    st.add_argument("--collection", type=Path, required=True)
    st.add_argument("--sample", type=int)
    w = sub.add_parser("terms")
    w.add_argument("--collection", type=Path, required=True)
    x = sub.add_parser("deletes")
    x.add_argument("--bench", required=True)
    x.add_argument("--collection", type=Path, required=True, help="a collection of the new engine (copied)")
    x.add_argument("--every", type=int, default=2, help="every N-th chunk is written again")
    x.add_argument("--out", type=Path, required=True, help="where the copy goes")
    args = parser.parse_args()
    if args.command == "table":
        table(args.bench, args.runs.split(","), args.json)
    elif args.command == "dump":
        dump(args.bench, args.collection, args.k, args.limit, args.out)
    elif args.command == "steps":
        steps(args.bench, args.collection, args.sample)
    elif args.command == "terms":
        tokenisation(args.collection)
    elif args.command == "deletes":
        deletes(args.bench, args.collection, args.every, args.out)
    else:
        explain(args.bench, args.collection, args.old, args.new, args.show)
        if args.tokens:
            tokenisation(args.collection)


if __name__ == "__main__":
    main()
