"""The term statistics the embedded engine gives (`field_stats`) are those its BM25 scores with: retrieval's IDF of
them (`retrieval.fields.idf`) is tantivy's own, so a merge that rescales fields by them rescales what tantivy
computed. That must hold after chunks are replaced or deleted too: tantivy keeps a deleted chunk in its segment
(and in its statistics) until a merge drops it."""

from __future__ import annotations

import pytest
import tantivy

from tracerag.engine import IndexedChunk
from tracerag.engine.embedded import EmbeddedEngine
from tracerag.engine.text_index import SCHEMA, LanguageIndex, query_terms
from tracerag.retrieval.fields import idf

# One word a chunk: every chunk is as long as the field's average, so BM25 of a one-word query is its IDF alone,
# idf · (k1 + 1) · 1 / (1 + k1).
WORDS = {"en": ["storm", "storms", "calm", "calm", "calm"], "de": ["Sturm", "Ruhe"]}
QUERIES = (("storm", "en"), ("calm", "en"), ("Sturm", "de"))


def _chunks(words: dict[str, list[str]] = WORDS) -> list[IndexedChunk]:
    return [
        IndexedChunk(f"{lang}{i}#0", f"{lang}{i}", word, "c", lang, None, None, {})
        for lang, ws in words.items()
        for i, word in enumerate(ws)
    ]


@pytest.fixture(scope="module", params=[False, True], ids=["query_tf off", "query_tf on"])
def engine(request, tmp_path_factory):
    engine = EmbeddedEngine(tmp_path_factory.mktemp("stats") / "index", None, query_tf=request.param, writer=True)
    engine.upsert(_chunks(), None)
    yield engine
    engine.close()


def _score_is_idf_of_stats(engine: EmbeddedEngine, query: str, field: str) -> tuple[float, float]:
    stats = engine.field_stats(query)[field]
    (term,) = stats.terms
    return engine.bm25(query, 1)[field][0].score, idf(stats.chunks, term.chunks)


def test_the_engine_scores_a_one_word_query_with_the_idf_of_its_statistics(engine):
    for query, field in QUERIES:
        score, expected = _score_is_idf_of_stats(engine, query, field)
        assert score == pytest.approx(expected, rel=1e-5), query


def test_statistics_count_stemmed_tokens_and_follow_query_tf(engine):
    stats = engine.field_stats("Storms storm calm")["en"]
    assert stats.chunks == 5
    counted = 2 if engine.query_tf else 1  # what bm25 counts: repeats only with query_tf
    assert [(t.term, t.counted, t.chunks) for t in stats.terms] == [("Storms", counted, 2), ("calm", 1, 3)]
    # the German field analyses the same words its own way, and holds none of them
    assert [(t.term, t.chunks) for t in engine.field_stats("Storms storm calm")["de"].terms][-1] == ("calm", 0)


def _exact(index: LanguageIndex, token: str) -> int:
    """How many live chunks of `index` hold `token`, counted by a search (tantivy skips deleted chunks there)."""
    query = tantivy.Query.term_query(SCHEMA, "text", token)
    return int(index.searcher().search(query, 1, count=True).count)


def _doc_freqs_are_exact(engine: EmbeddedEngine, words: dict[str, list[str]]) -> None:
    for index in engine._readable():
        for word in [*words[index.language], "absent"]:
            (token, _, _), *_ = query_terms(word, index.language)
            assert index.doc_freq(token) == _exact(index, token), (index.language, word)


@pytest.mark.parametrize("change", ["replace", "delete"])
def test_statistics_stay_those_bm25_scores_with_after_chunks_change(tmp_path, change):
    """A re-ingested document replaces its chunks (tantivy deletes the old ones, which stay in their segment until
    a merge), a removed one is deleted: `field_stats` must still give the N and document frequencies the BM25
    scores were computed with, or `query_idf` rescales a field by statistics it did not score with."""
    engine = EmbeddedEngine(tmp_path / "index", None, writer=True)
    try:
        engine.upsert(_chunks(), None)
        if change == "replace":  # the same chunks written again, as `tracerag ingest` of the same files does
            engine.upsert(_chunks({"en": WORDS["en"][:3]}), None)
        else:
            engine.delete(["en0"])
        engine.optimize()
        for query, field in QUERIES:
            score, expected = _score_is_idf_of_stats(engine, query, field)
            assert score == pytest.approx(expected, rel=1e-5), query
    finally:
        engine.close()
