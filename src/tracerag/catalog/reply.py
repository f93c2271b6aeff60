"""Replies that state only what the directory states, written from each record's own fields.

`templated_reply` lists every recommendation with its name, address, hours and phones and, for each condition
the person gave, the quote that decides it or that the directory does not state it. Records whose text does not
state a condition are never passed off as meeting it: they come after the records that do, under a line saying
which conditions their text leaves open, and when no record states them the reply says so first. `no_match_reply`
answers a request for what the directory holds nothing like. When nothing fits (no match, none found), the reply
names the directory's help line if its profile has one. A model-worded reply is `catalog.generated_reply`. The
sentences are English, in code, for now (the word lists hold words, not sentences).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from tracerag.catalog.evidence import Evidence
from tracerag.catalog.model import ConstraintKind, Constraints, Opening, Semantic, ServiceRecord
from tracerag.catalog.profile import CatalogProfile
from tracerag.catalog.record_details import RecordDetails, detail_lines, details_of, phone_phrase, words_of
from tracerag.catalog.sentences import say
from tracerag.catalog.words import WordList

__all__ = [
    "NOT_STATED",
    "Recommendation",
    "constraint_label",
    "format_address",
    "format_hours",
    "no_match_reply",
    "place_phrase",
    "templated_reply",
]

NOT_STATED = "not stated in the directory"
_DASH = "\u2013"


@dataclass(slots=True)
class Recommendation:
    record: ServiceRecord
    evidence: list[Evidence] = field(default_factory=list)  # one per semantic constraint, in the request's order
    details: RecordDetails | None = None  # set by the assistant for its day and profile (`catalog.record_details`)

    def details_or_default(self, words: WordList | None = None) -> RecordDetails:
        """The details the assistant set, else those of today under a default profile."""
        if self.details is not None:
            return self.details
        max_age = CatalogProfile().verified_max_age_days
        return details_of(self.record, words_of(words), today=date.today(), max_age_days=max_age)

    @property
    def unstated(self) -> list[Evidence]:
        """The conditions the record's text does not settle (neither met nor failed)."""
        return [e for e in self.evidence if e.passed is None]


# ------------------------------------------------------------------------------------------------ fields


def _clock(minute: int) -> str:
    return f"{minute // 60}:{minute % 60:02d}"


def format_hours(openings: Sequence[Opening], hours_text: str = "", *, words: WordList | None = None) -> str:
    """Opening hours grouped by day runs: "Mon–Fri 9:00–17:00; Sat 10:00–14:00" (the word list's short day
    names, English by default).

    Days with the same hours are joined ("Mon, Wed 9:00–12:00"); several openings on one day are listed
    ("Mon 9:00–12:00, 13:00–17:00"). Without parsed openings: the schedule as written, else NOT_STATED."""
    if not openings:
        return hours_text.strip() or say("not_stated")
    day_names = (words or WordList.load()).weekday_short
    by_day: dict[int, list[tuple[int, int]]] = {}
    for o in openings:
        if 0 <= o.weekday < 7:
            by_day.setdefault(o.weekday, []).append((o.opens, o.closes))
    if not by_day:
        return hours_text.strip() or say("not_stated")
    keys = {d: tuple(sorted(set(v))) for d, v in by_day.items()}
    runs: list[tuple[int, int, tuple[tuple[int, int], ...]]] = []  # (first day, last day, hours)
    for day in range(7):
        if day not in keys:
            continue
        if runs and runs[-1][1] == day - 1 and runs[-1][2] == keys[day]:
            runs[-1] = (runs[-1][0], day, keys[day])
        else:
            runs.append((day, day, keys[day]))
    groups: dict[tuple[tuple[int, int], ...], list[str]] = {}
    for first, last, hours in runs:
        sep = _DASH if last > first + 1 else ", "
        days = day_names[first] if first == last else f"{day_names[first]}{sep}{day_names[last]}"
        groups.setdefault(hours, []).append(days)
    parts = []
    for hours, day_runs in groups.items():
        times = ", ".join(
            "24 hours" if (a, b) in ((0, 0), (0, 1440)) else f"{_clock(a)}{_DASH}{_clock(b)}" for a, b in hours
        )
        parts.append(f"{', '.join(day_runs)} {times}")
    return "; ".join(parts)


def format_address(record: ServiceRecord) -> str:
    """ "address, city, state postal code" from the fields present; NOT_STATED when there are none."""
    state_zip = " ".join(p for p in (record.state.strip(), record.zip.strip()) if p)
    parts = [p for p in (record.address.strip(), record.city.strip(), state_zip) if p]
    return ", ".join(parts) or say("not_stated")


def constraint_label(semantic: Semantic | None) -> str:
    if semantic is None:
        return "condition"
    if semantic.negated:
        return semantic.text if semantic.text.lower().startswith(("no ", "not ")) else f"no {semantic.text}"
    return semantic.text


def _evidence_line(ev: Evidence) -> str:
    label = constraint_label(ev.semantic)
    verdict = say({True: "yes", False: "no", None: "unclear"}[ev.passed])
    if not ev.quote:
        return f"{label}: {say('not_stated')}" if ev.passed is None else f"{label}: {verdict} ({ev.reason})"
    return say("evidence_quote", label=label, verdict=verdict, quote=ev.quote)


def _item(
    i: int, rec: Recommendation, words: WordList | None, phone_first: bool = False, note: str | None = None
) -> list[str]:
    r = rec.record
    name = r.name.strip() or say("not_stated")
    org = r.organization.strip()
    lines = ["", f"{i}. {name}" + (f" ({org})" if org and org.casefold() != name.casefold() else "")]
    details = rec.details_or_default(words)
    lines.append(f"   {say('label_phone')}: {phone_phrase(details) or say('not_stated')}")  # how to reach it first
    if note:  # an urgent request: whether it can be reached now (`catalog.urgency`)
        lines.append(f"   {say('label_now')}: {note}")
    lines.append(f"   {say('label_address')}: {format_address(r)}")
    lines.append(f"   {say('label_hours')}: {format_hours(r.openings, r.hours_text, words=words)}")
    lines.extend(detail_lines(details, words_of(words)))
    lines.extend(f"   {_evidence_line(ev)}" for ev in rec.evidence)
    return lines


def _open_conditions(recommendations: Sequence[Recommendation]) -> tuple[str, int]:
    labels = dict.fromkeys(constraint_label(e.semantic) for rec in recommendations for e in rec.unstated)
    return say("or").join(f"'{label}'" for label in labels), len(labels)


def templated_reply(
    recommendations: Sequence[Recommendation],
    constraints_summary: str,
    *,
    none_found_reason: str | None = None,
    words: WordList | None = None,
    help_line: str | None = None,
    phone_first: bool = False,
    notes: Mapping[str, str | None] | None = None,
) -> str:
    """Every recommendation with its name, address, hours, phones and, per semantic constraint, the quote that
    decides it or NOT_STATED. Records that meet every condition come first; those whose text leaves one open
    follow under a line naming it ("... but the directory does not state: 'for veterans'"), and when none meets
    every condition the reply opens with that. With no recommendations: a "none found" message naming the
    constraints, and the directory's help line when its profile has one. `phone_first` puts each phone number
    right under the name; `notes` adds a line to a record by its id (why it can be reached now)."""
    summary = constraints_summary.strip() or say("your_request")
    if not recommendations:
        text = say("none_found", summary=summary)
        if none_found_reason:
            text += f" {none_found_reason.strip()}"
        return text + help_line_sentence(help_line)
    stated = [r for r in recommendations if not r.unstated]
    open_ = [r for r in recommendations if r.unstated]
    lines: list[str] = []
    if stated:
        lines.append(say("services_matching", summary=summary))
        for i, rec in enumerate(stated, 1):
            lines.extend(_item(i, rec, words, phone_first, (notes or {}).get(rec.record.id)))
    if open_:
        conditions, n = _open_conditions(open_)
        if stated:
            lines += ["", say("also_unstated", conditions=conditions)]
        else:
            lines.append(
                say("none_states_one" if n == 1 else "none_states_many", conditions=conditions, summary=summary)
            )
        for i, rec in enumerate(open_, len(stated) + 1):
            lines.extend(_item(i, rec, words, phone_first, (notes or {}).get(rec.record.id)))
    return "\n".join(lines)


def place_phrase(constraints: Constraints) -> str:
    """The location as the catalog spells it ("in Lakeside" for "Lakesde", "in postal code 33157"), or ""."""
    places = []
    for s in constraints.structural:
        if s.kind in (ConstraintKind.CITY, ConstraintKind.COUNTY):
            places.append(say("or").join(s.values))
        elif s.kind is ConstraintKind.ZIP:
            places.append(say("postal_code", codes=say("or").join(s.values)))
        elif s.kind is ConstraintKind.AREA:
            places.append(s.said or say("or").join(s.values))
    return say("in_place", places=say("or").join(places)) if places else ""


def no_match_reply(topic: str, place: str, why: str = "", help_line: str | None = None) -> str:
    """The reply when the catalog holds nothing like what was asked: it says so, with the topic as asked and the
    place as the catalog spells it, and recommends nothing (an unrelated service is a wrong answer, not a partial
    one). `why` is the evidence in a sentence; the directory's help line, when its profile has one, ends it."""
    text = say("nothing_matches", topic=topic.strip(), place=f" {place}" if place else "")
    text = f"{text} {why.strip()}" if why.strip() else text
    return text + help_line_sentence(help_line)


def help_line_sentence(help_line: str | None) -> str:
    """ " For other help, contact the directory's help line: 211." (with its leading space), or "" when the profile
    names none: a help line is the directory's own fact (`CatalogProfile.help_line`), never assumed."""
    line = " ".join((help_line or "").split())
    return say("help_line", line=line) if line else ""
