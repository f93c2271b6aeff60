"""The phrase matchers of the rule-based request parser, one per kind of constraint.

Each matcher finds its kind of phrase among the words no earlier matcher took (`RequestWords`), looks the
value up in the catalog (`GazetteerIndex`) and consumes the words, adding a `Structural` constraint (a catalog
value), a `Semantic` one (a condition kept as text) or an `unknown` (said, but the catalog holds no such value).
`catalog.parse.parse_request` runs them in the order that lets the more specific phrase win.

The words come from the catalog's word list (`catalog.words`); the grammar of the patterns below (ages, "X
County", clock times, "open now", wheelchair access) is English, the language of the directories measured here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from itertools import chain

from tracerag.catalog.gazetteer import GazetteerIndex
from tracerag.catalog.model import ConstraintKind, Constraints, Semantic, Structural
from tracerag.catalog.request_words import RequestWords, said_together
from tracerag.catalog.schedule import afternoon_hour, read_clock
from tracerag.catalog.words import WordList
from tracerag.text import fold_key

__all__ = [
    "ACCESS",
    "NOW",
    "accessibility",
    "add_semantic",
    "areas",
    "cities_and_counties",
    "clauses",
    "counties",
    "clock_minutes",
    "eligibility_with_places",
    "first_time",
    "gazetteer_places",
    "is_clock_time",
    "languages",
    "noon_minutes",
    "period_minutes",
    "postal_codes",
    "regions",
    "semantic_phrases",
    "times",
    "unknown_places",
    "weekdays",
]


def add_semantic(out: Constraints, sem: Semantic) -> None:
    """Add a condition unless the same one (same words, same sense) is there already."""
    if all((fold_key(s.text), s.negated) != (fold_key(sem.text), sem.negated) for s in out.semantic):
        out.semantic.append(sem)


# ----------------------------------------------------------------------------------------- ages and residence

_AGE = re.compile(
    r"\b(?:(?:ages?|aged)\s+(?P<lo>\d{1,2})\s*(?:-|–|to|through)\s*(?P<hi>\d{1,2})"
    r"|(?:ages?d?\s+)?(?P<plus>\d{1,2})\s*(?:\+|(?:years?\s+old\s+)?(?:and|or)\s+(?:older|over|up|above)\b)"
    r"|(?:ages?d?\s+)?(?:over|above|older\s+than)\s+(?P<over>\d{1,2})(?:\s+years?(?:\s+old)?)?"
    r"|(?:ages?d?\s+)?(?:under|below|younger\s+than)\s+(?P<under>\d{1,2})(?:\s+years?(?:\s+old)?)?"
    r"|ages?\s+(?P<age>\d{1,2})\b|(?P<age2>\d{1,2})\s*(?:-\s*)?years?(?:\s*-\s*|\s+)old\b)",
    re.I,
)
_RESIDENTS = re.compile(
    r"\b(?:(?:for\s+)?residents?\s+of|(?:who|that)\s+(?:lives?|living)\s+in|if\s+(?:i|you)\s+live\s+in)\s+(?:the\s+)?"
    r"(?P<place>[^\W\d_][\w'’.-]*(?:\s+[^\W\d_][\w'’.-]*){0,3})",
    re.I,
)


@functools.lru_cache(maxsize=8)
def _residents_before(words: WordList) -> re.Pattern[str]:
    county = "|".join(re.escape(w) for w in sorted(words.county_words, key=len, reverse=True)) or "(?!)"
    return re.compile(
        rf"\b(?:for\s+)?(?P<place>[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){{0,2}}(?:\s+(?i:{county}))?)\s+residents\b"
    )


def eligibility_with_places(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """Ages and residence: numbers and places that are eligibility, not a time, a postal code or the service's
    city ("for people over 60", "residents of X")."""
    for m in words.matches(_AGE):
        words.take(m.start(), m.end())
        g = m.groupdict()
        if g["lo"]:
            text = f"for people aged {g['lo']} to {g['hi']}"
        elif g["plus"] or g["over"]:
            text = f"for people aged {g['plus'] or g['over']} or older"
        elif g["under"]:
            text = f"for people under {g['under']}"
        else:
            text = f"for people aged {g['age'] or g['age2']}"
        add_semantic(out, Semantic(text))
    for m in words.matches(_RESIDENTS):
        place = _known_place_prefix(m.group("place"), idx)
        words.take(m.start(), m.start("place") + len(place))
        add_semantic(out, Semantic(f"for residents of {place}"))
    for m in words.matches(_residents_before(idx.words)):
        words.take(m.start(), m.end())
        add_semantic(out, Semantic(f"for residents of {m.group('place')}"))


def _known_place_prefix(text: str, idx: GazetteerIndex) -> str:
    """The longest leading words of `text` that name a place: a catalog city, "X County", or capitalised words."""
    parts = re.findall(r"\S+", text)
    for n in range(len(parts), 0, -1):
        cand = " ".join(parts[:n]).rstrip(".,")
        norm = fold_key(cand)
        if norm in idx.cities or (norm.split() or [""])[-1] in idx.words.county_words or idx.lookup_county(cand):
            return cand
    caps = []
    for w in parts:
        if not w[:1].isupper():
            break
        caps.append(w)
    return " ".join(caps).rstrip(".,") if caps else parts[0].rstrip(".,")


# ---------------------------------------------------------------------------------------------------- counties


@functools.lru_cache(maxsize=8)
def _county_patterns(words: WordList) -> tuple[re.Pattern[str], re.Pattern[str]] | None:
    if not words.county_words:
        return None
    county = "|".join(re.escape(w) for w in sorted(words.county_words, key=len, reverse=True))
    of = r"\s+".join(re.escape(w) for w in words.county_of.split())
    county_of = re.compile(rf"\b{of}\s+(?:the\s+)?(?P<name>[A-Z][\w'’.]*(?:[\s-]+[A-Z][\w'’.]*)?)", re.I)
    named = re.compile(rf"\b(?P<name>(?:[^\W\d_][\w'’.]*[\s-]+){{0,2}}?[^\W\d_][\w'’.]*)\s+(?:{county})\b", re.I)
    return county_of, named


def counties(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """ "X County", "county of X": a county value, or `unknown` when the catalog has none of that name. The name
    of an unknown county is its last word, with the word before when both are capitalised or that word belongs
    to a place of the catalog (a county named after one of its cities), so the city is not taken on its own."""
    patterns = _county_patterns(idx.words)
    if patterns is None:
        return
    county_of, named = patterns
    values: list[str] = []
    spans: list[tuple[int, int]] = []
    for m in chain(words.matches(county_of), words.matches(named)):  # lazily: "county of X" is taken first
        start, end = m.start(), m.end()
        if m.re is named:
            base = m.start("name")
            parts = [(w.group(), base + w.start()) for w in re.finditer(r"\S+", m.group("name"))]
            while parts and fold_key(parts[0][0]) in idx.words.filler:  # "in the Monroe county" → "Monroe"
                parts.pop(0)
            pick = next((k for k in range(len(parts)) if idx.lookup_county(" ".join(w for w, _ in parts[k:]))), None)
            if pick is None and parts:
                pick = len(parts) - 1
                if pick:
                    prev, last = parts[pick - 1][0], parts[pick][0]
                    both_capitalised = prev[:1].isupper() and last[:1].isupper()
                    if both_capitalised or set(fold_key(prev).split()) <= idx.city_words:
                        pick -= 1
            if pick is not None:
                start = parts[pick][1]
        phrase = words.text[start:end]
        words.take(start, end)
        value = idx.lookup_county(phrase)
        covered = idx.lookup_area(phrase)
        if covered and (value is None or set(covered) - {value}):  # coverage columns name it: in it or covering it
            add_area(out, covered, phrase)
        elif value:
            if value not in values:
                values.append(value)
            spans.append((start, end))
        else:
            out.unknown.append(phrase)
    if values:
        out.structural.append(Structural(ConstraintKind.COUNTY, tuple(values), said_together(words, spans)))


# ------------------------------------------------------------------------------------------------ postal codes


def postal_codes(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """Postal codes as the profile writes them (`postal_code_pattern`); one the catalog lacks is unknown. Without
    a pattern, only a code the catalog holds is recognised (an unknown word with a digit may be anything)."""
    if idx.postal_code is None:
        return
    report_unknown = bool(idx.profile.postal_code_pattern)
    values, spans = [], []
    for m in words.matches(idx.postal_code):
        value = idx.lookup_postal_code(m.group())
        if value is None and not report_unknown:
            continue
        words.take(m.start(), m.end())
        if value:
            if value not in values:
                values.append(value)
            spans.append((m.start(), m.end()))
        else:
            out.unknown.append(m.group())
    if values:
        out.structural.append(Structural(ConstraintKind.ZIP, tuple(values), said_together(words, spans)))


# ------------------------------------------------------------------------------------------------------ times

_TIME = re.compile(
    r"(?:\b(?P<cue>at|after|before|by|around|from|until|till|til|past|open)\s+)?"
    r"\b(?P<clock>(?P<h>\d{1,2})(?!\d)(?:[:.](?P<m>[0-5]\d))?(?:\s*(?P<ampm>[ap])\.?\s?m\b\.?)?)"
    r"(?:\s*(?P<oclock>o'?clock))?"
    r"(?:\s*(?:-|–|to|until|till)\s*\d{1,2}(?:[:.][0-5]\d)?(?:\s*[ap]\.?\s?m\b\.?)?)?"  # "9am to 5pm": from 9
    r"(?:\s+(?P<period>in\s+the\s+(?:morning|afternoon|evening)|at\s+night|tonight|this\s+(?:morning|afternoon|evening)))?",
    re.I,
)
_NOON = re.compile(
    r"(?:\b(?P<cue>at|after|before|by|around|from|until|till)\s+)?\b(?P<word>noon|midday|midnight)\b", re.I
)
NOW = re.compile(r"\bopen\s+(?:right\s+)?now\b|\b(?:currently|still)\s+open\b|\bopen\s+at\s+the\s+moment\b", re.I)
_BEFORE = ("before", "by", "until", "till", "til")


@functools.lru_cache(maxsize=8)
def _period(words: WordList) -> re.Pattern[str]:
    """A part of the day alone ("in the evening", "tonight"): the word list's periods."""
    names = "|".join(re.escape(p) for p in sorted(words.periods, key=len, reverse=True)) or "(?!)"
    return re.compile(rf"\b(?:(?:in|during)\s+the\s+|this\s+|at\s+|late\s+)?(?P<word>(?:{names})s?)\b", re.I)


def times(words: RequestWords, idx: GazetteerIndex, out: Constraints, today: int | None) -> str:
    """The time constraint (one value: minutes after midnight); returns the words that mean today ("tonight",
    "open now"), if any. A clock time is read by `schedule.read_clock`, the catalog's one time-of-day reader;
    a bare hour from 1 to 6 is afternoon (opening hours: "after 5" is 5 pm). The first of a clock time, noon or
    midnight, and a part of the day alone ("in the evening") is the constraint."""
    wl = idx.words
    found = re.search(r"\btonight\b", words.text, re.I)
    tonight = found.group() if found else ""
    value, said = first_time(words, wl)
    if value is not None:
        for m in words.matches(_period(wl)):  # "7:30 ... in the evening" said apart from the time: already applied
            words.take(m.start(), m.end())
    for m in words.matches(NOW):
        words.take(m.start(), m.end())
        if value is None:
            out.unknown.append(m.group().strip())
        if today is not None and not tonight:
            tonight = m.group().strip()  # "open now" is about today
    if value is not None:
        out.structural.append(Structural(ConstraintKind.TIME, (str(value),), said))
    return tonight


def first_time(words: RequestWords, wl: WordList) -> tuple[int | None, str]:
    """(minutes after midnight, the words said) of the first clock time among the free words, else of noon or
    midnight, else of a part of the day ("in the evening"); the words are taken. (None, "") when there is none."""
    for m in words.matches(_TIME):
        nxt = words.indices(m.end(), len(words.text))
        next_word = words.tokens[nxt[0]].norm if nxt else ""
        if not is_clock_time(m, next_word, wl.after_bare_hour):
            continue
        minutes = clock_minutes(m)
        if minutes is not None:
            return minutes, words.take(m.start(), m.end())
    for m in words.matches(_NOON):
        return noon_minutes(m), words.take(m.start(), m.end())
    for m in words.matches(_period(wl)):
        start = period_minutes(m.group("word"), wl.periods)
        if start is not None:
            return start, words.take(m.start(), m.end())
    return None, ""


def is_clock_time(m: re.Match[str], next_word: str, after_bare_hour: Collection[str]) -> bool:
    """Whether a `_TIME` match is a time of day, not a number: it needs a cue ("at", "after"), minutes, am/pm or
    "o'clock"; a bare hour after a cue ("at 2") is a time unless a word follows that is not one of
    `after_bare_hour` ("at 2 locations"). `next_word` is the folded word after the match ("" at the end)."""
    g = m.groupdict()
    if not (g["cue"] or g["m"] or g["ampm"] or g["oclock"]):
        return False  # "a family of 5 tonight": a number, not a time
    if not (g["ampm"] or g["m"] or g["oclock"] or g["period"]):  # "after 5": a bare hour after a cue
        return not (next_word.isalpha() and next_word not in after_bare_hour)
    return True


def clock_minutes(m: re.Match[str]) -> int | None:
    """Minutes after midnight of a `_TIME` match that `is_clock_time`: the part of the day said after it moves an
    hour without am/pm ("7:30 in the evening" is 19:30, "12 in the morning" midnight), else a bare hour from 1
    to 6 is afternoon; a time said with "before" or "until" is half an hour earlier (open some time before
    then). None when it is not a time of day ("25 to", "7:75")."""
    g = m.groupdict()
    clock = read_clock(g["clock"].replace(".", ":", 1) if g["m"] else g["clock"])
    if clock is None or int(g["h"]) > 23:
        return None
    minutes, explicit, _ = clock
    h, minute = divmod(minutes, 60)
    period = (g["period"] or "").casefold()
    if not explicit:
        if h <= 12 and period:
            if any(p in period for p in ("afternoon", "evening", "night", "tonight")) and h < 12:
                h += 12
            elif "morning" in period and h == 12:
                h = 0
        elif h < 12 and afternoon_hour(h):
            h += 12
    return _before(h * 60 + minute, g["cue"])


def noon_minutes(m: re.Match[str]) -> int:
    """Minutes after midnight of a `_NOON` match ("before midnight" is 0, "after noon" 720)."""
    clock = read_clock("midnight" if m.group("word").casefold() == "midnight" else "noon")
    return _before(clock[0] if clock else 12 * 60, m.group("cue"))


def period_minutes(word: str, periods: Mapping[str, int]) -> int | None:
    """When a part of the day starts (the word list's `periods`), for the word as said ("evenings" as
    "evening"); None for a word the list lacks."""
    key = fold_key(word)
    start = periods.get(key)
    return start if start is not None else periods.get(key.removesuffix("s"))


def _before(minutes: int, cue: str | None) -> int:
    """A time said with "before", "by", "until": open some time before then, half an hour before."""
    return max(0, minutes - 30) if (cue or "").casefold() in _BEFORE else minutes


# ---------------------------------------------------------------------------------------------------- weekdays


@functools.lru_cache(maxsize=8)
def _day_patterns(words: WordList) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    day = words.day_pattern + r"s?\b\.?"
    day_range = re.compile(rf"\b(?P<a>{day})\s*(?:-|–|to|through|thru|until|till)\s*(?P<b>{day})", re.I)
    day_one = re.compile(rf"\b{day}", re.I)
    groups = re.compile(
        r"\b(?P<weekend>(?:this\s+|on\s+(?:the\s+)?)?weekends?)\b|\b(?P<weekdays>weekdays?|during\s+the\s+week)\b"
        r"|\b(?P<today>today|tonight)\b|\b(?P<tomorrow>tomorrow)\b",
        re.I,
    )
    return day_range, day_one, groups


def weekdays(words: RequestWords, idx: GazetteerIndex, out: Constraints, today: int | None, tonight: str) -> None:
    """Days ("on Saturday", "Mon-Fri", "this weekend", "today"); a short name that is also a word ("sat", "sun")
    counts only when capitalised or next to a day word. "today"/"tomorrow" need `today` (0 = Monday)."""
    wl = idx.words
    day_range, day_one, groups = _day_patterns(wl)
    days: list[int] = []
    spans: list[tuple[int, int]] = []

    def number(written: str) -> int:
        day = wl.weekday(written.rstrip("."))
        assert day is not None, written  # the pattern is built from the same table
        return day

    for m in words.matches(day_range):
        a, b = number(m.group("a")), number(m.group("b"))
        days.extend((a + k) % 7 for k in range((b - a) % 7 + 1))
        spans.append((m.start(), m.end()))
        words.take(m.start(), m.end())
    for m in words.matches(day_one):
        word = fold_key(m.group())
        if word.removesuffix("s") in wl.ambiguous_days or word in wl.ambiguous_days:
            i = words.indices(m.start(), m.end())[0]
            nxt = words.tokens[i + 1].norm if i + 1 < len(words.tokens) else ""
            after = words.text[m.end() : m.end() + 2]
            context = words.prev_norm(i) in wl.day_context or nxt in ("or", "and") or "," in after
            if not (m.group()[0].isupper() or context):
                continue
        days.append(number(m.group()))
        spans.append((m.start(), m.end()))
        words.take(m.start(), m.end())
    for m in words.matches(groups):
        if m.group("weekend"):
            days.extend((5, 6))
        elif m.group("weekdays"):
            days.extend(range(5))
        else:
            offset = 0 if m.group("today") else 1
            if today is None:
                if m.group("today") and m.group("today").casefold() == "tonight":
                    words.take(m.start(), m.end())
                    continue
                out.unknown.append(m.group())
                words.take(m.start(), m.end())
                continue
            days.append((today + offset) % 7)
        spans.append((m.start(), m.end()))
        words.take(m.start(), m.end())
    said = said_together(words, spans)
    if not days and tonight and today is not None:
        days.append(today)
        said = tonight
    if days:
        values = tuple(str(d) for d in sorted(set(days)))
        out.structural.append(Structural(ConstraintKind.WEEKDAY, values, said))


# ---------------------------------------------------------------------------------------- access and languages

ACCESS = re.compile(
    r"\b(?:(?:wheel\s?chair|handicap(?:ped)?|disabled|disability|ada)[\s-]+(?:accessible|access|accessibility|friendly|"
    r"compliant)|accessible\s+(?:for|to|by)\s+(?:the\s+)?(?:disabled|wheel\s?chairs?|handicapped|people\s+with\s+"
    r"disabilities)|(?:in|use|uses|using)\s+a\s+wheel\s?chair|handicap(?:ped)?\s+parking)\b",
    re.I,
)


def accessibility(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    for m in words.matches(ACCESS):
        said = words.take(m.start(), m.end())
        values = idx.accessibility_values(said)
        if values:
            out.structural.append(Structural(ConstraintKind.ACCESSIBILITY, tuple(values), said))
        else:
            out.unknown.append(said)
        return


def _names_a_service(wl: WordList, words: RequestWords, start: int, end: int) -> bool:
    """Whether tokens start..end with the word before or after them make a key of the synonym table."""
    tokens = words.tokens
    inner = [wl.lemma(t.norm) for t in tokens[start:end]]
    before = [wl.lemma(tokens[start - 1].norm)] if start > 0 else []
    after = [wl.lemma(tokens[end].norm)] if end < len(tokens) else []
    return any(tuple(key) in wl.service_synonyms for key in (before + inner, inner + after) if len(key) > len(inner))


def languages(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """Language names the catalog holds (longest first; fuzzily only next to a language word: "Spansh
    speaking"); a language name it does not hold is unknown."""
    wl = idx.words
    values: list[str] = []
    spans: list[tuple[int, int]] = []
    tokens = words.tokens
    i = 0
    while i < len(tokens):
        if words.used[i] or not tokens[i].norm.isalpha():
            i += 1
            continue
        hit = None
        for size in range(min(idx.language_max, len(tokens) - i), 0, -1):
            if any(words.used[k] for k in range(i, i + size)):
                continue
            phrase = " ".join(t.norm for t in tokens[i : i + size])
            if _names_a_service(wl, words, i, i + size):
                continue  # "learn english", "english class": a service the synonym table names, not a language
            context = words.prev_norm(i) in wl.language_context or (
                i + size < len(tokens) and tokens[i + size].norm in wl.language_context
            )
            found = idx.lookup_language(phrase, fuzzy=context)
            if found:
                hit = (found[1], size)
                break
            if size == 1 and phrase in wl.language_names:
                hit = ([], 1)
                break
        if hit is None:
            i += 1
            continue
        found_values, size = hit
        said = words.take_tokens(i, i + size)
        if found_values:
            values.extend(v for v in found_values if v not in values)
            spans.append((tokens[i].start, tokens[i + size - 1].end))
        else:
            out.unknown.append(said)
        i += size
    if values:
        out.structural.append(Structural(ConstraintKind.LANGUAGE, tuple(values), said_together(words, spans)))


# -------------------------------------------------------------------------------------------------- conditions


def semantic_phrases(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """The word list's condition phrases ("no ID", "for seniors"); "my autistic son": the child is who it is
    for, the word between is what it is about (kept for the topic)."""
    wl = idx.words
    for pattern, sem in wl.conditions:
        for m in words.matches(pattern):
            words.take(m.start(), m.end())
            add_semantic(out, sem)
    children = next((sem for _, sem in wl.conditions if sem.text == "for children and youth"), None)
    for i, tok in enumerate(words.tokens):
        owner = {words.prev_norm(i), words.prev_norm(i - 1)}
        if children and tok.norm in wl.child_nouns and not words.used[i] and wl.possessives & owner:
            words.used[i] = True
            add_semantic(out, children)


# ------------------------------------------------------------------------------------------------------ places


def cities_and_counties(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """Catalog place names, longest first ("North Lakeside Beach" before "Lakeside"), cities before counties of
    the same name; a bare county name or a profile alias ("Ridge" for "Ridge-Valley") is a county; a misspelt
    city by edit distance. A one-word name that is also an ordinary word ("sunrise") counts only when written
    capitalised inside the request or after a place word ("in", "near")."""
    wl = idx.words
    found: dict[ConstraintKind, tuple[list[str], list[tuple[int, int]]]] = {}
    tokens = words.tokens
    longest = max(idx.city_max, max((len(k.split()) for k in idx.counties), default=1))
    i = 0
    while i < len(tokens):
        if words.used[i] or not tokens[i].norm.isalpha():
            i += 1
            continue
        hit: tuple[ConstraintKind, str, int] | None = None
        for size in range(min(longest, len(tokens) - i), 0, -1):
            if any(words.used[k] or not tokens[k].norm.isalpha() for k in range(i, i + size)):
                continue
            parts = [t.norm for t in tokens[i : i + size]]
            phrase = " ".join(parts)
            if size == 1 and phrase in idx.initials and _said_as_place(words, i, idx):
                phrase = idx.initials[phrase]  # "NR": the one place of the catalog with these initials
            exact = (
                (ConstraintKind.CITY, idx.cities[phrase])
                if phrase in idx.cities
                else (ConstraintKind.COUNTY, idx.counties[phrase])
                if phrase in idx.counties
                else None
            )
            if exact is not None:
                if size == 1 and phrase in wl.ordinary:
                    raw = tokens[i].raw
                    if not (raw[:1].isupper() and i > 0) and words.prev_norm(i) not in wl.place_context:
                        continue  # "a marathon", "sunrise": a word, not the place
                hit = (exact[0], exact[1], size)
                break
            if any(idx.unknown_word(p) for p in parts):
                value = idx.lookup_city(phrase)
                if value:
                    hit = (ConstraintKind.CITY, value, size)
                    break
        if hit is None:
            i += 1
            continue
        kind, value, size = hit
        words.take_tokens(i, i + size)
        values, spans = found.setdefault(kind, ([], []))
        if value not in values:
            values.append(value)
        spans.append((tokens[i].start, tokens[i + size - 1].end))
        i += size
    for kind, (values, spans) in found.items():
        said = said_together(words, spans)
        earlier = out.of(kind)  # "X County" found by `counties`, then a bare county name: one constraint
        if earlier is not None:
            out.structural.remove(earlier)
            values = [*earlier.values, *(v for v in values if v not in earlier.values)]
            said = f"{earlier.said}; {said}"
        out.structural.append(Structural(kind, tuple(values), said))


def add_area(out: Constraints, values: tuple[str, ...] | list[str], said: str) -> None:
    """One AREA constraint per request: a second place named adds its values as alternatives ("Eastgate or
    Northside")."""
    earlier = out.of(ConstraintKind.AREA)
    if earlier is not None:
        out.structural.remove(earlier)
        values = [*earlier.values, *(v for v in values if v not in earlier.values)]
        said = f"{earlier.said}; {said}"
    out.structural.append(Structural(ConstraintKind.AREA, tuple(values), said))


def _said_as_place(words: RequestWords, i: int, idx: GazetteerIndex) -> bool:
    """Whether a short word that may be a place's initials is said as one: after a place word ("in nr"), or in
    capitals ("NR") when it stands for one of the directory's main places and the request is not all capitals
    (in a shouted request capitals say nothing; "ER" is other things' initials too)."""
    if words.prev_norm(i) in idx.words.place_context:
        return True
    raw = words.tokens[i].raw
    return raw.isupper() and len(raw) > 1 and not _shouted(words) and words.tokens[i].norm in idx.main_initials


def _shouted(words: RequestWords) -> bool:
    letters = [c for c in words.text if c.isalpha()]
    return bool(letters) and all(c.isupper() for c in letters)


def gazetteer_places(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """The names of the profile's places file ("the valley", "NR county"), longest first: the catalog places they
    stand for, as one AREA constraint."""
    for i, size in _phrases(words, idx.places_max, lambda phrase: phrase in idx.places):
        phrase = " ".join(t.norm for t in words.tokens[i : i + size])
        add_area(out, idx.places[phrase], words.take_tokens(i, i + size))


def areas(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """Places the records' coverage columns name ("Eastgate", "Ridge County"), longest first, and the
    initials of one ("NR" in capitals or after "in"), as an AREA constraint: the records in it or covering it. A
    one-word name that is also an ordinary word counts only capitalised inside the request or after a place
    word, as for cities."""
    wl = idx.words

    def named(phrase: str) -> bool:
        return phrase in idx.areas or phrase in idx.initials and idx.initials[phrase] in idx.areas

    for i, size in _phrases(words, idx.area_max, named):
        phrase = " ".join(t.norm for t in words.tokens[i : i + size])
        raw = words.tokens[i].raw
        if phrase in idx.initials and phrase not in idx.areas and not _said_as_place(words, i, idx):
            continue
        word = size == 1 and (phrase in wl.ordinary or phrase in idx.vocab)
        if word and not (raw[:1].isupper() and i > 0) and words.prev_norm(i) not in wl.place_context:
            continue
        values = idx.lookup_area(phrase)
        if values:
            add_area(out, values, words.take_tokens(i, i + size))


def regions(words: RequestWords, idx: GazetteerIndex, out: Constraints, *, names_of_words: int = 1) -> None:
    """The records' regions ("LK", "L.K.", "Lakeshire"). After a city, county, postal code or area ("Hillcrest LK",
    "Hillcrest, L.K.", "hillcrest lk 12345") the region only says where that place is: its words are taken and
    nothing is added. Named alone ("in LK"), it is the place: the records of that region. A region's name counts
    anywhere; its code (a word of 2 or 3 letters: "OK" or "ER" may be other things) only right after a
    place, after a place word ("in md"), or, for the directory's own region, anywhere but as a word of the word
    list ("dc" but not "in"). `names_of_words`: only names of that many words or more (the parser takes a
    region of several words before the cities, so that a city named like its last word is not taken)."""
    wl = idx.words
    words_of_list = wl.ordinary | wl.filler | idx.vocab | idx.service_words
    found: list[str] = []
    spans: list[tuple[int, int]] = []
    for i, size in _phrases(words, 3, lambda phrase: phrase in idx.regions):
        phrase = " ".join(t.norm for t in words.tokens[i : i + size])
        if names_of_words > 1 and (size < names_of_words or len(phrase.replace(" ", "")) <= 3):
            continue  # the pass before the cities: names of several words only ("d c" is a code)
        after_place = out.has_location() and i > 0 and words.used[i - 1]
        if len(phrase.replace(" ", "")) <= 3:  # a code
            own = phrase in idx.own_regions and phrase not in words_of_list
            if not (after_place or own or words.prev_norm(i) in wl.place_context):
                continue
        words.take_tokens(i, i + size)
        if out.has_location():
            continue  # "Hillcrest LK": the city says where; the region is taken so it is no topic word
        found.extend(v for v in idx.regions[phrase] if v not in found)
        spans.append((words.tokens[i].start, words.tokens[i + size - 1].end))
    if found:
        add_area(out, found, said_together(words, spans))


def _phrases(words: RequestWords, longest: int, named: Callable[[str], bool]) -> Iterator[tuple[int, int]]:
    """(start, size) of each free run of alphabetic words that `named` accepts, longest first, left to right;
    the caller takes the words it keeps."""
    tokens = words.tokens
    i = 0
    while i < len(tokens):
        hit = 0
        for size in range(min(longest, len(tokens) - i), 0, -1):
            if any(words.used[k] or not tokens[k].norm.isalpha() for k in range(i, i + size)):
                continue
            if named(" ".join(t.norm for t in tokens[i : i + size])):
                hit = size
                break
        if hit:
            yield i, hit
            i += hit if words.used[i] else 1
        else:
            i += 1


_UNKNOWN_PLACE = re.compile(r"\b(?:in|near|around)\s+(?P<place>[A-Z][a-z]+(?:[\s-]+[A-Z][a-z]+){0,2})\b")


def unknown_places(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """ "in Springfield": a capitalised place the catalog does not hold. Said, so the reply can say so."""
    if out.has_location():
        return
    wl = idx.words
    for m in words.matches(_UNKNOWN_PLACE):
        place = m.group("place")
        first = fold_key(place).split()[0]
        if first in idx.vocab or wl.weekday(first) is not None or first in wl.language_names or first in idx.regions:
            continue
        words.take(m.start("place"), m.end("place"))
        out.unknown.append(place)


_CLAUSE_END = re.compile(r"[.?!;,]")


def clauses(words: RequestWords, idx: GazetteerIndex, out: Constraints) -> None:
    """What is left of a "that/who/which" clause is a condition on the service, kept as text."""
    wl = idx.words
    tokens = words.tokens
    for i, tok in enumerate(tokens):
        if tok.norm not in wl.clause_markers or words.used[i] or words.clause[i] or i == 0:
            continue
        if _CLAUSE_END.search(words.text[tokens[i - 1].end : tok.start]):
            continue  # "... . Who can help?": a new sentence, not a clause
        end = _CLAUSE_END.search(words.text, tok.end)
        stop = end.start() if end else len(words.text)
        span = [k for k in range(i, len(tokens)) if tokens[k].start < stop]
        for k in span:
            words.clause[k] = True
        free = [k for k in span[1:] if not words.used[k]]
        while free and tokens[free[0]].norm in wl.filler:
            free.pop(0)
        while free and tokens[free[-1]].norm in wl.filler:
            free.pop()
        if any(tokens[k].norm not in wl.filler for k in free):
            add_semantic(out, Semantic(" ".join(tokens[k].raw for k in free)))
