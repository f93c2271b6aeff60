"""BM25 counts a word the query repeats as often as the query repeats it (linear query term frequency, as Lucene
and bm25s score), on the tokens the field's index stores.

Regression: Qdrant Edge's TextQuery scored a query as a set of words, so "paris paris london" ranked exactly as
"paris london", unlike Lucene and bm25s (issue 11 measured the gap on a collection of 62-word queries); the
embedded engine (tantivy) must keep counting them. Scores here are checked against BM25 computed by hand (Lucene's
IDF, k1 1.2, b 0.75, a chunk's length stored as tantivy stores it: exactly up to 40 tokens, rounded down beyond).
"""

from __future__ import annotations

import math
from collections import Counter

import pytest

from tests.conftest import require_datasets
from tracerag.engine import IndexedChunk
from tracerag.engine.embedded import EmbeddedEngine
from tracerag.engine.text_index import analyser, query_terms
from tracerag.eval.datasets import cranfield
from tracerag.model import Filter

K1, B = 1.2, 0.75


def _int4(i: int) -> int:
    bits, shift = i & 0x07, (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


# The lengths tantivy can store (its `FIELD_NORMS_TABLE`, Lucene's SmallFloat.byte4ToInt): one byte a chunk.
FIELD_NORMS = [i if i < 24 else 24 + _int4(i - 24) for i in range(256)]


def stored_length(tokens: int) -> int:
    """A chunk's length as tantivy's BM25 reads it: the largest storable length not above it."""
    return max(n for n in FIELD_NORMS if n <= tokens)


def hand_bm25(docs: dict[str, list], query: list) -> dict[str, float]:
    """BM25 of a query (a list of tokens, repeats counted) over documents (lists of tokens), as Lucene scores it
    with (k1 + 1) kept in the numerator, as tantivy keeps it; the average length is exact, a chunk's own stored."""
    n = len(docs)
    avg = sum(map(len, docs.values())) / n
    tf = {d: Counter(tokens) for d, tokens in docs.items()}
    df = Counter(term for counts in tf.values() for term in counts)
    scores: dict[str, float] = {}
    for d, tokens in docs.items():
        s = 0.0
        for term in query:
            f = tf[d][term]
            if f:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                s += idf * f * (K1 + 1) / (f + K1 * (1 - B + B * stored_length(len(tokens)) / avg))
        if s:
            scores[d] = s
    return scores


def analysed(text: str, language: str) -> list[str]:
    """The tokens the index of `language` makes of `text`, by the analyser it indexes with (a whole text at once,
    as the index does; the engine cuts a query into words first)."""
    return list(analyser(language).analyze(text))


def scores_of(engine: EmbeddedEngine, query: str, k: int = 100) -> dict[str, float]:
    return {h.doc_id: h.score for hits in engine.bm25(query, k).values() for h in hits}


TOY = {
    "both": "paris london",
    "paris2": "paris paris city",
    "london3": "london london london town",
    "rome": "rome",
    "many": "paris berlin rome madrid lisbon",
    "neither": "city town",
}


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    engine = EmbeddedEngine(tmp_path_factory.mktemp("qtf") / "index", None, query_tf=True, writer=True)
    engine.upsert([IndexedChunk(f"{d}#0", d, t, "c", None, None, None, {}) for d, t in TOY.items()], None)
    engine.flush()
    yield engine
    engine.close()


def test_a_repeated_word_counts_as_often_as_it_is_repeated(toy):
    once, twice = scores_of(toy, "paris london"), scores_of(toy, "paris paris london")
    # "paris" counts twice: every chunk with it gains its paris part again, a chunk with only "london" nothing
    assert twice["london3"] == pytest.approx(once["london3"])
    assert twice["paris2"] == pytest.approx(2 * once["paris2"])
    assert twice["paris2"] / twice["london3"] > once["paris2"] / once["london3"]
    assert next(iter(scores_of(toy, "london london london paris"))) == "london3"
    assert next(iter(scores_of(toy, "paris paris paris london"))) in {"both", "paris2"}


@pytest.mark.parametrize(
    "query", ["paris london", "paris paris london", "london london london paris", "Paris PARIS paris rome rome london"]
)
def test_scores_are_bm25_with_query_term_frequency(toy, query):
    docs = {d: analysed(t, "xx") for d, t in TOY.items()}
    expected = hand_bm25(docs, analysed(query, "xx"))
    assert scores_of(toy, query) == pytest.approx(expected, rel=1e-5)


def test_counting_can_be_turned_off_to_measure_it(toy):
    toy.query_tf = False  # retrieval.query_tf = false, the default
    try:
        assert scores_of(toy, "paris paris london") == scores_of(toy, "paris london")
    finally:
        toy.query_tf = True
    assert scores_of(toy, "paris paris london") != scores_of(toy, "paris london")


def test_repeats_are_counted_on_analysed_tokens():
    # stemmed and folded in English: one term twice; unstemmed (xx): two terms. Each term: (token, first word, count)
    assert query_terms("Strikes at the docks, strike!", "en") == [
        ("strike", "Strikes", 2),
        ("at", "at", 1),
        ("the", "the", 1),
        ("dock", "docks", 1),
    ]
    assert query_terms("Strikes strike", "xx") == [("strikes", "Strikes", 1), ("strike", "strike", 1)]
    assert query_terms("grève GREVE grèves", "fr") == [("grev", "grève", 3)]
    assert query_terms("Straße strasse", "de") == [("strass", "Straße", 2)]
    assert query_terms("l'armée d'armée", "fr") == [("l", "l", 1), ("arme", "armée", 2), ("d", "d", 1)]
    assert query_terms("snake_case snake", "xx") == [("snake", "snake", 2), ("case", "case", 1)]  # _ splits
    assert query_terms("Voͤrse", "de") == [("voͤrs", "Voͤrse", 1)]  # a combining letter stays in its word
    assert query_terms(" ?! ", "en") == []


WORDS = ["strike", "strikes", "Striking", "grève", "greve", "grèves", "Straße", "strasse", "naïve", "naive"]
WORDS += ["œuvre", "oeuvre", "ﬁle", "file", "1789", "Ⅻ", "xii", "x²", "x2", "日本語", "Müller", "muller", "mueller"]
WORDS += ["Voͤrse", "Vorse", "İstanbul", "istanbul", "ǅemal", "džemal"]


@pytest.mark.parametrize("language", ["en", "fr", "de", "xx"])
def test_the_query_analyzer_merges_exactly_the_words_the_index_merges(tmp_path, language):
    """Counting repeats relies on `query_terms` (which cuts a query into words, then analyses each) making the
    tokens the index stores (tantivy's tokenizer over the whole text): the query's tokens are the index's terms,
    and a word is found in a one-word chunk exactly when both give the same token."""
    engine = EmbeddedEngine(tmp_path / "index", None, query_tf=True, writer=True)
    try:
        engine.upsert(
            [IndexedChunk(f"w{i}#0", f"w{i}", w, "c", language, None, None, {}) for i, w in enumerate(WORDS)], None
        )
        engine.flush()
        (index,) = engine._readable()
        stored = dict(index.searcher().terms_with_prefix("text", ""))
        queried = Counter({token: n for token, _, n in query_terms(" ".join(WORDS), index.language)})
        assert queried == stored
        for word in WORDS:
            found = {h.doc_id for hits in engine.bm25(word, 50).values() for h in hits}
            same = {f"w{i}" for i, w in enumerate(WORDS) if analysed(w, language) == analysed(word, language)}
            assert found == same, word
    finally:
        engine.close()


def test_filters_and_phrases_hold_with_repeats(toy):
    assert set(scores_of(toy, "paris paris london")) == {"both", "paris2", "london3", "many"}
    only = {
        h.doc_id
        for hits in toy.bm25("paris paris london", 10, Filter(doc_ids=("many", "london3"))).values()
        for h in hits
    }
    assert only == {"many", "london3"}
    phrase = {h.doc_id: h.score for hits in toy.phrase("paris paris", 10).values() for h in hits}
    assert list(phrase) == ["paris2"]
    assert phrase["paris2"] == pytest.approx(2 * scores_of(toy, "paris")["paris2"])


def test_cranfield_long_queries_score_as_hand_bm25(tmp_path):
    """Real long queries (Cranfield's average 9 distinct words, many repeated) over 300 real abstracts: the
    engine's top 20 is hand BM25's top 20, scores and all."""
    bench = cranfield(require_datasets("cranfield"))
    docs = bench.documents[:300]
    engine = EmbeddedEngine(tmp_path / "index", None, query_tf=True, writer=True)
    try:
        engine.upsert([IndexedChunk(f"{d.id}#0", d.id, d.text, "c", "en", None, None, {}) for d in docs], None)
        engine.flush()
        tokens = {d.id: analysed(d.text, "en") for d in docs}
        repeated = [q for q in bench.queries.values() if len(set(analysed(q.text, "en"))) < len(analysed(q.text, "en"))]
        assert len(repeated) >= 40  # most Cranfield queries repeat a word
        for q in repeated[:40]:
            expected = hand_bm25(tokens, analysed(q.text, "en"))
            top = sorted(expected.items(), key=lambda kv: -kv[1])[:20]
            found = scores_of(engine, q.text, 20)
            assert list(found.values()) == pytest.approx([s for _, s in top], rel=1e-4), q.id
    finally:
        engine.close()
