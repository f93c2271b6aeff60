"""Joining a lexical channel's per-language rankings: raw BM25 scores of two language indexes are on two scales,
and `query_idf` puts them on one (each field's scores over the query's IDF mass in that field).

The fixture is the failure measured on ocr-known-item, made small: an English passage repeating "the" is scored
in the French index too, where "the" is rare, so a French chunk that holds "the" outscores the English passage's
own chunk by raw score once BM25 counts the repeats."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tracerag.engine import FieldStats, IndexedChunk, TermStats
from tracerag.engine.embedded import EmbeddedEngine
from tracerag.model import Hit
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.channels import Bm25Channel
from tracerag.retrieval.fields import FieldMerge, idf, merge, query_idf_mass
from tracerag.retrieval.fusion import FIELD_MERGE, merge_fields

ENGLISH = [
    "The keeper of the lighthouse saw the storm over the bay.",
    "A storm broke over the harbour and the boats came in.",  # the passage the query is cut from
    "The mayor spoke to the council about the new bridge.",
    "Fishermen mended their nets on the quay.",
    "The price of bread rose again this winter.",
]
FRENCH = [
    "Le gardien du phare a vu la tempête sur la baie.",
    "On a joué the Messiah et the Creation au théâtre: the best.",  # English words in a French text
    "Le maire a parlé au conseil du nouveau pont.",
    "Les pêcheurs ont réparé leurs filets sur le quai.",
    "La séance du conseil municipal a duré trois heures.",
    "Le prix du pain a encore augmenté cet hiver.",
    "Une foule nombreuse assistait à la fête du village.",
    "Le train de Lyon est arrivé avec une heure de retard.",
    "Les vendanges ont commencé dans les coteaux.",
    "Un incendie a détruit une grange près de la rivière.",
]
PASSAGE = "the storm broke over the harbour and the boats"  # "the" three times
GOLD, INTRUDER = "en1#0", "fr1#0"


def _chunks() -> list[IndexedChunk]:
    return [
        IndexedChunk(f"{lang}{i}#0", f"{lang}{i}", text, "news", lang, None, None, {})
        for lang, texts in (("en", ENGLISH), ("fr", FRENCH))
        for i, text in enumerate(texts)
    ]


@pytest.fixture(scope="module", params=[False, True], ids=["query_tf off", "query_tf on"])
def channel(request, tmp_path_factory) -> Bm25Channel:
    engine = EmbeddedEngine(tmp_path_factory.mktemp("fields") / "index", None, query_tf=request.param, writer=True)
    engine.upsert(_chunks(), None)
    return Bm25Channel(engine)


def _order(channel: Bm25Channel, how: FieldMerge) -> list[str]:
    fields = channel.run_fields(PASSAGE, 10, None)
    return [h.chunk_id for h in merge(fields, 10, how, channel.field_stats(PASSAGE))]


def test_raw_scores_let_a_repeated_word_of_another_language_win(channel):
    fields = channel.run_fields(PASSAGE, 10, None)
    assert {h.chunk_id for h in fields["fr"]} == {INTRUDER}  # "the" is the only word the French index knows
    order = _order(channel, FieldMerge.MAX_RAW_SCORE)
    if channel.engine.query_tf:  # "the" counted three times at its French IDF
        assert order[:2] == [INTRUDER, GOLD]
    else:
        assert order[:2] == [GOLD, INTRUDER]


def test_query_idf_ranks_the_passage_first_whether_repeats_count_or_not(channel):
    fields = channel.run_fields(PASSAGE, 10, None)
    merged = merge(fields, 10, FieldMerge.QUERY_IDF, channel.field_stats(PASSAGE))
    scores = {h.chunk_id: h.score for h in merged}
    assert merged[0].chunk_id == GOLD
    # the French chunk matched one word of the eight ("the", thrice): well under half the passage's share
    assert scores[INTRUDER] < scores[GOLD] / 2


def test_query_idf_scores_are_raw_scores_over_the_field_s_query_idf_mass(channel):
    fields = channel.run_fields(PASSAGE, 10, None)
    stats = channel.engine.field_stats(PASSAGE)
    merged = {h.chunk_id: h.score for h in merge(fields, 10, FieldMerge.QUERY_IDF, lambda: stats)}
    for field, hits in fields.items():
        for hit in hits:
            assert merged[hit.chunk_id] == pytest.approx(hit.score / query_idf_mass(stats[field]))
    # a score over the mass is a share of the best attainable, (k1 + 1) × mass: at most k1 + 1
    assert max(merged.values()) < 1.2 + 1


def test_query_idf_mass_by_hand():
    stats = FieldStats(10, (TermStats("the", 3, 1), TermStats("storm", 1, 0)))
    expected = 3 * math.log(1 + 9.5 / 1.5) + math.log(1 + 10.5 / 0.5)
    assert query_idf_mass(stats) == pytest.approx(expected)
    assert idf(10, 0) > idf(10, 1) > idf(10, 10) > 0  # a word no chunk holds weighs the most


def _hits(field: str, scores: list[float]) -> list[Hit]:
    return [Hit(f"{field}{i}#0", f"{field}{i}", "bm25", i + 1, s) for i, s in enumerate(scores)]


def test_a_field_found_alone_is_rescaled_too_so_a_score_does_not_depend_on_the_other_fields():
    fr = _hits("fr", [3.0, 1.0])
    stats = {"fr": FieldStats(100, (TermStats("a", 2, 0),)), "de": FieldStats(1, (TermStats("a", 2, 1),))}
    alone = merge({"fr": fr, "de": []}, 10, FieldMerge.QUERY_IDF, lambda: stats)
    mass = 2 * math.log(1 + 100.5 / 0.5)
    assert [(h.chunk_id, h.rank, h.score) for h in alone] == [("fr0#0", 1, 3.0 / mass), ("fr1#0", 2, 1.0 / mass)]
    with_de = merge({"fr": fr, "de": _hits("de", [9.0])}, 10, FieldMerge.QUERY_IDF, lambda: stats)
    assert [h.score for h in with_de if h.doc_id.startswith("fr")] == [h.score for h in alone]


def test_nothing_found_asks_for_no_statistics():
    def never() -> dict[str, FieldStats]:
        raise AssertionError("statistics asked for with nothing to merge")

    assert merge({}, 10, FieldMerge.QUERY_IDF, never) == []
    assert merge({"fr": []}, 10, FieldMerge.QUERY_IDF, never) == []


def test_max_raw_score_never_asks_for_statistics_and_merge_fields_defaults_to_it():
    fields = {"fr": _hits("fr", [3.0, 1.0]), "de": _hits("de", [2.0])}
    raw = merge(fields, 10, FieldMerge.MAX_RAW_SCORE, None)
    assert [h.chunk_id for h in raw] == ["fr0#0", "de0#0", "fr1#0"]
    assert merge_fields(fields, 10) == raw
    assert merge_fields(fields, 10, "max_raw_score") == raw


def test_query_idf_rescales_each_field_by_hand():
    fields = {"fr": _hits("fr", [3.0, 1.0]), "de": _hits("de", [2.0])}
    stats = {
        "fr": FieldStats(100, (TermStats("a", 1, 0),)),  # mass ln(1 + 100.5 / 0.5) ≈ 5.31
        "de": FieldStats(100, (TermStats("a", 1, 99),)),  # mass ln(1 + 1.5 / 99.5) ≈ 0.015
    }
    merged = merge_fields(fields, 2, "query_idf", lambda: stats)
    assert [h.chunk_id for h in merged] == ["de0#0", "fr0#0"]  # cut at k = 2, ranks renumbered
    assert [h.rank for h in merged] == [1, 2]
    assert merged[1].score == pytest.approx(3.0 / math.log(1 + 100.5 / 0.5))


def test_query_idf_without_the_statistics_it_needs_is_refused():
    fields = {"fr": _hits("fr", [3.0]), "de": _hits("de", [2.0])}
    with pytest.raises(ValueError, match="needs the query's term statistics"):
        merge(fields, 10, FieldMerge.QUERY_IDF, None)
    with pytest.raises(ValueError, match=r"no term statistics for field\(s\) \['de'\]"):
        merge(fields, 10, FieldMerge.QUERY_IDF, lambda: {"fr": FieldStats(1, ())})
    with pytest.raises(ValueError, match="is not a valid FieldMerge"):
        merge_fields(fields, 10, "max_score")


# -- the setting, on real data (all of HIPE-2022: fr, de and en fields) ----------------------------------------


def test_the_search_merges_by_the_setting_and_names_it(hipe_collection):
    col = hipe_collection.collection
    query = "Paris London Berlin"
    for how in FieldMerge:
        retriever = Retriever(col)
        retriever.settings = retriever.settings.model_copy(update={"field_merge": str(how)})
        ranking = retriever.search(SearchRequest(query, k=10, channels=("bm25",)))
        fields = ranking.field_hits["bm25"]
        assert {"fr", "de", "en"} <= set(fields)
        assert ranking.params["field_merge"] == how
        stats = Bm25Channel(col.engine).field_stats(query)
        assert ranking.channel_hits["bm25"] == merge_fields(fields, ranking.params["depth"], how, stats)


def test_query_idf_changes_which_language_wins_on_real_data(hipe_collection):
    """The two merges really differ on a query of names spread over three languages' indexes."""
    col = hipe_collection.collection
    channel = Bm25Channel(col.engine)
    fields = channel.run_fields("Paris London Berlin", 100, None)
    raw = [h.chunk_id for h in merge(fields, 20, FieldMerge.MAX_RAW_SCORE)]
    rescaled = [h.chunk_id for h in merge(fields, 20, FieldMerge.QUERY_IDF, channel.field_stats("Paris London Berlin"))]
    assert raw != rescaled and set(raw) & set(rescaled)


def test_the_default_merge_is_query_idf_with_repeats_counted():
    from tracerag.config import RetrievalSettings

    defaults = RetrievalSettings()
    assert defaults.field_merge == FIELD_MERGE == FieldMerge.QUERY_IDF
    assert defaults.query_tf is True  # counting repeats pays once fields share a scale (benchmarks/field_merge.py)


def test_settings_refuse_an_unknown_merge(tmp_path: Path):
    from tracerag.config import load_settings
    from tracerag.errors import ConfigError

    (tmp_path / "s.toml").write_text('[retrieval]\nfield_merge = "rrf"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="retrieval.field_merge"):
        load_settings(tmp_path / "s.toml")


def test_hipe_entities_bm25_floor_with_query_idf(hipe_collection, datasets_dir):
    """Quality floor of the default merge: hipe-entities' bm25 run on the session collection (all of HIPE-2022,
    the benchmark's documents; fr, de and en fields), 300 queries sampled with seed 0, repeats counted. Measured
    2026-12-01 (index version 4), each floor a little under."""
    from tracerag.eval.datasets import hipe_entities
    from tracerag.eval.metrics import evaluate
    from tracerag.eval.runner import select_queries, strictly_decreasing

    col = hipe_collection.collection
    assert col.settings.retrieval.query_tf  # the session collection's engine counts repeats (the default)
    bench = hipe_entities(datasets_dir)
    queries = select_queries(bench, sample=300, seed=0)
    found = {}
    for how in FieldMerge:
        retriever = Retriever(col)
        retriever.settings = retriever.settings.model_copy(update={"field_merge": str(how)})
        run = {}
        for qid in queries:
            ranking = retriever.search(SearchRequest(bench.queries[qid].text, k=100, channels=("bm25",), windows=""))
            run[qid] = strictly_decreasing((d.doc_id, d.channels[0].score) for d in ranking.documents)
        found[how] = evaluate({q: bench.qrels[q] for q in queries}, run, ["nDCG@10", "R@10"])
    assert found[FieldMerge.QUERY_IDF]["nDCG@10"] >= 0.68  # measured 0.6913
    assert found[FieldMerge.QUERY_IDF]["R@10"] >= 0.685  # measured 0.6967
    # against the raw-score merge on the same collection (measured 0.6823 / 0.6923): +0.0090 nDCG@10
    assert found[FieldMerge.QUERY_IDF]["nDCG@10"] >= found[FieldMerge.MAX_RAW_SCORE]["nDCG@10"] + 0.005
    assert found[FieldMerge.QUERY_IDF]["R@10"] >= found[FieldMerge.MAX_RAW_SCORE]["R@10"]
