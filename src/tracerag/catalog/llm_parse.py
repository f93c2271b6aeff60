"""A model's proposed parse of a request, kept only where it validates against the catalog and the request.

`parse_with_llm` runs the rule-based parser, asks the model for its parse, and puts each proposed value through
the same lookups (`GazetteerIndex`) and matchers the rules use; what does not validate is dropped with a note
saying why. The model can add validated values, never remove the rule-based ones, and a value it proposes
counts only if the request says it (a small model adds cities, days and conditions nobody asked for).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field
from rapidfuzz import fuzz

from tracerag.catalog import matchers
from tracerag.catalog.gazetteer import FUZZY_CUTOFF, GazetteerIndex
from tracerag.catalog.model import ConstraintKind, Constraints, Semantic, Structural
from tracerag.catalog.parse import parse_request
from tracerag.catalog.request_words import RequestWords
from tracerag.errors import LLMError
from tracerag.llm.base import LLM, Message
from tracerag.text import fold_key

__all__ = ["ProposedCondition", "ProposedParse", "parse_with_llm"]


class ProposedCondition(BaseModel):
    condition: str = Field(description="an eligibility condition in a few words, e.g. 'ID required', 'for seniors'")
    negated: bool = Field(False, description="true when the person wants the condition NOT to apply ('no ID')")


class ProposedParse(BaseModel):
    """What a model proposes; every value is checked against the catalog before it is used."""

    cities: list[str] = Field(default_factory=list, description="city names as the person wrote them")
    counties: list[str] = Field(default_factory=list)
    zips: list[str] = Field(default_factory=list, description="postal codes as the person wrote them")
    weekdays: list[str] = Field(default_factory=list, description="day names, 'weekend', 'today' or 'tomorrow'")
    time: str | None = Field(None, description="when it must be open, e.g. '6pm', '18:00', 'morning'")
    languages: list[str] = Field(default_factory=list, description="languages the staff must speak")
    service_types: list[str] = Field(default_factory=list, description="kinds of service in words, e.g. 'food pantry'")
    accessibility: bool = Field(False, description="true when wheelchair / disabled access is required")
    eligibility: list[ProposedCondition] = Field(default_factory=list)
    topic: str = Field("", description="what is asked for, in a few words")


_SYSTEM = (
    "You turn a request to a directory of public services into search constraints. Extract only what the "
    "request states: places (cities, counties, postal codes), days and times it must be open, languages, kinds "
    "of service, wheelchair access, and eligibility conditions (who it is for, ID, cost). Leave a field empty "
    "when the request does not state it; never guess a place."
)
_NUMBER = re.compile(r"\d")
_ACCESS_WORDS = re.compile(r"wheel|handicap|accessib|disab|\bada\b", re.I)


def _condition_grounded(condition: str, text: str, stop: frozenset[str]) -> bool:
    """A model-proposed eligibility condition counts only if the request shares a content word with it (by its
    first five letters, so "seniors" meets "senior" and "children" meets "child"): a small model otherwise adds
    conditions nobody asked for ("for seniors", "ID required")."""
    request = {w[:5] for w in fold_key(text).split() if len(w) > 1}
    words = [w for w in fold_key(condition).split() if len(w) > 1 and w not in stop]
    return any(w[:5] in request for w in words)


def _grounded(phrase: str, value: str, text: str) -> bool:
    """Whether the request says the proposed value (or something close to it)."""
    words = fold_key(text)
    for cand in {fold_key(phrase), fold_key(value)}:
        if not cand:
            continue
        if f" {cand} " in f" {words} " or fuzz.partial_ratio(cand, words) >= FUZZY_CUTOFF:
            return True
    return False


def parse_with_llm(
    text: str, index: GazetteerIndex, llm: LLM, *, today: int | None = None
) -> tuple[Constraints, list[str]]:
    """The rule-based parse, plus what a model proposes that validates against the catalog; notes say what was
    dropped and why. An unusable answer leaves the rule-based parse, with a note."""
    rules = parse_request(text, index, today=today)
    day = f"\nToday is {index.words.weekday_names[today]}." if today is not None else ""
    messages = [Message("system", _SYSTEM), Message("user", f"Request: {text}{day}")]
    try:
        completion = llm.complete(messages, ProposedParse)
    except LLMError as exc:
        return rules, [f"the model could not be asked ({exc}); used the rule-based parse"]
    proposed = completion.parsed
    if completion.error or proposed is None:
        why = completion.error or "no parse"
        return rules, [f"the model's parse was unusable ({why}); used the rule-based parse"]
    checked = _Checked(text)
    _check_places(proposed, index, checked)
    _check_weekdays(proposed, index, today, checked)
    _check_time(proposed, index, today, checked)
    _check_others(proposed, index, checked)
    merged = _merged(rules, proposed, checked)
    for cond in proposed.eligibility:
        condition = cond.condition.strip()
        if not condition:
            continue
        if not _condition_grounded(condition, text, index.words.condition_stop):
            checked.drop("condition", condition, "not in the request")
            continue
        matchers.add_semantic(merged, Semantic(condition, cond.negated))
    return merged, checked.notes


@dataclass
class _Checked:
    """The proposed values kept, by kind (values, the phrases that said them), and the notes on those dropped."""

    text: str  # the request
    found: dict[ConstraintKind, tuple[list[str], list[str]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def keep(self, kind: ConstraintKind, values: Iterable[str], said: str) -> None:
        vals, saids = self.found.setdefault(kind, ([], []))
        vals.extend(v for v in values if v not in vals)
        if said not in saids:
            saids.append(said)

    def drop(self, what: str, phrase: str, why: str) -> None:
        self.notes.append(f"model proposed {what} '{phrase}': {why}")


def _check_places(proposed: ProposedParse, index: GazetteerIndex, out: _Checked) -> None:
    """Cities, counties and postal codes the catalog holds and the request says."""
    # (what, kind, the phrases, the catalog's lookup, why a lookup may fail, whether the request says it)
    places = (
        ("city", ConstraintKind.CITY, proposed.cities, index.lookup_city, "not in the catalog", _grounded),
        (
            "county",
            ConstraintKind.COUNTY,
            proposed.counties,
            index.lookup_county,
            "not in the catalog" if index.counties else "the catalog has no counties",
            _grounded,
        ),
        (
            "postal code",
            ConstraintKind.ZIP,
            proposed.zips,
            index.lookup_postal_code,
            "not in the catalog",
            lambda phrase, value, text: value in text,  # a code is said as written
        ),
    )
    for what, kind, phrases, lookup, absent, said in places:
        for phrase in phrases:
            value = lookup(phrase)
            if value is None:
                out.drop(what, phrase, absent)
            elif not said(phrase, value, out.text):
                out.drop(what, phrase, "not in the request")
            else:
                out.keep(kind, [value], phrase)


def _check_weekdays(proposed: ProposedParse, index: GazetteerIndex, today: int | None, out: _Checked) -> None:
    """Days the rules' matcher reads ("on {phrase}") and the request says."""
    for phrase in proposed.weekdays:
        sub = Constraints()
        matchers.weekdays(RequestWords(f"on {phrase}"), index, sub, today, tonight="")
        got = sub.of(ConstraintKind.WEEKDAY)
        if got is None:
            out.drop("weekday", phrase, "not a day" if today is not None else "not a day (or today is not known)")
        elif not _grounded(phrase, phrase, out.text):
            out.drop("weekday", phrase, "not in the request")
        else:
            out.keep(ConstraintKind.WEEKDAY, got.values, phrase)


def _check_time(proposed: ProposedParse, index: GazetteerIndex, today: int | None, out: _Checked) -> None:
    """A time the rules' matcher reads (as written, else after "at") and the request says (or has a number)."""
    if not proposed.time:
        return
    sub = Constraints()
    matchers.times(RequestWords(proposed.time), index, sub, today)
    if sub.of(ConstraintKind.TIME) is None:
        matchers.times(RequestWords(f"at {proposed.time}"), index, sub, today)
    got = sub.of(ConstraintKind.TIME)
    if got is None:
        out.drop("time", proposed.time, "not a time of day")
    elif not _grounded(proposed.time, proposed.time, out.text) and not _NUMBER.search(out.text):
        out.drop("time", proposed.time, "not in the request")
    else:
        out.keep(ConstraintKind.TIME, got.values, proposed.time)


def _check_others(proposed: ProposedParse, index: GazetteerIndex, out: _Checked) -> None:
    """Languages the catalog holds and the request says; service types that match catalog terms; wheelchair
    access when the catalog records it and the request asks for it."""
    for phrase in proposed.languages:
        hit = index.lookup_language(phrase)
        if hit is None:
            out.drop("language", phrase, "not in the catalog")
        elif not _grounded(phrase, hit[0], out.text):
            out.drop("language", phrase, "not in the request")
        else:
            out.keep(ConstraintKind.LANGUAGE, hit[1], phrase)
    for phrase in proposed.service_types:
        terms = index.service_terms(fold_key(phrase).split())
        if not terms:
            out.drop("service type", phrase, "no catalog term matches")
        else:
            out.keep(ConstraintKind.SERVICE_TYPE, terms, phrase)
    if proposed.accessibility:
        values = index.accessibility_values("")
        if not values:
            out.drop("accessibility", "wheelchair access", "the catalog records no accessibility")
        elif not _ACCESS_WORDS.search(out.text):
            out.drop("accessibility", "wheelchair access", "not in the request")
        else:
            out.keep(ConstraintKind.ACCESSIBILITY, values, "accessible")


def _merged(rules: Constraints, proposed: ProposedParse, checked: _Checked) -> Constraints:
    """The rule-based parse with the proposed values it lacks added, kind by kind; one time only, the one the
    words state (a different proposed time is dropped with a note)."""
    merged = Constraints(
        structural=[],
        semantic=list(rules.semantic),
        topic=rules.topic or fold_key(proposed.topic),
        unknown=list(rules.unknown),
    )
    for kind in ConstraintKind:
        ours = rules.of(kind)
        proposed_values, saids = checked.found.get(kind, ([], []))
        if ours is not None and kind is ConstraintKind.TIME and proposed_values:
            if tuple(proposed_values) != ours.values:
                checked.drop("time", saids[0], f"the request says '{ours.said}'")
            proposed_values = []  # one time only: the one the words state
        extra = tuple(v for v in proposed_values if ours is None or v not in ours.values)
        if ours is not None:
            merged.structural.append(Structural(kind, ours.values + extra, ours.said) if extra else ours)
        elif extra:
            merged.structural.append(Structural(kind, extra, "; ".join(saids)))
    return merged
