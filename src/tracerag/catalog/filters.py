"""Structural constraints checked on one record, in Python: the same semantics as `CatalogStore.filter` in SQL.

The assistant's final guard runs `violations` on every record it is about to recommend, whatever found it; the
tests check that both implementations select the same records on the real catalog.

Semantics (strict AND over constraints; OR over the values of one constraint):

- CITY, COUNTY: the record's value equals one of the values (catalog forms, exactly).
- ZIP (a postal code): the record's code equals a value, or its head does (`postal_head`: "33128" matches
  "33128-1966", "SW1A" matches "SW1A 1AA").
- LANGUAGE, ACCESSIBILITY: one of the record's values equals one of the values.
- AREA: one of the record's areas (`record_areas`: its region, city, county, postal code, coverage entries)
  equals one of the values.
- SERVICE_TYPE: one of the record's taxonomy terms is a value or lies under one (see `term_ancestors`).
- WEEKDAY (values "0" = Monday … "6") and TIME (minutes after midnight): for every WEEKDAY constraint and every
  TIME constraint, the record has an opening on one of the weekdays that covers one of the minutes
  (`Opening.covers`). WEEKDAY alone: an opening on one of the days. TIME alone: an opening covering one of the
  minutes on any day. A record without parsed openings meets no hours constraint.

A value that cannot be read (a weekday "x") matches nothing; a constraint without values matches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Sequence
from functools import lru_cache

from tracerag.catalog.model import ConstraintKind, ServiceRecord, Structural

HOURS_KINDS = frozenset({ConstraintKind.WEEKDAY, ConstraintKind.TIME})
_AIRS_HEAD = re.compile(r"[A-Z]{2}")
_POSTAL_SEPARATOR = re.compile(r"[\s\-–]")


def postal_head(code: str, prefix: int | None = None) -> str:
    """The part of a postal code that names a delivery area by itself: the first `prefix` characters when the
    catalog's profile says so, else what comes before the first space or hyphen ("33128-1966" → "33128",
    "SW1A 1AA" → "SW1A", "K1A 0B1" → "K1A"). A request's code is matched on it, so a five-digit request meets a
    ZIP+4 record, with no rule of any one country."""
    code = code.strip()
    if prefix:
        return code[:prefix] if len(code) > prefix else code
    return _POSTAL_SEPARATOR.split(code, maxsplit=1)[0]


@lru_cache(maxsize=1 << 14)
def term_ancestors(term_id: str) -> tuple[str, ...]:
    """The term and every term above it by its code: "BD-1800.2000-220" → itself, "BD-1800.2000", "BD-1800",
    "BD", "B" (AIRS codes: a 2-letter head sits under its first letter). Other ids split at "." and "-" only."""
    term = term_id.strip()
    if not term:
        return ()
    out = [term]
    for i in range(len(term) - 1, 0, -1):
        if term[i] in ".-":
            out.append(term[:i])
    head = out[-1]
    if _AIRS_HEAD.fullmatch(head):
        out.append(head[0])
    return tuple(dict.fromkeys(out))


def record_areas(record: ServiceRecord) -> tuple[str, ...]:
    """Every place the record is in or covers, stripped, once each: its region, city, county, postal code and
    the code's head, then its coverage entries (`ServiceRecord.service_areas`)."""
    own = (record.state, record.city, record.county, record.zip, postal_head(record.zip) if record.zip else "")
    values = (" ".join(v.split()) for v in (*own, *record.service_areas))
    return tuple(dict.fromkeys(v for v in values if v))


def int_values(values: Sequence[str]) -> set[int]:
    out = set()
    for v in values:
        try:
            out.add(int(str(v).strip()))
        except ValueError:
            continue
    return out


def selected(structural: Sequence[Structural], kinds: Collection[ConstraintKind] | None) -> list[Structural]:
    return [s for s in structural if kinds is None or s.kind in kinds]


def violations(
    record: ServiceRecord,
    structural: Sequence[Structural],
    kinds: Collection[ConstraintKind] | None = None,
    *,
    day_names: Sequence[str] = (),
) -> list[str]:
    """One line per constraint the record does not meet (empty: it meets them all). `kinds` limits the check to
    those kinds (None: all), as `CatalogStore.filter` does. `day_names` (0 = Monday) name the days in the lines;
    without them a day is its number."""
    return list(_violations(record, selected(structural, kinds), day_names))


def satisfies(
    record: ServiceRecord, structural: Sequence[Structural], kinds: Collection[ConstraintKind] | None = None
) -> bool:
    """Whether the record meets every structural constraint (of `kinds`, None: all)."""
    return next(_violations(record, selected(structural, kinds), ()), None) is None


def _violations(record: ServiceRecord, constraints: list[Structural], day_names: Sequence[str]) -> Iterator[str]:
    """The lines of the constraints the record does not meet, in their order, then the hours' (each day with
    each time)."""
    for s in constraints:
        check = _CHECKS.get(s.kind)
        line = check(record, s) if check is not None else None
        if line is not None:
            yield line
    days = [s for s in constraints if s.kind is ConstraintKind.WEEKDAY]
    times = [s for s in constraints if s.kind is ConstraintKind.TIME]
    for d, t in hour_pairs(days, times):
        if not _open(record, d, t):
            yield f"hours: not open {_describe(d, t, day_names)}" + ("" if record.openings else " (no parsed hours)")


def _city(record: ServiceRecord, s: Structural) -> str | None:
    return None if record.city in s.values else f"city: {record.city or '(none)'} is not {_wanted(s)}"


def _county(record: ServiceRecord, s: Structural) -> str | None:
    return None if record.county in s.values else f"county: {record.county or '(none)'} is not {_wanted(s)}"


def _zip(record: ServiceRecord, s: Structural) -> str | None:
    if record.zip in s.values or postal_head(record.zip) in s.values:
        return None
    return f"zip: {record.zip or '(none)'} is not {_wanted(s)}"


def _area(record: ServiceRecord, s: Structural) -> str | None:
    areas = record_areas(record)
    return (
        None if any(v in s.values for v in areas) else f"area: {', '.join(areas) or '(none)'} has none of {_wanted(s)}"
    )


def _language(record: ServiceRecord, s: Structural) -> str | None:
    if any(v in s.values for v in record.languages):
        return None
    return f"language: {', '.join(record.languages) or '(none stated)'} has no {_wanted(s)}"


def _accessibility(record: ServiceRecord, s: Structural) -> str | None:
    if any(v in s.values for v in record.accessibility):
        return None
    return f"accessibility: {', '.join(record.accessibility) or '(none stated)'} has no {_wanted(s)}"


def _service_type(record: ServiceRecord, s: Structural) -> str | None:
    if any(a in s.values for t, _ in record.taxonomy for a in term_ancestors(t)):
        return None
    return f"service type: none of the record's terms is or lies under {_wanted(s)}"


# The check of each kind of constraint but the hours (checked together: a day with a time): None when met, else
# the line that says why not.
_CHECKS: dict[ConstraintKind, Callable[[ServiceRecord, Structural], str | None]] = {
    ConstraintKind.CITY: _city,
    ConstraintKind.COUNTY: _county,
    ConstraintKind.ZIP: _zip,
    ConstraintKind.AREA: _area,
    ConstraintKind.LANGUAGE: _language,
    ConstraintKind.ACCESSIBILITY: _accessibility,
    ConstraintKind.SERVICE_TYPE: _service_type,
}


def _wanted(s: Structural) -> str:
    return ", ".join(s.values) or "(no value)"


def hour_pairs(days: list[Structural], times: list[Structural]) -> list[tuple[Structural | None, Structural | None]]:
    if days and times:
        return [(d, t) for d in days for t in times]
    return [(d, None) for d in days] + [(None, t) for t in times]


def _open(record: ServiceRecord, day: Structural | None, time: Structural | None) -> bool:
    weekdays = int_values(day.values) if day is not None else set(range(7))
    minutes: set[int | None] = set(int_values(time.values)) if time is not None else {None}
    return any(o.covers(w, m) for o in record.openings for w in weekdays for m in minutes)


def _describe(day: Structural | None, time: Structural | None, day_names: Sequence[str]) -> str:
    parts = []
    if day is not None:
        days = sorted(int_values(day.values))
        names = [day_names[d] if 0 <= d < len(day_names) else f"day {d}" for d in days]
        parts.append("on " + (" or ".join(names) or "(no day)"))
    if time is not None:
        parts.append(
            "at " + (" or ".join(f"{m // 60:02d}:{m % 60:02d}" for m in sorted(int_values(time.values))) or "?")
        )
    return " ".join(parts)
