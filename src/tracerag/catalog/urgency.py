"""Urgency first: a request that signals danger or immediacy is answered with what can be reached now.

What signals it is language knowledge, in the word list (`[urgency]` of `catalog/words/{language}.toml`): kinds
of danger or immediacy (self-harm, violence, sexual assault, overdose, nowhere to sleep, "right now"), each with
the request phrases that signal it, the phrases that make the same words about something else ("volunteer at a
crisis line"), and the services that serve it (taxonomy term names, best first, and words of a service's name
or description for directories whose taxonomy does not say). The numbers to call are the catalog profile's
(`emergency_numbers`, `crisis_numbers`, filled at ingest from the country's word file): none is ever invented.

`detect` finds the kinds a request signals; `CrisisIndex` holds, once per catalog, the records that serve each
kind and what makes each reachable now; `rank` orders candidates reachable now first (a phone or text line, 24
hours, open now by its hours data), then by how surely they serve the kind and how near they are. A phone or
text line serves wherever one is, so it is offered whatever place was asked for (after those of the place); a
service that must be visited is offered only in the place. `urgent_reply` puts the profile's numbers at the
top and each service's phone number first.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import phonenumbers

from tracerag.catalog.filters import postal_head
from tracerag.catalog.model import ConstraintKind, ServiceRecord, Structural
from tracerag.catalog.profile import CatalogProfile, PhoneNumber
from tracerag.catalog.reply import Recommendation, format_address, format_hours, templated_reply
from tracerag.catalog.sentences import say
from tracerag.catalog.words import UrgencyKind, WordList
from tracerag.text import fold_key

__all__ = [
    "CLOSE_BY_KM",
    "CrisisIndex",
    "Ranked",
    "Urgency",
    "close_by",
    "detect",
    "minute_now",
    "numbers_lines",
    "rank",
    "reachable_now",
    "urgent_reply",
]

OPEN_NOW, LINE = "open now by its hours", "a phone or text line"
ALWAYS = {
    "hours": "open 24 hours",
    "name": "open 24 hours, as its name says",
    "text": "open 24 hours, as its description says",
}
# A line this close to the centre of the place asked for is as good as one in it (a neighbouring city's line);
# farther, a toll-free line callable from anywhere comes first.
NEARBY_KM = 50.0
# A need served in the place only (a bed tonight) with nothing of the place reachable now: what is reachable now
# this close to the place asked for is offered too (the next neighbourhood's shelter open all night).
CLOSE_BY_KM = 3.0
# How surely a record serves a kind: one of its term names, its own name, only its description.
TERM, NAME, DESCRIPTION = 0, 1, 2


def minute_now() -> int:
    """Minutes after midnight on this machine's clock (the assistant takes another for tests)."""
    now = datetime.now()
    return now.hour * 60 + now.minute


@dataclass(frozen=True)
class Urgency:
    """What a request signals: the kinds, best first as the word list orders them, and the words that did."""

    kinds: tuple[UrgencyKind, ...]
    said: tuple[str, ...]
    carried: bool = False  # signalled by an earlier turn of the conversation, kept while its topic is
    by_phone: bool = False  # asks for a voice ("someone to talk to"): a line before a service one must go to

    @property
    def label(self) -> str:
        return next((k.label for k in self.kinds if k.terms or k.services), self.kinds[0].label)

    @property
    def danger(self) -> bool:
        """A kind that names the services serving it (self-harm, violence ...), not immediacy alone ("right
        now"): immediacy alone keeps the request's own topic and constraints, and only adds the numbers, orders
        what is reachable now first, and gives the crisis lines when nothing else is found."""
        return any(k.terms or k.services for k in self.kinds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kinds": [k.name for k in self.kinds],
            "said": list(self.said),
            "carried": self.carried,
            "by_phone": self.by_phone,
        }


def detect(text: str, words: WordList) -> Urgency | None:
    """The kinds of danger or immediacy `text` signals (None: none). A kind's `patterns` signal it whatever else
    is said ("I volunteer at church and I want to kill myself"); its `mentions` only when none of its `unless`
    phrases is there too ("suicide prevention volunteer opportunities" is no crisis)."""
    kinds: list[UrgencyKind] = []
    said: list[str] = []
    for kind in words.urgency_kinds:
        found = [m.group().strip() for m in kind.patterns.finditer(text)] if kind.patterns else []
        if kind.mentions is not None and not (kind.unless is not None and kind.unless.search(text)):
            found += [m.group().strip() for m in kind.mentions.finditer(text)]
        if not found:
            continue
        kinds.append(kind)
        said.extend(w for w in found if w not in said)
    if not kinds:
        return None
    return Urgency(tuple(kinds), tuple(said), by_phone=_matches(words.by_phone, text))


# ------------------------------------------------------------------------------------------------ index


@dataclass
class CrisisIndex:
    """The records that serve each urgency kind, and what makes each of them reachable now (built once per
    catalog from every record: about 0.2 s for 4,000 records)."""

    serving: dict[str, dict[str, tuple[int, int]]]  # kind name -> record id -> (how surely, term rank)
    records: dict[str, ServiceRecord]  # every record that serves some kind
    lines: frozenset[str]  # phone or text lines
    always_open: dict[str, str]  # record id -> where it says so (a key of ALWAYS)
    toll_free: frozenset[str]  # a number callable from anywhere in the country
    centres: dict[tuple[str, str], tuple[float, float]]  # (city|county|zip, value) -> mean coordinates
    words: WordList

    @classmethod
    def build(cls, records: Iterable[ServiceRecord], words: WordList, country: str | None) -> CrisisIndex:
        serving: dict[str, dict[str, tuple[int, int]]] = {k.name: {} for k in words.urgency_kinds}
        kept: dict[str, ServiceRecord] = {}
        points: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for r in records:
            if r.latitude is not None and r.longitude is not None:
                for key in (("city", r.city), ("county", r.county), ("zip", postal_head(r.zip))):
                    if key[1]:
                        points.setdefault(key, []).append((r.latitude, r.longitude))
            terms = [n for _, n in r.taxonomy if not _matches(words.not_serving, n)]
            if _matches(words.not_serving, r.name):
                continue
            for kind in words.urgency_kinds:
                how = _serves(kind, r, terms)
                if how is not None:
                    serving[kind.name][r.id] = how
                    kept[r.id] = r
        # a line by its name, hours or terms; or by its description, when it surely serves a kind ("our 24-hour
        # multi-lingual crisis line", of a domestic-violence agency)
        sure = {i for kind in serving.values() for i, (how, _) in kind.items() if how < DESCRIPTION}
        lines = {
            i for i, r in kept.items() if is_line(r, words) or (i in sure and _matches(words.hotline, r.description))
        }
        always = {i: where for i, r in kept.items() if (where := always_open_by(r, words))}
        free = {i for i, r in kept.items() if any(_toll_free(p, country) for p in r.phones)}
        centres = {k: (sum(p[0] for p in v) / len(v), sum(p[1] for p in v) / len(v)) for k, v in points.items()}
        return cls(serving, kept, frozenset(lines), always, frozenset(free), centres, words)

    def centre(self, place: Sequence[Structural]) -> tuple[float, float] | None:
        """The mean coordinates of the records of the place asked for (its first value; an area: the mean of its
        values' centres, each a postal code, city or county), None when unknown."""
        for s in place:
            if s.kind is ConstraintKind.AREA:
                found = [c for v in s.values for k in ("zip", "city", "county") if (c := self._centre_of(k, v))]
                if found:
                    return sum(c[0] for c in found) / len(found), sum(c[1] for c in found) / len(found)
                continue
            for value in s.values:
                if centre := self._centre_of(str(s.kind), value):
                    return centre
        return None

    def _centre_of(self, kind: str, value: str) -> tuple[float, float] | None:
        return self.centres.get((kind, postal_head(value) if kind == "zip" else value))

    def reachable_record(self, record: ServiceRecord, minute: int, today: int) -> str | None:
        """`reachable` for any record, held by the index or not (a service of the request's own topic)."""
        if record.id in self.records:
            return self.reachable(record.id, today, minute)
        by = always_open_by(record, self.words)
        return ALWAYS[by] if by else reachable_now(record, today, minute)

    def reachable(self, record_id: str, today: int, minute: int) -> str | None:
        """Why the record can be reached now (24 hours, open now by its hours, a line), or None. A line whose
        parsed hours say it is closed now is not reachable now (a crisis line open Monday to Thursday, 10 to 3)."""
        if record_id in self.always_open:
            return ALWAYS[self.always_open[record_id]]
        record = self.records.get(record_id)
        if record is None:
            return None
        now = reachable_now(record, today, minute)
        if now is None and record_id in self.lines and not record.openings:
            return LINE
        return now


def _matches(pattern: Any, text: str) -> bool:
    return pattern is not None and bool(pattern.search(text))


def _serves(kind: UrgencyKind, record: ServiceRecord, terms: Sequence[str]) -> tuple[int, int] | None:
    wanted = {t.casefold(): rank for rank, t in enumerate(kind.terms)}
    ranks = [wanted[t.casefold()] for t in terms if t.casefold() in wanted]
    if ranks:
        return TERM, min(ranks)
    if _matches(kind.services, record.name):
        return NAME, 0  # a name that says it ("... SUICIDE PREVENTION") is as sure as the kind's first term
    if _matches(kind.services, record.description):
        return DESCRIPTION, len(kind.terms)
    return None


def is_line(record: ServiceRecord, words: WordList) -> bool:
    """A phone or text line: its name, its hours text ("Crisis line, 24 hours daily") or one of its term names
    says so, and it has a number to call."""
    named = [record.name, record.hours_text, *(n for _, n in record.taxonomy if not _matches(words.not_serving, n))]
    return any(p.strip() for p in record.phones) and any(_matches(words.hotline, n) for n in named)


def always_open_by(record: ServiceRecord, words: WordList) -> str | None:
    """Where the record says it is open every hour of every day (a key of ALWAYS), None: nowhere. By its parsed
    hours (every weekday from midnight to midnight) or its hours text ("24 hours daily"), its name ("24 HOUR
    HELPLINE") or its description ("a 24-hour crisis line")."""
    days = {o.weekday for o in record.openings if o.opens == 0 and o.closes in (0, 1440)}
    if len(days) == 7 or _matches(words.always_open, record.hours_text):
        return "hours"
    if _matches(words.always_open, record.name):
        return "name"
    return "text" if _matches(words.always_open, record.description) else None


def reachable_now(record: ServiceRecord, today: int, minute: int) -> str | None:
    """OPEN_NOW when one of the record's parsed openings covers this weekday and minute (an opening past midnight
    yesterday counts for today's early hours), else None."""
    for o in record.openings:
        if o.covers(today, minute):
            return OPEN_NOW
        if o.closes < o.opens and o.weekday == (today - 1) % 7 and minute < o.closes:
            return OPEN_NOW
    return None


def _toll_free(number: str, country: str | None) -> bool:
    if not country:
        return False
    try:
        parsed = phonenumbers.parse(number, country)
    except phonenumbers.NumberParseException:
        return False
    return phonenumbers.number_type(parsed) == phonenumbers.PhoneNumberType.TOLL_FREE


# ------------------------------------------------------------------------------------------------ ranking


@dataclass(frozen=True)
class Ranked:
    """One candidate of an urgent turn, with why it comes where it does (for the trail)."""

    record_id: str
    reachable: str | None  # LINE, ALWAYS, OPEN_NOW, or None (not known to be reachable now)
    kind: str | None  # the urgency kind it serves, None: a candidate of the request's topic
    how: int  # TERM, NAME, DESCRIPTION (a topic candidate: DESCRIPTION)
    in_place: bool
    in_region: bool
    km: float | None  # from the centre of the place asked, when both are known
    merit: tuple[Any, ...] = ()  # its order but for where it is: what decides between lines and the place's own

    def reason(self) -> str:
        how = ("by its service type", "by its name", "by its description")[self.how]
        parts = [self.reachable or "not known to be open now", f"serves {self.kind} {how}" if self.kind else "topic"]
        parts.append("in the place asked" if self.in_place else "in the region" if self.in_region else "elsewhere")
        return "; ".join(parts + ([f"{self.km:.0f} km away"] if self.km is not None else []))


def rank(
    urgency: Urgency,
    index: CrisisIndex,
    *,
    in_place: Callable[[ServiceRecord], bool] | None,
    topical: Sequence[ServiceRecord] = (),
    today: int,
    minute: int,
    fallback: Sequence[UrgencyKind] = (),
    region: Iterable[str] = (),
    centre: tuple[float, float] | None = None,
    request: str = "",
    always_open_too: bool = False,
) -> list[Ranked]:
    """Candidates of an urgent turn, reachable now first.

    Candidates: the records serving the request's kinds (or, when none of its kinds names services, the
    `fallback` kinds) and `topical` (the request's own topic, best first). With `in_place` (whether a record is in
    the place asked for): the records of the place. Without: the phone and text lines, wherever they are (a line
    serves wherever one calls from), and with `always_open_too` (no place known) the services open 24 hours too.

    Order: reachable now first; then, when the request asks for a voice (`by_phone`), a line before a service
    one must go to; then what surely serves (a term of the kind, its name, the service type the
    request names) before what only its description ties to it; then stated to be open now before a line whose
    hours are not stated; then the request's own words in its name or term names; then the kinds' order, the
    kind's order of its term names, the more of them it holds the better; then within NEARBY_KM of the place's
    `centre`, toll-free (callable from anywhere), in the region (`region`: the profile's names of it), the rest;
    nearest first."""
    kinds = [k for k in urgency.kinds if k.terms or k.services] or list(fallback)
    words = index.words
    order_of = {k.name: i for i, k in enumerate(kinds)}
    regions = {r.casefold() for r in region if r.strip()}
    best: dict[str, tuple[tuple[Any, ...], Ranked]] = {}

    said = {words.lemma(w) for w in fold_key(request).split() if w.isalpha() and w not in words.filler}

    def offer(record: ServiceRecord, kind: str | None, how: int, term_rank: int, order: int) -> None:
        local = in_place is not None and in_place(record)
        callable_now = record.id in index.lines or (always_open_too and record.id in index.always_open)
        if not local if in_place is not None else not callable_now:
            return
        reach = index.reachable_record(record, minute, today)
        near = record.state.strip().casefold() in regions
        km = _km(centre, record)
        far = km if km is not None else float("inf")
        free = record.id in index.toll_free
        held = [n for _, n in record.taxonomy]
        wanted = [k for k in kinds if k.name == kind]
        n_terms = sum(1 for n in held if wanted and n.casefold() in wanted[0].folded_terms)
        # the request's own words in the record's name or term names ("gay": "Gay/Lesbian/... Advocacy Groups")
        affinity = len(said & {words.lemma(w) for n in (record.name, *held) for w in fold_key(n).split()})
        merit = (
            reach is None,
            urgency.by_phone and record.id not in index.lines,  # a voice asked for: a line before a place
            how == DESCRIPTION,
            reach == LINE,  # a line whose hours are not stated after one stated to be open now
            -affinity,
            order_of.get(kind or "", len(order_of)),  # the word list's order of the kinds the request signals
            term_rank,
        )
        key = (
            *merit,
            -n_terms,  # more of the kind's services: the more specialised
            far > NEARBY_KM,
            not free,
            not near and not free,  # a toll-free line serves the whole country, wherever it is based
            far,
            order,
        )
        if record.id not in best or key < best[record.id][0]:
            best[record.id] = (key, Ranked(record.id, reach, kind, how, local, near, km, merit))

    for kind in kinds:
        for rid, (how, term_rank) in index.serving.get(kind.name, {}).items():
            offer(index.records[rid], kind.name, how, term_rank, 0)
    for order, record in enumerate(topical):
        offer(record, None, TERM, -1, order + 1)  # the service type the person named: as sure as the kind's best
    return [r for _, r in sorted(best.values(), key=lambda kv: (kv[0], kv[1].record_id))]


def close_by(centre: tuple[float, float] | None, record: ServiceRecord) -> float | None:
    """The record's distance from `centre` when within CLOSE_BY_KM, else None."""
    km = _km(centre, record)
    return km if km is not None and km <= CLOSE_BY_KM else None


def _km(centre: tuple[float, float] | None, record: ServiceRecord) -> float | None:
    """Great-circle distance from `centre` to the record, None when either is unknown."""
    if centre is None or record.latitude is None or record.longitude is None:
        return None
    lat1, lon1, lat2, lon2 = map(math.radians, (*centre, record.latitude, record.longitude))
    a = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371.0 * math.asin(min(1.0, math.sqrt(a)))


# ------------------------------------------------------------------------------------------------ reply


def numbers_lines(profile: CatalogProfile) -> list[str]:
    """The profile's emergency and crisis numbers, one line each; none when the profile has none."""
    numbers: list[PhoneNumber] = [*profile.emergency_numbers, *profile.crisis_numbers]
    return [say("call_number", number=n.number, label=n.label) for n in numbers]


def urgent_reply(
    lines: Sequence[Recommendation],
    local: Sequence[Recommendation],
    summary: str,
    profile: CatalogProfile,
    words: WordList,
    *,
    reasons: Mapping[str, str | None],
    before: str = "",
    question: str = "",
    lines_first: bool = True,
) -> str:
    """The profile's numbers first; then the lines one can call now from anywhere and the services of the place
    (`lines_first`: in that order), each with its phone number first and why it can be reached now; then the
    question (where?) when the place is not known yet. `before`: a sentence of the usual reply kept (what the
    directory lacks)."""
    out = numbers_lines(profile)
    if before.strip():
        out += ["", before.strip()]
    sections: list[list[str]] = []
    if lines:
        section = ["", say("call_now")]
        for i, rec in enumerate(lines, 1):
            section += _line_item(i, rec.record, reasons.get(rec.record.id), words)
        sections.append(section)
    if local:
        sections.append(["", templated_reply(local, summary, words=words, phone_first=True, notes=reasons)])
    for section in sections if lines_first else sections[::-1]:
        out += section
    if not lines and not local and not out:
        out.append(templated_reply([], summary, help_line=profile.help_line))
    if question:
        out += ["", question]
    return "\n".join(out).strip()


def _line_item(i: int, r: ServiceRecord, reason: str | None, words: WordList) -> list[str]:
    org = r.organization.strip()
    name = r.name.strip() or say("not_stated")
    lines = ["", f"{i}. {name}" + (f" ({org})" if org and org.casefold() != name.casefold() else "")]
    lines.append(f"   {say('label_phone')}: {', '.join(p.strip() for p in r.phones if p.strip()) or say('not_stated')}")
    if reason:
        lines.append(f"   {say('label_now')}: {reason}")
    hours = format_hours(r.openings, r.hours_text, words=words)
    if hours != say("not_stated"):
        lines.append(f"   Hours: {hours}")
    lines.append(f"   {say('label_based')}: {format_address(r)}")
    return lines
