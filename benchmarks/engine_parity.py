"""Do the embedded engine (Qdrant Edge) and the cluster engine rank the same chunks the same, on real data?

    python benchmarks/engine_parity.py --chunks 600 --out benchmarks/results

Real HIPE-2022 documents (every n-th by id, so that every sub-dataset and language is in) are chunked as `tracerag
ingest` chunks them (a lexical Edge collection in a temporary folder), and their chunks are upserted, with the same
seeded random 32-d vectors, into a fresh `QdrantEdgeEngine` and a fresh `QdrantServerEngine` over qdrant-client's
local mode (no Qdrant server can run here; see the README's Cluster backend). Queries: HIPE's entity queries
(surface forms), the same with a word repeated (BM25's query term frequency: `engine/lexical.py`'s counted path),
three-word spans of the chunks as phrases; two in five under a date, a corpus or a language filter. For each query
and language field it compares the top 10 and top 100 (chunk ids in order) and the scores; for dense, the top 10 of
30 random query vectors; for the filters, the counts; and every query's `field_stats`. A ranking that differs only
by the order of chunks whose scores are equal to within 1e-5 (relative) counts as equal: the engines add a chunk's
term scores in other orders (float32 against float64), and ties fall either way. Writes engine_parity.json and .md
in --out.
"""

from __future__ import annotations

import argparse
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


def chunks_of(datasets: Path, budget: int, tmp: Path) -> list:
    """About `budget` chunks of HIPE-2022, as the collection indexes them (`IndexedChunk`s)."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.engine import IndexedChunk
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
        found, offset = [], None
        while True:
            page, offset = col.engine.scroll_points(offset, 1000)  # the writer holds the Edge shard
            found += page
            if offset is None:
                break
    finally:
        col.close()
    # whole documents in a seeded shuffled order until the budget is reached: every language keeps its share
    by_doc: dict[str, list] = {}
    for p in sorted(found, key=lambda p: (p.payload["doc_id"], int(p.payload["chunk_id"].rsplit("#", 1)[1]))):
        by_doc.setdefault(p.payload["doc_id"], []).append(p)
    order = sorted(by_doc)
    random.Random(0).shuffle(order)
    kept: list = []
    for doc_id in order:
        if len(kept) >= budget:
            break
        kept += by_doc[doc_id]
    chunks = []
    for p in kept:
        pl = p.payload
        (field,) = [k for k in pl if k.startswith("text_")]
        chunks.append(
            IndexedChunk(
                pl["chunk_id"],
                pl["doc_id"],
                pl[field],
                pl["corpus"][-1],
                pl["language"],
                pl["date_start"][:10] if "date_start" in pl else None,
                pl["date_end"][:10] if "date_end" in pl else None,
                pl.get("fields", {}),
            )
        )
    return chunks, bench


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=600)
    parser.add_argument("--queries", type=int, default=120, help="entity queries (and half as many of each other kind)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO / "src"))
    from qdrant_client import QdrantClient

    from tracerag.config import EngineSettings, load_settings
    from tracerag.engine.qdrant_edge import QdrantEdgeEngine
    from tracerag.engine.qdrant_server import QdrantServerEngine

    datasets = Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        chunks, bench = chunks_of(datasets, args.chunks, Path(tmp))
        vectors = np.random.default_rng(args.seed).standard_normal((len(chunks), DIM)).astype(np.float32)
        edge = QdrantEdgeEngine(Path(tmp) / "edge", DIM, query_tf=True)
        client = QdrantClient(":memory:")
        local = QdrantServerEngine(
            client, "parity", DIM, settings=EngineSettings(), url=":memory:", query_tf=True, create=True
        )
        start = time.perf_counter()
        edge.upsert(chunks, vectors)
        edge.optimize()
        edge_write = time.perf_counter() - start
        start = time.perf_counter()
        local.upsert(chunks, vectors)
        local_write = time.perf_counter() - start
        queries = queries_of(bench, chunks, args.queries, rng)
        stats = {"compared": 0, "differ_top10": 0, "differ_top100": 0, "equal_up_to_ties": 0, "max_rel_score_diff": 0.0}
        by_kind: dict[str, dict[str, int]] = {}
        examples = []
        seconds = {"edge": 0.0, "local": 0.0}
        stats_differ = 0
        for kind, text, flt in queries:
            search = "phrase" if kind == "phrase" else "bm25"
            t0 = time.perf_counter()
            a = getattr(edge, search)(text, 100, flt)
            t1 = time.perf_counter()
            b = getattr(local, search)(text, 100, flt)
            t2 = time.perf_counter()
            seconds["edge"] += t1 - t0
            seconds["local"] += t2 - t1
            kinds = by_kind.setdefault(kind, {"queries": 0, "fields": 0, "differ_top10": 0, "differ_top100": 0})
            kinds["queries"] += 1
            for field in sorted(set(a) | set(b)):
                ha, hb = a.get(field, []), b.get(field, [])
                stats["compared"] += 1
                kinds["fields"] += 1
                top10 = same_ranking(ha[:10], hb[:10])
                top100 = same_ranking(ha, hb)
                stats["differ_top10"] += not top10
                stats["differ_top100"] += not top100
                stats["equal_up_to_ties"] += top100 and [h.chunk_id for h in ha] != [h.chunk_id for h in hb]
                kinds["differ_top10"] += not top10
                kinds["differ_top100"] += not top100
                scores = {h.chunk_id: h.score for h in hb}
                for h in ha:
                    if h.chunk_id in scores:
                        diff = abs(h.score - scores[h.chunk_id]) / max(abs(h.score), 1e-9)
                        stats["max_rel_score_diff"] = max(stats["max_rel_score_diff"], diff)
                if not top100 and len(examples) < 5:
                    examples.append(
                        {
                            "query": text,
                            "field": field,
                            "filter": flt.to_dict() if flt else None,
                            "edge": [(h.chunk_id, round(h.score, 6)) for h in ha[:12]],
                            "local": [(h.chunk_id, round(h.score, 6)) for h in hb[:12]],
                        }
                    )
            if edge.field_stats(text) != local.field_stats(text):
                stats_differ += 1
                if len(examples) < 8:
                    pair = {"edge": str(edge.field_stats(text)), "local": str(local.field_stats(text))}
                    examples.append({"query": text, "field_stats": pair})
        counts_differ = sum(edge.count(flt) != local.count(flt) for _, _, flt in queries)
        dense_differ = 0
        qv = np.random.default_rng(args.seed + 1).standard_normal((30, DIM)).astype(np.float32)
        for v in qv:
            da, db = edge.dense(v, 10), local.dense(v, 10)
            dense_differ += [h.chunk_id for h in da] != [h.chunk_id for h in db]
        edge.close()
        local.close()

    settings = load_settings()
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": "python benchmarks/engine_parity.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared), Python {platform.python_version()}",
        "data": f"HIPE-2022: {len(chunks)} chunks of {len({c.doc_id for c in chunks})} documents, "
        f"languages {sorted({c.language for c in chunks})}",
        "engines": "qdrant-edge-py 0.9.0 (QdrantEdgeEngine) vs qdrant-client 1.20.0 local mode (QdrantServerEngine)",
        "bm25": {"k1": settings.retrieval.bm25_k1, "b": settings.retrieval.bm25_b, "query_tf": True},
        "queries": len(queries),
        "by_kind": by_kind,
        **stats,
        "field_stats_differ": stats_differ,
        "counts_differ": counts_differ,
        "dense_top10_differ_of_30": dense_differ,
        "write_seconds": {"edge": round(edge_write, 2), "local": round(local_write, 2)},
        "search_seconds": {k: round(v, 2) for k, v in seconds.items()},
        "examples": examples,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "engine_parity.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    lines = [
        "# Engine parity: Qdrant Edge vs the cluster engine (qdrant-client local mode)",
        "",
        f"`{result['command']}` on {result['when']}; {result['machine']}; one run (the result is deterministic).",
        "",
        f"Data: {result['data']}. {result['engines']}. {len(queries)} queries, each searched in every language field.",
        "",
        "| queries | searched fields | top 10 differ | top 100 differ |",
        "|---|---|---|---|",
    ]
    for kind, k in by_kind.items():
        lines.append(f"| {kind} ({k['queries']}) | {k['fields']} | {k['differ_top10']} | {k['differ_top100']} |")
    lines += [
        f"| all ({len(queries)}) | {stats['compared']} | {stats['differ_top10']} | {stats['differ_top100']} |",
        "",
        f"Of the top 100s counted equal, {stats['equal_up_to_ties']} are so only up to the order of tied chunks. "
        f"Largest relative score difference of a chunk both found: {stats['max_rel_score_diff']:.2e}. "
        f"field_stats differing: {stats_differ}; counts under the queries' filters differing: {counts_differ}; "
        f"dense top 10 differing: {dense_differ} of 30.",
        "",
        f"Time (not a benchmark of either engine: local mode is Python, re-reading every chunk for each text query): "
        f"writes {result['write_seconds']}, searches {result['search_seconds']} s.",
        "",
    ]
    (args.out / "engine_parity.md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0 if not (stats["differ_top100"] or stats_differ or counts_differ or dense_differ) else 1


if __name__ == "__main__":
    raise SystemExit(main())
