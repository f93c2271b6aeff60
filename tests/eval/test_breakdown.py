"""Per-group breakdowns on three hand-made queries whose metric values are obvious."""

from __future__ import annotations

import pytest

from tracerag.eval.breakdown import groups_of, metrics_by_group
from tracerag.eval.datasets import Benchmark, Query

QUERIES = {
    "q1": Query("q1", "a", "pers", "fr", {"subset": "impresso", "cer_bucket": "low", "window": [1880, 1890]}),
    "q2": Query("q2", "b", "loc", "fr", {"subset": "impresso", "cer_bucket": "high"}),
    "q3": Query("q3", "c", "pers", None, {"subset": "ajmc", "date": "1887"}),
}
BENCH = Benchmark("toy", "hand-made", [], QUERIES, {})
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
# q1: d1 at rank 1 -> R@1 = 1, MRR@10 = 1; q2: d2 at rank 2 -> R@1 = 0, MRR@10 = 1/2; q3: d3 absent -> 0, 0.
RUN = {"q1": [("d1", 2.0)], "q2": [("x", 3.0), ("d2", 1.0)], "q3": [("x", 1.0)]}


def test_groups_of_uses_type_language_and_string_metadata() -> None:
    groups = groups_of(BENCH, ["q3", "q2", "q1"])
    assert list(groups) == ["type", "language", "subset", "cer_bucket"]  # window is a list: no group
    assert groups["type"] == {"loc": ["q2"], "pers": ["q3", "q1"]}  # values sorted, ids in the order given
    assert groups["language"] == {"fr": ["q2", "q1"]}  # q3 has no language and is left out
    assert groups["subset"] == {"ajmc": ["q3"], "impresso": ["q2", "q1"]}
    assert groups["cer_bucket"] == {"high": ["q2"], "low": ["q1"]}
    assert groups_of(BENCH, ["q3"]) == {"type": {"pers": ["q3"]}, "subset": {"ajmc": ["q3"]}}


def test_metrics_by_group_means_and_counts() -> None:
    groups = groups_of(BENCH, ["q1", "q2", "q3"])
    table = metrics_by_group(QRELS, RUN, groups, ["R@1", "MRR@10"])
    # pers = q1, q3: R@1 (1 + 0) / 2 = 0.5, MRR (1 + 0) / 2 = 0.5; loc = q2: 0 and 0.5.
    assert table["type"]["pers"] == {"R@1": 0.5, "MRR@10": 0.5, "n": 2}
    assert table["type"]["loc"] == {"R@1": 0.0, "MRR@10": 0.5, "n": 1}
    # fr = q1, q2: R@1 (1 + 0) / 2 = 0.5, MRR (1 + 1/2) / 2 = 0.75.
    assert table["language"]["fr"] == {"R@1": 0.5, "MRR@10": pytest.approx(0.75), "n": 2}


def test_metrics_by_group_skips_unjudged_queries() -> None:
    groups = {"subset": {"a": ["q1", "q9"], "b": ["q9"]}}  # q9 has no judgments
    assert metrics_by_group(QRELS, RUN, groups, ["R@1"]) == {"subset": {"a": {"R@1": 1.0, "n": 1}}}
