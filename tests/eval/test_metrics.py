"""Metrics against values worked out by hand on tests/fixtures/eval (qrels.txt, run_a.txt)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tracerag.eval.metrics import DEFAULT_METRICS, compare, evaluate, library_measure, per_query
from tracerag.eval.trec import read_qrels, read_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eval"
LOG2_3 = math.log2(3)

# q1: relevant d1 (grade 1) and d3 (grade 2), d5 judged non-relevant; ranking d2, d1, d3.
#   R@1 = 0/2 = 0; R@5 = R@10 = R@100 = 2/2 = 1; MRR@10 = 1/2 (first relevant at rank 2)
#   AP = (P@2 + P@3) / 2 = (1/2 + 2/3) / 2 = 7/12
#   DCG@10 = 0/log2(2) + 1/log2(3) + 2/log2(4) = 1/log2(3) + 1
#   IDCG@10 (ideal order d3, d1) = 2/log2(2) + 1/log2(3) = 2 + 1/log2(3)
Q1 = {
    "R@1": 0.0,
    "R@5": 1.0,
    "R@10": 1.0,
    "R@100": 1.0,
    "MRR@10": 1 / 2,
    "nDCG@10": (1 / LOG2_3 + 1) / (2 + 1 / LOG2_3),
    "MAP": (1 / 2 + 2 / 3) / 2,
}
# q2: relevant d4; d5 and d4 tie at score 1.0 (the file ranks d5 first), ties go by doc id, so d4, d5, d6.
#   (trec_eval alone would put d5 first and give R@1 = 0.) Relevant at rank 1: every metric is 1.
Q2 = dict.fromkeys(DEFAULT_METRICS, 1.0)
# q3: relevant x07 and x12 (grade 1 each); ranking x01 .. x12, so they sit at ranks 7 and 12.
#   R@1 = R@5 = 0; R@10 = 1/2; R@100 = 2/2 = 1; MRR@10 = 1/7
#   AP = (P@7 + P@12) / 2 = (1/7 + 2/12) / 2 = 13/84
#   DCG@10 = 1/log2(7 + 1) = 1/3; IDCG@10 = 1/log2(2) + 1/log2(3) = 1 + 1/log2(3)
Q3 = {
    "R@1": 0.0,
    "R@5": 0.0,
    "R@10": 1 / 2,
    "R@100": 1.0,
    "MRR@10": 1 / 7,
    "nDCG@10": (1 / 3) / (1 + 1 / LOG2_3),
    "MAP": (1 / 7 + 2 / 12) / 2,
}
# q4: judged (d1 relevant) but absent from the run: 0 everywhere.
Q4 = dict.fromkeys(DEFAULT_METRICS, 0.0)
# q9: in the run, not in the qrels: ignored.


@pytest.fixture(scope="module")
def qrels() -> dict[str, dict[str, int]]:
    return read_qrels(FIXTURES / "qrels.txt")


@pytest.fixture(scope="module")
def run() -> dict[str, list[tuple[str, float]]]:
    return read_run(FIXTURES / "run_a.txt")


def test_hand_arithmetic_matches_closed_forms() -> None:
    assert Q1["MAP"] == pytest.approx(7 / 12)
    assert Q3["MAP"] == pytest.approx(13 / 84)


def test_per_query_every_metric(qrels, run) -> None:
    table = per_query(qrels, run)
    assert list(table) == ["q1", "q2", "q3", "q4"]  # q9 has no judgments
    for qid, expected in {"q1": Q1, "q2": Q2, "q3": Q3, "q4": Q4}.items():
        assert list(table[qid]) == list(DEFAULT_METRICS)
        for metric, value in expected.items():
            assert table[qid][metric] == pytest.approx(value, abs=1e-12), (qid, metric)


def test_evaluate_means_over_judged_queries(qrels, run) -> None:
    result = evaluate(qrels, run)
    assert list(result) == list(DEFAULT_METRICS)
    for metric in DEFAULT_METRICS:
        # Four judged queries; q4 (absent from the run) contributes 0, q9 (unjudged) nothing.
        expected = (Q1[metric] + Q2[metric] + Q3[metric] + Q4[metric]) / 4
        assert result[metric] == pytest.approx(expected, abs=1e-12), metric
    # Spelled out for two of them: R@10 = (1 + 1 + 1/2 + 0) / 4, MAP = (7/12 + 1 + 13/84 + 0) / 4.
    assert result["R@10"] == pytest.approx(2.5 / 4)
    assert result["MAP"] == pytest.approx((7 / 12 + 1 + 13 / 84) / 4)


def test_absent_query_counts_zero(qrels, run) -> None:
    without_q2 = {qid: ranking for qid, ranking in run.items() if qid != "q2"}
    full, partial = evaluate(qrels, run), evaluate(qrels, without_q2)
    for metric in DEFAULT_METRICS:
        assert partial[metric] == pytest.approx(full[metric] - Q2[metric] / 4)
    assert evaluate(qrels, {}) == dict.fromkeys(DEFAULT_METRICS, 0.0)
    assert evaluate(qrels, {"q2": []})["MAP"] == 0.0


def test_unjudged_queries_are_excluded() -> None:
    qrels = {"q1": {"d1": 1}, "q2": {}}  # q2 has no judgments
    run = {"q1": [("d1", 1.0)], "q2": [("d1", 1.0)], "q3": [("d1", 1.0)]}
    assert per_query(qrels, run, ["R@1"]) == {"q1": {"R@1": 1.0}}
    assert evaluate(qrels, run, ["R@1"]) == {"R@1": 1.0}


def test_run_as_mapping_and_other_names(qrels) -> None:
    run = {"q1": {"d3": 0.9, "d1": 0.8}}  # q1 perfect: both relevant at ranks 1 and 2
    result = per_query(qrels, run, ["P@2", "MRR", "nDCG", "MAP@1"])["q1"]
    assert result["P@2"] == 1.0
    assert result["MRR"] == 1.0
    assert result["nDCG"] == pytest.approx(1.0)
    assert result["MAP@1"] == pytest.approx(1 / 2)  # only P@1 = 1 counted, divided by 2 relevant


def test_metric_names() -> None:
    assert str(library_measure("MRR@10")) == "RR@10"
    assert str(library_measure("MAP")) == "AP"
    assert str(library_measure("R@100")) == "R@100"
    for bad in ("mrr@10", "R@0", "NDCG@10", "P", "ERR@20"):
        with pytest.raises(ValueError, match="unknown metric"):
            evaluate({"q1": {"d1": 1}}, {}, [bad])
    with pytest.raises(ValueError, match="judge no query"):
        evaluate({}, {})


def _toy_runs() -> tuple[dict, dict, dict]:
    """20 queries, one relevant doc each; run B ranks it first, run A at rank 2 to 6 (so A is worse everywhere)."""
    qrels, run_a, run_b = {}, {}, {}
    for i in range(20):
        qid = f"t{i:02d}"
        qrels[qid] = {"rel": 1}
        others = [f"n{j}" for j in range(9)]
        rank_a = 2 + i % 5
        order_a = others[: rank_a - 1] + ["rel"] + others[rank_a - 1 :]
        run_a[qid] = [(doc, float(10 - k)) for k, doc in enumerate(order_a)]
        run_b[qid] = [(doc, float(10 - k)) for k, doc in enumerate(["rel", *others])]
    return qrels, run_a, run_b


@pytest.mark.parametrize("test", ["paired-t", "bootstrap"])
def test_compare_better_on_every_query(test) -> None:
    qrels, run_a, run_b = _toy_runs()
    # MRR@10: B = 1 on all 20 queries, A = 1/2 .. 1/6, so every difference is positive.
    assert compare(qrels, run_a, run_b, "MRR@10", test=test, seed=1) < 0.05
    assert compare(qrels, run_b, run_a, "MRR@10", test=test, seed=1) < 0.05  # two-sided


@pytest.mark.parametrize("test", ["paired-t", "bootstrap"])
def test_compare_identical_runs(test) -> None:
    qrels, run_a, _ = _toy_runs()
    assert compare(qrels, run_a, run_a, "MRR@10", test=test, seed=1) > 0.5


def test_compare_bootstrap_is_seeded() -> None:
    qrels, run_a, run_b = _toy_runs()
    run_b = dict(run_b, t00=run_a["t00"], t01=[("n0", 2.0), ("rel", 1.0)])  # mixed: some ties, one loss
    p1 = compare(qrels, run_a, run_b, "nDCG@10", test="bootstrap", seed=7, n_resamples=2000)
    p2 = compare(qrels, run_a, run_b, "nDCG@10", test="bootstrap", seed=7, n_resamples=2000)
    assert p1 == p2
    assert 0 < p1 <= 1


def test_compare_rejects_unknown_test() -> None:
    qrels, run_a, run_b = _toy_runs()
    with pytest.raises(ValueError, match="unknown test"):
        compare(qrels, run_a, run_b, "MAP", test="wilcoxon")  # type: ignore[arg-type]
