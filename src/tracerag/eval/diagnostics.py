"""Diagnostics that explain a score rather than give one: do two channels find the same documents, does fusion
recover gold that no single channel ranks high, and which decades a retriever favours over the corpus.

Runs are `{qid: [(doc_id, score), ...]}` (or `{qid: {doc_id: score}}`); every function reads them in the order
`trec.rank_run` gives (score descending, ties by doc id), the order metrics see.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

from tracerag.eval.metrics import QrelsLike, RunLike
from tracerag.eval.trec import rank_run
from tracerag.model import Document
from tracerag.retrieval.window_share import auto_years, label
from tracerag.retrieval.windows import UNDATED  # one label for undated documents everywhere

__all__ = [
    "UNDATED",
    "decade_distribution",
    "decade_of",
    "document_years",
    "gold_recovery",
    "pool_overlap",
    "window_shares",
]


def _top(run: RunLike, qid: str, k: int) -> list[str]:
    return [doc for doc, _ in rank_run(run.get(qid, ()))[:k]]


def _check_k(k: int, name: str = "k") -> None:
    if k < 1:
        raise ValueError(f"{name} must be at least 1, got {k}")


def pool_overlap(run_a: RunLike, run_b: RunLike, depth: int = 20) -> float:
    """Mean Jaccard overlap |A ∩ B| / |A ∪ B| of the top-`depth` document sets, over queries in both runs.

    Low overlap between two channels is what makes fusing them worth it: channels that retrieve the same pool
    can only reorder it. A query where both rankings are empty counts as full agreement (1.0). Raises ValueError
    when the runs share no query, since a mean over nothing has no value.
    """
    _check_k(depth, "depth")
    shared = sorted(set(run_a) & set(run_b))
    if not shared:
        raise ValueError("the two runs share no query: no overlap to average")
    values = []
    for qid in shared:
        a, b = set(_top(run_a, qid, depth)), set(_top(run_b, qid, depth))
        union = a | b
        values.append(len(a & b) / len(union) if union else 1.0)
    return math.fsum(values) / len(values)


def gold_recovery(
    qrels: QrelsLike, fused_run: RunLike, channel_runs: Mapping[str, RunLike], k: int = 10
) -> dict[str, object]:
    """Where the gold documents of the top k come from: the fused run against its channels.

    Gold = each (query, document) pair judged relevant (grade >= 1), pooled over the judged queries, so a
    query with many relevant documents weighs more (a micro average: it counts documents, not queries).
    Returned keys:

    - `gold`: number of gold pairs; `fused`: share of them in the fused top k;
    - `channels`: `{name: share}` in each channel's top k; `best_channel`: the channel with the most gold in
      its top k (ties by name), `best_channel_share` its share; `union`: share in any channel's top k;
    - `fusion_only`: share in the fused top k and in no channel's top k (what fusion alone lifts into view);
    - `beyond_best`: share in the fused top k but not the best channel's (what fusion adds over picking one
      channel); `lost`: share in the best channel's top k that fusion pushes out of its top k.

    Raises ValueError when `qrels` has no relevant document or `channel_runs` is empty.
    """
    _check_k(k)
    if not channel_runs:
        raise ValueError("no channel run given")
    gold = sorted((qid, doc) for qid, judged in qrels.items() for doc, grade in judged.items() if grade > 0)
    if not gold:
        raise ValueError("the qrels judge no document relevant: no gold to recover")
    queries = sorted({qid for qid, _ in gold})
    fused = {(qid, doc) for qid in queries for doc in _top(fused_run, qid, k)}
    found = {name: {(qid, doc) for qid in queries for doc in _top(run, qid, k)} for name, run in channel_runs.items()}
    gold_set = set(gold)
    hits = {name: len(pairs & gold_set) for name, pairs in found.items()}
    best = min(hits, key=lambda name: (-hits[name], name))
    any_channel = set().union(*found.values())
    fused_gold = fused & gold_set
    n = len(gold)
    return {
        "gold": n,
        "fused": len(fused_gold) / n,
        "channels": {name: hits[name] / n for name in sorted(hits)},
        "best_channel": best,
        "best_channel_share": hits[best] / n,
        "union": len(any_channel & gold_set) / n,
        "fusion_only": len(fused_gold - any_channel) / n,
        "beyond_best": len(fused_gold - found[best]) / n,
        "lost": len((found[best] & gold_set) - fused) / n,
    }


def decade_of(year: int | None) -> str:
    """`1887` -> "1880s"; None -> "undated"."""
    return UNDATED if year is None else f"{year // 10 * 10}s"


def document_years(documents: Iterable[Document]) -> dict[str, int | None]:
    """`{doc_id: year}` from each Document's ISO date ("1887-05-17" -> 1887); no usable date -> None."""
    return {d.id: int(d.date[:4]) if d.date and d.date[:4].isdigit() else None for d in documents}


def _shares(counts: Counter[str]) -> dict[str, float]:
    total = sum(counts.values())
    order = sorted(counts, key=lambda key: (key == UNDATED, key))
    return {key: counts[key] / total for key in order} if total else {}


def decade_distribution(
    runs: Mapping[str, RunLike], doc_dates: Mapping[str, int | None], k: int = 10
) -> dict[str, dict[str, float]]:
    """`{name: {decade: share}}` of the documents in each run's top k, and the corpus's own under "corpus".

    Each (query, document) in a top k counts once, so a document retrieved for many queries weighs more, as it
    does for a reader. Comparing a run with "corpus" shows temporal bias: a retriever that favours well-OCR'd
    recent issues over-represents late decades. `doc_dates` must cover the whole corpus (the "corpus" row is
    built from it); a retrieved document it lacks counts as "undated". Decades are in order, "undated" last.
    """
    _check_k(k)
    if "corpus" in runs:
        raise ValueError('a run may not be named "corpus": that key is the corpus distribution')
    out: dict[str, dict[str, float]] = {}
    for name, run in runs.items():
        counts: Counter[str] = Counter()
        for qid in run:
            counts.update(decade_of(doc_dates.get(doc)) for doc in _top(run, qid, k))
        out[name] = _shares(counts)
    out["corpus"] = _shares(Counter(decade_of(year) for year in doc_dates.values()))
    return out


def window_shares(
    runs: Mapping[str, RunLike],
    qrels: QrelsLike,
    doc_dates: Mapping[str, int | None],
    k: int = 10,
    years: int | None = None,
) -> dict[str, object]:
    """Where each run's top k come from in time, against where the relevant documents are and the corpus is.

    Per time window (`retrieval/window_share.py`'s windows, `years` long or chosen from the corpus's years): each
    run's share of its (query, document) top-k pairs, the qrels' share of their relevant (query, document) pairs,
    and the corpus's share of documents; undated documents are the "undated" window on every side. A run above
    the qrels in one window is pulled there; below them, it misses what is there to find. Returned keys:
    `window` ("10y"), `chosen` (how), `windows` (in time order, undated last), `corpus`, `qrels` and `runs`
    (`{name: {window: share}}`). `doc_dates` must cover the corpus; a document it lacks counts as undated.
    """
    _check_k(k)
    chosen = f"{years}y given"
    if years is None:
        years, chosen = auto_years(y for y in doc_dates.values() if y is not None)

    def share(found: Iterable[int | None]) -> Counter[str]:
        return Counter(label(y, years) for y in found)

    corpus = share(doc_dates.values())
    relevant = share(doc_dates.get(doc) for judged in qrels.values() for doc, grade in judged.items() if grade > 0)
    per_run = {name: share(doc_dates.get(d) for qid in run for d in _top(run, qid, k)) for name, run in runs.items()}
    windows = sorted(
        set(corpus) | set(relevant) | {w for c in per_run.values() for w in c},
        key=lambda w: (w == UNDATED, 0 if w == UNDATED else int(w.split("-")[0])),
    )

    def in_order(counts: Counter[str]) -> dict[str, float]:
        total = sum(counts.values())
        return {w: counts[w] / total if total else 0.0 for w in windows}

    return {
        "window": f"{years}y",
        "chosen": chosen,
        "k": k,
        "windows": windows,
        "corpus": in_order(corpus),
        "qrels": in_order(relevant),
        "runs": {name: in_order(counts) for name, counts in per_run.items()},
    }
