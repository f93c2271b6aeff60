"""Does the embedded engine (tantivy + faiss) rank the same chunks as the cluster engine, on real data?

    python benchmarks/engine_parity.py --chunks 600 --out benchmarks/results

Real HIPE-2022 documents (every n-th by id, so that every sub-dataset and language is in) are chunked as `tracerag
ingest` chunks them (a lexical collection in a temporary folder; the chunks read back from its store), and upserted,
with the same seeded random 32-d vectors, into a fresh `EmbeddedEngine` and a fresh `QdrantServerEngine` over
qdrant-client's local mode (no Qdrant server can run here; see the README's Cluster backend). Queries: HIPE's entity
queries (surface forms), the same with a word repeated (BM25's query term frequency), three-word spans of the chunks
as phrases; two in five under a date, a corpus or a language filter. For each query and language field it compares
the top 10 and top 100 (chunk ids in order) and the scores; for dense, the top 10 of 30 random query vectors; for
the filters, the counts; and every query's `field_stats`.

The engines cannot agree exactly, for two known reasons, and the comparison says where each applies:
- Their analysers are two Snowball implementations (tantivy's and Qdrant's), which stem some words apart (Qdrant's
  French stems "Valais" to "val", tantivy's does not; tantivy's German merges "Aeltestes" with "Alte"). A field's
  search "agrees in analysis" when every word of the query is merged with the same words of that field's chunks by
  both analysers; elsewhere any difference may come from the stemmers, and is counted apart.
- tantivy stores a chunk's length in one byte (Lucene's SmallFloat: exact up to 40 tokens, rounded down beyond, by
  less than 1/9), Qdrant stores it exactly: where the analysis agrees, a chunk's tantivy score is its Qdrant score
  times 1 to 9/8, so chunks whose scores are that close may swap.
A ranking that differs only by the order of chunks whose scores are equal to within 1e-5 (relative) counts as
equal. Writes engine_parity.json and .md in --out; exits 1 when a field that agrees in analysis breaks the bound
(other chunks matched, a score out of [1, 9/8], other term statistics), or a count or a dense top 10 differs.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import random
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DIM = 32
TIE = 1e-5  # relative score difference under which two chunks' order may fall either way
LENGTH_ROUNDING = 9 / 8  # the most tantivy's stored length (rounded down) can raise a score over the exact one


def chunks_of(datasets: Path, budget: int, tmp: Path) -> tuple[list, object]:
    """About `budget` chunks of HIPE-2022, as the collection indexes them (`IndexedChunk`s, from its store)."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.eval.datasets import hipe_entities

    bench = hipe_entities(datasets)
    docs = bench.documents
    # every n-th document, so that the sub-datasets and languages (sorted by id) are all in; ~1.6 chunks a document
    step = max(1, len(docs) * 16 // (budget * 10))
    chosen = docs[::step]
    settings = load_settings(embed={"model": "none"})
    col = Collection.open(tmp / "collection", settings, mode="write", create=True)
    try:
        col.ingest(chosen, dense=False)
        found = [chunk for page in col.indexed_pages(1000) for chunk, _ in page]
    finally:
        col.close()
    # whole documents in a seeded shuffled order until the budget is reached: every language keeps its share
    by_doc: dict[str, list] = {}
    for c in sorted(found, key=lambda c: (c.doc_id, int(c.chunk_id.rsplit("#", 1)[1]))):
        by_doc.setdefault(c.doc_id, []).append(c)
    order = sorted(by_doc)
    random.Random(0).shuffle(order)
    kept: list = []
    for doc_id in order:
        if len(kept) >= budget:
            break
        kept += by_doc[doc_id]
    return kept, bench


def queries_of(bench, chunks: list, n: int, rng: random.Random) -> list[tuple[str, str, object]]:
    """(kind, text, filter) triples: entity queries, with a word repeated, chunk spans as phrases; two in five
    filtered by a date range, a corpus or a language taken from the chunks."""
    from tracerag.model import Filter

    held = {c.doc_id for c in chunks}
    # entities linked in the chunks' documents first (they find something), then others (mostly nothing)
    linked = sorted({q.text for qid, q in bench.queries.items() if bench.relevant(qid) & held})
    others = sorted({q.text for q in bench.queries.values()} - set(linked))
    rng.shuffle(linked)
    rng.shuffle(others)
    entities = (linked + others)[:n]
    repeated = []
    for text in entities[: n // 2]:
        words = text.split()
        repeated.append(" ".join([*words, words[0]]))
    spans = []
    for c in rng.sample(chunks, min(n // 2, len(chunks))):
        words = c.text.split()
        if len(words) > 4:
            at = rng.randrange(len(words) - 3)
            spans.append(" ".join(words[at : at + 3]))
    dated = sorted({c.date_start[:4] for c in chunks if c.date_start})
    corpora = sorted({c.corpus.split("/")[0] for c in chunks})
    languages = sorted({c.language for c in chunks if c.language})
    filters = []
    for _ in range(3):
        year = rng.choice(dated)
        filters.append(Filter(date_from=f"{int(year) - 5}-01-01", date_to=f"{int(year) + 5}-12-31"))
        filters.append(Filter(corpora=(rng.choice(corpora),)))
        filters.append(Filter(languages=(rng.choice(languages),)))
    found = []
    for kind, texts in (("entity", entities), ("repeated", repeated), ("phrase", spans)):
        for text in texts:
            found.append((kind, text, rng.choice(filters) if rng.random() < 0.4 else None))
    return found


class Analyses:
    """Which words of each language field's chunks each engine's analyser merges: tantivy's (the embedded engine)
    and Qdrant's (the cluster engine)."""

    def __init__(self, chunks: list):
        import regex

        from tracerag.engine.text_index import language_of

        self.words: dict[str, set[str]] = collections.defaultdict(set)
        for c in chunks:
            self.words[language_of(c.language)].update(regex.findall(r"[\p{Alphabetic}\p{N}]+", c.text))
        self._classes: dict[str, tuple[dict, dict]] = {}
        for lang, words in self.words.items():
            by_tantivy, by_qdrant = collections.defaultdict(set), collections.defaultdict(set)
            for w in words:
                by_tantivy[self.tantivy(w, lang)].add(w)
                by_qdrant[self.qdrant(w, lang)].add(w)
            self._classes[lang] = (by_tantivy, by_qdrant)

    @staticmethod
    def tantivy(word: str, lang: str) -> tuple:
        from tracerag.engine.text_index import analyser

        return tuple(analyser(lang).analyze(word))

    @staticmethod
    def qdrant(word: str, lang: str) -> tuple:
        from tracerag.engine.qdrant_analysis import token_ids

        return tuple(token_ids(word, lang))

    def agrees(self, word: str, lang: str) -> bool:
        """Whether both analysers merge `word` with the same words of `lang`'s chunks."""
        by_tantivy, by_qdrant = self._classes.get(lang, ({}, {}))
        return by_tantivy.get(self.tantivy(word, lang), set()) == by_qdrant.get(self.qdrant(word, lang), set())

    def query_agrees(self, text: str, lang: str) -> bool:
        import regex

        return all(self.agrees(w, lang) for w in regex.findall(r"[\p{Alphabetic}\p{N}]+", text))

    def disagreeing(self) -> dict[str, tuple[int, int]]:
        """Per language field: (words its chunks hold, words the two analysers merge with other words)."""
        return {
            lang: (len(words), sum(not self.agrees(w, lang) for w in words))
            for lang, words in sorted(self.words.items())
        }


def check_field(a: list, b: list, k: int) -> list[str]:
    """What breaks the bound between the embedded engine's hits `a` and the cluster engine's `b` of one field whose
    search agrees in analysis: the same chunks matched (when neither reached `k`), and each chunk's score in
    [1, 9/8] times the other's (float32 rounding aside)."""
    problems = []
    if len(a) < k and len(b) < k and {h.chunk_id for h in a} != {h.chunk_id for h in b}:
        problems.append("other chunks matched")
    scores = {h.chunk_id: h.score for h in b}
    for h in a:
        other = scores.get(h.chunk_id)
        if other is not None and not other * (1 - TIE) <= h.score <= other * LENGTH_ROUNDING * (1 + TIE):
            problems.append(f"{h.chunk_id}: {h.score:.6g} against {other:.6g}")
    return problems


def stats_problems(analyses: Analyses, text: str, a: dict, b: dict) -> list[str]:
    """The term statistics (`field_stats`) that differ, but for terms the analysers merge differently."""
    problems = []
    if sorted(a) != sorted(b):
        return [f"fields {sorted(a)} against {sorted(b)}"]
    for lang in a:
        sa, sb = a[lang], b[lang]
        if sa.chunks != sb.chunks:
            problems.append(f"{lang}: {sa.chunks} chunks against {sb.chunks}")
        if len(sa.terms) != len(sb.terms):  # the analysers cut the query into other terms
            if analyses.query_agrees(text, lang):
                problems.append(f"{lang}: {sa.terms} against {sb.terms}")
            continue
        for ta, tb in zip(sa.terms, sb.terms, strict=True):
            if ta != tb and analyses.agrees(ta.term, lang):
                problems.append(f"{lang}: {ta} against {tb}")
    return problems


def overlap(a: list, b: list, k: int = 10) -> float:
    """The share of the longer top `k` that the other holds too (1.0 when both are empty)."""
    top_a, top_b = {h.chunk_id for h in a[:k]}, {h.chunk_id for h in b[:k]}
    return len(top_a & top_b) / max(len(top_a), len(top_b), 1)


def same_ranking(a: list, b: list) -> bool:
    """Equal chunk ids in order, but for chunks whose scores are equal to within TIE, which may swap."""
    if len(a) != len(b):
        return False

    def groups(hits: list) -> list[set[str]]:
        out: list[set[str]] = []
        last = None
        for h in hits:
            if last is None or abs(h.score - last) > TIE * max(abs(last), 1e-9):
                out.append(set())
            out[-1].add(h.chunk_id)
            last = h.score
        return out

    if [h.chunk_id for h in a] == [h.chunk_id for h in b]:
        return True
    # the top k may also end inside a tie group: compare the groups but the last
    ga, gb = groups(a), groups(b)
    return ga[:-1] == gb[:-1] and len(ga) == len(gb)


def long_chunks(chunks: list) -> int:
    """How many chunks are longer than tantivy stores exactly (40 tokens)."""
    from tracerag.engine.text_index import analyser, language_of

    return sum(len(analyser(language_of(c.language)).analyze(c.text)) > 40 for c in chunks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=600)
    parser.add_argument("--queries", type=int, default=120, help="entity queries (and half as many of each other kind)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from importlib.metadata import version

    from qdrant_client import QdrantClient

    from tracerag.config import EngineSettings, load_settings
    from tracerag.engine.embedded import EmbeddedEngine
    from tracerag.engine.qdrant_server import QdrantServerEngine

    datasets = Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))
    rng = random.Random(args.seed)
    k = 100
    with tempfile.TemporaryDirectory() as tmp:
        chunks, bench = chunks_of(datasets, args.chunks, Path(tmp))
        analyses = Analyses(chunks)
        vectors = np.random.default_rng(args.seed).standard_normal((len(chunks), DIM)).astype(np.float32)
        embedded = EmbeddedEngine(Path(tmp) / "embedded", DIM, query_tf=True, writer=True)
        client = QdrantClient(":memory:")
        local = QdrantServerEngine(
            client, "parity", DIM, settings=EngineSettings(), url=":memory:", query_tf=True, create=True
        )
        start = time.perf_counter()
        embedded.upsert(chunks, vectors)
        embedded.optimize()
        embedded_write = time.perf_counter() - start
        start = time.perf_counter()
        local.upsert(chunks, vectors)
        local_write = time.perf_counter() - start
        queries = queries_of(bench, chunks, args.queries, rng)
        by_kind: dict[str, dict[str, float]] = {}
        ratios: list[float] = []
        broken: list[dict] = []
        examples: list[dict] = []
        seconds = {"embedded": 0.0, "local": 0.0}
        stats_differ = stats_broken = 0
        for kind, text, flt in queries:
            search = "phrase" if kind == "phrase" else "bm25"
            t0 = time.perf_counter()
            a = getattr(embedded, search)(text, k, flt)
            t1 = time.perf_counter()
            b = getattr(local, search)(text, k, flt)
            t2 = time.perf_counter()
            seconds["embedded"] += t1 - t0
            seconds["local"] += t2 - t1
            row = by_kind.setdefault(
                kind,
                {"queries": 0, "fields": 0, "agree": 0, "same10": 0, "same100": 0, "agree_same10": 0, "overlap10": 0.0},
            )
            row["queries"] += 1
            for field in sorted(set(a) | set(b)):
                ha, hb = a.get(field, []), b.get(field, [])
                agree = analyses.query_agrees(text, field)
                same10, same100 = same_ranking(ha[:10], hb[:10]), same_ranking(ha, hb)
                row["fields"] += 1
                row["agree"] += agree
                row["same10"] += same10
                row["same100"] += same100
                row["agree_same10"] += agree and same10
                row["overlap10"] += overlap(ha, hb)
                if agree:
                    scores = {h.chunk_id: h.score for h in hb}
                    ratios += [h.score / scores[h.chunk_id] for h in ha if scores.get(h.chunk_id)]
                    problems = check_field(ha, hb, k) if field in a and field in b else ["found by one engine only"]
                    if problems:
                        broken.append({"query": text, "field": field, "problems": problems[:5]})
                if not same10 and len(examples) < 6:
                    examples.append(
                        {
                            "query": text,
                            "field": field,
                            "analysis_agrees": agree,
                            "filter": flt.to_dict() if flt else None,
                            "embedded": [(h.chunk_id, round(h.score, 4)) for h in ha[:10]],
                            "local": [(h.chunk_id, round(h.score, 4)) for h in hb[:10]],
                        }
                    )
            fa, fb = embedded.field_stats(text), local.field_stats(text)
            stats_differ += fa != fb
            problems = stats_problems(analyses, text, fa, fb)
            if problems:
                stats_broken += 1
                broken.append({"query": text, "field_stats": problems[:5]})
        counts_differ = sum(embedded.count(flt) != local.count(flt) for _, _, flt in queries)
        dense_differ = 0
        qv = np.random.default_rng(args.seed + 1).standard_normal((30, DIM)).astype(np.float32)
        for v in qv:
            da, db = embedded.dense(v, 10), local.dense(v, 10)
            dense_differ += [h.chunk_id for h in da] != [h.chunk_id for h in db]
        embedded.close()
        local.close()

    settings = load_settings()
    total = {key: sum(row[key] for row in by_kind.values()) for key in next(iter(by_kind.values()))}
    vocabulary = analyses.disagreeing()
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python benchmarks/engine_parity.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}",
        "data": f"HIPE-2022: {len(chunks)} chunks of {len({c.doc_id for c in chunks})} documents, "
        f"languages {sorted({c.language for c in chunks})}",
        "engines": f"tantivy {version('tantivy')} + faiss-cpu {version('faiss-cpu')} (EmbeddedEngine) vs "
        f"qdrant-client {version('qdrant-client')} local mode, analysed by qdrant-edge-py {version('qdrant-edge-py')} "
        "(QdrantServerEngine)",
        "bm25": {"k1": settings.retrieval.bm25_k1, "b": settings.retrieval.bm25_b, "query_tf": True},
        "chunks_longer_than_40_tokens": long_chunks(chunks),
        "vocabulary_merged_apart": {lang: {"words": n, "merged_apart": d} for lang, (n, d) in vocabulary.items()},
        "queries": len(queries),
        "by_kind": by_kind,
        "all": total,
        "agreeing_score_ratio": [round(min(ratios), 6), round(max(ratios), 6)] if ratios else None,
        "field_stats_differ": stats_differ,
        "field_stats_differ_where_analysis_agrees": stats_broken,
        "counts_differ": counts_differ,
        "dense_top10_differ_of_30": dense_differ,
        "bound_broken": broken,
        "write_seconds": {"embedded": round(embedded_write, 2), "local": round(local_write, 2)},
        "search_seconds": {key: round(v, 2) for key, v in seconds.items()},
        "examples": examples,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "engine_parity.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    merged_apart = ", ".join(f"{lang} {d} of {n}" for lang, (n, d) in vocabulary.items())
    lines = [
        "# Engine parity: the embedded engine (tantivy) vs the cluster engine (qdrant-client local mode)",
        "",
        f"`{result['command']}` on {result['when']}; {result['machine']}; one run (the result is deterministic).",
        "",
        f"Data: {result['data']}. {result['engines']}. {len(queries)} queries, each searched in every language field.",
        "",
        "| queries | searched fields | of which analysis agrees | top 10 same | (where it agrees) "
        "| top 100 same | top-10 overlap |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, row in [*by_kind.items(), (f"all ({len(queries)})", total)]:
        name = kind if kind.startswith("all") else f"{kind} ({row['queries']})"
        lines.append(
            f"| {name} | {row['fields']} | {row['agree']} | {row['same10']} | {row['agree_same10']} "
            f"| {row['same100']} | {row['overlap10'] / max(row['fields'], 1):.3f} |"
        )
    ratio = result["agreeing_score_ratio"]
    lines += [
        "",
        f"Words of the chunks that the two analysers (two Snowball implementations) merge with other words: "
        f"{merged_apart}. Chunks longer than tantivy stores exactly (40 tokens): "
        f"{result['chunks_longer_than_40_tokens']} of {len(chunks)}.",
        "",
        f"Where the analysis agrees, tantivy's score over Qdrant's for a chunk both found: {ratio} (bound: "
        f"[1, {LENGTH_ROUNDING}]); the bound broken: {len(broken)} times. field_stats differing: {stats_differ} "
        f"queries ({stats_broken} where the analysis agrees); counts under the queries' filters differing: "
        f"{counts_differ}; dense top 10 differing: {dense_differ} of 30.",
        "",
        f"Time (not a benchmark of either engine: local mode is Python, re-reading every chunk for each text query): "
        f"writes {result['write_seconds']}, searches {result['search_seconds']} s.",
        "",
    ]
    (args.out / "engine_parity.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0 if not (broken or counts_differ or dense_differ) else 1


if __name__ == "__main__":
    raise SystemExit(main())
