"""The request's time of day (`matchers.first_time` and the pure readers under it), table by table.

Rows marked "people set" are requests of benchmarks/catalog_people/ as written there; the others were written
the way people type to a 211 line. Each expected value was worked out by hand from the rules in the docstrings
(a bare hour from 1 to 6 is afternoon, "before"/"until" is half an hour earlier, the word list's parts of the
day), not copied from a run.
"""

from __future__ import annotations

import pytest

from tracerag.catalog.matchers import first_time, period_minutes
from tracerag.catalog.request_words import RequestWords
from tracerag.catalog.words import WordList

WORDS = WordList.load("en")


@pytest.mark.parametrize(
    ("text", "minutes", "said"),
    [
        # people set
        ("my boyfriend hit me again and im scared to go home tonight. miami", 19 * 60, "tonight"),
        ("nowhere to sleep tonight, me and my 2 kids, were in downtown miami", 19 * 60, "tonight"),
        ("hiv positive, its 3am and im panicking, i have nobody to call", 3 * 60, "3am"),
        ("6 months sober and i really want to use tonight. need someone to talk to", 19 * 60, "tonight"),
        ("babysitter for tonight in noe valley", 19 * 60, "tonight"),
        ("my friend was raped last night what do we do", 19 * 60, "night"),  # read as a time, though it is past
        ("im 16 and my dad beats me, i cant go home. im in miami", None, ""),
        ("im a 30 year old man and homeless, need a bed. miami", None, ""),
        ("after school care for my 8 year old", None, ""),
        ("she stopped drinking 2 months ago", None, ""),
        ("car wash in the mission open now", None, ""),  # "open now" is no clock: `times` reports it unknown
        # written as people write them
        ("food pantry open after 5", 17 * 60, "after 5"),
        ("open at 3 on saturday", 15 * 60, "at 3"),
        ("open at 8 in the morning", 8 * 60, "at 8 in the morning"),
        ("can i come at 10 o'clock", 10 * 60, "at 10 o'clock"),
        ("need a clinic at 7.30 in the evening", 19 * 60 + 30, "at 7.30 in the evening"),
        ("open 9am to 5pm", 9 * 60, "open 9am to 5pm"),
        ("shelter open till 9pm", 21 * 60 - 30, "till 9pm"),
        ("need food by 6:30pm", 18 * 60, "by 6:30pm"),
        ("open until 7", 7 * 60 - 30, "until 7"),  # 7 to 11 without am/pm are morning hours
        ("open at 5 p.m.", 17 * 60, "at 5 p.m."),
        ("anything open around noon", 12 * 60, "around noon"),
        ("somewhere to sleep before midnight", 0, "before midnight"),
        ("open in the afternoon", 14 * 60, "in the afternoon"),
        ("evenings only", 18 * 60, "evenings"),
        ("a family of 5 tonight", 19 * 60, "tonight"),  # 5 is a count: no cue, no am/pm
        ("at 2 locations", None, ""),  # a bare hour followed by a word that is not a time's
        ("is anything open at 25", None, ""),
        ("abierto a las 5", None, ""),  # the patterns are English
    ],
)
def test_first_time(text: str, minutes: int | None, said: str) -> None:
    words = RequestWords(text)
    assert first_time(words, WORDS) == (minutes, said)
    taken = [t.raw for t, used in zip(words.tokens, words.used, strict=True) if used]
    assert taken == [t.raw for t in RequestWords(said).tokens]  # the words said are consumed, no others


@pytest.mark.parametrize(
    ("word", "minutes"),
    [("morning", 9 * 60), ("Evening", 18 * 60), ("evenings", 18 * 60), ("nights", 19 * 60), ("noonish", None)],
)
def test_period_minutes(word: str, minutes: int | None) -> None:
    assert period_minutes(word, WORDS.periods) == minutes
