"""Historical dates: partial ISO dates kept as the range they cover, and dates found inside a query."""

from __future__ import annotations

import calendar
import re
from datetime import date

from tracerag.model import DateRange

_ISO = re.compile(r"^\s*(\d{3,4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?\s*$")

_MONTHS = {
    # fr
    "janvier": 1,
    "février": 2,
    "fevrier": 2,
    "mars": 3,
    "avril": 4,
    "mai": 5,
    "juin": 6,
    "juillet": 7,
    "août": 8,
    "aout": 8,
    "septembre": 9,
    "octobre": 10,
    "novembre": 11,
    "décembre": 12,
    "decembre": 12,
    # de
    "januar": 1,
    "jänner": 1,
    "februar": 2,
    "märz": 3,
    "maerz": 3,
    "april": 4,
    "juni": 6,
    "juli": 7,
    "august": 8,
    "oktober": 10,
    "dezember": 12,
    # en
    "january": 1,
    "february": 2,
    "march": 3,
    "may": 5,
    "june": 6,
    "july": 7,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
}
_MONTH_ALT = "|".join(sorted(_MONTHS, key=len, reverse=True))
# "17 mai 1887", "17. Mai 1887", "May 17, 1887", "mai 1887", "1887-05-17", "1887-05", "1880s", "1887"
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:er|\.|st|nd|rd|th)?\s+({_MONTH_ALT})\s+(1[5-9]\d\d|20\d\d)\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH_ALT})\s+(\d{{1,2}}),?\s+(1[5-9]\d\d|20\d\d)\b", re.I)
_MONTH_YEAR = re.compile(rf"\b({_MONTH_ALT})\s+(1[5-9]\d\d|20\d\d)\b", re.I)
_ISO_IN_TEXT = re.compile(r"\b(1[5-9]\d\d|20\d\d)-(\d\d)(?:-(\d\d))?\b")
_DECADE = re.compile(r"\b(1[5-9]\d0|20\d0)(?:s|er\b|'s)")
_YEAR = re.compile(r"(?<![\d-])(1[5-9]\d\d|20\d\d)(?![\d-])")


def parse_partial_date(value: str) -> DateRange:
    """`1887` → 1887-01-01..1887-12-31; `1887-05` → the month; `1887-05-17` → that day.

    Raises ValueError naming the value when it is not such a date.
    """
    m = _ISO.match(value or "")
    if not m:
        raise ValueError(f"unparseable date {value!r} (expected YYYY, YYYY-MM or YYYY-MM-DD)")
    y = int(m.group(1))
    if m.group(2) is None:
        return DateRange(f"{y:04d}-01-01", f"{y:04d}-12-31")
    mo = int(m.group(2))
    if not 1 <= mo <= 12:
        raise ValueError(f"unparseable date {value!r}: month {mo} out of range")
    last = calendar.monthrange(y, mo)[1]
    if m.group(3) is None:
        return DateRange(f"{y:04d}-{mo:02d}-01", f"{y:04d}-{mo:02d}-{last:02d}")
    d = int(m.group(3))
    try:
        date(y, mo, d)
    except ValueError:
        raise ValueError(f"unparseable date {value!r}: no such day") from None
    iso = f"{y:04d}-{mo:02d}-{d:02d}"
    return DateRange(iso, iso)


def normalise_date(value: str | None) -> str | None:
    """Canonical partial ISO form (`1887-5` → `1887-05`), or None for empty input; ValueError if bad."""
    if value is None or not str(value).strip():
        return None
    value = str(value).strip()
    # Full timestamps ("1887-05-17T00:00:00") keep their day.
    if "T" in value:
        value = value.split("T", 1)[0]
    rng = parse_partial_date(value)
    parts = value.split("-")
    if len(parts) == 1:
        return rng.start[:4]
    if len(parts) == 2:
        return rng.start[:7]
    return rng.start


def find_query_date(query: str) -> tuple[DateRange, str] | None:
    """The most specific date written in a query, with the text that expressed it; None if there is none.

    Used by the date channel, which must stay silent when a query carries no date.
    """
    for pattern, build in (
        (_ISO_IN_TEXT, lambda m: f"{m.group(1)}-{m.group(2)}" + (f"-{m.group(3)}" if m.group(3) else "")),
        (_DAY_MONTH_YEAR, lambda m: f"{m.group(3)}-{_MONTHS[m.group(2).lower()]:02d}-{int(m.group(1)):02d}"),
        (_MONTH_DAY_YEAR, lambda m: f"{m.group(3)}-{_MONTHS[m.group(1).lower()]:02d}-{int(m.group(2)):02d}"),
        (_MONTH_YEAR, lambda m: f"{m.group(2)}-{_MONTHS[m.group(1).lower()]:02d}"),
    ):
        m = pattern.search(query)
        if m:
            try:
                return parse_partial_date(build(m)), m.group(0)
            except ValueError:
                continue
    m = _DECADE.search(query)
    if m:
        y = int(m.group(1))
        return DateRange(f"{y:04d}-01-01", f"{y + 9:04d}-12-31"), m.group(0)
    m = _YEAR.search(query)
    if m:
        return parse_partial_date(m.group(1)), m.group(0)
    return None
