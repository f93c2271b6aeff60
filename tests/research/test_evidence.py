"""The check before a model drafts (research/evidence.py): which words are looked for, where, and what it says."""

from __future__ import annotations

from tracerag.research.evidence import content_stems, evidence, why
from tracerag.research.sources import SourceChunk


def _source(text: str, language: str = "fr", doc_id: str = "d") -> SourceChunk:
    return SourceChunk(doc_id=doc_id, chunk_id=f"{doc_id}#0", text=text, start=0, language=language)


FIRE = _source("Un violent incendie a détruit les entrepôts du port en 1881. Les pompiers ont lutté toute la nuit.")


def test_a_question_the_source_speaks_of_passes_and_one_it_does_not_is_stopped_naming_the_words():
    held = evidence("Qu'a détruit l'incendie du port en 1881 ?", "fr", [FIRE], share=0.5, shown=2000)
    assert held.passed and held.share == 1.0 and not held.missing  # "l'incendie" holds "incendie"
    lacking = evidence("Quel téléphone utilisaient les pompiers ?", "fr", [FIRE], share=0.5, shown=2000)
    assert not lacking.passed and lacking.missing == ["quel", "telephone", "utilisaient"]
    assert "25% of the question's words (at least 50% wanted): not quel, telephone" in why(lacking)


def test_a_year_or_a_name_the_sources_never_write_counts_against_the_question():
    other_year = evidence("L'incendie du port en 1923", "fr", [FIRE], share=0.8, shown=2000)
    assert not other_year.passed and other_year.missing == ["1923"]


def test_across_languages_only_names_and_numbers_are_sought():
    asked = "What did the firemen do in 1881?"
    found = evidence(asked, "en", [FIRE], share=0.5, shown=2000)
    assert found.cross_lingual and found.terms == 1 and found.passed  # "1881", not "firemen"
    other = evidence("What did the firemen of Marseille do?", "en", [FIRE], share=0.5, shown=2000)
    assert other.cross_lingual and not other.passed and other.missing == ["marseille"]
    assert "names, numbers and dates" in why(other)


def test_the_source_holding_most_of_the_question_decides_and_only_its_shown_text_counts():
    other = _source("La ligne de Paris à Lyon fut achevée en 1856.", doc_id="train")
    question = "Quand la ligne de Paris à Lyon fut-elle achevée ?"
    assert evidence(question, "fr", [FIRE, other], share=0.6, shown=2000).passed
    assert not evidence(question, "fr", [FIRE, other], share=0.6, shown=10).passed  # the excerpt the model sees


def test_share_zero_always_passes_and_no_source_passes_with_nothing_to_check():
    assert evidence("Quel téléphone portable ?", "fr", [FIRE], share=0.0, shown=2000).passed
    assert evidence("Quel téléphone portable ?", "fr", [], share=0.5, shown=2000).terms == 0


def test_content_words_split_at_apostrophes_and_keep_years():
    assert content_stems("l'incendie d'Augustów en 1881", "fr") == {"incend", "augustow", "1881"}
