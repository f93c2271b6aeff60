"""The embedded engine's text analyser (`engine/text_index.py`) keeps the tokens a reader of historical text
searches for; the cluster engine's (Qdrant's, `engine/qdrant_analysis.py`) is checked in test_qdrant_analysis.py.

Regression: with Qdrant's Multilingual tokenizer (charabia) every purely numeric token was dropped, at ingest
and in queries alike, so years, days and numbers ("1789", "le 25 mars 1975") could never match: on piaf-fr
questions with dates the gold paragraph fell from rank 1 (bm25s) to rank 45+.
"""

from __future__ import annotations

import pytest

from tracerag.engine import IndexedChunk
from tracerag.engine.embedded import EmbeddedEngine

TEXTS = {
    "fr": "Le 14 juillet 1789, l’armée d'Orléans entre dans le Saint-Empire; 3,5 millions d'habitants au XIVe siècle.",
    "de": "Am 18. März 1848 kam Müller über die Straße nach Zürich-Oerlikon.",
}
OTHER = {"fr": "Rien à signaler dans ce paragraphe.", "de": "Nichts zu melden in diesem Absatz."}


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = EmbeddedEngine(tmp_path_factory.mktemp("analyzer") / "index", None, writer=True)
    engine.upsert(
        [IndexedChunk(f"{lang}#0", lang, text, "c", lang, None, None, {}) for lang, text in TEXTS.items()]
        + [IndexedChunk(f"{lang}-other#0", f"{lang}-other", t, "c", lang, None, None, {}) for lang, t in OTHER.items()],
        None,
    )
    engine.flush()
    yield engine
    engine.close()


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("1789", "fr"),
        ("14 juillet", "fr"),
        ("3,5", "fr"),
        ("1848", "de"),
        ("18. März", "de"),
    ],
)
def test_numbers_are_searchable(engine, query, expected):
    assert {f: [h.doc_id for h in hits] for f, hits in engine.bm25(query, 10).items()} == {expected: [expected]}


def test_a_year_in_a_phrase_is_matched(engine):
    assert {f: [h.doc_id for h in hits] for f, hits in engine.phrase("juillet 1789", 10).items()} == {"fr": ["fr"]}
    assert engine.phrase("juillet 1790", 10) == {}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("armée", "fr"),  # elided "l’armée" (typographic apostrophe)
        ("Orleans", "fr"),  # elided "d'Orléans", folded
        ("empire", "fr"),  # hyphenated "Saint-Empire"
        ("xive", "fr"),
        ("Strasse", "de"),
        ("muller", "de"),
        ("Oerlikon", "de"),
    ],
)
def test_words_still_split_and_fold(engine, query, expected):
    assert {f: [h.doc_id for h in hits] for f, hits in engine.bm25(query, 10).items()} == {expected: [expected]}
