"""The catalog's nouns: a service record as the directory states it, and the constraints a request carries.

Plain data, no I/O. A `ServiceRecord` is one service at one location (HSDS `services_at_location`), flattened:
everything a reply may state (name, address, hours, phone) comes from these fields, and nothing else may be
stated. Times are minutes after midnight; weekdays 0 = Monday … 6 = Sunday.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracerag.trail.events import ConstraintKind  # one definition, in the trail that records it (see there)


@dataclass(frozen=True, slots=True)
class Opening:
    weekday: int  # 0 = Monday
    opens: int  # minutes after midnight
    closes: int  # minutes after midnight; closes < opens means open past midnight

    def covers(self, weekday: int, minute: int | None) -> bool:
        if weekday != self.weekday:
            return False
        if minute is None:
            return True
        if self.closes >= self.opens:
            return self.opens <= minute < self.closes
        return minute >= self.opens  # past midnight: the next day's early hours are not claimed


@dataclass(slots=True)
class ServiceRecord:
    id: str  # stable: the service id (plus the location id when a service has several locations)
    service_id: str
    name: str
    organization: str = ""
    description: str = ""
    application_process: str = ""
    fees: str = ""
    eligibility: str = ""
    address: str = ""  # street line(s)
    city: str = ""  # as written in the directory
    state: str = ""
    zip: str = ""  # a string: leading zeros matter
    county: str = ""
    phones: list[str] = field(default_factory=list)
    url: str = ""
    email: str = ""
    languages: list[str] = field(default_factory=list)
    accessibility: list[str] = field(default_factory=list)
    taxonomy: list[tuple[str, str]] = field(default_factory=list)  # (term id, term name)
    openings: list[Opening] = field(default_factory=list)
    hours_text: str = ""  # the schedule as written ("9:00am-5:00pm, Mon-Fri"), kept when it cannot be parsed
    latitude: float | None = None
    longitude: float | None = None
    # What a person needs to judge a record before acting on it (see `catalog.record_details`): the directory's
    # own words and dates, never computed. Dates are ISO ("2010-06-21"), "" when the directory gives none.
    phone_labels: dict[str, str] = field(default_factory=dict)  # number (as in `phones`) -> its type/description
    status: str = ""  # the record's status as the directory writes it ("Active, but do not refer")
    last_verified: str = ""  # when the directory last verified the record
    last_updated: str = ""  # when the directory last changed it (shown when it was never verified)
    temporary_message: str = ""  # a notice for a while ("Closed for repairs until May")
    temporary_message_from: str = ""  # when the notice starts to apply ("" = already)
    temporary_message_until: str = ""  # when it expires ("" = until removed)
    availability: str = ""  # when the service is offered, beyond weekly hours ("November to March", holidays)
    service_areas: list[str] = field(default_factory=list)  # places it serves, as its coverage cells name them

    def text(self) -> str:
        """The free text checked for semantic constraints (and indexed for semantic search)."""
        parts = [self.name, self.description, self.eligibility, self.application_process, self.fees]
        return "\n\n".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class Structural:
    """One exact constraint, matched against the catalog's own values (strict AND with the others).

    `values` are catalog values (a city as the catalog writes it, taxonomy term ids, weekday numbers, minutes);
    several values are alternatives (OR) within one constraint. `said` is what the person wrote."""

    kind: ConstraintKind
    values: tuple[str, ...]
    said: str = ""


@dataclass(frozen=True, slots=True)
class Semantic:
    """A condition checked against each candidate's own text, e.g. "no ID required", "for seniors"."""

    text: str
    negated: bool = False  # "doesn't need ID": the record must not require it


@dataclass(slots=True)
class Constraints:
    structural: list[Structural] = field(default_factory=list)
    semantic: list[Semantic] = field(default_factory=list)
    topic: str = ""  # what is asked for, in words ("food pantry"): ranks candidates when no service type matched
    unknown: list[str] = field(default_factory=list)  # things said that no gazetteer value matched

    def of(self, kind: ConstraintKind) -> Structural | None:
        return next((s for s in self.structural if s.kind is kind), None)

    def has_location(self) -> bool:
        places = (ConstraintKind.CITY, ConstraintKind.COUNTY, ConstraintKind.ZIP, ConstraintKind.AREA)
        return any(s.kind in places for s in self.structural)


@dataclass(slots=True)
class Gazetteer:
    """The catalog's own values, against which every structural constraint is matched (never free text).

    Keys of `cities`, `counties` and `languages` are normalised forms (casefolded, accents and punctuation
    stripped, spaces collapsed); values are the forms the catalog uses, so a filter matches records exactly."""

    cities: dict[str, str] = field(default_factory=dict)
    counties: dict[str, str] = field(default_factory=dict)
    zips: set[str] = field(default_factory=set)
    languages: dict[str, str] = field(default_factory=dict)
    taxonomy: dict[str, str] = field(default_factory=dict)  # term id -> term name
    accessibility: dict[str, str] = field(default_factory=dict)
    areas: dict[str, int] = field(default_factory=dict)  # every record area (`filters.record_areas`) → records
    regions: dict[str, int] = field(default_factory=dict)  # the records' regions (state column) → records
