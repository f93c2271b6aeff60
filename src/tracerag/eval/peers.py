"""Peer baselines: other people's retrievers, run on our benchmarks, so our numbers sit next to theirs.

`bm25s_run` is the BM25 the TRACE benchmark's original authors report, through the `bm25s` package. It is kept
apart from our own BM25 channel on purpose: ours indexes chunks and max-pools them to documents, theirs indexes
whole documents, and a gap between the two is a finding to report, not something to tune away.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from tracerag.eval.datasets import Benchmark

__all__ = ["bm25s_run", "peer_tokens"]

_TOKEN = re.compile(r"\w\w+")


def peer_tokens(text: str) -> list[str]:
    """Lowercased, accent-stripped `\\w\\w+` tokens: no stemming, no stopwords, as the peer baseline does.

    Accents are stripped by NFKD decomposition and dropping combining marks, so "Genève" and an OCR'd "Geneve"
    are the same token; one-character tokens go, as in scikit-learn's default token pattern.
    """
    # Per whitespace-separated piece, cached: a `\w\w+` token never spans whitespace and NFKD never reorders
    # across it, so this equals normalising the whole text, and repeated words are normalised once.
    return [token for piece in text.split() for token in _piece_tokens(piece)]


@lru_cache(maxsize=1 << 20)
def _piece_tokens(piece: str) -> tuple[str, ...]:
    lowered = piece.lower()
    if not lowered.isascii():
        decomposed = unicodedata.normalize("NFKD", lowered)
        lowered = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return tuple(_TOKEN.findall(lowered))


def _document_text(title: str | None, text: str) -> str:
    return f"{title}\n{text}" if title else text


def bm25s_run(
    benchmark: Benchmark, query_ids: Sequence[str], depth: int = 100, k1: float = 1.5, b: float = 0.75
) -> dict[str, list[tuple[str, float]]]:
    """BM25 (bm25s, Lucene variant) over whole documents: `{qid: [(doc_id, score), ...]}`, best first.

    Document-level, not chunked: each Document is indexed once as its full text (title, then text, when it has a
    title), which is how the peer baseline was run; our own BM25 channel indexes chunks instead. Tokens come
    from `peer_tokens` for documents and queries alike. Documents that match no query token (score 0) are left
    out rather than ranked arbitrarily, so a query may return fewer than `depth` documents; ties are broken by
    doc id ascending so the run is deterministic. Scores are Python floats (bm25s computes in float32).
    """
    try:
        import bm25s
    except ImportError as error:  # pragma: no cover - bm25s is in the bench extra
        raise ImportError("the bm25s peer baseline needs bm25s: pip install 'tracerag[bench]'") from error
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    doc_ids = [doc.id for doc in benchmark.documents]
    if len(set(doc_ids)) != len(doc_ids):
        raise ValueError("the benchmark has repeated document ids")
    run: dict[str, list[tuple[str, float]]] = {qid: [] for qid in query_ids}
    if not doc_ids:
        return run
    id_rank = np.argsort(np.argsort(np.array(doc_ids, dtype=object)))  # position of each id in id order
    model = bm25s.BM25(k1=k1, b=b, method="lucene")
    model.index([peer_tokens(_document_text(d.title, d.text)) for d in benchmark.documents], show_progress=False)
    for qid in query_ids:
        # Unknown query tokens are dropped (bm25s would otherwise fail); repeated ones count again, as in bm25s.
        token_ids = model.get_tokens_ids(peer_tokens(benchmark.queries[qid].text))
        if not token_ids:
            continue
        scores = model.get_scores_from_ids(token_ids)
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > depth:
            # Keep every document scoring at least the depth-th best score, so ties at the cut go by id too.
            cut = np.partition(scores[candidates], len(candidates) - depth)[len(candidates) - depth]
            candidates = candidates[scores[candidates] >= cut]
        order = candidates[np.lexsort((id_rank[candidates], -scores[candidates]))][:depth]
        run[qid] = [(doc_ids[i], float(scores[i])) for i in order]
    return run
