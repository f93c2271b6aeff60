"""What a person needs to judge a recommended service before acting on it, from the record's own fields.

Every recommendation says who the service is for (its eligibility as written), how to reach it (phones first, each
with the type or description the directory gives it, then the address and the web site), its hours (with the
hours text as written when it names a season: "November to March" read as weekly hours alone would drop the
season), any notice of the record that applies today (a temporary message between its dates, a status other than
"listed", when the service is offered beyond its weekly hours) and when the directory last verified it, flagged
when that is longer ago than the profile's `verified_max_age_days`. Nothing is computed that the record does not
state; a field the record lacks is left out, except the ones a person always needs (address, hours, phone), which
say they are not stated.

Dates are read by `parse_date` at ingest (each reader knows the order its format writes them in) and kept as ISO
dates; replies write them with the word list's month names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.sentences import say
from tracerag.catalog.words import RecordWords, WordList
from tracerag.text import fold_key

__all__ = ["DATE_ORDERS", "RecordDetails", "details_of", "detail_lines", "format_date", "parse_date"]

DATE_ORDERS = ("ymd", "mdy", "dmy")  # the orders of numeric dates a directory may write ("6/21/10" is mdy)
_ISO = re.compile(r"^\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ].*)?$")
_NUMERIC = re.compile(
    r"^\s*(\d{1,4})[/.-](\d{1,2})[/.-](\d{1,4})(?:\s+\d{1,2}:\d{2}(?::\d{2})?(?:\s*[AaPp][Mm])?)?\s*$"
)
_CENTURY_PIVOT = 70  # a two-digit year below this is 20xx, else 19xx (directories' records start in the 1970s)


def parse_date(text: str, order: str = "ymd") -> date | None:
    """The date a cell writes: ISO ("2010-06-21", with a time or not) always, else three numbers in `order`
    ("6/21/10" with "mdy"); a two-digit year is 19xx from 70, else 20xx. None when it is not a date."""
    if order not in DATE_ORDERS:
        raise ValueError(f"date order {order!r}: expected one of {', '.join(DATE_ORDERS)}")
    text = text.strip()
    if not text:
        return None
    m = _ISO.match(text)
    if m:
        year, month, day = (int(g) for g in m.groups())
    else:
        m = _NUMERIC.match(text)
        if m is None:
            return None
        parts = dict(zip(order, (int(g) for g in m.groups()), strict=True))
        year, month, day = parts["y"], parts["m"], parts["d"]
        if year < 100:
            year += 2000 if year < _CENTURY_PIVOT else 1900
    try:
        return date(year, month, day)
    except ValueError:
        return None


def iso(text: str, order: str = "ymd") -> str:
    """`parse_date` as an ISO string, "" when the cell is not a date."""
    found = parse_date(text, order)
    return found.isoformat() if found else ""


def format_date(value: str, words: RecordWords) -> str:
    """An ISO date as the word list writes dates ("21 June 2010"); anything else as it is."""
    found = parse_date(value)
    if found is None:
        return value
    return words.date_format.format(day=found.day, month=words.months[found.month - 1], year=found.year)


@dataclass(frozen=True, slots=True)
class RecordDetails:
    """A recommended record's details, each as the directory states it ("" or empty when it states none)."""

    eligibility: str
    phones: tuple[tuple[str, str], ...]  # (number, its type or description: "" when the directory gives none)
    url: str
    season: str  # the hours text as written, when it names a season and weekly hours were read from it
    notices: tuple[str, ...] = field(default_factory=tuple)  # temporary message, status, availability
    verified: str = ""  # ISO date
    verified_what: str = ""  # "last verified" or "last updated" (never verified: the last change)
    verified_days: int | None = None  # how long ago, in days
    stale: bool = False  # longer ago than the profile's verified_max_age_days


def details_of(record: ServiceRecord, words: RecordWords, *, today: date, max_age_days: int) -> RecordDetails:
    """The details shown for `record` on `today` (a temporary message applies between its dates)."""
    phones = tuple((p.strip(), record.phone_labels.get(p, "").strip()) for p in record.phones if p.strip())
    notices: list[str] = []
    if record.temporary_message.strip() and _applies(record, today):
        notices.append(f"{say('label_notice')}: {record.temporary_message.strip()}")
    if record.status.strip() and fold_key(record.status) not in words.listed_statuses:
        notices.append(f"{say('label_status')}: {record.status.strip()}")
    if record.availability.strip():
        notices.append(f"{say('label_availability')}: {record.availability.strip()}")
    season = ""
    if record.openings and _names_season(record.hours_text, words):
        season = record.hours_text.strip()
    verified, what = (
        (record.last_verified, "last verified") if record.last_verified else (record.last_updated, "last updated")
    )
    when = parse_date(verified) if verified else None
    days = (today - when).days if when else None
    return RecordDetails(
        eligibility="" if fold_key(record.eligibility) in words.empty_cells else record.eligibility.strip(),
        phones=phones,
        url=record.url.strip(),
        season=season,
        notices=tuple(notices),
        verified=when.isoformat() if when else "",
        verified_what=what if when else "",
        verified_days=days,
        stale=days is not None and days > max_age_days,
    )


def detail_lines(details: RecordDetails, words: RecordWords, *, indent: str = "   ") -> list[str]:
    """The lines a templated reply adds for a record after its name, address and hours: season, notices, who it
    is for, the web site, when it was last verified."""
    lines = []
    if details.season:
        lines.append(f"{indent}{say('label_season')}: {_one_line(details.season)}")
    lines += [f"{indent}{n}" for n in details.notices]
    if details.eligibility:
        lines.append(f"{indent}{say('label_for')}: {_one_line(details.eligibility)}")
    if details.url:
        lines.append(f"{indent}{say('label_website')}: {details.url}")
    if details.verified:
        lines.append(f"{indent}{verified_phrase(details, words)}")
    return lines


def phone_phrase(details: RecordDetails) -> str:
    """ "415-555-0100 (Hotline), 415-555-0101" ("" without phones)."""
    return ", ".join(f"{n} ({label})" if label else n for n, label in details.phones)


def verified_phrase(details: RecordDetails, words: RecordWords) -> str:
    """ "Last verified 21 June 2010: over a year ago, call to check" ("" when the record has no date)."""
    if not details.verified:
        return ""
    text = f"{details.verified_what.capitalize()} {format_date(details.verified, words)}"
    if details.stale and details.verified_days is not None:
        years = details.verified_days // 365
        ago = "over a year ago" if years <= 1 else f"over {years} years ago"
        text += f": {ago}, call to check"
    return text


def _applies(record: ServiceRecord, today: date) -> bool:
    start = parse_date(record.temporary_message_from) if record.temporary_message_from else None
    end = parse_date(record.temporary_message_until) if record.temporary_message_until else None
    return (start is None or start <= today) and (end is None or today <= end)


def _names_season(hours_text: str, words: RecordWords) -> bool:
    return bool(words.season & set(fold_key(hours_text).split()))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def words_of(words: WordList | None) -> RecordWords:
    """The record words of a word list (the packaged English one when None)."""
    return (words or WordList.load()).records
