"""A recommendation as a card: the record's own fields a person acts on, and why each constraint of the request
holds, with the record's evidence.

A structural constraint (place, service type, day and time, language, accessibility) holds by one of the record's
own values: the card names the field and quotes that value (the city as the directory writes it, the taxonomy
term "Food Pantries (BD-1800.2000)", the openings that cover the day asked). A condition ("no ID required") holds
by the span of the record's text that `catalog.evidence` found, or is not stated there (`holds=None`, never passed
off as met). The reasons are computed from the record, with `filters`' semantics, never read back from a reply's
words; a reason that does not hold would be a bug upstream (the assistant recommends only records meeting every
structural constraint), and is shown as such rather than hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tracerag.catalog.filters import int_values, postal_head, term_ancestors
from tracerag.catalog.model import ConstraintKind, Constraints, Opening, ServiceRecord, Structural
from tracerag.catalog.record_details import RecordDetails, verified_phrase
from tracerag.catalog.reply import NOT_STATED, Recommendation, constraint_label, format_address, format_hours
from tracerag.catalog.words import WordList

__all__ = ["Card", "Reason", "card_of"]

CONDITION = "condition"  # a Reason's kind for a semantic constraint (structural ones carry their ConstraintKind)


@dataclass(frozen=True, slots=True)
class Reason:
    """Why one constraint of the request holds for one record."""

    kind: str  # a ConstraintKind value, or CONDITION
    label: str  # the constraint as the person said it ("food pantry", "Monday", "no ID required")
    holds: bool | None  # None: the record's text does not state the condition (conditions only)
    field: str  # the record's field that shows it: city, county, zip, taxonomy, openings, languages, ..., text
    quote: str  # that field's value as the directory states it, or the span of the record's text; "" if none
    span: tuple[int, int] | None = None  # for a condition: where `quote` lies in record.text()
    reason: str = ""  # a condition checker's reason, in words


@dataclass(frozen=True, slots=True)
class Card:
    id: str
    name: str
    organization: str
    address: str
    hours: str
    phones: tuple[str, ...]
    url: str
    reasons: tuple[Reason, ...] = field(default_factory=tuple)
    details: RecordDetails | None = None  # who it is for, phone kinds, notices, last verified (`record_details`)
    verified: str = ""  # "Last verified 21 June 2010: over 16 years ago, call to check"

    @property
    def open_conditions(self) -> list[str]:
        """The conditions the directory does not state for this record."""
        return [r.label for r in self.reasons if r.holds is None]


def card_of(rec: Recommendation, constraints: Constraints, words: WordList) -> Card:
    """The card of one recommendation of a turn whose constraints were `constraints`."""
    r = rec.record
    reasons = [_structural(r, s, constraints.structural, words) for s in constraints.structural]
    reasons += [
        Reason(
            kind=CONDITION,
            label=constraint_label(ev.semantic),
            holds=ev.passed,
            field="text",
            quote=ev.quote,
            span=ev.span,
            reason=ev.reason if ev.quote or ev.passed is not None else NOT_STATED,
        )
        for ev in rec.evidence
    ]
    return Card(
        id=r.id,
        name=r.name.strip() or NOT_STATED,
        organization=r.organization.strip(),
        address=format_address(r),
        hours=format_hours(r.openings, r.hours_text, words=words),
        phones=tuple(p.strip() for p in r.phones if p.strip()),
        url=r.url.strip(),
        reasons=tuple(reasons),
        details=(details := rec.details_or_default(words)),
        verified=verified_phrase(details, words.records),
    )


def _structural(r: ServiceRecord, s: Structural, every: Sequence[Structural], words: WordList) -> Reason:
    label = s.said or ", ".join(s.values)
    quote: list[str]
    if s.kind is ConstraintKind.CITY:
        name, quote = "city", [r.city] if r.city in s.values else []
    elif s.kind is ConstraintKind.COUNTY:
        name, quote = "county", [r.county] if r.county in s.values else []
    elif s.kind is ConstraintKind.ZIP:
        name, quote = "zip", [r.zip] if r.zip in s.values or postal_head(r.zip) in s.values else []
    elif s.kind is ConstraintKind.LANGUAGE:
        name, quote = "languages", [v for v in r.languages if v in s.values]
    elif s.kind is ConstraintKind.ACCESSIBILITY:
        name, quote = "accessibility", [v for v in r.accessibility if v in s.values]
    elif s.kind is ConstraintKind.SERVICE_TYPE:
        name = "taxonomy"
        quote = [f"{n} ({t})" if n else t for t, n in r.taxonomy if any(a in s.values for a in term_ancestors(t))]
    else:  # WEEKDAY or TIME: the openings that cover it, under the other hours constraint if there is one
        name = "openings"
        covering = _covering(r.openings, s, every)
        quote = [format_hours(covering, words=words)] if covering else []
    return Reason(kind=str(s.kind), label=label, holds=bool(quote), field=name, quote="; ".join(quote))


def _covering(openings: Sequence[Opening], s: Structural, every: Sequence[Structural]) -> list[Opening]:
    """The openings that meet hours constraint `s` together with the other kind's (a day and a time asked together
    are met by one opening, as `filters` checks them); no constraint of the other kind: any day, any time."""
    other = ConstraintKind.TIME if s.kind is ConstraintKind.WEEKDAY else ConstraintKind.WEEKDAY
    others = {v for c in every if c.kind is other for v in int_values(c.values)}
    mine = int_values(s.values)
    if not mine:
        return []  # a value that cannot be read matches nothing, as in `filters`
    days, times = (mine, others) if s.kind is ConstraintKind.WEEKDAY else (others, mine)
    minutes: set[int | None] = set(times) if times else {None}
    return [o for o in openings if any(o.covers(d, m) for d in (days or range(7)) for m in minutes)]
