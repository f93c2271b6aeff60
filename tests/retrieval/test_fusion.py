"""Fusion against rankings worked out by hand: the RRF primitive and its weights, CombSUM and CombMNZ over
normalised scores, max-pooling, tie-breaking and the choice of best chunk."""

from __future__ import annotations

import pytest

from tracerag.model import ChannelEvidence, Hit
from tracerag.retrieval.fusion import (
    RRF_K,
    Fused,
    Method,
    Normalisation,
    best_chunks,
    comb_mnz,
    comb_sum,
    fuse,
    fuse_scored,
    max_pool,
    merge_fields,
    normalise,
    rrf,
    rrf_documents,
)


def hits(channel: str, *chunk_ids: str) -> list[Hit]:
    """Hits in rank order; a chunk id is "DOC#N", its score decreases with the rank."""
    return [Hit(cid, cid.split("#")[0], channel, i + 1, 10.0 - i) for i, cid in enumerate(chunk_ids)]


def ev(channel: str, rank: int, doc: str, chunk: str | None = None) -> ChannelEvidence:
    return ChannelEvidence(channel, rank, 1.0, chunk or f"{doc}#0", doc)


# bm25 ranks chunks A#0, B#0, A#1, C#0; dense ranks A#1, C#0, D#0.
BM25 = hits("bm25", "A#0", "B#0", "A#1", "C#0")
DENSE = hits("dense", "A#1", "C#0", "D#0")


def test_rrf_k_is_60():
    assert RRF_K == 60


# -- the primitive and its siblings ------------------------------------------------------------------------
# Definitions: RRF, Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and individual
# rank learning methods", SIGIR 2009: score(d) = Σ_r 1 / (k + r(d)), k = 60. CombSUM and CombMNZ, Fox & Shaw,
# "Combination of multiple searches", TREC-2 (1994): CombSUM = Σ of the scores, CombMNZ = CombSUM × the number
# of non-zero (here: present) scores; over min-max normalised scores as Lee (SIGIR 1997) applied them.

A = ["x", "y", "z"]
B = ["y", "w"]
A_SCORED = [("x", 10.0), ("y", 6.0), ("z", 2.0)]  # min-max: x 1, y 0.5, z 0
B_SCORED = [("y", 0.9), ("w", 0.3)]  # min-max: y 1, w 0


def by_key(fused: list[Fused]) -> dict[str, Fused]:
    return {f.key: f for f in fused}


def test_rrf_primitive_by_hand():
    fused = rrf({"a": A, "b": B})
    assert [f.key for f in fused] == ["y", "x", "w", "z"]
    f = by_key(fused)
    assert f["y"].score == pytest.approx(1 / 62 + 1 / 61)  # 0.032522
    assert f["y"].contributions == {"a": pytest.approx(1 / 62), "b": pytest.approx(1 / 61)}
    assert f["x"].score == pytest.approx(1 / 61) and f["w"].score == pytest.approx(1 / 62)
    assert f["z"].score == pytest.approx(1 / 63)
    assert {key: v.best_rank for key, v in f.items()} == {"y": 1, "x": 1, "w": 2, "z": 3}
    for v in fused:  # the contributions are the score, split by ranking
        assert sum(v.contributions.values()) == v.score


def test_weighted_rrf_by_hand():
    fused = rrf({"a": A, "b": B}, weights={"a": 1.0, "b": 0.5})
    # y 1/62 + 0.5/61 = 0.024326; x 1/61 = 0.016393; z 1/63 = 0.015873; w 0.5/62 = 0.008065
    assert [(f.key, round(f.score, 6)) for f in fused] == [
        ("y", 0.024326),
        ("x", 0.016393),
        ("z", 0.015873),
        ("w", 0.008065),
    ]
    assert by_key(fused)["w"].contributions == {"b": pytest.approx(0.5 / 62)}


def test_rrf_with_all_weights_one_is_plain_rrf():
    assert rrf({"a": A, "b": B}, weights={"a": 1, "b": 1}) == rrf({"a": A, "b": B})


def test_comb_sum_over_min_max_by_hand():
    fused = comb_sum({"a": A_SCORED, "b": B_SCORED})
    # y 0.5 + 1 = 1.5, x 1, then w and z at 0: w was 2nd in b, z 3rd in a, so w first
    assert [(f.key, f.score) for f in fused] == [("y", 1.5), ("x", 1.0), ("w", 0.0), ("z", 0.0)]
    assert by_key(fused)["y"].contributions == {"a": 0.5, "b": 1.0}


def test_comb_mnz_over_min_max_by_hand():
    fused = comb_mnz({"a": A_SCORED, "b": B_SCORED})
    # y is in both rankings: 2 × 1.5 = 3; the others in one: unchanged
    assert [(f.key, f.score) for f in fused] == [("y", 3.0), ("x", 1.0), ("w", 0.0), ("z", 0.0)]
    assert by_key(fused)["y"].contributions == {"a": 1.0, "b": 2.0}


def test_weighted_comb_sum_tie_goes_to_the_better_single_rank_then_the_key():
    fused = comb_sum({"a": A_SCORED, "b": B_SCORED}, weights={"a": 2.0, "b": 1.0})
    # x 2 × 1 = 2; y 2 × 0.5 + 1 = 2: equal, both 1st somewhere, so by key
    assert [(f.key, f.score) for f in fused][:2] == [("x", 2.0), ("y", 2.0)]


def test_comb_sum_over_z_scores_by_hand():
    fused = comb_sum({"a": A_SCORED, "b": B_SCORED}, normalisation=Normalisation.ZSCORE)
    # a: mean 6, population std sqrt(32/3) = 3.26599 -> x 1.22474, y 0, z -1.22474; b: mean 0.6, std 0.3 -> y 1, w -1
    assert [(f.key, round(f.score, 5)) for f in fused] == [("x", 1.22474), ("y", 1.0), ("w", -1.0), ("z", -1.22474)]


def test_normalise_degenerate_rankings():
    assert normalise([5.0]) == [1.0]  # one hit, or all equal: each is the ranking's best
    assert normalise([2.0, 2.0], Normalisation.ZSCORE) == [0.0, 0.0]
    assert normalise([]) == []
    assert normalise([3.0, 1.0, 2.0]) == [1.0, 0.0, 0.5]


def test_fuse_scored_dispatches_and_rrf_reads_only_the_order():
    scored = {"a": A_SCORED, "b": B_SCORED}
    assert fuse_scored(Method.RRF, scored) == rrf({"a": A, "b": B})
    assert fuse_scored(Method.WRRF, scored, k=10, weights={"a": 1, "b": 3}) == rrf(
        {"a": A, "b": B}, 10, {"a": 1, "b": 3}
    )
    assert fuse_scored(Method.COMBSUM, scored) == comb_sum(scored)
    assert fuse_scored(Method.COMBMNZ, scored, normalisation=Normalisation.ZSCORE) == comb_mnz(
        scored, normalisation=Normalisation.ZSCORE
    )
    with pytest.raises(ValueError, match="wrrf"):
        fuse_scored(Method.RRF, scored, weights={"a": 1, "b": 1})


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: rrf({"a": ["x", "y", "x"]}), "more than once"),
        (lambda: rrf({"a": A, "b": B}, weights={"a": 1.0}), "no weight for ranking"),
        (lambda: rrf({"a": A}, weights={"a": -1.0}), "at least 0"),
        (lambda: rrf({"a": A}, k=0), "at least 1"),
        (lambda: comb_sum({"a": [("x", float("nan"))]}), "not finite"),
    ],
)
def test_fusion_refuses_bad_input_naming_it(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_rrf_of_nothing_is_nothing():
    assert rrf({}) == [] and rrf({"a": []}) == [] and comb_mnz({"a": []}) == []


def test_max_pool_keeps_each_documents_best_chunk_and_renumbers_ranks():
    pooled = max_pool(BM25)
    # A counts once (its best chunk A#0 at rank 1); C's chunk was 4th but C is the 3rd document.
    assert [(e.doc_id, e.rank, e.chunk_id, e.score) for e in pooled] == [
        ("A", 1, "A#0", 10.0),
        ("B", 2, "B#0", 9.0),
        ("C", 3, "C#0", 7.0),
    ]
    assert {e.channel for e in pooled} == {"bm25"}


def test_max_pool_orders_by_rank_not_by_input_order():
    shuffled = [BM25[2], BM25[3], BM25[0], BM25[1]]
    assert [(e.doc_id, e.rank, e.chunk_id) for e in max_pool(shuffled)] == [
        ("A", 1, "A#0"),
        ("B", 2, "B#0"),
        ("C", 3, "C#0"),
    ]


def test_max_pool_of_nothing_is_nothing():
    assert max_pool([]) == []


def test_rrf_scores_by_hand():
    fused = rrf_documents({"bm25": max_pool(BM25), "dense": max_pool(DENSE)})
    # document ranks: bm25 A1 B2 C3; dense A1 C2 D3
    expected = {
        "A": 1 / 61 + 1 / 61,  # 0.032787
        "C": 1 / 63 + 1 / 62,  # 0.032002
        "B": 1 / 62,  # 0.016129
        "D": 1 / 63,  # 0.015873
    }
    assert [d.doc_id for d in fused] == ["A", "C", "B", "D"]
    assert [d.rank for d in fused] == [1, 2, 3, 4]
    for d in fused:
        assert d.score == pytest.approx(expected[d.doc_id], abs=1e-12)
    channels = {d.doc_id: sorted((e.channel, e.rank) for e in d.channels) for d in fused}
    assert channels == {
        "A": [("bm25", 1), ("dense", 1)],
        "C": [("bm25", 3), ("dense", 2)],
        "B": [("bm25", 2)],
        "D": [("dense", 3)],
    }


def test_rrf_with_another_k():
    fused = rrf_documents({"bm25": [ev("bm25", 1, "X"), ev("bm25", 2, "Y")], "dense": [ev("dense", 1, "Y")]}, k=10)
    assert [d.doc_id for d in fused] == ["Y", "X"]
    assert fused[0].score == pytest.approx(1 / 12 + 1 / 11)
    assert fused[1].score == pytest.approx(1 / 11)


def test_rrf_equal_scores_and_equal_best_rank_fall_back_to_doc_id():
    # "Z" is 1st in bm25 and 3rd in dense, "M" the reverse: 1/61 + 1/63 each, best rank 1 each.
    channels = {
        "bm25": [ev("bm25", 1, "Z"), ev("bm25", 2, "F"), ev("bm25", 3, "M")],
        "dense": [ev("dense", 1, "M"), ev("dense", 2, "G"), ev("dense", 3, "Z")],
    }
    fused = rrf_documents(channels)
    assert fused[0].score == fused[1].score == 1 / 61 + 1 / 63
    # F and G: 1/62 each, best rank 2 each -> id order too
    assert [d.doc_id for d in fused] == ["M", "Z", "F", "G"]


def test_rrf_equal_scores_prefer_the_better_single_channel_rank():
    # With k=2: "z" 1st in bm25 only scores 1/3; "a" 4th in both channels scores 1/6 + 1/6 = 1/3 too.
    # "z" wins on its best single rank (1 < 4) although "a" sorts first by id. g1 (1st in dense) also
    # scores 1/3 with best rank 1, and precedes "z" by id.
    channels = {
        "bm25": [ev("bm25", 1, "z"), ev("bm25", 2, "f1"), ev("bm25", 3, "f2"), ev("bm25", 4, "a")],
        "dense": [ev("dense", 1, "g1"), ev("dense", 2, "g2"), ev("dense", 3, "g3"), ev("dense", 4, "a")],
    }
    fused = rrf_documents(channels, k=2)
    scores = {d.doc_id: d.score for d in fused}
    assert scores["z"] == scores["a"] == scores["g1"] == 1 / 3
    assert scores["f1"] == scores["g2"] == 1 / 4
    assert scores["f2"] == scores["g3"] == 1 / 5
    assert [d.doc_id for d in fused] == ["g1", "z", "a", "f1", "g2", "f2", "g3"]


def test_rrf_is_independent_of_channel_order():
    a = rrf_documents({"bm25": max_pool(BM25), "dense": max_pool(DENSE)})
    b = rrf_documents({"dense": max_pool(DENSE), "bm25": max_pool(BM25)})
    assert [(d.doc_id, d.score) for d in a] == [(d.doc_id, d.score) for d in b]


def test_best_chunks_by_hand():
    best = best_chunks({"bm25": BM25, "dense": DENSE})
    # A#0: 1/61 (bm25 1st); A#1: 1/63 (bm25 3rd) + 1/61 (dense 1st) -> A#1.
    # C#0: 1/64 + 1/62, the only chunk of C.
    assert best == {"A": "A#1", "B": "B#0", "C": "C#0", "D": "D#0"}


def test_best_chunks_tie_goes_to_the_smaller_chunk_id():
    # D#2 1st in bm25, D#1 1st in dense: 1/61 each.
    assert best_chunks({"bm25": hits("bm25", "D#2"), "dense": hits("dense", "D#1")}) == {"D": "D#1"}


def test_fuse_by_hand():
    fused = fuse({"bm25": BM25, "dense": DENSE})
    assert [(d.rank, d.doc_id) for d in fused] == [(1, "A"), (2, "C"), (3, "B"), (4, "D")]
    assert [d.score for d in fused] == pytest.approx([2 / 61, 1 / 63 + 1 / 62, 1 / 62, 1 / 63])
    assert {d.doc_id: d.best_chunk_id for d in fused} == {"A": "A#1", "C": "C#0", "B": "B#0", "D": "D#0"}


def test_fuse_best_chunk_is_not_the_first_channels_chunk():
    fused = {d.doc_id: d for d in fuse({"bm25": BM25, "dense": DENSE})}
    a = fused["A"]
    bm25_evidence = next(e for e in a.channels if e.channel == "bm25")
    assert bm25_evidence.chunk_id == "A#0"  # what bm25 alone would cite
    assert a.best_chunk_id == "A#1"  # 1/63 + 1/61 > 1/61
    # rrf alone keeps the first channel's chunk; fuse must replace it
    assert rrf_documents({"bm25": max_pool(BM25), "dense": max_pool(DENSE)})[0].best_chunk_id == "A#0"


def test_fuse_one_channel_is_that_channels_document_order():
    fused = fuse({"bm25": BM25})
    assert [d.doc_id for d in fused] == ["A", "B", "C"]
    assert [d.best_chunk_id for d in fused] == ["A#0", "B#0", "C#0"]


def test_fuse_of_no_hits_is_empty():
    assert fuse({"bm25": [], "dense": []}) == []


# -- a lexical channel's fields: merged here, by raw score (today's rule, issue 11 measures others) ----------


def test_merge_fields_by_hand():
    fr = [Hit("fr1#0", "fr1", "bm25", 1, 7.5), Hit("fr2#3", "fr2", "bm25", 2, 2.0)]
    de = [Hit("de1#0", "de1", "bm25", 1, 4.0), Hit("de2#0", "de2", "bm25", 2, 2.0), Hit("de3#1", "de3", "bm25", 3, 1.0)]
    merged = merge_fields({"fr": fr, "de": de}, k=10)
    # raw scores across fields, ties by chunk id, ranks renumbered 1..n, channel kept
    assert [(h.chunk_id, h.rank, h.score) for h in merged] == [
        ("fr1#0", 1, 7.5),
        ("de1#0", 2, 4.0),
        ("de2#0", 3, 2.0),
        ("fr2#3", 4, 2.0),
        ("de3#1", 5, 1.0),
    ]
    assert {h.channel for h in merged} == {"bm25"}
    assert [h.chunk_id for h in merge_fields({"fr": fr, "de": de}, k=2)] == ["fr1#0", "de1#0"]
    assert merge_fields({"de": de, "fr": fr}, k=10) == merged  # the order of the fields does not matter


def test_merge_fields_keeps_a_chunk_once_at_its_best_score():
    a = [Hit("x#0", "x", "phrase", 1, 3.0)]
    b = [Hit("y#0", "y", "phrase", 1, 4.0), Hit("x#0", "x", "phrase", 2, 5.0)]
    assert [(h.chunk_id, h.rank, h.score) for h in merge_fields({"a": a, "b": b}, k=10)] == [
        ("x#0", 1, 5.0),
        ("y#0", 2, 4.0),
    ]


def test_merge_fields_of_nothing_is_nothing():
    assert merge_fields({}, k=10) == []
    assert merge_fields({"fr": []}, k=10) == []
