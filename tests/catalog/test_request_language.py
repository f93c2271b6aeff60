"""Requests in another language than the directory's: detected, glossed into the directory's words, places kept."""

from __future__ import annotations

import pytest

from tracerag.catalog.request_language import Gloss, apply_gloss, available_glosses, understand
from tracerag.catalog.words import WordList

EN = WordList.load("en")


def heard(request: str, keep: tuple[str, ...] = ()) -> tuple[str, str]:
    r = understand(request, "en", ["es"], EN.ordinary, keep=keep)
    return r.language, r.text


def test_spanish_is_packaged_for_english_directories() -> None:
    assert "es" in available_glosses("en")
    gloss = Gloss.load("es", "en")
    assert gloss is not None and gloss.phrases[("comida",)] == "food"
    assert Gloss.load("xx", "en") is None


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        ("necesito comida gratis en Hialeah", "i need food free in Hialeah"),
        ("tengo 17 años y no tengo donde dormir", "i am 17 years old and i have nowhere to sleep"),
        ("me quiero matar", "i want to kill myself"),
        ("y el domingo?", "what about sunday?"),
        ("despensa de comida abierta hoy cerca de Homestead", "food pantry open today near Homestead"),
    ],
)
def test_spanish_requests_are_read_in_english(request_: str, expected: str) -> None:
    assert heard(request_) == ("es", expected)


@pytest.mark.parametrize(
    "request_", ["food in hialeah", "I need a lawyer", "no ID needed food", "help me please", "more", "any others?"]
)
def test_english_requests_are_left_alone(request_: str) -> None:
    assert heard(request_) == ("en", request_)


def test_catalog_places_are_never_glossed() -> None:
    # "El Portal" is a city of the Miami directory; its "el" is also a Spanish article.
    assert heard("comida en El Portal", keep=("el portal",)) == ("es", "food in El Portal")
    assert heard("comida en El Portal") == ("es", "food in Portal")


def test_a_number_in_a_phrase_is_kept() -> None:
    gloss = Gloss.load("es", "en")
    assert gloss is not None
    assert apply_gloss("mi hija tiene 4 años", gloss) == "my daughter is 4 years old"


# -- the reply's own sentences in the request's language, on the real Miami directory ------------------------------


@pytest.fixture(scope="module")
def miami(catalog, tmp_path_factory):
    from tracerag.catalog.assistant import CatalogAssistant
    from tracerag.config import load_settings

    with CatalogAssistant(catalog, load_settings(), trail_dir=tmp_path_factory.mktemp("trails")) as a:
        yield a


def test_a_spanish_request_without_a_place_is_asked_where_in_spanish(miami) -> None:
    miami.reset()
    turn = miami.ask("necesito comida gratis")
    assert turn.outcome == "clarify" and turn.language == "es"
    assert turn.reply == "¿En qué ciudad o código postal busco comida?"
    # the place alone says no language: the conversation stays in Spanish, and the topic is kept
    turn = miami.ask("Hialeah")
    assert turn.language == "es" and turn.outcome == "answer"
    assert "Teléfono:" in turn.reply and "Hialeah" in turn.reply
    assert all(r.record.city == "Hialeah" for r in turn.recommendations)


def test_spanish_replies_quote_the_records_as_written(miami) -> None:
    miami.reset()
    turn = miami.ask("despensa de comida en Hialeah")
    assert turn.outcome == "answer"
    assert "Servicios del directorio" in turn.reply or "Ningún servicio" in turn.reply
    for rec in turn.recommendations:
        assert rec.record.name in turn.reply  # names as the directory writes them, never translated
    miami.reset()
    english = miami.ask("food pantry in Hialeah")
    assert english.language == "en" and "Phone:" in english.reply and "Teléfono" not in english.reply


def test_spanish_paging_words_page(miami) -> None:
    miami.reset()
    first = miami.ask("comida en Miami")
    more = miami.ask("más")
    assert first.outcome == "answer" and more.outcome in ("answer", "none_found")
    assert not {r.record.id for r in first.recommendations} & {r.record.id for r in more.recommendations}


def test_every_spanish_sentence_has_the_english_fields() -> None:
    import string

    from tracerag.catalog.sentences import Sentences

    en, es = Sentences.load("en"), Sentences.load("es")
    assert es.language == "es" and set(es.templates) <= set(en.templates)
    for key, template in es.templates.items():
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f}
        assert fields == {f for _, f, _, _ in string.Formatter().parse(en.templates[key]) if f}, key
