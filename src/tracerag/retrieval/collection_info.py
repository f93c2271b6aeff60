"""What a collection holds and how it is searched: documents, chunks, sub-corpora (as a list and as a tree),
the embedding model, who else is at work on it, the fusion searches use, and the OCR-quality distribution per
sub-corpus. What `tracerag info` prints and the web app's collection pages show, made in one place."""

from __future__ import annotations

from typing import Any

from tracerag.collection import Collection
from tracerag.retrieval.search import Retriever


def collection_summary(col: Collection) -> dict[str, Any]:
    """`col.stats()` with its `activity` (who else is at work on it, why it is read-only here): what a list of
    collections or a search form needs, without the passes over the store that `collection_info` adds."""
    stats = col.stats()
    stats["activity"] = col.activity()
    return stats


def collection_info(col: Collection) -> dict[str, Any]:
    """`collection_summary` with the `fusion` plan (how searches weigh the channels, and why) and the
    `ocr_quality` distribution (None: no estimates at all)."""
    stats = collection_summary(col)
    stats["fusion"] = Retriever(col).fusion_plan().to_dict()
    stats["ocr_quality"] = ocr_distribution(col.store.ocr_by_corpus())
    return stats


def ocr_distribution(by_corpus: dict[str, dict] | None) -> dict[str, dict] | None:
    """Per sub-corpus: how many documents have an OCR-quality score, its quartiles, those without one, and the
    repairs made (ingest/ocr_quality.py, ingest/ocr_fixes.py); None when the collection has no estimates at all."""
    if by_corpus is None:
        return None
    out: dict[str, dict] = {}
    for corpus, entry in sorted(by_corpus.items()):
        scores = entry["scores"]
        # a sub-corpus of documents none of which could be scored (no word list, too short) has no quartiles
        quartiles = (
            [scores[min(len(scores) - 1, int(q * len(scores)))] for q in (0, 0.25, 0.5, 0.75)] + scores[-1:]
            if scores
            else []
        )
        out[corpus] = {
            "scored": len(scores),
            "unscored": entry["unscored"],
            "unestimated": entry["unestimated"],
            "min_q1_median_q3_max": quartiles or None,
            "fixes": entry["fixes"],
        }
    return out


def corpus_tree(corpora: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sub-corpora as a tree by their "/"-separated names ("letemps/gdl" is inside "letemps"), each node with
    its full `name` (what a corpus filter takes: a parent admits its children), its last `label`, the documents
    in it and below, and its `children`, sorted by name. A parent that holds no documents of its own is a node too."""
    nodes: dict[str, dict[str, Any]] = {}
    roots: list[dict[str, Any]] = []
    for corpus in sorted(corpora, key=lambda c: c["name"]):
        parts = corpus["name"].split("/")
        for depth in range(len(parts)):
            name = "/".join(parts[: depth + 1])
            node = nodes.get(name)
            if node is None:
                node = {"name": name, "label": parts[depth], "documents": 0, "children": []}
                nodes[name] = node
                siblings = roots if depth == 0 else nodes["/".join(parts[:depth])]["children"]
                siblings.append(node)
            node["documents"] += corpus["documents"]
    return roots
