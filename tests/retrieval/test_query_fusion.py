"""Fusion per query (`retrieval/query_fusion.py`): what a query shows moves its channels' weights, and the search
says so in its params, its `--json` and its trail."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.conftest import require_datasets
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.engine import FieldStats, TermStats
from tracerag.eval.datasets import xling_piaf
from tracerag.model import Hit
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.explain import fusion_summary
from tracerag.retrieval.query_fusion import DEFAULT_RULE, QueryEvidence, QueryRule, evidence, weigh

CALIBRATED = {"bm25": 1.0, "dense": 0.5, "phrase": 1.0}


def _ev(matched: float | None, known: float | None = 1.0, there: float | None = 0.3) -> QueryEvidence:
    return QueryEvidence(matched, known, "fr", ("fr",), there, ("fr",))


def test_a_query_bm25_barely_matches_is_carried_by_the_dense_channel() -> None:
    found = weigh(CALIBRATED, ["bm25", "dense", "phrase"], _ev(0.05, 0.3))
    assert found.weights["dense"] == pytest.approx(1.0)
    assert found.weights["bm25"] == pytest.approx(DEFAULT_RULE.floor)  # never 0: a matched name is still evidence
    assert found.weights["phrase"] == pytest.approx(DEFAULT_RULE.floor)
    assert found.base == CALIBRATED and "carries the query" in found.why and "knows 30%" in found.why


def test_a_query_bm25_matches_well_keeps_the_calibrated_weights() -> None:
    found = weigh(CALIBRATED, ["bm25", "dense"], _ev(0.3))
    assert found.weights == {"bm25": 1.0, "dense": 0.5}
    assert set(found.factors.values()) == {1.0}
    # past `sure`, the dense channel keeps less of its weight, and the why says so
    sure = weigh(CALIBRATED, ["bm25", "dense"], _ev(1.0))
    assert sure.weights["bm25"] == 1.0
    assert sure.weights["dense"] == pytest.approx(0.5 * (1 - DEFAULT_RULE.damp))
    assert "keeps 10% of its weight" in sure.why


def test_between_the_two_the_weights_move_in_proportion() -> None:
    rule = QueryRule(low=0.1, high=0.3, floor=0.5)
    found = weigh(CALIBRATED, ["bm25", "dense"], _ev(0.2), rule)  # trust 0.5
    assert found.weights["bm25"] == pytest.approx(0.75)
    assert found.weights["dense"] == pytest.approx(0.75)
    assert "trusted at 50%" in found.why


def test_a_sure_match_can_take_from_the_dense_channel() -> None:
    rule = QueryRule(low=0.1, high=0.3, floor=0.5, sure=0.8, damp=0.5)
    assert weigh(CALIBRATED, ["bm25", "dense"], _ev(0.8), rule).weights["dense"] == pytest.approx(0.5)
    assert weigh(CALIBRATED, ["bm25", "dense"], _ev(1.0), rule).weights["dense"] == pytest.approx(0.25)


def test_words_the_dense_documents_language_knows_keep_their_trust() -> None:
    """BM25 matching little of a query whose words the dense channel's documents' language holds is OCR noise or a
    loose question, not another language: the weights stay."""
    rule = QueryRule(known_low=0.6, known_high=0.9)
    assert weigh(CALIBRATED, ["bm25", "dense"], _ev(0.05, there=0.95), rule).weights == {"bm25": 1.0, "dense": 0.5}
    assert weigh(CALIBRATED, ["bm25", "dense"], _ev(0.05, there=0.4), rule).weights["dense"] == pytest.approx(1.0)


def test_nothing_moves_without_both_the_words_and_the_dense_channel() -> None:
    assert weigh(CALIBRATED, ["bm25", "phrase"], _ev(0.0)).weights == {"bm25": 1.0, "phrase": 1.0}
    assert weigh(CALIBRATED, ["dense"], _ev(0.0)).weights == {"dense": 0.5}
    assert weigh(CALIBRATED, ["bm25", "dense"], _ev(None)).weights == {"bm25": 1.0, "dense": 0.5}


def test_evidence_reads_the_merged_score_and_the_indexes_vocabulary() -> None:
    hits = {"bm25": [Hit("c1", "d1", "bm25", 1, 1.1), Hit("c2", "d2", "bm25", 2, 0.4)]}
    stats = {
        "fr": FieldStats(100, (TermStats("quand", 1, 20), TermStats("tour", 1, 3), TermStats("eiffel", 1, 2))),
        "en": FieldStats(50, (TermStats("when", 1, 0), TermStats("tower", 1, 0), TermStats("eiffel", 1, 1))),
    }
    ev = evidence(hits, stats, k1=1.2, candidate_indexes=["en", "en", "fr"])
    assert ev.matched == pytest.approx(0.5)  # 1.1 of BM25's ceiling k1 + 1 = 2.2
    assert (ev.known, ev.index, ev.indexes) == (1.0, "fr", ("en", "fr"))
    assert ev.known_there == pytest.approx((1 / 3 + 1 / 3 + 1) / 3)  # the words the dense documents' indexes know
    assert ev.candidate_indexes == ("en", "fr")
    assert evidence({}, None, 1.2).matched is None
    assert evidence({"bm25": []}, stats, 1.2).matched == 0.0


def test_english_questions_over_french_paragraphs_lean_on_the_dense_channel(tmp_path: Path) -> None:
    """Twelve English questions of xling-piaf over their gold paragraphs and 60 others: the search weighs the dense
    channel up and the words down for them, says why, and ranks the gold at least as well as fixed weights."""
    bench = xling_piaf(require_datasets("piaf"))
    questions = [q for q in sorted(bench.queries.values(), key=lambda q: q.id) if q.language == "en"][:12]
    gold = {q.id: next(iter(bench.qrels[q.id])) for q in questions}
    by_id = {d.id: d for d in bench.documents}
    docs = [by_id[d] for d in dict.fromkeys(gold.values())]
    docs += [d for d in bench.documents[:60] if d.id not in gold.values()]
    col = Collection.open(tmp_path / "c", load_settings(), mode="write", create=True)
    col.ingest(docs, dense=True)
    per_query = Retriever(col)
    fixed = Retriever(col, col.settings.retrieval.model_copy(update={"query_weights": False}))
    rr = {"per-query": 0.0, "fixed": 0.0}
    moved = 0
    for q in questions:
        ranking = per_query.search(SearchRequest(q.text, k=10))
        fusion = ranking.params["fusion"]
        if fusion["per_query"] is not None and set(fusion["per_query"]["factors"].values()) != {1.0}:
            moved += 1
            calibrated = fusion["per_query"]["calibrated"]
            assert fusion["weights"]["dense"] >= calibrated["dense"]
            assert all(w > 0 for w in fusion["weights"].values())
            assert "this query: BM25's best chunk holds" in fusion_summary(fusion)
        for name, found in (("per-query", ranking), ("fixed", fixed.search(SearchRequest(q.text, k=10)))):
            ids = found.doc_ids()
            rr[name] += 1 / (ids.index(gold[q.id]) + 1) if gold[q.id] in ids else 0.0
    assert moved >= 8  # most English questions match a French paragraph's words poorly
    # where the rule looked and moved nothing, the params say so too (never a silent None)
    french = per_query.search(SearchRequest(bench.queries[questions[0].id].metadata["source_text"], k=10))
    assert french.params["fusion"]["per_query"] is not None and french.params["fusion"]["per_query"]["why"]
    col.close()
    assert rr["per-query"] >= rr["fixed"] and math.isfinite(rr["per-query"])
