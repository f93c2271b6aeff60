"""The vocabulary model trained on HIPE-2022 French: its neighbours are words of the corpus, counted as the corpus
counts them; it is stored, loaded back the same, and said to be missing, damaged or stale."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tracerag.config import load_settings
from tracerag.ingest import read_documents
from tracerag.retrieval import vocabulary as vocab

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first


@pytest.fixture(scope="module")
def french(hipe_dir: Path) -> list[str]:
    return [d.text for d in read_documents(hipe_dir, "hipe") if getattr(d, "language", None) == "fr"]


@pytest.fixture(scope="module")
def model(french: list[str]) -> vocab.Vocabulary:
    return vocab.train(lambda: iter(french), load_settings().expansion)  # ~10 s on 2 cores


@pytest.fixture(scope="module")
def corpus_counts(french: list[str]) -> Counter[str]:
    return Counter(w for text in french for w in vocab.words(text))


def test_words_are_lower_cased_runs_of_letters_accents_kept():
    assert vocab.words("L'ARMÉE du Roy, 1798: grève!") == ["armée", "du", "roy", "grève"]


@pytest.mark.needs_data("hipe2022")
@pytest.mark.parametrize("word", ["gouvernement", "guerre", "conseil", "paris", "enfans"])
def test_neighbours_occur_in_the_corpus_with_their_frequencies(model, corpus_counts, word):
    neighbours = model.neighbours(word, 10)
    assert len(neighbours) == 10
    for nb in neighbours:
        assert nb.word != word
        assert corpus_counts[nb.word] >= 3, nb  # a word of the corpus, as often as min_count at least
        assert nb.count == corpus_counts[nb.word], nb
    sims = [nb.similarity for nb in neighbours]
    assert sims == sorted(sims, reverse=True)


@pytest.mark.needs_data("hipe2022")
def test_the_model_finds_the_old_spellings_and_ocr_forms_of_a_word(model):
    """What a historian wants from it: "gouvernemens" (the spelling before 1835) and OCR splits of the word."""
    near = [nb.word for nb in model.neighbours("gouvernement", 10)]
    assert "gouvernemens" in near, near


@pytest.mark.needs_data("hipe2022")
def test_a_word_the_corpus_never_holds_is_placed_by_its_letters(model, corpus_counts):
    assert corpus_counts["gouvernemennt"] == 0
    near = model.neighbours("gouvernemennt", 5)  # an OCR misreading in the query
    assert near and all(corpus_counts[nb.word] > 0 for nb in near)


@pytest.mark.needs_data("hipe2022")
def test_stored_and_loaded_back_the_same(model, tmp_path, french):
    folder = vocab.save(model, tmp_path / "vocabulary")
    again = vocab.load(folder)
    assert again.neighbours("guerre", 5) == model.neighbours("guerre", 5)
    assert again.info.documents == len(french) and again.info.tokens == model.info.tokens
    assert again.info.staleness(len(french)) is None
    assert "now holds" in (again.info.staleness(2 * len(french)) or "")
    assert "stale" in again.summary(2 * len(french))


def test_missing_and_damaged_models_say_how_to_train_one(tmp_path):
    with pytest.raises(vocab.VocabularyMissing, match="tracerag expand --train"):
        vocab.load(tmp_path / "vocabulary")
    (tmp_path / "vocabulary").mkdir()
    (tmp_path / "vocabulary" / vocab.META_FILE).write_text(json.dumps({"format": 99}), encoding="utf-8")
    with pytest.raises(vocab.VocabularyMissing, match="format 99, this TRACE reads 1"):
        vocab.load(tmp_path / "vocabulary")
    (tmp_path / "vocabulary" / vocab.META_FILE).write_text("{not json", encoding="utf-8")
    with pytest.raises(vocab.VocabularyMissing, match="unreadable"):
        vocab.load(tmp_path / "vocabulary")
