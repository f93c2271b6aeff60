"""Retrieval metrics, computed by ir-measures (trec_eval's definitions), and paired significance tests.

Our metric names and what they mean (a document is relevant when its grade is 1 or more):

- `R@k`: recall at k, relevant documents in the top k / relevant documents judged for the query.
- `P@k`: precision at k, relevant documents in the top k / k.
- `MRR@k`: reciprocal rank of the first relevant document if it is in the top k, else 0 (`MRR`: no cutoff).
- `nDCG@k`: DCG / ideal DCG over the top k, gain = the grade itself (linear, as trec_eval), discount
  log2(rank + 1) (`nDCG`: no cutoff).
- `MAP`: average precision over the whole ranking (sum of precision at each relevant document retrieved /
  relevant documents judged), averaged over queries. `MAP@k` cuts the ranking at k.

Which queries count: exactly the queries of the qrels that have at least one judgment (even if all their
judgments are non-relevant; such a query scores 0 everywhere). Run queries without judgments are ignored.
A judged query that the run lacks, or ranks nothing for, scores 0 on every metric.

Rankings are ordered by score descending, ties by doc id ascending, as `trec.write_run` writes them; the
library is given that order, not the raw scores, because trec_eval itself breaks ties differently.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Literal

import ir_measures
import numpy as np

from tracerag.eval.trec import rank_run

__all__ = ["DEFAULT_METRICS", "compare", "evaluate", "library_measure", "paired_pvalue", "per_query"]

DEFAULT_METRICS: tuple[str, ...] = ("R@1", "R@5", "R@10", "R@100", "MRR@10", "nDCG@10", "MAP")

RunLike = Mapping[str, Sequence[tuple[str, float]] | Mapping[str, float]]
QrelsLike = Mapping[str, Mapping[str, int]]

_NAME = re.compile(r"^(R|P|MRR|nDCG|MAP)(?:@([1-9][0-9]*))?$")
_LIBRARY = {
    "R": ir_measures.R,
    "P": ir_measures.P,
    "MRR": ir_measures.RR,
    "nDCG": ir_measures.nDCG,
    "MAP": ir_measures.AP,
}


def library_measure(name: str) -> ir_measures.Measure:
    """The ir-measures measure behind one of our metric names, e.g. `MRR@10` -> `RR@10`, `MAP` -> `AP`."""
    match = _NAME.match(name)
    if match is None or (match[1] == "P" and match[2] is None):
        raise ValueError(f"unknown metric {name!r}: expected R@k, P@k, MRR, MRR@k, nDCG, nDCG@k, MAP or MAP@k")
    family, cutoff = match[1], match[2]
    measure = _LIBRARY[family]
    return measure if cutoff is None else measure @ int(cutoff)


def per_query(qrels: QrelsLike, run: RunLike, metrics: Sequence[str] = DEFAULT_METRICS) -> dict[str, dict[str, float]]:
    """`{qid: {metric: value}}` for every judged query of `qrels`, in sorted qid order (see the module doc).

    `run` maps a qid to `[(docid, score), ...]` or `{docid: score}`. A judged query missing from `run` gets 0
    for every metric; queries of `run` that `qrels` does not judge are left out.
    """
    names = _check_names(metrics)
    judged = sorted(qid for qid, judgments in qrels.items() if judgments)
    measures = {library_measure(name): name for name in names}
    scores: dict[str, dict[str, float]] = {qid: dict.fromkeys(names, 0.0) for qid in judged}
    library_qrels = [ir_measures.Qrel(qid, docid, int(grade)) for qid in judged for docid, grade in qrels[qid].items()]
    library_run = []
    for qid in judged:
        ranking = rank_run(run.get(qid, ()))
        # Strictly decreasing stand-in scores: the library must see our order, ties included.
        library_run += [
            ir_measures.ScoredDoc(qid, docid, float(len(ranking) - i)) for i, (docid, _) in enumerate(ranking)
        ]
    if library_qrels and library_run:
        for result in ir_measures.iter_calc(list(measures), library_qrels, library_run):
            if result.query_id in scores:
                scores[result.query_id][measures[result.measure]] = float(result.value)
    return scores


def evaluate(qrels: QrelsLike, run: RunLike, metrics: Sequence[str] = DEFAULT_METRICS) -> dict[str, float]:
    """Mean of each metric over the judged queries of `qrels`, keyed by the names given, in their order.

    Queries with no judgments are excluded; a judged query that `run` lacks counts as 0 (so a run that skips
    hard queries is not rewarded). Raises ValueError when `qrels` judges no query or a metric name is unknown.
    """
    names = _check_names(metrics)
    table = per_query(qrels, run, names)
    if not table:
        raise ValueError("the qrels judge no query: nothing to average")
    return {name: math.fsum(row[name] for row in table.values()) / len(table) for name in names}


def compare(
    qrels: QrelsLike,
    run_a: RunLike,
    run_b: RunLike,
    metric: str,
    test: Literal["paired-t", "bootstrap"] = "paired-t",
    seed: int = 0,
    n_resamples: int = 10_000,
) -> float:
    """Two-sided p-value that runs A and B differ on `metric`, paired over the judged queries of `qrels`.

    `paired-t`: scipy's `ttest_rel` (scipy comes with ir-measures' pytrec_eval-terrier); when all per-query
    differences are equal the t statistic is undefined, and the p-value is 1.0 if they are all 0, else 0.0.
    `bootstrap`: paired bootstrap of the mean difference with numpy (`n_resamples` resamples of the queries,
    differences shifted to mean 0 under the null hypothesis, `seed` for the random generator); the p-value is
    (1 + resamples at least as extreme as observed) / (1 + n_resamples), so identical runs give 1.0.
    """
    table_a = per_query(qrels, run_a, [metric])
    table_b = per_query(qrels, run_b, [metric])
    if not table_a:
        raise ValueError("the qrels judge no query: nothing to compare")
    a = np.array([table_a[qid][metric] for qid in table_a])
    b = np.array([table_b[qid][metric] for qid in table_a])
    return paired_pvalue(a, b, test, seed=seed, n_resamples=n_resamples)


def paired_pvalue(
    a: np.ndarray,
    b: np.ndarray,
    test: Literal["paired-t", "bootstrap"] = "paired-t",
    *,
    seed: int = 0,
    n_resamples: int = 10_000,
) -> float:
    """Two-sided p-value that paired scores `a` and `b` (one per query, same order) differ: `compare`'s tests on
    scores another harness computed (the graded answers, eval/answers.py)."""
    diff = b - a
    if test == "paired-t":
        if np.allclose(diff, diff[0], rtol=0.0, atol=1e-12):
            return 1.0 if abs(diff[0]) <= 1e-12 else 0.0
        try:
            from scipy.stats import ttest_rel
        except ImportError as error:  # pragma: no cover - scipy is a dependency of pytrec_eval-terrier
            raise ImportError("the paired t-test needs scipy; use test='bootstrap' instead") from error
        return float(ttest_rel(b, a).pvalue)
    if test == "bootstrap":
        return _paired_bootstrap(diff, seed=seed, n_resamples=n_resamples)
    raise ValueError(f"unknown test {test!r}: expected 'paired-t' or 'bootstrap'")


def _paired_bootstrap(diff: np.ndarray, *, seed: int, n_resamples: int) -> float:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    observed = abs(float(diff.mean()))
    centered = diff - diff.mean()
    n = len(diff)
    extreme = 0
    block = max(1, 1_000_000 // n)  # bounds memory at about 8 MB whatever the number of queries
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        means = centered[rng.integers(0, n, size=(size, n))].mean(axis=1)
        extreme += int(np.count_nonzero(np.abs(means) >= observed - 1e-12))
    return (1 + extreme) / (1 + n_resamples)


def _check_names(metrics: Sequence[str]) -> list[str]:
    if isinstance(metrics, str):
        metrics = [metrics]
    names = list(dict.fromkeys(metrics))
    if not names:
        raise ValueError("no metric asked for")
    for name in names:
        library_measure(name)
    return names
