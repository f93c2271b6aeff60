"""Per-group score breakdowns: a mean over all queries hides where a retriever wins and where it loses.

Groups come from what each Query records (its type, language and string-valued metadata such as the OCR
subset or CER bucket), so a breakdown needs no extra annotation and stays in step with the loaders.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from tracerag.eval.datasets import Benchmark
from tracerag.eval.metrics import DEFAULT_METRICS, QrelsLike, RunLike, per_query

__all__ = ["GROUP_METADATA_KEYS", "groups_of", "metrics_by_group"]

# Metadata keys that name a group; other keys (dates, counts, entity ids) are per-query, not groupings.
GROUP_METADATA_KEYS: tuple[str, ...] = ("subset", "cer_bucket", "window")

Groups = dict[str, dict[str, list[str]]]


def groups_of(benchmark: Benchmark, query_ids: Iterable[str]) -> Groups:
    """`{group: {value: [qid, ...]}}` for "type", "language" and each key of `GROUP_METADATA_KEYS`.

    Only string values count: a missing or None value leaves the query out of that group (an "unknown" bucket
    would mix unrelated queries), and non-string values (the dated HIPE variant's `window` is a year pair) are
    skipped rather than stringified. A group no query has a value for is absent. Values are in sorted order and
    each value's query ids keep the order of `query_ids`; ids the benchmark does not have raise KeyError.
    """
    buckets: dict[str, dict[str, list[str]]] = {}
    for qid in query_ids:
        query = benchmark.queries[qid]
        pairs = [("type", query.type), ("language", query.language)]
        pairs += [(key, query.metadata.get(key)) for key in GROUP_METADATA_KEYS]
        for group, value in pairs:
            if isinstance(value, str) and value:
                buckets.setdefault(group, {}).setdefault(value, []).append(qid)
    order = ["type", "language", *GROUP_METADATA_KEYS]
    return {group: dict(sorted(buckets[group].items())) for group in order if group in buckets}


def metrics_by_group(
    qrels: QrelsLike,
    run: RunLike,
    groups: Mapping[str, Mapping[str, Sequence[str]]],
    metrics: Sequence[str] = DEFAULT_METRICS,
) -> dict[str, dict[str, dict[str, float]]]:
    """`{group: {value: {metric: mean, ..., "n": queries}}}` from `metrics.per_query`.

    The queries counted are a value's query ids that `qrels` judges, the same rule as `evaluate`, so the
    per-group means of one group, weighted by "n", give back the overall mean over the queries it covers. A
    value with no judged query is left out (a mean over nothing would read as a score of 0).
    """
    table = per_query(qrels, run, metrics)
    names = list(dict.fromkeys([metrics] if isinstance(metrics, str) else metrics))
    out: dict[str, dict[str, dict[str, float]]] = {}
    for group, values in groups.items():
        rows: dict[str, dict[str, float]] = {}
        for value, qids in values.items():
            judged = [qid for qid in dict.fromkeys(qids) if qid in table]
            if not judged:
                continue
            row = {name: math.fsum(table[qid][name] for qid in judged) / len(judged) for name in names}
            row["n"] = len(judged)
            rows[value] = row
        out[group] = rows
    return out
