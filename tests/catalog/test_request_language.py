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
