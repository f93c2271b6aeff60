"""Where a served collection's memory goes: resident memory by mapping (the index's files, the store, libraries,
anonymous heap) after opening it and after each kind of query, for a collection `scale.py` made.

    python benchmarks/scale_memory.py <workdir>/corpus-seed13-noise0.03/size-1000000 [--collection trace-dense]

Runs the size's queries (BM25 alone, dense alone with the query vectors given, then both fused) and prints one JSON
line per step: the mappings in MiB and the peak RSS so far (VmHWM).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import scale

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.retrieval import Retriever, SearchRequest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("size_dir", type=Path, help="a size folder of scale.py's workdir (holds queries.json)")
    ap.add_argument("--collection", default="trace-dense", help="the collection in it to open")
    args = ap.parse_args()
    size = scale.Size(args.size_dir.parent, args.size_dir, 0)
    path = args.size_dir / args.collection
    roots = {"index/": path / "index", "store": path}
    col = Collection.open(path, load_settings(), mode="read")
    queries = [q["text"] for q in size.queries]
    col._embedder = scale.GivenQueryVectors(col.embedder, dict(zip(queries, size.qvec, strict=True)))
    retriever = Retriever(col)

    def say(step: str) -> None:
        print(json.dumps({"after": step, "mib": scale.rss_by_mapping(roots), "peak_mib": scale.vm_hwm_mb()}))

    say("open")
    for channels in (("bm25",), ("dense",), ("bm25", "dense")):
        for q in queries:
            retriever.search(SearchRequest(q, k=10, channels=channels))
        say("+".join(channels))
    col.close()


if __name__ == "__main__":
    main()
