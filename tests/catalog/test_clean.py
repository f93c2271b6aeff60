"""What directory exports get wrong in their cells, repaired for every reader: HTML, place spellings, linked
taxonomy codes, glued lines, bare hours, language cells."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.catalog.clean import (
    bare_hours_12h,
    canonical,
    canonical_forms,
    clean_languages,
    clean_text,
    is_dated,
    place_key,
    split_terms,
    term_parts,
    unglue,
)
from tracerag.catalog.schedule import parse_hours_text
from tracerag.catalog.words import WordList

RESOURCES = Path(__file__).resolve().parents[2] / "src" / "tracerag" / "catalog" / "words"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (
            "Senior (age 55 or over)<br />Older adult (age 55 or over)",
            "Senior (age 55 or over)\nOlder adult (age 55 or over)",
        ),
        ("<p class=msonormal> Offers postpartum services</p>", "Offers postpartum services"),
        ("food to residents of its&nbsp;area served", "food to residents of its area served"),
        ("Treatment &amp; Practice, Research &amp", "Treatment & Practice, Research &"),
        ("<b>Walk-in</b> &#39;clinic&#39; <!-- note -->", "Walk-in 'clinic'"),
        ("<ul><li>Food</li><li>Clothing</li></ul>", "Food\nClothing"),
        # not markup: a comparison, an age, a company name, a legacy entity name inside a word
        ("ages <5 and a < b; AT&T; R&copy", "ages <5 and a < b; AT&T; R&copy"),
    ],
)
def test_html_is_removed_from_texts_before_they_are_stored(raw: str, clean: str) -> None:
    assert clean_text(raw) == clean


def test_place_spellings_fold_case_punctuation_and_initials() -> None:
    assert place_key("Lakeview, D.C.") == place_key("Lakeview DC") == place_key("LAKEVIEW d c") == "lakeview dc"
    assert place_key("Opa-Locka") == place_key("opa locka")
    assert place_key("Land O Lakes") == "land o lakes"  # one letter alone is a word, not initials
    forms = canonical_forms(["Lakeview DC", "Lakeview, D.C.", "Lakeview DC", "LAKEVIEW DC", "Metro Lakeview"])
    assert canonical("Lakeview, D.C.", forms) == canonical("LAKEVIEW DC", forms) == "Lakeview DC"
    assert canonical("Metro Lakeview", forms) == "Metro Lakeview"  # no rule merges it: the mapping's aliases do


def test_linked_taxonomy_codes_are_terms_each() -> None:
    assert split_terms("BD-1800.2000 * B * D") == [["BD-1800.2000", "B", "D"]]
    assert split_terms("RX-8450.7000-700 * YS-2000.9500; RX-8450.7000-750 * YS-2000.9500;") == [
        ["RX-8450.7000-700", "YS-2000.9500"],
        ["RX-8450.7000-750", "YS-2000.9500"],
    ]
    assert term_parts("LH-2600; TJ-3000.1500 * YB-8000; ; LH-2600") == ["LH-2600", "TJ-3000.1500", "YB-8000"]
    assert split_terms("") == []


def test_lost_line_breaks_are_put_back() -> None:
    assert unglue("Monday-Friday, 9AM-6PMSaturday, 9AM-4PM", weekdays_only=True) == (
        "Monday-Friday, 9AM-6PM\nSaturday, 9AM-4PM"
    )
    assert unglue("McDonald House, Monday", weekdays_only=True) == "McDonald House, Monday"
    assert unglue("Chinese (Cantonese, Mandarin)SpanishTagalog") == "Chinese (Cantonese, Mandarin)\nSpanish\nTagalog"


@pytest.mark.parametrize(
    ("written", "explicit"),
    [
        ("Monday-Friday, 9-5", "Monday-Friday, 9am-5pm"),
        ("Monday-Friday, 8:30-4:30", "Monday-Friday, 8:30am-4:30pm"),
        ("Monday-Friday, 9-12, 1-5", "Monday-Friday, 9am-12pm, 1pm-5pm"),
        ("Tuesday, Thursday, 10-2", "Tuesday, Thursday, 10am-2pm"),
        ("Monday-Friday, 1:50-6", "Monday-Friday, 1:50pm-6pm"),
        ("Saturday, 8-11", "Saturday, 8am-11am"),
        ("Wednesday, 9-9", "Wednesday, 9am-9pm"),
        ("Monday-Friday, 9AM-6PM", "Monday-Friday, 9AM-6PM"),  # already explicit
        ("Monday-Friday, noon-10pm", "Monday-Friday, noon-10pm"),
        ("Daily, 13:00-17:00", "Daily, 13:00-17:00"),  # the 24-hour clock
    ],
)
def test_bare_hours_are_read_on_the_12_hour_clock(written: str, explicit: str) -> None:
    assert bare_hours_12h(written) == explicit


def test_bare_hours_become_openings_and_dated_texts_none() -> None:
    openings = parse_hours_text(bare_hours_12h("Monday-Friday, 9-5; Saturday, 10-2"))
    assert {(o.weekday, o.opens, o.closes) for o in openings} == {(d, 540, 1020) for d in range(5)} | {(5, 600, 840)}
    assert parse_hours_text("Monday-Friday, 9-5") == []  # without the rewrite: "9-5" could be ages
    assert is_dated("2/4/2008 to 4/15/2008 Monday-Friday, 9-1") and is_dated("December 22, 2009 Tuesday, 10-7")
    assert not is_dated("Monday-Friday, 9-5")


def test_language_cells_give_language_names() -> None:
    assert clean_languages(["Chinese (Cantonese, Mandarin)"]) == ["Chinese", "Cantonese", "Mandarin"]
    assert clean_languages(["Spanish (limited)", "Spanish (Portuguese - publications only)"]) == ["Spanish"]
    assert clean_languages(["Chinese Spanish Tagalog"]) == ["Chinese", "Spanish", "Tagalog"]
    assert clean_languages(["Haitian Creole"]) == ["Haitian Creole"]
    assert clean_languages(["Interpreter service available upon request", "None"]) == []


def test_language_cells_are_read_by_the_word_lists_one_table(tmp_path) -> None:
    """The names, spellings and remark words a cell is read with are the word list's, the same the requests are
    read with: a list that adds a name, a spelling and a remark word changes what a cell gives, no code."""
    words = WordList.load("en")
    assert {"spanish", "tagalog", "toisanese"} <= words.language_names  # cells' names and requests' names, one set
    assert clean_languages(["Espanol"]) == ["Spanish"] and clean_languages(["Klingon (limited)"]) == []
    source = (RESOURCES / "en.toml").read_text(encoding="utf-8")
    source = source.replace('names = """\n', 'names = """\nklingon\n', 1)
    source = source.replace("spellings = { ", 'spellings = { tlhingan = "Klingon", ', 1)
    source = source.replace('remark = """\n', 'remark = """\nfluent\n', 1)
    own = tmp_path / "words.toml"
    own.write_text(source, encoding="utf-8")
    mine = WordList.load("en", own)
    assert clean_languages(["Klingon (limited)", "Tlhingan", "Spanish Fluent Staff"], mine) == ["Klingon", "Spanish"]
    assert "klingon" in mine.language_names  # a request naming it is read by the same table
