"""A language's words for the catalog assistant, read from a data file: `catalog/words/{language}.toml`.

What a request's words mean (filler words, weekday names, parts of the day, condition phrases, language names,
everyday words for services) and how directory texts are written (sentence abbreviations, street-type words)
is language knowledge, not code: it lives in one TOML file per language, loaded once into a `WordList` that
parsing, checks, schedules and replies receive. A catalog's profile may name its own file (`words = "..."`),
in the same format. Words are compared folded (`tracerag.text.fold_key`) and, where plurals matter, by their
Snowball stem (`tracerag.text.stem`), the stemmer the text index uses.

What one *country* writes and no other (its national identity number, its immigration statuses, its benefit
programmes, its veterans' office) is not language knowledge either: it lives in `catalog/words/country-{cc}.toml`,
chosen by the catalog profile's `country`, loaded into a `CountryWords` that the condition rules receive. A
country without such a file gets the rules' generic words only.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tracerag.catalog.fact_words import FactFile, FactWords, checked_patterns
from tracerag.catalog.model import Semantic
from tracerag.errors import ConfigError
from tracerag.text import fold_key, stem

__all__ = ["CountryWords", "RecordWords", "UrgencyKind", "WordList", "fill_region"]


def _split(text: str | Iterable[str]) -> frozenset[str]:
    words = text.split() if isinstance(text, str) else [w for part in text for w in part.split()]
    return frozenset(fold_key(w) or w for w in words)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


Words = str | list[str]  # "a b c" (whitespace-separated) or ["a", "b", "c"]


class _Condition(_Strict):
    text: str
    negated: bool = False
    patterns: list[str] = Field(min_length=1)

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        return checked_patterns(patterns)


class _Languages(_Strict):
    names: Words = ""
    compound: list[str] = []
    spellings: dict[str, str] = {}
    aliases: dict[str, list[str]] = {}
    remark: Words = ""
    context: Words = ""


class _Weekdays(_Strict):
    names: list[str] = Field(min_length=7, max_length=7)
    short: list[str] = Field(min_length=7, max_length=7)
    written: list[list[str]] = Field(min_length=7, max_length=7)
    ambiguous: Words = ""
    context: Words = ""


class _Times(_Strict):
    periods: dict[str, int] = {}
    after_bare_hour: Words = ""


class _Requests(_Strict):
    clause_markers: Words = ""
    child_nouns: Words = ""
    possessives: Words = ""
    condition_stop: Words = ""
    conditions: list[_Condition] = []


class _Residency(_Strict):
    words: Words = ""
    region_phrases: list[str] = []

    @field_validator("region_phrases")
    @classmethod
    def _names_the_region(cls, phrases: list[str]) -> list[str]:
        for p in phrases:
            if "{region}" not in p:
                raise ValueError(f"a region phrase must contain {{region}}: {p!r}")
        return phrases


class _Texts(_Strict):
    abbreviations: Words = ""
    stop: Words = ""


class _Addresses(_Strict):
    street_types: dict[str, str] = {}
    ordinal_suffixes: Words = ""
    type_before_name: bool = False
    directions: dict[str, str] = {}


class _Everyday(_Strict):
    """How people tell what they need: words of their story that say nothing of the service ("my", "got",
    "husband"), and everyday words or phrases with the words the records use for the same need."""

    filler: Words = ""
    people: Words = ""
    words: dict[str, list[str]] = {}

    @field_validator("words")
    @classmethod
    def _single_record_words(cls, words: dict[str, list[str]]) -> dict[str, list[str]]:
        for said, record_words in words.items():
            if not record_words or any(len(fold_key(w).split()) != 1 for w in record_words):
                raise ValueError(f"{said!r}: give one or more record words, each a single word")
        return words


class _Replies(_Strict):
    name_small_words: Words = ""
    labels: Words = ""


class _Records(_Strict):
    more: Words = ""
    more_words: Words = ""
    do_not_refer: list[str] = []
    listed_statuses: list[str] = []
    empty_cells: list[str] = []
    season: Words = ""
    months: list[str] = Field(default=[f"{m:02d}" for m in range(1, 13)], min_length=12, max_length=12)
    date_format: str = "{year}-{month}-{day}"


@dataclass(frozen=True)
class RecordWords:
    """Words about records and paging (`catalog.record_details`, `catalog.record_status`, `catalog.paging`)."""

    more: frozenset[str] = frozenset()  # a paging request holds one of these
    more_words: frozenset[str] = frozenset()  # ... and only these and `more`
    do_not_refer: tuple[str, ...] = ()  # folded phrases of a status that means "do not refer"
    listed_statuses: frozenset[str] = frozenset()  # folded statuses that say nothing worth showing
    empty_cells: frozenset[str] = frozenset()  # folded cells that say nothing ("None", "N/A")
    season: frozenset[str] = frozenset()
    months: tuple[str, ...] = tuple(f"{m:02d}" for m in range(1, 13))
    date_format: str = "{year}-{month}-{day}"


class _UrgencyKindFile(_Strict):
    name: str = Field(min_length=1)
    label: str = Field(min_length=1)
    fallback: bool = False
    place_bound: bool = False
    patterns: list[str] = []
    mentions: list[str] = []
    unless: list[str] = []
    terms: list[str] = []
    services: list[str] = []

    @field_validator("patterns", "mentions", "unless", "services")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        return checked_patterns(patterns)

    @model_validator(mode="after")
    def _signalled(self) -> _UrgencyKindFile:
        if not self.patterns and not self.mentions:
            raise ValueError(f"urgency kind {self.name!r}: no `patterns` or `mentions` signal it")
        return self


class _Urgency(_Strict):
    hotline: list[str] = []
    always_open: list[str] = []
    not_serving: list[str] = []
    by_phone: list[str] = []
    kinds: list[_UrgencyKindFile] = []

    @field_validator("hotline", "always_open", "not_serving", "by_phone")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        return checked_patterns(patterns)


class _WordFile(_Strict):
    """The file's format: every key is checked, an unknown one is refused (a typo would silently drop words)."""

    language: str
    filler: Words = ""
    ordinary: Words = ""
    place_context: Words = ""
    term_filler: Words = ""
    irregular_plurals: dict[str, str] = {}
    county_words: Words = ""
    county_of: str = ""
    inflection_endings: Words = ""
    service_synonyms: dict[str, list[str]] = {}
    languages: _Languages = _Languages()
    weekdays: _Weekdays
    times: _Times = _Times()
    requests: _Requests = _Requests()
    residency: _Residency = _Residency()
    texts: _Texts = _Texts()
    addresses: _Addresses = _Addresses()
    facts: FactFile = FactFile()
    replies: _Replies = _Replies()
    records: _Records = _Records()
    everyday: _Everyday = _Everyday()
    urgency: _Urgency = _Urgency()


def _alternation(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One case-insensitive pattern of several, None when there are none (so nothing matches)."""
    patterns = list(patterns)
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.I) if patterns else None


@dataclass(frozen=True)
class UrgencyKind:
    """One kind of danger or immediacy a request may signal (`[[urgency.kinds]]` of the word list)."""

    name: str
    label: str  # what is looked for, in words ("help after sexual assault")
    fallback: bool  # answers an urgent request when nothing else can
    place_bound: bool  # served in the place only: its lines too come from the place asked for
    patterns: re.Pattern[str] | None  # the request's words that signal it, whatever else it says ("kill myself")
    mentions: re.Pattern[str] | None  # words that signal it unless `unless` words are there too ("suicide")
    unless: re.Pattern[str] | None  # the request's words that make the mentions about something else
    terms: tuple[str, ...]  # taxonomy term names of the services that serve it, best first
    services: re.Pattern[str] | None  # a service's name or description words that serve it

    @functools.cached_property
    def folded_terms(self) -> frozenset[str]:
        return frozenset(t.casefold() for t in self.terms)


@dataclass(frozen=True, eq=False)  # eq=False: hashed by identity, so a compiled pattern can be cached per list
class WordList:
    """One language's words, folded; built by `WordList.load`. Sets are frozen: a list is shared read-only."""

    language: str
    source: str  # the file it was read from (for messages)
    filler: frozenset[str]
    ordinary: frozenset[str]  # includes the filler words
    place_context: frozenset[str]
    term_filler: frozenset[str]
    irregular_plurals: Mapping[str, str]
    county_words: frozenset[str]
    county_of: str
    service_synonyms: Mapping[tuple[str, ...], tuple[str, ...]]  # stems of the everyday words -> term names
    synonym_words: Mapping[str, frozenset[str]]  # a synonym key's stem -> its words as the list writes them
    inflection_endings: frozenset[str]
    language_names: frozenset[str]
    compound_languages: frozenset[str]  # names of known words that are one language ("haitian creole")
    language_spellings: Mapping[str, str]  # a spelling directories write (folded) -> the name kept ("Spanish")
    language_aliases: Mapping[str, tuple[str, ...]]
    language_remark: frozenset[str]
    language_context: frozenset[str]
    weekday_names: tuple[str, ...]  # 0 = Monday
    weekday_short: tuple[str, ...]
    weekday_written: Mapping[str, int]  # every written form (folded) -> 0..6
    ambiguous_days: frozenset[str]
    day_context: frozenset[str]
    periods: Mapping[str, int]  # part of the day -> minutes after midnight
    after_bare_hour: frozenset[str]
    clause_markers: frozenset[str]
    child_nouns: frozenset[str]
    possessives: frozenset[str]
    condition_stop: frozenset[str]
    conditions: tuple[tuple[re.Pattern[str], Semantic], ...]
    residency_words: frozenset[str]
    region_phrases: tuple[str, ...]
    abbreviations: frozenset[str]
    text_stop: frozenset[str]
    street_types: Mapping[str, str]
    ordinal_suffixes: frozenset[str]
    type_before_name: bool
    directions: Mapping[str, str]
    name_small_words: frozenset[str]
    reply_labels: frozenset[str]
    # lemmas of an everyday phrase -> the (folded) words records use for it ("sleep" -> shelter)
    everyday_words: Mapping[tuple[str, ...], tuple[str, ...]]
    everyday_people: frozenset[str]  # who a request is about ("mom"): in the topic, never required of a record
    urgency_kinds: tuple[UrgencyKind, ...]
    hotline: re.Pattern[str] | None  # a service name or term name of a phone or text line
    always_open: re.Pattern[str] | None  # an hours text, name or description saying it never closes
    not_serving: re.Pattern[str] | None  # term or service names of no help to a person in danger
    records: RecordWords = RecordWords()
    facts: FactWords = FactWords()  # stated facts, restriction groups, word senses (`catalog.fact_words`)
    by_phone: re.Pattern[str] | None = None  # a request asking for a voice ("someone to talk to"): lines first

    @classmethod
    def load(cls, language: str = "en", path: Path | None = None) -> WordList:
        """The packaged list of `language`, or the file at `path` (a profile's own). Read once per process."""
        return _load(language, str(path) if path is not None else None)

    def lemma(self, word: str) -> str:
        """A folded word's plural-insensitive form: its Snowball stem, irregular plurals first made singular
        ("children" → "child"). Compare lemmas with lemmas only."""
        return _lemma(word, self.irregular_plurals, self.language)

    def weekday(self, written: str) -> int | None:
        """0 = Monday for any written form of a day ("Thurs", "saturdays", "Mon."), None otherwise."""
        key = fold_key(written)
        if key in self.weekday_written:
            return self.weekday_written[key]
        return self.weekday_written.get(key.removesuffix("s"))

    @functools.cached_property
    def day_pattern(self) -> str:
        """A regular expression alternation of every written day, longest first (for building matchers)."""
        return "(?:" + "|".join(re.escape(w) for w in sorted(self.weekday_written, key=len, reverse=True)) + ")"


@functools.lru_cache(maxsize=8)
def _load(language: str, path: str | None) -> WordList:
    if path is None:
        resource = resources.files("tracerag.catalog") / "words" / f"{language}.toml"
        if not resource.is_file():
            raise ConfigError(
                f"no catalog word list for language {language!r} (tracerag/catalog/words/{language}.toml); "
                "write one in the same format as en.toml and name it in the catalog's profile.toml (`words`)"
            )
        where, raw = f"tracerag/catalog/words/{language}.toml", resource.read_text(encoding="utf-8")
    else:
        where = path
        try:
            raw = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the word list: {exc}") from exc
    try:
        data = _WordFile(**tomllib.loads(raw))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not TOML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{where}: invalid word list: {problems}") from None
    return _build(data, where)


def _lemma(word: str, plurals: Mapping[str, str], language: str) -> str:
    """`WordList.lemma`, also used while the list is being built."""
    return stem(plurals.get(word, word), language)


def _build(data: _WordFile, where: str) -> WordList:
    lang = data.language
    plurals = {fold_key(k): fold_key(v) for k, v in data.irregular_plurals.items()}

    def lemma(word: str) -> str:
        return _lemma(word, plurals, lang)

    filler = _split(data.filler) | _split(data.everyday.filler)  # a person's story words carry no topic either
    written: dict[str, int] = {}
    for day, forms in enumerate(data.weekdays.written):
        for form in [data.weekdays.names[day], data.weekdays.short[day], *forms]:
            written.setdefault(fold_key(form), day)
    synonyms = {
        tuple(lemma(w) for w in fold_key(words).split()): tuple(names) for words, names in data.service_synonyms.items()
    }
    synonym_words: dict[str, set[str]] = {}
    for words in data.service_synonyms:
        for w in fold_key(words).split():
            synonym_words.setdefault(lemma(w), set()).add(w)
    conditions = tuple(
        (re.compile("|".join(f"(?:{p})" for p in c.patterns), re.I), Semantic(c.text, c.negated))
        for c in data.requests.conditions
    )
    day_words = {fold_key(w) for w in (*data.weekdays.names, *data.weekdays.short)}
    return WordList(
        language=lang,
        source=where,
        filler=filler,
        ordinary=filler | _split(data.ordinary),
        place_context=_split(data.place_context),
        term_filler=_split(data.term_filler),
        irregular_plurals=plurals,
        county_words=_split(data.county_words),
        county_of=data.county_of,
        service_synonyms=synonyms,
        synonym_words={k: frozenset(v) for k, v in synonym_words.items()},
        inflection_endings=_split(data.inflection_endings),
        language_names=_split(data.languages.names),
        compound_languages=frozenset(fold_key(c) for c in data.languages.compound),
        language_spellings={fold_key(k): v for k, v in data.languages.spellings.items()},
        language_aliases={fold_key(k): tuple(fold_key(v) for v in vs) for k, vs in data.languages.aliases.items()},
        language_remark=_split(data.languages.remark),
        language_context=_split(data.languages.context),
        weekday_names=tuple(data.weekdays.names),
        weekday_short=tuple(data.weekdays.short),
        weekday_written=written,
        ambiguous_days=_split(data.weekdays.ambiguous),
        day_context=_split(data.weekdays.context),
        periods={fold_key(k): v for k, v in data.times.periods.items()},
        after_bare_hour=_split(data.times.after_bare_hour),
        clause_markers=_split(data.requests.clause_markers),
        child_nouns=_split(data.requests.child_nouns),
        possessives=_split(data.requests.possessives),
        condition_stop=_split(data.requests.condition_stop),
        conditions=conditions,
        residency_words=_split(data.residency.words),
        region_phrases=tuple(data.residency.region_phrases),
        abbreviations=_split(data.texts.abbreviations),
        text_stop=_split(data.texts.stop),
        street_types={fold_key(k): v for k, v in data.addresses.street_types.items()},
        ordinal_suffixes=_split(data.addresses.ordinal_suffixes),
        type_before_name=data.addresses.type_before_name,
        directions={fold_key(k): v for k, v in data.addresses.directions.items()},
        name_small_words=_split(data.replies.name_small_words) | day_words,
        reply_labels=_split(data.replies.labels),
        records=RecordWords(
            more=_split(data.records.more),
            more_words=_split(data.records.more_words),
            do_not_refer=tuple(fold_key(p) for p in data.records.do_not_refer),
            listed_statuses=frozenset(fold_key(p) for p in data.records.listed_statuses),
            empty_cells=frozenset(fold_key(p) for p in data.records.empty_cells),
            season=_split(data.records.season),
            months=tuple(data.records.months),
            date_format=data.records.date_format,
        ),
        facts=FactWords.build(data.facts),
        everyday_words={
            tuple(lemma(w) for w in fold_key(said).split()): tuple(fold_key(w) for w in record_words)
            for said, record_words in data.everyday.words.items()
        },
        everyday_people=_split(data.everyday.people),
        urgency_kinds=tuple(
            UrgencyKind(
                k.name,
                k.label,
                k.fallback,
                k.place_bound,
                _alternation(k.patterns),
                _alternation(k.mentions),
                _alternation(k.unless),
                tuple(k.terms),
                _alternation(k.services),
            )
            for k in data.urgency.kinds
        ),
        hotline=_alternation(data.urgency.hotline),
        always_open=_alternation(data.urgency.always_open),
        not_serving=_alternation(data.urgency.not_serving),
        by_phone=_alternation(data.urgency.by_phone),
    )


Patterns = list[str]  # regular expressions, each compiled as written (case ignored)


class _Documents(_Strict):
    other: Patterns = []


class _Immigration(_Strict):
    affirm: Patterns = []
    deny: Patterns = []
    number: Patterns = []
    number_name: str = ""
    served: Patterns = []
    request: Patterns = []


class _LowIncome(_Strict):
    affirm: Patterns = []
    request: Patterns = []


class _Veterans(_Strict):
    affirm: Patterns = []
    affirm_exact: Patterns = []  # compared with case: acronyms that are words in lowercase


class _Number(_Strict):
    label: str = Field(min_length=1)
    number: str = Field(min_length=1)


class _Numbers(_Strict):
    emergency: list[_Number] = []
    crisis: list[_Number] = []


class _CountryFile(_Strict):
    country: str
    numbers: _Numbers = _Numbers()
    documents: _Documents = _Documents()
    veterans: _Veterans = _Veterans()
    immigration: _Immigration = _Immigration()
    low_income: _LowIncome = _LowIncome()
    facts: FactFile = FactFile()

    @field_validator("country")
    @classmethod
    def _alpha2(cls, code: str) -> str:
        if not re.fullmatch(r"[A-Za-z]{2}", code):
            raise ValueError(f"expected an ISO 3166-1 alpha-2 code, not {code!r}")
        return code.upper()


@dataclass(frozen=True)
class CountryWords:
    """One country's own terms for the condition rules, each an alternation of the file's patterns ("" when the
    file gives none, or when the catalog's country has no file): built by `CountryWords.load`."""

    country: str | None
    source: str  # the file it was read from, or "" (none)
    other_documents: str = ""  # papers besides an ID
    status_affirm: str = ""  # serves people whatever their status
    status_deny: str = ""  # asks for proof of the country's citizenship or legal status
    status_number: str = ""  # the national number, asked for where documents are asked for
    status_number_name: str = ""  # how a reason names it
    status_served: str = ""  # statuses of the country's law a text names for the people it serves
    status_request: str = ""  # request words that make a condition an immigration-status one
    low_income_affirm: str = ""  # the country's means-tested programmes
    low_income_request: str = ""
    veterans_affirm: str = ""  # the country's words for veterans' offices and papers
    veterans_affirm_exact: str = ""  # the same, compared with case (an acronym)
    facts: FactWords = FactWords()  # the country's own stated facts (its benefit programmes), added to the language's
    emergency_numbers: tuple[tuple[str, str], ...] = ()  # (label, number): police, fire, ambulance
    crisis_numbers: tuple[tuple[str, str], ...] = ()  # (label, number): the country's crisis lines

    @classmethod
    def load(cls, country: str | None) -> CountryWords:
        """The packaged terms of `country` (ISO alpha-2, any case), or none when there is no file for it."""
        return _load_country(country.strip().lower() if country and country.strip() else None)


@functools.lru_cache(maxsize=8)
def _load_country(country: str | None) -> CountryWords:
    if country is None:
        return CountryWords(None, "")
    name = f"country-{country}.toml"
    resource = resources.files("tracerag.catalog") / "words" / name
    if not resource.is_file():
        return CountryWords(country.upper(), "")
    where = f"tracerag/catalog/words/{name}"
    try:
        data = _CountryFile(**tomllib.loads(resource.read_text(encoding="utf-8")))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not TOML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{where}: invalid country word list: {problems}") from None
    if data.country.lower() != country:
        raise ConfigError(f"{where}: country = {data.country!r}, expected {country.upper()!r} (the file's name)")
    imm, low = data.immigration, data.low_income
    alternation = {
        "other_documents": data.documents.other,
        "status_affirm": imm.affirm,
        "status_deny": imm.deny,
        "status_number": imm.number,
        "status_served": imm.served,
        "status_request": imm.request,
        "low_income_affirm": low.affirm,
        "low_income_request": low.request,
        "veterans_affirm": data.veterans.affirm,
        "veterans_affirm_exact": data.veterans.affirm_exact,
    }
    for key, patterns in alternation.items():
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise ConfigError(f"{where}: {key}: not a regular expression ({exc}): {p[:60]!r}") from None
    return CountryWords(
        data.country,
        where,
        status_number_name=imm.number_name,
        facts=FactWords.build(data.facts),
        emergency_numbers=tuple((n.label, n.number) for n in data.numbers.emergency),
        crisis_numbers=tuple((n.label, n.number) for n in data.numbers.crisis),
        **{key: "|".join(f"(?:{p})" for p in patterns) for key, patterns in alternation.items()},
    )


def fill_region(phrases: Iterable[str], names: Iterable[str]) -> list[str]:
    """Each `{region}` phrase with each of the region's names (the profile's region and its aliases)."""
    return [p.replace("{region}", name) for p in phrases for name in names if name.strip()]
