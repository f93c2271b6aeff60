"""Who a record is restricted to, as its own text writes it ("for single women", "fire victims", "members only").

A 211 directory holds services open to anyone and services for one group only; offered for a plain request, a
restricted one is a wrong answer unless the person belongs to the group. The groups and how texts write them are
data (the word list's `[[facts.restrictions]]`, a country's file adds its own): a record is restricted to a group
when a sentence of its text restricts it (`only`) and no part of its text opens it to others as well (`unless`:
"men and women"). A word with a second sense ("graduating high school seniors") is read in the sense its
neighbours give it (`[[facts.senses]]`), so a scholarship for school seniors is not a service for older adults.

`RestrictionFinder.find` gives every restriction of a record with its span; `restriction_span` the first one, for
the reply's "who it is for" line; `RestrictionFinder.unclaimed` the restrictions a request does not claim, which
the assistant ranks after unrestricted records. A stated fact that a restriction contradicts ("I'm a man" and a
women-only shelter) is a failed condition, decided by `catalog.condition_rules`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracerag.catalog.evidence import field_spans, quote_span
from tracerag.catalog.fact_words import FactWords, Group
from tracerag.catalog.model import Constraints, ServiceRecord
from tracerag.catalog.words import CountryWords, WordList
from tracerag.text import sentence_spans

__all__ = ["Restriction", "RestrictionFinder", "restriction_span"]


@dataclass(frozen=True, slots=True)
class Restriction:
    group: str  # as the word list names it: "women", "people living with HIV/AIDS"
    span: tuple[int, int]  # the words that restrict it, in record.text()
    quote: str  # the sentence around them (or a window of a long one), as written
    quote_span: tuple[int, int]  # record.text()[quote_span[0]:quote_span[1]] == quote
    said: str  # the words themselves ("for single women")
    ages: tuple[int, int] | None = None  # the group's ages, when it is an age group
    rank_after: bool = True
    leave_out: bool = True  # left out when a record open to all matches (`Group.leave_out`)


class RestrictionFinder:
    """The restriction groups of one catalog's language (and country), and the word senses that decide them."""

    def __init__(self, words: WordList, country: CountryWords | None = None):
        self.words = words
        self.facts: FactWords = words.facts.merged(country.facts) if country is not None else words.facts
        self._cache: dict[tuple[str, int], list[Restriction]] = {}

    # -- word senses ----------------------------------------------------------------------------------------

    def other_sense(self, text: str, span: tuple[int, int]) -> bool:
        """Whether a word of `span` has, by the words near it in `text`, a sense other than its first one
        ("seniors" beside "graduating high school")."""
        for sense in self.facts.senses:
            for m in sense.word.finditer(text, span[0], span[1]):
                lo, hi = max(0, m.start() - sense.window), min(len(text), m.end() + sense.window)
                if sense.other.search(text, lo, hi):
                    return True
        return False

    def _own_sense(self, words: str) -> bool:
        return any(sense.word.search(words) and sense.other.search(words) for sense in self.facts.senses)

    # -- a record's restrictions ----------------------------------------------------------------------------

    def find(self, record: ServiceRecord) -> list[Restriction]:
        """Every group the record's text restricts it to, in the word list's order; a restriction stated outside
        the service's name is quoted before one only its name states."""
        text = record.text()
        key = (record.id, hash(text))
        if key in self._cache:
            return self._cache[key]
        name_end = next((b for field, a, b in field_spans(record, text) if field == "name"), 0)
        sentences = sentence_spans(text, self.words.abbreviations)
        found = []
        for group in self.facts.restrictions:
            hit = self._restricts(group, text, name_end)
            if hit is None:
                continue
            sentence = next(((a, b) for a, b in sentences if a <= hit[0] < b), hit)
            quoted = quote_span(text, sentence, hit)
            found.append(
                Restriction(
                    group.group,
                    hit,
                    text[quoted[0] : quoted[1]],
                    quoted,
                    text[hit[0] : hit[1]],
                    group.ages,
                    group.rank_after,
                    group.leave_out,
                )
            )
        if len(self._cache) > 20000:
            self._cache.clear()
        self._cache[key] = found
        return found

    def _restricts(self, group: Group, text: str, name_end: int) -> tuple[int, int] | None:
        if group.unless is not None and group.unless.search(text):
            return None
        # A match that holds the other sense's own words ("graduating high school seniors") is that sense's group.
        hits = [
            m.span()
            for m in group.only.finditer(text)
            if self._own_sense(m.group()) or not self.other_sense(text, m.span())
        ]
        if not hits:
            return None
        return next((h for h in hits if h[0] >= name_end), hits[0])

    # -- against a request ----------------------------------------------------------------------------------

    def claimed(self, restriction: Restriction, constraints: Constraints, ages: Sequence[tuple[int, int]]) -> bool:
        """Whether the request says the person belongs to the group: its conditions or topic name the group, or
        an age it states (`ages`, youngest and oldest of each age condition) lies in the group's ages."""
        group = self.facts.group(restriction.group)
        if group is None:
            return False
        said = " ".join([constraints.topic, *(s.text for s in constraints.semantic if not s.negated)])
        if group.named_by(said):
            return True
        if group.ages is not None:
            lo, hi = group.ages
            return any(a <= hi and lo <= b for a, b in ages)
        return False

    def unclaimed(
        self, record: ServiceRecord, constraints: Constraints, ages: Sequence[tuple[int, int]] = ()
    ) -> list[Restriction]:
        """The record's restrictions that rank it after unrestricted records for this request: those to a group
        the request does not claim (a group too common to rank after, such as adults only, never does)."""
        return [r for r in self.find(record) if r.rank_after and not self.claimed(r, constraints, ages)]


def restriction_span(
    record: ServiceRecord, words: WordList | None = None, country: CountryWords | None = None
) -> Restriction | None:
    """The first group the record is restricted to, with the words that say so, or None when its text restricts
    it to no group of the word list (the reply's "who it is for" line quotes `quote`)."""
    found = RestrictionFinder(words or WordList.load(), country).find(record)
    return found[0] if found else None
