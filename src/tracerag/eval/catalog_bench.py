"""The catalog assistant's benchmark: requests generated from the catalog by templates, each with its gold set
computed by strict filtering of the catalog on the constraints the template put in (not on what the assistant
parses: a misread city then shows as unsatisfied constraints and lost recall).

The requests come from what the catalog holds: a catalog without taxonomy, opening hours or languages gets the
categories it can support, and `unsupported_categories` says which were skipped and why (the report prints it).
Five categories as in the issue — location only, eligibility, hours, a named service, combinations — plus
requests without any location, on which the assistant should ask a clarifying question, and requests for services
the catalog does not hold (`not_in_catalog`): topics from `NOT_HELD_TOPICS`, each kept only if the catalog's
taxonomy names and texts are verified, when the benchmark runs, not to hold its words together
(`verify_topics`), asked in a real city of the catalog, near one of its zips, in a city with a typo, or nowhere;
the expected outcome is no recommendation and a reply saying that nothing matches, naming the topic and the place
as the catalog spells it. Metrics per category and per structured-index variant: structural constraint
satisfaction of the recommendations, checked on the record's own fields against the constraints the assistant
parsed ("parsed") and against those the template meant ("intended"),
out-of-catalog recommendations (ids the catalog lacks), recall of the gold set in the top k (|top-k ∩ gold| /
min(k, |gold|)), the clarifying-question rate, the rate of correct "nothing matches" replies on `not_in_catalog`
and the false-refusal rate ("nothing matches" on a request the catalog holds) on every other category.
"""

from __future__ import annotations

import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any, NamedTuple

import pycountry
import Stemmer

from tracerag.catalog import filters
from tracerag.catalog.assistant import CatalogAssistant
from tracerag.catalog.model import ConstraintKind, Semantic, ServiceRecord, Structural
from tracerag.catalog.parse import content_words
from tracerag.catalog.profile import CatalogProfile
from tracerag.catalog.store import CatalogStore
from tracerag.catalog.words import WordList
from tracerag.config import Settings
from tracerag.errors import ConfigError
from tracerag.eval.report import trails_dir, write_reports
from tracerag.llm import StructuredLLM
from tracerag.text import fold_key
from tracerag.trail.events import CatalogOutcome, CatalogVariant

CATEGORIES = ("location", "eligibility", "hours", "named", "combination", "no_location", "not_in_catalog")
IN_CATALOG = CATEGORIES[:-1]

# Services a directory of public services is unlikely to list. Each is checked against the catalog when the
# benchmark runs (`verify_topics`); one the catalog does hold is dropped and reported, never asked.
NOT_HELD_TOPICS = (
    "piano tuning",
    "helicopter rental",
    "yacht charter",
    "tattoo removal",
    "sushi restaurant",
    "wedding photography",
    "ski lessons",
    "dog grooming",
    "car wash",
    "hot air balloon rides",
    "limousine rental",
    "jewelry appraisal",
    "scuba diving lessons",
    "guitar repair",
    "wine tasting",
    "escape room",
    "golf lessons",
    "nail salon",
    "pizza delivery",
    "bitcoin mining",
    "karaoke bar",
    "horseback riding",
    "watch repair",
    "drone racing",
    "art auction",
    "surfboard rental",
    "bowling alley",
    "skydiving",
    "sailing lessons",
    "luxury cruises",
    "chimney sweeping",
    "swimming pool cleaning",
    "tuxedo rental",
    "cake decorating",
    "perfume shop",
    "antique appraisal",
    "violin lessons",
    "fireworks display",
    "sports car rental",
    "poker tournament",
)


@dataclass
class CatalogQuery:
    id: str
    category: str
    text: str
    structural: list[Structural]
    semantic: list[Semantic] = field(default_factory=list)
    gold: list[str] = field(default_factory=list)
    topic: str = ""  # not_in_catalog: the topic the reply must name
    place: str = ""  # not_in_catalog: the place as the catalog spells it, which the reply must name ("" for none)


def _topic_terms(store: CatalogStore, min_services: int = 5) -> list[tuple[str, str]]:
    """Taxonomy terms tagged on enough services to make a request about them, with a short topic phrase."""
    gaz = store.gazetteer()
    counts: Counter[str] = Counter()
    for record in store.get(store.all_ids()).values():
        counts.update({t for t, _ in record.taxonomy})
    terms = [
        (t, gaz.taxonomy[t])
        for t, n in counts.items()
        if n >= min_services and t in gaz.taxonomy and not is_population_term(t)
    ]
    return sorted(terms)


def _service_terms(record: ServiceRecord) -> list[tuple[str, str]]:
    return [(t, name) for t, name in record.taxonomy if not is_population_term(t)]


# AIRS/211 LA codes of the target-population facet ("Y", "YB-8000", "YF-3000.1400"): who a service is for, which is
# eligibility, not a kind of service. Ids that are not AIRS codes ("Youth Workforce Development") are services.
_POPULATION = re.compile(r"Y(?:[A-Z](?:-[\d.-]+)?)?")


def is_population_term(term_id: str) -> bool:
    return bool(_POPULATION.fullmatch(term_id.strip()))


def profile_of(store: CatalogStore) -> CatalogProfile:
    """The profile beside the store's catalog (defaults when there is none)."""
    return CatalogProfile.load(Path(store.path).parent)


def text_language_name(language: str) -> str:
    """The English name of the catalog's text language ("en" → "English"): a request for services in the
    language the whole directory is written in constrains nothing worth generating."""
    found = pycountry.languages.get(alpha_2=language)
    return found.name if found is not None else language


def unsupported_categories(store: CatalogStore) -> dict[str, str]:
    """Categories the catalog cannot support, with why: the templates ask for a service type (taxonomy), a
    weekday (opening hours) or a language the catalog must hold for a request to have a gold set."""
    records = store.get(store.all_ids()).values()
    skipped: dict[str, str] = {}
    if not any(r.city for r in records):
        return {c: "no record states a city" for c in CATEGORIES if c != "not_in_catalog"}
    if not any(r.city and _service_terms(r) for r in records):
        why = "no taxonomy: the template names a service type, and no record has one"
        skipped.update(dict.fromkeys(("location", "eligibility", "hours", "combination", "no_location"), why))
    if not any(r.openings for r in records):
        skipped["hours"] = skipped.get("hours") or "no opening hours: no record has a schedule that could be read"
        other = text_language_name(profile_of(store).language)
        if not any(lang != other for r in records for lang in r.languages):
            skipped.setdefault(
                "combination", "no opening hours and no language besides the texts': nothing to combine with"
            )
    home = profile_of(store).home_place
    if home:  # `catalog.home_place`: nothing to ask, so no clarifying question is expected
        skipped.setdefault(
            "no_location", f"one place: a request naming none is answered for the profile's home_place {home!r}"
        )
    if not verify_topics(store).kept:
        skipped["not_in_catalog"] = "every candidate topic is held by some record or term"
    return skipped


def _phrase(term_name: str) -> str:
    return re.sub(r"\s*/\s*", " or ", term_name).lower()


@dataclass(frozen=True)
class TopicCheck:
    """Which of `NOT_HELD_TOPICS` the catalog was verified not to hold, and why the others were dropped."""

    kept: tuple[str, ...]
    dropped: tuple[tuple[str, str], ...]  # (topic, what holds it)

    def to_dict(self) -> dict:
        return {"kept": list(self.kept), "dropped": [{"topic": t, "held_by": why} for t, why in self.dropped]}


_CHECKS: dict[tuple[str, int], TopicCheck] = {}


def verify_topics(store: CatalogStore, topics: Sequence[str] = NOT_HELD_TOPICS) -> TopicCheck:
    """Keep the topics whose content words, by Snowball stem, no taxonomy term name holds all of, that name no
    taxonomy term whole, and that no record holds all of anywhere in its text or its terms' names: stricter than
    the assistant's own rule (which wants the words within a few words of one another), and written apart from it,
    so the expected outcome does not borrow the code it checks."""
    key = (str(store.path), store.count())
    if key in _CHECKS and topics is NOT_HELD_TOPICS:
        return _CHECKS[key]
    profile = profile_of(store)
    stemmer = Stemmer.Stemmer(profile.language)
    words = WordList.load(profile.language, profile.words)

    def stems(text: str) -> set[str]:
        return set(stemmer.stemWords(fold_key(text).split()))

    gazetteer = store.gazetteer()
    terms = [
        (name, stems(name), set(stemmer.stemWords(content_words(name, words)))) for name in gazetteer.taxonomy.values()
    ]
    records = [
        (r.name, stems(" ".join([r.text(), r.organization, *(n for _, n in r.taxonomy)])))
        for r in store.get(store.all_ids()).values()
    ]
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    for topic in topics:
        wanted = set(stemmer.stemWords(content_words(topic, words)))
        # a term that holds the topic's words, or that the topic names ("bowling alley" names the term "Bowling")
        holder = next((f"taxonomy term '{n}'" for n, t, c in terms if wanted <= t or (c and c <= wanted)), None)
        holder = holder or next((f"record '{n}'" for n, t in records if wanted <= t), None)
        if not wanted:
            holder = "no content words"
        if holder:
            dropped.append((topic, holder))
        else:
            kept.append(topic)
    check = TopicCheck(tuple(kept), tuple(dropped))
    if topics is NOT_HELD_TOPICS:
        _CHECKS[key] = check
    return check


def _typo(city: str, rng: random.Random, known: set[str]) -> str | None:
    """The city with one inner letter of its longest word dropped ("Riverton" → "Rivrton"), when that word has six
    letters or more and the result is no other city of the catalog."""
    words = city.split()
    longest = max(range(len(words)), key=lambda i: len(words[i]))
    word = words[longest]
    if len(word) < 6 or not word.isalpha():
        return None
    cut = rng.randrange(1, len(word) - 1)
    typo = " ".join([*words[:longest], word[:cut] + word[cut + 1 :], *words[longest + 1 :]])
    return None if fold_key(typo) in known else typo


def generate(store: CatalogStore, n: int = 1000, seed: int = 0) -> list[CatalogQuery]:
    """`n` requests spread over the categories the catalog supports (`unsupported_categories` says which it does
    not, and why), no-location and not-in-catalog ones included, reproducible from `seed`."""
    skipped = unsupported_categories(store)
    categories = [c for c in CATEGORIES if c not in skipped]
    if not categories:
        return []
    requests = _Requests.of(store, random.Random(seed), with_hours="hours" not in skipped)
    queries: list[CatalogQuery] = []
    per = max(1, n // len(categories))
    overflow = "combination" if "combination" in categories else categories[0]  # what n % len(categories) adds
    guard = 0
    while len(queries) < n and guard < n * 50:
        guard += 1
        category = categories[len(queries) // per] if len(queries) // per < len(categories) else overflow
        if category == "not_in_catalog" and not requests.not_held:
            break
        query = requests.make(category, len(queries))
        if query is not None:
            queries.append(query)
    return queries[:n]


class _Draw(NamedTuple):
    """The place and service type a request is made from: its city, the two as constraints, the type as said."""

    city: str
    city_c: Structural
    type_c: Structural
    topic: str


@dataclass
class _Requests:
    """What `generate` makes requests from: the catalog's records (by city), its service terms, its weekday names
    and language, the topics it does not hold. Every draw comes from the one `rng`, in the same order each time, so
    that a seed gives the same requests."""

    store: CatalogStore
    rng: random.Random
    with_hours: bool
    profile: CatalogProfile
    text_language: str
    weekdays: Sequence[str]
    not_held: Sequence[str]
    known_cities: set[str]
    records: dict[str, ServiceRecord]
    by_city: dict[str, list[ServiceRecord]]
    terms: list[tuple[str, str]]

    @classmethod
    def of(cls, store: CatalogStore, rng: random.Random, with_hours: bool) -> _Requests:
        profile = profile_of(store)
        records = store.get(store.all_ids())
        by_city: dict[str, list[ServiceRecord]] = defaultdict(list)
        for r in records.values():
            if r.city:
                by_city[r.city].append(r)
        return cls(
            store,
            rng,
            with_hours,
            profile,
            text_language_name(profile.language),
            WordList.load(profile.language, profile.words).weekday_names,
            verify_topics(store).kept,
            {fold_key(c) for c in store.gazetteer().cities.values()},
            records,
            by_city,
            _topic_terms(store),
        )

    def make(self, category: str, number: int) -> CatalogQuery | None:
        """Request `number` of `category`, or None when this draw makes none (no gold, a name too short...)."""
        city, term_id, term_name = self._city_term()
        draw = _Draw(
            city,
            Structural(ConstraintKind.CITY, (city,), city),
            Structural(ConstraintKind.SERVICE_TYPE, (term_id,), term_name),
            _phrase(term_name),
        )
        make = {
            "location": self._location,
            "eligibility": self._eligibility,
            "hours": self._hours,
            "named": self._named,
            "combination": self._combination,
            "no_location": self._no_location,
        }.get(category, self._not_in_catalog)
        return make(category, number, draw)

    def _city_term(self) -> tuple[str, str, str]:
        # Service terms only: the Y facet names target populations ("Older Adults"), which are eligibility, not a
        # kind of service.
        typed = [r for r in self.records.values() if r.city and _service_terms(r)]
        if not typed:  # a catalog without taxonomy: a place only (named and not-in-catalog requests)
            return self.rng.choice([r for r in self.records.values() if r.city]).city, "", ""
        record = self.rng.choice(typed)
        term_id, term_name = self.rng.choice(_service_terms(record))
        return record.city, term_id, term_name

    def _gold(
        self,
        category: str,
        number: int,
        text: str,
        structural: list[Structural],
        semantic: list[Semantic] | None = None,
    ) -> CatalogQuery | None:
        """A request whose gold is the catalog filtered on its constraints; None when that finds nothing (but
        for a request without a location, which has no gold)."""
        gold = self.store.filter(structural) if structural else []
        if category != "no_location" and not gold:
            return None
        return CatalogQuery(f"{category}-{number}", category, text, structural, semantic or [], gold)

    def _location(self, category: str, number: int, draw: _Draw) -> CatalogQuery | None:
        rng = self.rng
        if rng.random() < 0.3:
            record = rng.choice(self.by_city[draw.city])
            if record.zip:
                zip_c = Structural(ConstraintKind.ZIP, (record.zip,))
                return self._gold(category, number, f"{draw.topic} near {record.zip}", [zip_c, draw.type_c])
        template = rng.choice(["{t} in {c}", "I need {t} in {c}", "where can I find {t} in {c}?"])
        return self._gold(category, number, template.format(t=draw.topic, c=draw.city), [draw.city_c, draw.type_c])

    def _eligibility(self, category: str, number: int, draw: _Draw) -> CatalogQuery | None:
        said, condition = self.rng.choice(
            [
                ("that doesn't need ID", Semantic("ID required", negated=True)),
                ("for seniors", Semantic("seniors")),
                ("for veterans", Semantic("veterans")),
                ("for children", Semantic("children")),
            ]
        )
        text = f"{draw.topic} in {draw.city} {said}"
        return self._gold(category, number, text, [draw.city_c, draw.type_c], [condition])

    def _hours(self, category: str, number: int, draw: _Draw) -> CatalogQuery | None:
        rng, weekdays = self.rng, self.weekdays
        day = rng.choice(range(7)) if rng.random() < 0.3 else rng.choice(range(5))
        day_c = Structural(ConstraintKind.WEEKDAY, (str(day),), weekdays[day])
        text = f"{draw.topic} in {draw.city} open on {weekdays[day]}"
        if rng.random() >= 0.5:
            return self._gold(category, number, text, [draw.city_c, draw.type_c, day_c])
        hour = rng.choice([9, 10, 14, 16])
        time_c = Structural(ConstraintKind.TIME, (str(hour * 60),), f"{hour % 12 or 12}{'am' if hour < 12 else 'pm'}")
        return self._gold(category, number, f"{text} at {time_c.said}", [draw.city_c, draw.type_c, day_c, time_c])

    def _named(self, category: str, number: int, draw: _Draw) -> CatalogQuery | None:
        """A service asked for by its name: its gold is every record of the city with that name."""
        record = self.rng.choice(self.by_city[draw.city])
        name = record.name.strip()
        if len(name) < 6:
            return None
        gold_ids = [r.id for r in self.by_city[draw.city] if r.name.strip().casefold() == name.casefold()]
        return CatalogQuery(f"named-{number}", "named", f"{name} in {draw.city}", [draw.city_c], [], sorted(gold_ids))

    def _combination(self, category: str, number: int, draw: _Draw) -> CatalogQuery | None:
        """A type in a city, open on a weekday (where the catalog has hours), in a language it is offered in."""
        rng, weekdays = self.rng, self.weekdays
        parts, text = [draw.city_c, draw.type_c], f"{draw.topic} in {draw.city}"
        if self.with_hours:
            day = rng.choice(range(5))
            parts.append(Structural(ConstraintKind.WEEKDAY, (str(day),), weekdays[day]))
            text = f"{draw.topic} in {draw.city} open {weekdays[day]}"
        langs = Counter(lang for r in self.by_city[draw.city] for lang in r.languages if lang != self.text_language)
        if langs and (rng.random() < 0.6 or not self.with_hours):
            lang = rng.choice(sorted(langs))
            parts.append(Structural(ConstraintKind.LANGUAGE, (lang,), lang))
            text = f"{lang}-speaking {text}"
        return self._gold(category, number, text, parts)

    def _no_location(self, category: str, number: int, draw: _Draw) -> CatalogQuery | None:
        """A common service type, no place."""
        common = _phrase(self.rng.choice(self.terms)[1]) if self.terms else draw.topic
        template = self.rng.choice(["I need {t}", "where can I get {t}?", "{t} open on Saturday"])
        return self._gold(category, number, template.format(t=common), [])

    def _not_in_catalog(self, category: str, number: int, draw: _Draw) -> CatalogQuery | None:
        """A topic the catalog lacks, in a real place of it (sometimes misspelt), near one of its zips, or nowhere."""
        rng = self.rng
        absent = rng.choice(self.not_held)
        roll = rng.random()
        place = draw.city
        if roll < 0.15:
            text, place = rng.choice(["I need {t}", "where can I get {t}?"]).format(t=absent), ""
        elif roll < 0.3:
            record = rng.choice(self.by_city[draw.city])
            if not record.zip:
                return None
            place = filters.postal_head(record.zip, self.profile.postal_code_prefix)
            text = f"{absent} near {place}"
        else:
            said = _typo(draw.city, rng, self.known_cities) if roll < 0.55 else draw.city
            if said is None:
                return None
            template = rng.choice(["{t} in {c}", "I need {t} in {c}", "where can I find {t} in {c}?"])
            text = template.format(t=absent, c=said)
        return CatalogQuery(f"{category}-{number}", category, text, [], topic=absent, place=place)


class Answer(NamedTuple):
    """What the assistant made of one request: its outcome, the ids it recommended, its reply, and the structural
    constraints it parsed (what "parsed" satisfaction is measured against)."""

    outcome: CatalogOutcome
    recommended: list[str]
    reply: str
    parsed: list[Structural]


def answer_with(assistant: CatalogAssistant) -> Callable[[str], Answer]:
    """`evaluate`'s `answer`: each request in a fresh conversation of `assistant`."""

    def answer(text: str) -> Answer:
        assistant.reset()
        turn = assistant.ask(text)
        return Answer(
            turn.outcome, [r.record.id for r in turn.recommendations], turn.reply, list(turn.constraints.structural)
        )

    return answer


@dataclass
class QueryOutcome:
    query: CatalogQuery
    outcome: CatalogOutcome
    recommended: list[str]
    satisfied: float  # share of recommendations meeting every intended structural constraint
    satisfied_parsed: float  # share of recommendations meeting every structural constraint the assistant parsed
    out_of_catalog: int
    by_kind: dict[str, tuple[int, int]]  # constraint kind -> (recommendations meeting it, recommendations)
    recall: float
    seconds: float
    reply: str = ""
    says_nothing_matches: bool = False  # not_in_catalog: no recommendation, and the reply names topic and place


def nothing_matches_reply(q: CatalogQuery, outcome: CatalogOutcome, recommended: Sequence[str], reply: str) -> bool:
    """The expected outcome of a not-in-catalog request: nothing recommended, the outcome says the catalog holds
    nothing like it, and the reply names the topic as asked and the place as the catalog spells it."""
    if outcome != CatalogOutcome.NO_MATCH or recommended or f"'{q.topic}'" not in reply:
        return False
    return not q.place or q.place in reply


def evaluate(
    queries: Sequence[CatalogQuery],
    store: CatalogStore,
    answer: Callable[[str], Answer],
    k: int,
    progress: Callable[[], None] | None = None,
) -> list[QueryOutcome]:
    """`answer(text)` (see `answer_with`) from a fresh conversation per request."""
    known = set(store.all_ids())
    outcomes = []
    for q in queries:
        started = time.perf_counter()
        outcome, recommended, reply, parsed = answer(q.text)
        seconds = time.perf_counter() - started
        records = store.get([r for r in recommended if r in known])
        ok = [rid for rid in recommended if rid in records and filters.satisfies(records[rid], q.structural)]
        ok_parsed = [rid for rid in recommended if rid in records and filters.satisfies(records[rid], parsed)]
        by_kind = {
            str(c.kind): (sum(filters.satisfies(records[r], [c]) for r in records), len(records)) for c in q.structural
        }
        gold = set(q.gold)
        recall = len(set(recommended[:k]) & gold) / min(k, len(gold)) if gold else 0.0
        outcomes.append(
            QueryOutcome(
                q,
                outcome,
                recommended,
                len(ok) / len(recommended) if recommended else 1.0,
                len(ok_parsed) / len(recommended) if recommended else 1.0,
                sum(1 for r in recommended if r not in known),
                by_kind,
                recall,
                seconds,
                reply,
                q.category == "not_in_catalog" and nothing_matches_reply(q, outcome, recommended, reply),
            )
        )
        if progress:
            progress()
    return outcomes


def summarise(outcomes: Sequence[QueryOutcome]) -> dict[str, dict[str, float | None]]:
    """Metrics overall ("all", first: it pools the categories; the rates say which ones they cover), then per
    category in `CATEGORIES` order. A rate over no request (no clarifying question asked where every request
    names a place) is None, which JSON writes as null: NaN is not JSON."""
    groups: dict[str, list[QueryOutcome]] = {"all": list(outcomes)}
    for category in CATEGORIES:
        if any(o.query.category == category for o in outcomes):
            groups[category] = [o for o in outcomes if o.query.category == category]
    return {name: _metrics(items) | _kind_rates(items) for name, items in groups.items()}


def _metrics(items: Sequence[QueryOutcome]) -> dict[str, float | None]:
    """One group's metrics, each over the requests it applies to (see `summarise`)."""
    located = [o for o in items if o.query.category not in ("no_location", "not_in_catalog")]
    unlocated = [o for o in items if o.query.category == "no_location"]
    held = [o for o in items if o.query.category in IN_CATALOG]
    not_held = [o for o in items if o.query.category == "not_in_catalog"]
    with_recs = [o for o in located if o.recommended]
    return {
        "queries": float(len(items)),
        # over the recommendations made: a category that recommends nothing (no location, not held) has none
        "constraint_satisfaction": _mean_or_none([o.satisfied for o in with_recs]),
        "constraint_satisfaction_parsed": _mean_or_none([o.satisfied_parsed for o in with_recs]),
        "out_of_catalog": float(sum(o.out_of_catalog for o in items)),
        "recall_at_k": _mean_or_none([o.recall for o in located]),
        "answered": _mean_or_none([o.outcome == CatalogOutcome.ANSWER for o in located]),
        "clarify_rate": _mean_or_none([o.outcome == CatalogOutcome.CLARIFY for o in unlocated]),
        # not_in_catalog: nothing recommended / and the reply says nothing matches, naming topic and place
        "not_held_unrecommended": _mean_or_none([not o.recommended for o in not_held]),
        "not_held_correct": _mean_or_none([o.says_nothing_matches for o in not_held]),
        # every other category: "nothing in this directory matches" said of what the catalog holds
        "false_refusal": _mean_or_none([o.outcome == CatalogOutcome.NO_MATCH for o in held]),
        "seconds": mean(o.seconds for o in items),
    }


def _kind_rates(items: Sequence[QueryOutcome]) -> dict[str, float | None]:
    """Per constraint kind, the share of the recommendations that meet it (intended constraints)."""
    rates: dict[str, float | None] = {}
    for kind in sorted({k for o in items for k in o.by_kind}):
        met = sum(o.by_kind[kind][0] for o in items if kind in o.by_kind)
        seen = sum(o.by_kind[kind][1] for o in items if kind in o.by_kind)
        rates[f"satisfied_{kind}"] = met / seen if seen else None
    return rates


def _mean_or_none(values: Sequence[float]) -> float | None:
    """The mean, or None over no value (a rate no request measured)."""
    return mean(values) if values else None


def _rate(value: float | None) -> str:
    """A rate for the report: three decimals, or a dash where no request measured it."""
    return "–" if value is None else f"{value:.3f}"


def markdown(summary: dict) -> str:
    """Variants as rows, each variant's pooled `all` row first, then its categories, in the columns of
    docs/guide/catalog.md: constraint satisfaction (parsed / intended), out-of-catalog, recall@k, answered,
    clarify rate, not held, false refusals."""
    k = summary["k"]
    lines = [
        f"# Catalog assistant: {summary['queries']} generated requests, k = {k}",
        "",
        "Requests per category: " + ", ".join(f"{c} {n}" for c, n in summary["by_category"].items() if n),
        "",
    ]
    for category, why in summary.get("skipped_categories", {}).items():
        lines.append(f"Skipped category {category}: {why}.")
    if summary.get("skipped_categories"):
        lines.append("")
    lines += [
        "| variant | category | constraint satisfaction (parsed / intended) | out-of-catalog | "
        f"R@{k} of gold | answered | clarifying question without a location | not in the catalog: says nothing "
        "matches | false refusals |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for variant, table in summary["results"].items():
        for category, m in table.items():
            lines.append(
                f"| {variant} | {category} | {_rate(m.get('constraint_satisfaction_parsed'))} / "
                f"{_rate(m['constraint_satisfaction'])} | {int(m['out_of_catalog'])} | "
                f"{_rate(m['recall_at_k'])} | {_rate(m['answered'])} | {_rate(m['clarify_rate'])} | "
                f"{_rate(m.get('not_held_correct'))} | {_rate(m.get('false_refusal'))} |"
            )
    topics = summary.get("not_in_catalog_topics")
    if topics:
        dropped = "; ".join(f"{d['topic']} ({d['held_by']})" for d in topics["dropped"]) or "none"
        lines += [
            "",
            f"Not-in-catalog topics verified absent: {len(topics['kept'])}; dropped because the catalog holds their"
            f" words: {dropped}.",
        ]
    lines += [
        "",
        "Parsed satisfaction is measured against the constraints the assistant understood, intended satisfaction",
        "against those the template put in the request (so it also counts what the parser misread); intended, per",
        "constraint kind (all categories):",
        "",
        "| variant | " + " | ".join(KINDS) + " |",
        "|---|" + "---|" * len(KINDS),
    ]
    for variant, table in summary["results"].items():
        row = table["all"]
        lines.append(f"| {variant} | " + " | ".join(_rate(row.get(f"satisfied_{k}")) for k in KINDS) + " |")
    return "\n".join(lines) + "\n"


KINDS = ("city", "zip", "service_type", "weekday", "time", "language")


def check_variants(variants: Sequence[str]) -> None:
    """Refuse unknown structured-index variants before anything is loaded or run."""
    unknown = [v for v in variants if v not in set(CatalogVariant)]
    if unknown or not variants:
        what = f"unknown variants {unknown}" if unknown else "no variant named"
        raise ConfigError(f"{what}; expected some of {', '.join(CatalogVariant)}")


def run_benchmark(
    catalog_dir: Path,
    settings: Settings,
    variants: Sequence[str],
    out_dir: Path,
    *,
    queries: int = 1000,
    seed: int = 0,
    k: int = 5,
    limit: int | None = None,
    llm: StructuredLLM | None = None,
    progress: Callable[[str, int], Callable[[], None]] | None = None,
) -> dict[str, Any]:
    """The whole benchmark of one catalog: `queries` requests generated with `seed` (with `limit`, N of them
    evenly spaced, so that a quick check still covers every category), each answered afresh by the assistant with
    every structured-index variant, rules only, then, when a model is given, each variant again with it (the one
    model serves every variant: a local model loads once). Scores them, writes results.json, results.md and the
    trails into `out_dir`, and returns the summary. `progress(label, total)` returns a callback advanced once per
    request."""
    check_variants(variants)
    store = CatalogStore.of_catalog(catalog_dir)
    try:
        generated = generate(store, queries, seed)
        skipped = unsupported_categories(store)  # the categories this catalog cannot support, and why
        selected = generated[:: max(1, len(generated) // limit)][:limit] if limit else generated
        configs: list[tuple[str, StructuredLLM | None]] = [(v, None) for v in variants]
        if llm is not None:
            configs += [(v, llm) for v in variants]
        results = {}
        for variant, model in configs:
            label = variant + (f" + {model.model}" if model else "")
            tick = progress(label, len(selected)) if progress else None
            with CatalogAssistant(
                catalog_dir, settings, llm=model, variant=variant, k=k, trail_dir=trails_dir(out_dir)
            ) as assistant:
                outcomes = evaluate(selected, store, answer_with(assistant), k, progress=tick)
            results[label] = summarise(outcomes)
        topics = verify_topics(store).to_dict()
    finally:
        store.close()
    summary = {
        "catalog": str(catalog_dir),
        "queries": len(selected),
        "by_category": {c: sum(q.category == c for q in selected) for c in CATEGORIES},
        "k": k,
        "results": results,
        "skipped_categories": skipped,
        "not_in_catalog_topics": topics,
    }
    write_reports(out_dir, summary, markdown(summary))
    return summary
