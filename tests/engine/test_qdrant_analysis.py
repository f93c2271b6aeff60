"""The cluster engine cuts a query into terms with Qdrant's own analyser (`engine/qdrant_analysis.py`): to count a
word the query repeats, to give each term's statistics, and to hand qdrant-client's local mode analysed tokens.
That only holds if the analyser makes the tokens a Qdrant text index made with the server's settings stores: checked
here against such an index, in Qdrant's engine in-process (qdrant-edge-py, the same analyser code the server runs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("qdrant_edge", reason="qdrant-edge-py is not installed (pip install 'tracerag[qdrant]')")

from qdrant_edge import (  # noqa: E402
    DisabledStemmer,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    FieldCondition,
    Filter,
    MatchText,
    Point,
    ScrollRequest,
    SnowballParams,
    SparseVector,
    StopwordsSet,
    TextIndexParams,
    TokenizerType,
    UpdateOperation,
)

from tracerag.engine.qdrant_analysis import LANGUAGES, query_terms, token_ids  # noqa: E402


def test_repeats_are_counted_on_analysed_tokens():
    # stemmed and folded in English: one term twice; unstemmed (xx): two terms. Each term: (first word, count)
    assert query_terms("Strikes at the docks, strike!", "en") == [("Strikes", 2), ("at", 1), ("the", 1), ("docks", 1)]
    assert query_terms("Strikes strike", "xx") == [("Strikes", 1), ("strike", 1)]
    assert query_terms("grève GREVE grèves", "fr") == [("grève", 3)]
    assert query_terms("Straße strasse", "de") == [("Straße", 2)]
    assert query_terms("l'armée d'armée", "fr") == [("l", 1), ("armée", 2), ("d", 1)]
    assert query_terms("snake_case snake", "xx") == [("snake", 2), ("case", 1)]  # the Word tokenizer splits on _
    assert query_terms(" ?! ", "en") == []


def test_numbers_are_tokens():
    """Regression: Qdrant's Multilingual tokenizer dropped every purely numeric token (years could never match)."""
    assert len(token_ids("le 14 juillet 1789", "fr")) == 4
    assert token_ids("3,5", "fr") == token_ids("3 5", "fr") and len(token_ids("3,5", "fr")) == 2
    assert token_ids("1789", "xx") != token_ids("1790", "xx")


WORDS = ["strike", "strikes", "Striking", "grève", "greve", "grèves", "Straße", "strasse", "naïve", "naive"]
WORDS += ["œuvre", "oeuvre", "ﬁle", "file", "1789", "Ⅻ", "x²", "日本語", "Müller", "muller", "mueller"]
WORDS += ["Voͤrse", "Vorse"]


def _server_text_index(language: str) -> TextIndexParams:
    """The text index `QdrantServerEngine` asks the server for (`_text_index`), in qdrant-edge's terms."""
    stemmer = LANGUAGES[language]
    return TextIndexParams(
        tokenizer=TokenizerType.Word,
        lowercase=True,
        ascii_folding=True,
        phrase_matching=True,
        stopwords=StopwordsSet(),
        stemmer=SnowballParams(stemmer) if stemmer is not None else DisabledStemmer(),
        scoring=True,
    )


@pytest.mark.parametrize("language", ["en", "fr", "de", "xx"])
def test_the_analyser_merges_exactly_the_words_a_qdrant_text_index_merges(tmp_path: Path, language: str):
    """A word is found in a one-word point of a Qdrant text index exactly when the analyser gives both words the
    same tokens."""
    shard = EdgeShard.create(str(tmp_path / "shard"), EdgeConfig(sparse_vectors={"s": EdgeSparseVectorParams()}))
    try:
        shard.update(UpdateOperation.create_field_index("text", _server_text_index(language)))
        points = [Point(i + 1, {"s": SparseVector([0], [1.0])}, {"text": w}) for i, w in enumerate(WORDS)]
        shard.update(UpdateOperation.upsert_points(points))
        for word in WORDS:
            request = ScrollRequest(filter=Filter(must=[FieldCondition("text", match=MatchText(word))]), limit=100)
            records, _ = shard.scroll(request)
            found = {WORDS[int(r.id) - 1] for r in records}
            same = {w for w in WORDS if token_ids(w, language) == token_ids(word, language)}
            assert found == same, word
    finally:
        shard.close()
