"""Merge a collection's embedded index into fewer, larger segments and measure it again: the open and BM25 figures
of `scale.py` at 1M chunks depend on how many segments the index holds (138 with the defaults).

    python benchmarks/scale_merge.py DIR --segment-chunks 125000 --segments 8      # merges, prints time and RSS
    python benchmarks/scale.py --child trace_search --corpus CORPUS --size-dir SIZE --profile  # then search again

DIR is a TRACE collection (e.g. `<workdir>/corpus-seed13-noise0.03/size-1000000/trace-lex`, kept by scale.py);
the merge is the one the next `tracerag ingest` or `embed` would do with these `engine.*` settings. Writes
`merge.json` beside DIR.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.engine.qdrant_edge import segment_layout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("collection", type=Path)
    ap.add_argument("--segment-chunks", type=int, required=True, help="engine.segment_chunks")
    ap.add_argument("--segments", type=int, default=8, help="engine.segments")
    args = ap.parse_args()
    index = args.collection / "index"
    before = segment_layout(index)
    settings = load_settings(engine={"segment_chunks": args.segment_chunks, "segments": args.segments})
    t = time.perf_counter()
    col = Collection.open(args.collection, settings, mode="write")
    opened = time.perf_counter() - t
    t = time.perf_counter()
    col.engine.optimize()
    merged = time.perf_counter() - t
    col.close()
    out = {
        "segment_chunks": args.segment_chunks,
        "segments": args.segments,
        "before": before,
        "after": segment_layout(index),
        "open_for_writing_s": round(opened, 1),
        "merge_s": round(merged, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(out))
    (args.collection.parent / "merge.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
