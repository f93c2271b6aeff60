"""Phones and addresses are found in the catalog's country and language, not in one country's shapes."""

from __future__ import annotations

from pathlib import Path

from tracerag.catalog.facts import FactFinder
from tracerag.catalog.profile import CatalogProfile
from tracerag.catalog.words import WordList

EN = WordList.load("en")
EN_FILE = Path(__file__).resolve().parents[2] / "src" / "tracerag" / "catalog" / "words" / "en.toml"


def test_phones_are_read_in_the_catalogs_country() -> None:
    us = FactFinder(EN, CatalogProfile(country="US"))
    assert [k for _, k in us.phones("Call (305) 253-4841 or +44 20 7946 0958.")] == ["+13052534841", "+442079460958"]
    assert us.phone_key("305.253.4841 ext. 12") == "+13052534841" and us.phone_key("call us") == ""
    france = FactFinder(EN, CatalogProfile(country="FR"))
    assert [k for _, k in france.phones("Appelez le 01 42 68 53 00.")] == ["+33142685300"]
    nowhere = FactFinder(EN, CatalogProfile())  # no country: only numbers written with their country code
    assert [k for _, k in nowhere.phones("(305) 253-4841 or +1 305 253 4841")] == ["+13052534841"]


def test_addresses_follow_the_word_lists_street_words(tmp_path: Path) -> None:
    facts = FactFinder(EN, CatalogProfile(country="US"))
    assert [k for _, k in facts.addresses("Visit 11347 S.W. 160th St. today")] == ["11347 sw 160 st"]
    assert facts.address_key("11347 Southwest 160th Street") == "11347 sw 160 st"
    assert facts.addresses("open 24 hours for 100 families") == []
    # A language that puts the street type first: the word list says so, the code is the same.
    text = EN_FILE.read_text(encoding="utf-8")
    text = text.replace("type_before_name = false", "type_before_name = true")
    own = tmp_path / "words.toml"
    own.write_text(text.replace("street_types = {", 'street_types = { rue = "rue",', 1), encoding="utf-8")
    french_order = FactFinder(WordList.load("en", own), CatalogProfile(country="FR"))
    assert [w for w, _ in french_order.addresses("Au 12 rue de la Paix, Paris")] == ["12 rue de la Paix"]
