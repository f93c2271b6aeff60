"""The catalog's word lists are data: the packaged English one loads whole, and a bad file is refused naming
the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.catalog.words import WordList
from tracerag.errors import ConfigError

EN = Path(__file__).resolve().parents[2] / "src" / "tracerag" / "catalog" / "words" / "en.toml"


def test_the_english_list_holds_one_weekday_table_and_stems_plurals() -> None:
    words = WordList.load("en")
    assert words.weekday_names[5] == "Saturday" and words.weekday_short[0] == "Mon"
    assert [words.weekday(w) for w in ("Thurs", "saturdays", "Mon.", "fr", "soon")] == [3, 5, 0, 4, None]
    assert words.lemma("pantries") == words.lemma("pantry") and words.lemma("children") == words.lemma("child")
    assert words.lemma("programs") in words.term_filler  # filler compared after plurals are removed
    assert ("food", words.lemma("pantry")) in words.service_synonyms
    assert "st" in words.abbreviations and words.street_types["street"] == "st"
    assert all("{region}" in p for p in words.region_phrases)
    assert WordList.load("en") is words  # read once per process


def test_a_language_without_a_list_is_refused_saying_what_to_write() -> None:
    with pytest.raises(ConfigError, match=r"no catalog word list for language 'xx'.*en.toml"):
        WordList.load("xx")


def test_a_profiles_own_list_is_checked_key_by_key(tmp_path: Path) -> None:
    own = tmp_path / "words.toml"
    own.write_text(EN.read_text(encoding="utf-8").replace("filler =", "filer =", 1), encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{own.name}: invalid word list: filer"):
        WordList.load("en", own)
    bad = tmp_path / "bad.toml"
    text = EN.read_text(encoding="utf-8").replace(
        'text = "for men"\npatterns = [', 'text = "for men"\npatterns = ["(",', 1
    )
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"requests\.conditions\.\d+\.patterns: .*not a regular expression"):
        WordList.load("en", bad)
    region = tmp_path / "region.toml"
    region.write_text(EN.read_text(encoding="utf-8").replace('"{region} residents",', '"state residents",', 1))
    with pytest.raises(ConfigError, match=r"residency\.region_phrases"):
        WordList.load("en", region)
    with pytest.raises(ConfigError, match="cannot read"):
        WordList.load("en", tmp_path / "missing.toml")


def test_a_profiles_own_list_replaces_the_packaged_one(tmp_path: Path) -> None:
    own = tmp_path / "words.toml"
    own.write_text(EN.read_text(encoding="utf-8").replace('"sat", "sun"', '"sat", "sun", "sab"', 1))
    text = own.read_text(encoding="utf-8")
    own.write_text(text.replace('["saturday", "sat"]', '["saturday", "sat", "sab"]', 1), encoding="utf-8")
    assert WordList.load("en", own).weekday("sab") == 5 and WordList.load("en").weekday("sab") is None
