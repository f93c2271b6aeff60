"""Historical dates: partial ISO dates kept as the range they cover, and dates found inside a query.

A document's date is `YYYY`, `YYYY-MM` or `YYYY-MM-DD`, or a year with unspecified digits as EDTF (ISO 8601-2)
writes it: `18XX` (the 1800s), `189X` (the 1890s). An unspecified month or day narrows nothing (`1887-XX` is
`1887`, `1887-05-XX` is `1887-05`), and EDTF's uncertain / approximate marks (`1887?`, `1887~`, `1887%`) keep the
range of the date they qualify.
"""

from __future__ import annotations

import calendar
import re
from datetime import date
from typing import NamedTuple

from tracerag.model import DateRange

_ISO = re.compile(r"^\s*(\d{3,4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?\s*$")
# EDTF: a 4-character year whose last digits are unspecified, or unspecified month/day, then an optional qualifier.
_EDTF = re.compile(r"^\s*(\d{4}|\d{1,3}[Xx]{1,3})(?:-(\d{1,2}|[Xx]{2})(?:-(\d{1,2}|[Xx]{2}))?)?[?~%]?\s*$")
_UNSPECIFIED_YEAR = re.compile(r"^[Xx]{4}$")

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
# "1880-1890", "1880–1890", "1880/1890", "1880 and 1890", "entre 1880 et 1890": two years, a dash or one short word
_YEAR_RANGE = re.compile(r"(?<![\d-])(1[5-9]\d\d|20\d\d)(?:\s*[-–—/]\s*|\s+\w{1,5}\s+)(1[5-9]\d\d|20\d\d)(?![\d-])")


def parse_partial_date(value: str) -> DateRange:
    """`1887` → 1887-01-01..1887-12-31; `1887-05` → the month; `1887-05-17` → that day; `189X` → the 1890s.

    Raises ValueError naming the value when it is not such a date.
    """
    m = _ISO.match(value or "")
    if not m:
        return _parse_edtf(value)
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


def _parse_edtf(value: str) -> DateRange:
    """A date with unspecified digits or a qualifier (see the module docstring); ValueError if it is none."""
    m = _EDTF.match(value or "")
    if not m:
        raise ValueError(f"unparseable date {value!r} (expected YYYY, YYYY-MM or YYYY-MM-DD)")
    year, month, day = m.groups()
    if not year.isdigit():
        if (month is not None and month.isdigit()) or (day is not None and day.isdigit()):
            raise ValueError(f"unparseable date {value!r}: a month or day in an unspecified year is no range")
        digits = year.rstrip("Xx")
        span = 10 ** (4 - len(digits))
        first = int(digits) * span
        return DateRange(f"{first:04d}-01-01", f"{first + span - 1:04d}-12-31")
    if month is None or not month.isdigit():
        return parse_partial_date(year)
    if day is None or not day.isdigit():
        return parse_partial_date(f"{year}-{month}")
    return parse_partial_date(f"{year}-{month}-{day}")


def _canonical_edtf(value: str) -> str:
    """`18xx` → `18XX`, `1887-XX` → `1887`, `1887-05-XX?` → `1887-05`: the shortest form of the same range."""
    parts = value.rstrip("?~%").split("-")
    if not parts[0].isdigit():
        return parts[0].upper()
    known = [parts[0]]
    for part in parts[1:]:
        if not part.isdigit():
            break
        known.append(part)
    return normalise_date("-".join(known)) or ""


def normalise_date(value: str | None) -> str | None:
    """Canonical partial date (`1887-5` → `1887-05`, `18xx` → `18XX`), or None for empty input or a wholly
    unspecified year (`XXXX`); ValueError if bad."""
    if value is None or not str(value).strip():
        return None
    value = str(value).strip()
    # Full timestamps ("1887-05-17T00:00:00") keep their day.
    if "T" in value:
        value = value.split("T", 1)[0]
    if _UNSPECIFIED_YEAR.match(value):
        return None  # stated unknown, like "NA": undated, not malformed
    if not _ISO.match(value):
        parse_partial_date(value)  # raises for what is not a date
        return _canonical_edtf(value)
    rng = parse_partial_date(value)
    parts = value.split("-")
    if len(parts) == 1:
        return rng.start[:4]
    if len(parts) == 2:
        return rng.start[:7]
    return rng.start


def date_parts(value: str | None) -> list[int] | None:
    """`[y]`, `[y, m]` or `[y, m, d]`: a partial date as the numbers a citation format holds (CSL-JSON's
    `date-parts`, RIS's `PY`/`DA`). None for no date, one that is not a date, or a year with unspecified digits
    (`18XX` is a range, which no list of numbers says; a qualifier such as `1887?` keeps its digits)."""
    try:
        canonical = normalise_date(value)
    except ValueError:
        return None
    if canonical is None or not _ISO.match(canonical):
        return None
    return [int(part) for part in canonical.split("-")]


class QueryDate(NamedTuple):
    """A date written in a query: the range it covers, the words that said it, and where they stand
    (`query[start:end] == said`), so a caller can tell a date the query states from one inside quoted text."""

    range: DateRange
    said: str
    start: int
    end: int


def find_query_date(query: str) -> QueryDate | None:
    """The most specific date written in a query, with the text that expressed it; None if there is none.

    Two years joined by a dash or one short word ("1880-1890", "1880 and 1890", "1880 bis 1890") are the span
    between them: the joining word is not read, so no language's words are needed. Whether the date is a
    constraint the query states, or a year inside a pasted passage, is the date channel's question.
    """
    m = _YEAR_RANGE.search(query)
    if m and int(m.group(1)) < int(m.group(2)):
        return QueryDate(DateRange(f"{m.group(1)}-01-01", f"{m.group(2)}-12-31"), m.group(0), m.start(), m.end())
    for pattern, build in (
        (_ISO_IN_TEXT, lambda m: f"{m.group(1)}-{m.group(2)}" + (f"-{m.group(3)}" if m.group(3) else "")),
        (_DAY_MONTH_YEAR, lambda m: f"{m.group(3)}-{_MONTHS[m.group(2).lower()]:02d}-{int(m.group(1)):02d}"),
        (_MONTH_DAY_YEAR, lambda m: f"{m.group(3)}-{_MONTHS[m.group(1).lower()]:02d}-{int(m.group(2)):02d}"),
        (_MONTH_YEAR, lambda m: f"{m.group(2)}-{_MONTHS[m.group(1).lower()]:02d}"),
    ):
        m = pattern.search(query)
        if m:
            try:
                return QueryDate(parse_partial_date(build(m)), m.group(0), m.start(), m.end())
            except ValueError:
                continue
    m = _DECADE.search(query)
    if m:
        y = int(m.group(1))
        return QueryDate(DateRange(f"{y:04d}-01-01", f"{y + 9:04d}-12-31"), m.group(0), m.start(), m.end())
    m = _YEAR.search(query)
    if m:
        return QueryDate(parse_partial_date(m.group(1)), m.group(0), m.start(), m.end())
    return None
