"""Diagnostics on tiny hand-made runs; every expected value is worked out in the comments."""

from __future__ import annotations

import pytest

from tracerag.eval.diagnostics import (
    decade_distribution,
    decade_of,
    document_years,
    gold_recovery,
    pool_overlap,
)
from tracerag.model import Document


def test_pool_overlap_mean_jaccard_over_shared_queries() -> None:
    run_a = {"q1": [("a", 3.0), ("b", 2.0), ("c", 1.0)], "q2": [("x", 1.0)], "only_a": [("z", 1.0)]}
    run_b = {"q1": [("b", 5.0), ("c", 4.0), ("d", 3.0)], "q2": {"y": 1.0}}
    # depth 2: q1 A = {a, b}, B = {b, c} -> 1/3; q2 {x} vs {y} -> 0. Mean = 1/6. only_a is not shared.
    assert pool_overlap(run_a, run_b, depth=2) == pytest.approx(1 / 6)
    # depth 3: q1 {a, b, c} vs {b, c, d} -> 2/4; q2 0 -> mean 1/4.
    assert pool_overlap(run_a, run_b, depth=3) == pytest.approx(1 / 4)
    assert pool_overlap({"q": []}, {"q": []}) == 1.0
    with pytest.raises(ValueError):
        pool_overlap({"q1": []}, {"q2": []})


def test_gold_recovery_shares() -> None:
    qrels = {"q1": {"g1": 1, "g2": 1, "n": 0}, "q2": {"g3": 2}}  # 3 gold pairs; "n" is not gold
    bm25 = {"q1": [("g1", 2.0), ("x", 1.0)], "q2": [("x", 1.0), ("g3", 0.5)]}  # top 1: g1 -> 1 gold
    dense = {"q1": [("x", 2.0), ("g2", 1.0)], "q2": [("y", 1.0)]}  # top 1: nothing -> 0 gold
    fused = {"q1": [("g2", 3.0), ("g1", 1.0)], "q2": [("g3", 1.0)]}  # top 1: g2, g3 -> 2 gold
    out = gold_recovery(qrels, fused, {"dense": dense, "bm25": bm25}, k=1)
    assert out["gold"] == 3
    assert out["fused"] == pytest.approx(2 / 3)
    assert out["channels"] == {"bm25": pytest.approx(1 / 3), "dense": 0.0}
    assert out["best_channel"] == "bm25" and out["best_channel_share"] == pytest.approx(1 / 3)
    assert out["union"] == pytest.approx(1 / 3)  # only g1 is in some channel's top 1
    assert out["fusion_only"] == pytest.approx(2 / 3)  # g2 (dense rank 2) and g3 (bm25 rank 2)
    assert out["beyond_best"] == pytest.approx(2 / 3)  # g2, g3 not in bm25's top 1
    assert out["lost"] == pytest.approx(1 / 3)  # g1 is bm25's top 1 but fused rank 2
    # k = 2: every gold is in some channel's top 2 and in the fused top 2: nothing is fusion-only or lost.
    out2 = gold_recovery(qrels, fused, {"dense": dense, "bm25": bm25}, k=2)
    assert (out2["fused"], out2["fusion_only"], out2["lost"]) == (1.0, 0.0, 0.0)
    assert out2["best_channel"] == "bm25"  # 2 gold (g1, g3) against dense's 1 (g2)
    # A tie (both 0 gold) goes to the first name.
    assert gold_recovery(qrels, fused, {"b": {}, "a": {}}, k=1)["best_channel"] == "a"
    with pytest.raises(ValueError):
        gold_recovery({"q": {"d": 0}}, fused, {"bm25": bm25})


def test_decade_distribution_against_the_corpus() -> None:
    dates = {"a": 1881, "b": 1889, "c": 1902, "d": None, "e": 1910}
    runs = {
        "r": {"q1": [("a", 3.0), ("c", 2.0), ("e", 1.0)], "q2": [("b", 1.0), ("d", 1.0), ("zz", 0.5)]},
        "empty": {},
    }
    out = decade_distribution(runs, dates, k=2)
    # top 2: q1 a (1880s), c (1900s); q2 ties b, d by id -> b (1880s), d (undated). 4 documents in all.
    assert out["r"] == {"1880s": 0.5, "1900s": 0.25, "undated": 0.25}
    assert list(out["r"]) == ["1880s", "1900s", "undated"]
    assert out["empty"] == {}
    # corpus: 1880s a, b; 1900s c; 1910s e; undated d -> 2/5, 1/5, 1/5, 1/5.
    assert out["corpus"] == {"1880s": 0.4, "1900s": 0.2, "1910s": 0.2, "undated": 0.2}
    # a retrieved document missing from the dates counts as undated: q2's top 3 includes "zz".
    assert decade_distribution({"r": runs["r"]}, dates, k=3)["r"]["undated"] == pytest.approx(2 / 6)
    with pytest.raises(ValueError):
        decade_distribution({"corpus": {}}, dates)


def test_decades_and_document_years() -> None:
    assert (decade_of(1887), decade_of(1900), decade_of(None)) == ("1880s", "1900s", "undated")
    docs = [Document("a", "x", date="1887-05-17"), Document("b", "y"), Document("c", "z", date="18??")]
    assert document_years(docs) == {"a": 1887, "b": None, "c": None}
