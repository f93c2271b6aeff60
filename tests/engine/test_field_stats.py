"""The term statistics Qdrant Edge gives (`field_stats`) are those its BM25 scores with: retrieval's IDF of them
(`retrieval.fields.idf`) is Edge's own, so a merge that rescales fields by them rescales what Edge computed."""

from __future__ import annotations

import pytest

from tracerag.engine import IndexedChunk
from tracerag.engine.qdrant_edge import QdrantEdgeEngine
from tracerag.retrieval.fields import idf

# One word a chunk: every chunk is as long as the field's average, so BM25 of a one-word query is its IDF alone,
# idf · (k1 + 1) · 1 / (1 + k1).
WORDS = {"en": ["storm", "storms", "calm", "calm", "calm"], "de": ["Sturm", "Ruhe"]}


@pytest.fixture(scope="module", params=[False, True], ids=["query_tf off", "query_tf on"])
def engine(request, tmp_path_factory):
    engine = QdrantEdgeEngine(tmp_path_factory.mktemp("stats") / "index", None, query_tf=request.param)
    engine.upsert(
        [
            IndexedChunk(f"{lang}{i}#0", f"{lang}{i}", word, "c", lang, None, None, {})
            for lang, words in WORDS.items()
            for i, word in enumerate(words)
        ],
        None,
    )
    yield engine
    engine.close()


def test_edge_scores_a_one_word_query_with_the_idf_of_its_statistics(engine):
    for query, field in (("storm", "en"), ("calm", "en"), ("Sturm", "de")):
        stats = engine.field_stats(query)[field]
        (term,) = stats.terms
        score = engine.bm25(query, 1)[field][0].score
        assert score == pytest.approx(idf(stats.chunks, term.chunks), rel=1e-5)


def test_statistics_count_stemmed_tokens_and_follow_query_tf(engine):
    stats = engine.field_stats("Storms storm calm")["en"]
    assert stats.chunks == 5
    counted = 2 if engine.query_tf else 1  # what bm25 counts: repeats only with query_tf
    assert [(t.term, t.counted, t.chunks) for t in stats.terms] == [("Storms", counted, 2), ("calm", 1, 3)]
    # the German field analyses the same words its own way, and holds none of them
    assert [(t.term, t.chunks) for t in engine.field_stats("Storms storm calm")["de"].terms][-1] == ("calm", 0)


def test_document_frequencies_are_the_exact_counts_on_a_shard_written_once(engine):
    """`_chunks_with` reads Edge's estimate (fast, from the posting list): on a shard written once it is exact."""
    from qdrant_edge import CountRequest, FieldCondition, Filter, MatchText

    for lang, words in WORDS.items():
        for word in [*words, "absent"]:
            field = f"text_{lang}"
            condition = Filter(must=[FieldCondition(field, match=MatchText(word))])
            exact = engine._shard.count(CountRequest(exact=True, filter=condition))
            assert engine._chunks_with(field, word) == exact, (field, word)
