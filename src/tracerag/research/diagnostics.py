"""The judge's diagnostics, as HistoRAG reports them: does the judge agree with retrieval, and with another judge?

- Retrieval vs judge: Spearman's rho between where the run placed a candidate and the score the judge gave it
  (HistoRAG found rho = 0.275: retrieval similarity and relevance to the criteria are far apart). The run's rank
  stands for its similarity (rank 1 is the most similar; ranks are what every run has, scores are not
  comparable across channels), negated so that "more similar" and "higher score" point the same way.
- Judge vs judge: Spearman's rho between two models' scores on the same candidates (HistoRAG: r > 0.96).

Failed judgments have no score and take no part; `n` says how many pairs did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tracerag.research.judge import Judgment


@dataclass(frozen=True)
class Correlation:
    rho: float | None  # None: fewer than 3 pairs, or one side constant (no rank order to correlate)
    n: int
    what: str

    def to_dict(self) -> dict[str, object]:
        return {"what": self.what, "rho": self.rho, "n": self.n}


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks, ties sharing the mean of the ranks they span (as Spearman's rho needs)."""
    x = np.asarray(values, dtype=float)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    sorted_x = x[order]
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho with ties: Pearson's r of the average ranks. None when undefined (n < 3 or a constant)."""
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} values against {len(y)}")
    if len(x) < 3:
        return None
    rx, ry = average_ranks(x), average_ranks(y)
    dx, dy = rx - rx.mean(), ry - ry.mean()
    denominator = float(np.sqrt((dx * dx).sum() * (dy * dy).sum()))
    if denominator == 0.0:
        return None
    return float((dx * dy).sum() / denominator)


def retrieval_vs_judge(judgments: Sequence[Judgment]) -> Correlation:
    """Spearman between the run's order (negated rank) and the judge's score, over the scored candidates."""
    pairs = [(-float(j.rank), float(j.score)) for j in judgments if j.score is not None and j.rank is not None]
    rho = spearman([p[0] for p in pairs], [p[1] for p in pairs])
    return Correlation(rho, len(pairs), "retrieval rank vs judge score")


def judge_vs_judge(first: Sequence[Judgment], second: Sequence[Judgment]) -> Correlation:
    """Spearman between two judges' scores on the chunks both scored."""
    other = {j.chunk_id: j.score for j in second if j.score is not None}
    pairs = [(float(j.score), float(other[j.chunk_id])) for j in first if j.score is not None and j.chunk_id in other]
    rho = spearman([p[0] for p in pairs], [p[1] for p in pairs])
    models = f"{first[0].model if first else '?'} vs {second[0].model if second else '?'}"
    return Correlation(rho, len(pairs), f"judge scores, {models}")
