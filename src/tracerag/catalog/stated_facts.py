"""What a person states about themselves, read from a request as conditions on the records it gets.

"I'm a 25 year old man and homeless", "im 17", "me and my kids", "no insurance", "i can't pay": each is a fact
the records must not contradict. The facts and the words that state them are data (the word list's `[facts]`,
a country's file adds its own programmes); each becomes a `Semantic` condition whose text is the fact's
`condition` ("for men"), checked against every candidate's text by `catalog.condition_rules`: a record whose
text contradicts it (restricted to women, "21 or older") fails and is left out, one that says nothing about it
comes after those that state it. A person's own age ("i'm 17") is read here; the other age phrases ("25 year
old", "over 60") by `catalog.matchers`, in the same words ("for people aged 17").
"""

from __future__ import annotations

from tracerag.catalog.fact_words import FactWords
from tracerag.catalog.gazetteer import GazetteerIndex
from tracerag.catalog.matchers import add_semantic
from tracerag.catalog.model import Constraints, Semantic
from tracerag.catalog.request_words import RequestWords
from tracerag.catalog.words import CountryWords

__all__ = ["age_condition", "stated_facts"]

_MAX_AGE = 120  # a larger number after "i'm" is not an age


def age_condition(age: int) -> Semantic:
    """One age as a condition, as `catalog.matchers` writes it ("for people aged 17")."""
    return Semantic(f"for people aged {age}")


def stated_facts(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """The facts the request states about the person, each a condition; the words stating them are taken (the
    group `fact` of a pattern, when it names one), unless they also say what is asked for ("homeless")."""
    facts = _facts(idx)
    for pattern in facts.self_age:
        for m in pattern.finditer(words.text):
            age = int(m.group("age"))
            if age <= _MAX_AGE and words.free(*m.span("age")):
                words.take(*m.span("age"))
                add_semantic(out, age_condition(age))
    for fact in facts.stated:
        for pattern in fact.said:
            for m in pattern.finditer(words.text):
                span = m.span("fact") if "fact" in pattern.groupindex else m.span()
                if not fact.keep_in_topic:
                    words.take(*span)
                add_semantic(out, Semantic(fact.condition))
    for duration in facts.durations:
        for pattern in duration.said:
            for m in pattern.finditer(words.text):
                days = duration.days(m)
                if days is not None and words.free(*m.span()):
                    words.take(*m.span())
                    add_semantic(out, Semantic(duration.as_condition(days)))


def _facts(idx: GazetteerIndex) -> FactWords:
    """The language's facts with the catalog's country's own."""
    return idx.words.facts.merged(CountryWords.load(idx.profile.country).facts)
