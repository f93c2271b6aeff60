"""The same rankings before and after a refactoring of the retrieval (issue 26: typed fusion settings, channels as
a protocol): every channel and fusion method, on a real collection, compared to the last bit that matters.

A copy of the collection is searched (a cached eval collection is never written into: opening takes locks), with
hand-typed queries as people type them (typos, dates, quotes, names, three languages), under every fusion method
(`retrieval.fusion`), with each channel alone and all together, with windows and an OCR floor. `--record` writes
each search's documents (id, score, each channel's evidence) and its params; `--compare` searches again and names
every difference (ids exactly, scores to 1e-9).

    cp -r ~/.cache/tracerag/eval/hipe-entities-dated-… /tmp/col/hipe     # a copy: migrate and entities write
    tracerag migrate -c /tmp/col/hipe && tracerag entities -c /tmp/col/hipe  # the current engine; the entity channel
    PYTHONPATH=OLD/src python benchmarks/ranking_identity.py --collection /tmp/col/hipe --record /tmp/rankings.json
    PYTHONPATH=NEW/src python benchmarks/ranking_identity.py --collection /tmp/col/hipe --compare /tmp/rankings.json

OLD is a checkout of the commit before the change (`git worktree add`), NEW the change. Kept as a script, not a
test: it needs a real collection with vectors and entities (the entities alone take ~6 min on 2 cores). Issue 26's
refactoring (the channel registry, the names defined once, the typed fusion settings) compared 525 searches
(15 queries x 35 settings) with 0 differences, calibration, entity, date and phrase channels all acting.

The queries were typed by hand for the HIPE-2022 newspapers (French, German, English, 1790-1940).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.model import Filter
from tracerag.retrieval.search import Retriever, SearchRequest

QUERIES = (
    "Genève",
    "geneve incendie",
    "the strike in 1911",
    "grève des ouvriers 1890",
    '"Conseil fédéral"',
    "Napoléon Bonaparte",
    "Berlin Reichstag Wahlen",
    "Eisenbahn unglück",
    "prix du blé à Lausanne",
    "what happened in Paris in 1848?",
    "Kaiser Wilhelm",
    "incendie de la fabrique",
    "sociétés de secours mutuels",
    "Schweiz Bundesrat 1900",
    "assemblée générale des actionnaires",
)
FUSIONS = ("calibrated", "rrf", "wrrf", "combsum", "combmnz")
CHANNEL_SETS: tuple[tuple[str, ...] | None, ...] = (
    None,
    ("bm25",),
    ("dense",),
    ("phrase",),
    ("entity",),
    ("bm25", "date"),
)


def _runs() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(label, retrieval settings, request options) of every search."""
    runs = []
    for fusion in FUSIONS:
        retrieval: dict[str, Any] = {"fusion": fusion}
        if fusion in ("wrrf", "combsum", "combmnz"):
            retrieval["weights"] = {"bm25": 1.0, "dense": 0.6, "entity": 0.8}
        if fusion == "combmnz":
            retrieval["normalisation"] = "zscore"
        for channels in CHANNEL_SETS:
            runs.append((f"{fusion}/{'+'.join(channels or ('all',))}", retrieval, {"channels": channels}))
    runs.append(("calibrated/windows", {"fusion": "calibrated"}, {"channels": None, "windows": "10y"}))
    runs.append(("rrf/windows", {"fusion": "rrf"}, {"channels": None, "windows": "25y"}))
    runs.append(("calibrated/ocr", {"fusion": "calibrated"}, {"channels": None, "min_ocr_quality": 0.5}))
    runs.append(("calibrated/no-query-weights", {"fusion": "calibrated", "query_weights": False}, {"channels": None}))
    runs.append(("calibrated/max-raw", {"fusion": "calibrated", "field_merge": "max_raw_score"}, {"channels": None}))
    return runs


def record(collection: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, retrieval, options in _runs():
        col = Collection.open(collection, load_settings(retrieval=retrieval), mode="read")
        try:
            retriever = Retriever(col)
            for query in QUERIES:
                ranking = retriever.search(SearchRequest(query, k=20, filter=Filter(), **options))
                out[f"{label}|{query}"] = {
                    "documents": [
                        [
                            d.doc_id,
                            d.score,
                            d.best_chunk_id,
                            [[e.channel, e.rank, e.score, e.chunk_id] for e in d.channels],
                        ]
                        for d in ranking.documents
                    ],
                    "channel_hits": {
                        c: [[h.chunk_id, h.rank, h.score] for h in hs] for c, hs in ranking.channel_hits.items()
                    },
                    "params": json.loads(json.dumps(ranking.params, default=str)),
                }
        finally:
            col.close()
    return out


def differences(before: Any, after: Any, where: str = "") -> list[str]:
    """Every place the two differ: numbers to 1e-9, everything else exactly."""
    if isinstance(before, float | int) and isinstance(after, float | int) and not isinstance(before, bool):
        return [] if math.isclose(before, after, rel_tol=1e-9, abs_tol=1e-9) else [f"{where}: {before} != {after}"]
    if isinstance(before, dict) and isinstance(after, dict):
        if list(before) != list(after):
            return [f"{where}: keys {list(before)} != {list(after)}"]
        return [d for k in before for d in differences(before[k], after[k], f"{where}.{k}")]
    if isinstance(before, list) and isinstance(after, list):
        if len(before) != len(after):
            return [f"{where}: {len(before)} items != {len(after)}"]
        return [
            d for i, (b, a) in enumerate(zip(before, after, strict=True)) for d in differences(b, a, f"{where}[{i}]")
        ]
    return [] if before == after else [f"{where}: {before!r} != {after!r}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", type=Path, required=True)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--record", type=Path)
    what.add_argument("--compare", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "collection"
        shutil.copytree(args.collection.expanduser(), copy, ignore=shutil.ignore_patterns("trails"))
        found = record(copy)
    if args.record:
        args.record.write_text(json.dumps(found, ensure_ascii=False, indent=0), encoding="utf-8")
        print(f"{len(found)} searches recorded in {args.record}")
        return
    before = json.loads(args.compare.read_text(encoding="utf-8"))
    problems = differences(before, found)
    for p in problems[:40]:
        print(p)
    print(f"{len(found)} searches, {len(problems)} differences")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
