"""Opening hours as directories write them, read into `Opening`s (weekday, minutes after midnight).

Two sources: HSDS `regular_schedules` rows (weekday, opens_at, closes_at) and free text such as
"9:00am-5:00pm, Mon-Fri" or "Mon-Fri 8am-5pm; Sat 9am-1pm". The text reader is deliberately conservative: what it
cannot read with confidence (meeting times without an end, "1st and 3rd Monday", "closed ...", "except ...", a
dated one-off, "9:30pm-5:00pm") gives no opening, and the caller keeps the text as written. A filter on hours then
never claims an opening the directory did not state.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from tracerag.catalog.model import Opening
from tracerag.catalog.words import WordList

DAY = 24 * 60
Span = tuple[int, int]  # opens, closes: minutes after midnight
# A clause read as tokens: days named ("D", the weekday numbers, Monday 0) or hours given ("T", one span).
Token = tuple[Literal["D"], set[int]] | tuple[Literal["T"], Span]


@dataclass(frozen=True)
class _Group:
    """Tokens of one kind side by side: the days named together ("Mon, Wed, Fri") or the hours given together."""

    kind: Literal["D", "T"]
    days: frozenset[int] = frozenset()
    spans: tuple[Span, ...] = ()

    @staticmethod
    def of(token: Token) -> _Group:
        if token[0] == "D":
            return _Group("D", days=frozenset(token[1]))
        return _Group("T", spans=(token[1],))

    def merged(self, other: _Group) -> _Group:
        spans = self.spans + tuple(r for r in other.spans if r not in self.spans)
        return _Group(self.kind, self.days | other.days, spans)


# A time: "9:00am", "9am", "9 a.m.", "9:00a", "830am", "17:30", "noon", "midnight"; "8:00m" (a typo) reads as bare.
_TIME = r"(?:noon|midnight|\d{3,4}\s*[ap]\.?\s*m\.?|\d{1,2}(?::\d{1,2})?(?:\s*[ap]\.?\s*m\.?|\s*[ap]\b|m\b)?)"
_TIME_RE = re.compile(
    r"(?P<noon>noon)|(?P<midnight>midnight)"
    r"|(?:(?P<hc>\d{1,2})(?P<mc>\d{2})(?=\s*[ap])|(?P<h>\d{1,2})(?::(?P<m>\d{1,2}))?)\s*"
    r"(?:(?P<ampm>[ap])\.?\s*(?:m\.?)?|m(?![a-z]))?",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=8)
def _patterns(words: WordList) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The schedule tokens and the clauses read as unsure, with the word list's day names (compiled once)."""
    day = words.day_pattern + r"\b\.?"
    token = re.compile(
        r"(?P<allday>\b24\s*(?:hours|hrs|h\b|/\s*7)|\baround the clock\b)"
        r"|(?P<alldays>\b(?:7|seven) days(?: a week| per week)?\b|\bdaily\b|\bevery ?day\b)"
        r"|(?P<weekdays>\bweekdays\b|\bm\s*-\s*f\b)"
        r"|(?P<weekends>\bweekends?\b)"
        rf"|(?P<dayrange>\b{day}(?:\s*(?:-+|–)\s*|\s+(?:to|through|thru)\s+){day})"
        rf"|(?P<day>\b{day})"
        rf"|(?P<range>(?<![\w:]){_TIME}(?:\s*(?:-\s*)+|\s+(?:to|until|till|thru|through)\s+|\s+){_TIME}(?![\w:]))"
        rf"|(?P<point>(?<![\w:]){_TIME}(?![\w:]))",
        re.IGNORECASE,
    )
    # Clauses that only hold on some days, or that list days a service is NOT open: no opening is read from them.
    unsure = re.compile(
        r"\b\d+(?:st|nd|rd|th)\b|\b(?:first|second|third|fourth|fifth|last|every other|alternate|alternating|"
        r"bi-?weekly|monthly|of (?:the|each|every) month|clos(?:e|ed|es|ing))\b|\bexcept\b.*" + day + "|"
        r"\b(?:19|20)\d\d\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d",
        re.IGNORECASE,
    )
    return token, unsure


_PAREN = re.compile(r"\([^()]*\)")
_DASHES = re.compile("[\u2010-\u2015\u2212]|GÇ[ôö]")


def parse_time(text: str) -> int:
    """Minutes after midnight: "9:00am" → 540, "12:00pm" → 720, "12am" → 0, "17:30" → 1050, "noon", "midnight".

    A bare hour ("9:00") is read on the 24-hour clock. Raises ValueError when `text` is not one time."""
    parsed = read_clock(text.strip())
    if parsed is None or parsed[2]:
        raise ValueError(f"not a time: {text!r}")
    return parsed[0]


def parse_range(opens: str, closes: str) -> tuple[int, int] | None:
    """(opens, closes) in minutes from two written times, a missing am/pm inferred from the other side
    ("6:00"-"8:00pm" → 18:00-20:00, "9:00am"-"5:00" → 9:00-17:00); None when either cannot be read,
    or for "9:30pm"-"5:00pm" (a typo, not 19 hours past midnight).

    Trailing words after a time are ignored ("5:00pm Mon", "12:00pm (dispensing)"). A close at midnight is 1440."""
    a, b = read_clock(_PAREN.sub(" ", opens).strip()), read_clock(_PAREN.sub(" ", closes).strip())
    if a is None or b is None:
        return None
    return infer_range(a[:2], b[:2])


def parse_hours_text(text: str, words: WordList | None = None) -> list[Opening]:
    """The openings a free-text schedule states, sorted; [] when nothing can be read with confidence.

    Clauses are separated by newlines and ";". Within a clause, groups of days and groups of time ranges pair up
    in the order written (times first: "9am-5pm, Mon-Fri"; days first: "Mon-Fri 9am-5pm, Sat 9am-1pm"); several
    ranges with one day group apply to every day of it ("9am-12pm & 1pm-4pm, Mon-Fri"). A clause with only ranges
    or only days waits for the next clause ("9am-12pm; 1pm-4pm, Mon-Fri"). "24 hours" and "24/7" are the whole
    day; "7 days a week", "daily", "weekdays" and "weekends" are day groups. Day names are the word list's
    (`words`, English by default)."""
    if not text or not text.strip():
        return []
    words = words or WordList.load()
    token, unsure = _patterns(words)
    norm = _DASHES.sub("-", text.replace("\\r\\n", "\n").replace("\\n", "\n"))
    norm = _PAREN.sub(" ", norm)
    openings: set[Opening] = set()
    pending: _Group | None = None
    for clause in re.split(r"[\n;]+", norm):
        if not clause.strip():
            continue
        if unsure.search(clause):
            pending = None
            continue
        tokens = _tokens(clause, token, words)
        if tokens is None:  # a point in time ("7:00pm, Tue") or an unreadable range: meeting times, not hours
            pending = None
            continue
        groups = _groups(tokens)
        if not groups:
            continue
        if pending is not None:
            if pending.kind == groups[0].kind:
                groups[0] = pending.merged(groups[0])
            else:
                groups.insert(0, pending)
            pending = None
        if len(groups) == 1:
            pending = groups[0]
            continue
        for i in range(0, len(groups) - 1, 2):
            first, second = groups[i], groups[i + 1]
            days, spans = (first.days, second.spans) if first.kind == "D" else (second.days, first.spans)
            openings.update(_openings(days, spans))
    if pending is not None and pending.kind == "T" and all(r == (0, DAY) for r in pending.spans):
        openings.update(_openings(range(7), pending.spans))  # "24 hours" alone
    return sorted(openings, key=lambda o: (o.weekday, o.opens, o.closes))


def weekday_index(name: str, words: WordList | None = None) -> int | None:
    """0 = Monday for a weekday name or abbreviation ("Monday", "mon", "Thurs"); None otherwise."""
    return (words or WordList.load()).weekday(name.strip().strip("."))


def openings_from_rows(
    rows: Iterable[tuple[str, str, str]], words: WordList | None = None
) -> tuple[list[Opening], bool]:
    """Openings from (weekday, opens_at, closes_at) rows, and whether every row could be read."""
    out: set[Opening] = set()
    complete = True
    for weekday, opens, closes in rows:
        day = weekday_index(weekday, words)
        span = parse_range(opens, closes) if opens.strip() and closes.strip() else None
        if day is None or span is None:
            complete = False
            continue
        out.add(Opening(day, *span))
    return sorted(out, key=lambda o: (o.weekday, o.opens, o.closes)), complete


# ------------------------------------------------------------------------------------------------ helpers


def read_clock(text: str) -> tuple[int, bool, str] | None:
    """(minutes, whether am/pm or noon/midnight was written, what follows) for the time at the start of `text`:
    the catalog's one reader of a time of day, for schedules and requests alike. None when it is not one."""
    m = _TIME_RE.match(text)
    if m is None or m.end() == 0:
        return None
    rest = text[m.end() :]
    if rest and (rest[0].isalnum() or rest[0] == ":"):
        return None  # "6:300pm": not a time followed by something else
    if m["noon"]:
        return 12 * 60, True, rest
    if m["midnight"]:
        return 0, True, rest
    hour = int(m["h"] if m["h"] is not None else m["hc"])
    minute = int(m["m"] or m["mc"] or 0)
    if minute > 59 or hour > 24 or (hour == 24 and minute):
        return None
    ampm = (m["ampm"] or "").lower()
    if ampm:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ampm == "p" else 0)
    return hour * 60 + minute, bool(ampm), rest


def afternoon_hour(hour: int) -> bool:
    """Whether an hour written without am/pm on the 12-hour clock (1-12) is one of the afternoon: 12 and 1 to 6
    are, 7 to 11 are morning. The one rule for a lone hour, in a request ("open at 5") as in an hours field ("9-5"
    opens at 9am, "1-4" at 1pm): services keep day hours, nobody opens at 3 at night."""
    return hour == 12 or 1 <= hour <= 6


def infer_range(a: tuple[int, bool], b: tuple[int, bool]) -> tuple[int, int] | None:
    """(opens, closes) in minutes from two (minutes, am/pm written) times, the side without am/pm read from the
    other: the one rule for a range's missing am/pm (closing after opening, the same day); None for a written
    range that cannot be one ("9:30pm-5:00pm")."""
    (opens, a_explicit), (closes, b_explicit) = a, b
    if a_explicit and b_explicit and 0 < closes < opens and opens // 720 == closes // 720:
        return None  # "9:30pm-5:00pm": a typo, not 19 hours past midnight
    if not a_explicit and b_explicit and opens < 12 * 60 and opens + 12 * 60 < closes:
        opens += 12 * 60  # "6:00-8:00pm": 6pm
    elif a_explicit and not b_explicit and closes < 12 * 60 and closes <= opens < closes + 12 * 60:
        closes += 12 * 60  # "9:00am-5:00": 5pm
    elif not a_explicit and not b_explicit and 60 <= closes <= opens < closes + 12 * 60:
        closes += 12 * 60  # "8:00-4:00": 4pm
    if closes == 0 and opens > 0:
        closes = DAY  # "...-12:00am": until midnight
    if opens == DAY:
        opens = 0
    return opens, closes


def _tokens(clause: str, token: re.Pattern[str], words: WordList) -> list[Token] | None:
    out: list[Token] = []
    for m in token.finditer(clause):
        kind = m.lastgroup
        if kind == "allday":
            out.append(("T", (0, DAY)))
            if "/" in m.group(0):
                out.append(("D", set(range(7))))
        elif kind == "alldays":
            out.append(("D", set(range(7))))
        elif kind == "weekdays":
            out.append(("D", set(range(5))))
        elif kind == "weekends":
            out.append(("D", {5, 6}))
        elif kind == "dayrange":
            first, last = re.split(r"\s*(?:-+|–)\s*|\s+(?:to|through|thru)\s+", m.group(0).casefold(), maxsplit=1)
            a, b = weekday_index(first, words), weekday_index(last, words)
            if a is None or b is None:
                return None
            out.append(("D", {(a + i) % 7 for i in range((b - a) % 7 + 1)}))
        elif kind == "day":
            day = weekday_index(m.group(0), words)
            if day is not None:
                out.append(("D", {day}))
        elif kind == "range":
            span = _range(m.group(0))
            if span is None:
                if re.search(r"[:apnm]", m.group(0), re.IGNORECASE):
                    return None  # a written range that makes no sense ("9:30pm-5:00pm")
                continue  # "2-5" (grades, ages): no am/pm, no colon
            out.append(("T", span))
        elif kind == "point":
            parsed = read_clock(m.group(0))
            if parsed is not None and (parsed[1] or ":" in m.group(0)):
                return None  # a meeting time without an end
    return out


def _range(text: str) -> tuple[int, int] | None:
    parts = re.split(r"\s*(?:-\s*)+|\s+(?:to|until|till|thru|through)\s+|\s+(?=\d|noon|midnight)", text.strip())
    parts = [p for p in parts if p]
    if len(parts) != 2:
        return None
    a, b = read_clock(parts[0]), read_clock(parts[1])
    if a is None or b is None:
        return None
    if not (a[1] or b[1] or ":" in parts[0] or ":" in parts[1]):
        return None
    return infer_range(a[:2], b[:2])


def _groups(tokens: list[Token]) -> list[_Group]:
    groups: list[_Group] = []
    for token in tokens:
        group = _Group.of(token)
        if groups and groups[-1].kind == group.kind:
            groups[-1] = groups[-1].merged(group)
        else:
            groups.append(group)
    return groups


def _openings(days: Iterable[int], ranges: Iterable[Span]) -> Iterable[Opening]:
    for day in days:
        for opens, closes in ranges:
            yield Opening(day, opens, closes)
