"""The rule-based check of a condition ("no ID required", "for seniors") against one record's own text.

`RuleChecker.check` gives an `Evidence` (see `catalog.evidence` for what a verdict means) from patterns for the
conditions people ask about most (ID, age groups, veterans, women, low income, residency, free, immigration
status) and a word-overlap fallback for anything else. Deterministic and free. The patterns are English (the
language of the directories measured here); for a catalog in another language only the fallback applies, with
that language's stemmer and stop words. Sentences are split with the word list's abbreviations, and residency
of the catalog's whole region comes from its profile, never from code. What one country alone writes (its
national identity number, its immigration statuses, its benefit programmes, its veterans' office) is data too:
`catalog/words/country-{cc}.toml`, chosen by the profile's `country` (`words.CountryWords`); the patterns here
hold only what any country's directory may write in English ("undocumented", "citizens only", "refugees").
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tracerag.catalog.evidence import Evidence, field_spans, quote_span
from tracerag.catalog.fact_words import Duration, StatedFact
from tracerag.catalog.model import Constraints, Semantic, ServiceRecord
from tracerag.catalog.profile import CatalogProfile
from tracerag.catalog.restrictions import Restriction, RestrictionFinder
from tracerag.catalog.words import CountryWords, WordList, fill_region
from tracerag.text import fold_key, sentence_spans, stem

__all__ = ["RULE_LANGUAGES", "RuleChecker", "age_ranges"]

RULE_LANGUAGES = frozenset({"en"})  # languages the patterns below are written in


# weak: affirms only when no sentence affirms or denies; both: a sentence that affirms and denies at once
# ("Flat fee; free consultation"), counted as both so the verdict is left open.
Kind = Literal["affirm", "deny", "weak", "unclear", "both"]
# A step looks at one sentence (text, field name) and returns the (start, end) of what it found, or None.
Step = Callable[[str, str], "tuple[int, int] | None"]


def _rx(pattern: str, flags: int = re.I) -> Step:
    compiled = re.compile(pattern, flags)

    def step(sentence: str, field: str) -> tuple[int, int] | None:
        m = compiled.search(sentence)
        return m.span() if m else None

    return step


@dataclass(frozen=True)
class _Rule:
    topic: str  # as said in reasons: "ID", "seniors"
    # Tried in order on each sentence; the first that finds something decides what the sentence says.
    steps: Sequence[tuple[Kind, Step]]
    # union: eligibility lists ("children and seniors") - one sentence that affirms is enough.
    # strict: a text that affirms in one sentence and denies in another is unclear (None).
    union: bool
    affirm_says: str  # "requires ID"
    deny_says: str  # "says ID is not required"
    ages: tuple[int, int] | None = None  # an age condition's ages: a record restricted to a group outside them fails


# -- ID -----------------------------------------------------------------------------------------------------------

_ID_MENTION = re.compile(
    r"\b(?:ID(?:s|'s)?\b|I\.D\.)|\b(?i:identifications?|driver'?s'?\s+licen[cs]es?|passports?|ID\s+cards?)\b"
)
_ID_NEEDED = re.compile(
    r"\b(?:must|required?|requires|requirements?|bring|provide|present|show|need(?:ed|s)?|take|mandatory|"
    r"necessary|valid|current|proper|proof|documents?|documentation)\b",
    re.I,
)
_ID_NOT_NEEDED = re.compile(
    r"\bno\s+(?:photo\s+|picture\s+)?(?:ID|I\.D\.|identification|documents?|documentation|paperwork)\b"
    r"|\bwithout\s+(?:an?\s+|any\s+)?(?:photo\s+|picture\s+)?(?:ID|I\.D\.|identification|documents?)\b"
    r"|\b(?:ID|identification|documents?|documentation)\s+(?:is\s+|are\s+)?not\s+(?:required|needed|necessary)\b",
    re.I,
)
_OPTIONAL = re.compile(
    r"\bnot\s+(?:required|needed|necessary|mandatory)\b|\boptional\b|\bif\s+(?:you\s+have\s+(?:one|it)|available)\b",
    re.I,
)


# Papers besides an ID (the country's own are added from its CountryWords.other_documents).
_OTHER_DOC = (
    r"birth\s+certificates?|proof|lease|bills?\b|insurance|tax|income|stubs?\b|certificates?|letters?\b|statements?\b"
)
_NEAR = 90  # characters between a document and the words that make it optional


def _with(generic: str, country: str) -> re.Pattern[str]:
    """The generic alternation and the country's own, as one pattern (case ignored)."""
    return re.compile(f"{generic}|{country}" if country else generic, re.I)


def _optional_near(sentence: str, span: tuple[int, int], other_doc: re.Pattern[str]) -> tuple[int, int] | None:
    """The "not required" / "if available" that qualifies the document at `span`, with no other document between
    ("a valid ID, birth certificate if available" leaves the ID required)."""
    for opt in _OPTIONAL.finditer(sentence):
        a, b = (span[1], opt.start()) if opt.start() >= span[1] else (opt.end(), span[0])
        if b - a <= _NEAR and not other_doc.search(sentence[a:b] if b > a else ""):
            return min(span[0], opt.start()), max(span[1], opt.end())
    return None


def _id_not_needed(other_doc: re.Pattern[str]) -> Step:
    def step(sentence: str, field: str) -> tuple[int, int] | None:
        m = _ID_NOT_NEEDED.search(sentence)
        if m:
            return m.span()
        for mention in _ID_MENTION.finditer(sentence):
            found = _optional_near(sentence, mention.span(), other_doc)
            if found:
                return found
        return None

    return step


def _id_needed(sentence: str, field: str) -> tuple[int, int] | None:
    mention = _ID_MENTION.search(sentence)
    if mention is None:
        return None
    # An ID named where documents are asked for, or next to a word that asks for it ("must bring a photo ID");
    # "obtain a free picture ID" in a description is a service, not a requirement.
    if field in ("application_process", "eligibility", "fees") or _ID_NEEDED.search(sentence):
        return mention.span()
    return None


def _id_rule(other_doc: re.Pattern[str]) -> _Rule:
    return _Rule(
        "ID",
        (("deny", _id_not_needed(other_doc)), ("affirm", _id_needed)),
        union=False,
        affirm_says="asks for ID",
        deny_says="says ID is not required",
    )


_ID_TRIGGER = re.compile(
    r"\b(?:id|i\.d\.|ids|identification|driver'?s'?\s+licen[cs]e|passport|documents?|documentation|paperwork)\b", re.I
)
_SELF_NEGATED = re.compile(r"\b(?:no|not|without|never|none|don'?t|doesn'?t|dont|doesnt)\b|n't\b", re.I)

# -- age groups -----------------------------------------------------------------------------------------------

_SENIOR_WORDS = (
    r"\bseniors?\b|\bsenior\s+citizens?\b|\belderly\b|\belders?\b|\bolder\s+(?:adults?|persons?|people|individuals)\b"
    r"|\bgeriatric\b|\bretirees?\b|\bthe\s+aged\b"
)
_CHILD_WORDS = (
    r"(?<!department of )(?<!Department of )(?<!DEPARTMENT OF )\bchild(?:ren|ren's)?\b(?!'?s?\s+trust)"
    r"|\bkids?\b|\byouths?\b|\bminors?\b|\bjuveniles?\b|\bteens?\b|\bteenagers?\b"
    r"|\badolescents?\b|\binfants?\b|\btoddlers?\b|\bbab(?:y|ies)\b|\bboys\b|\bgirls\b|\bpediatrics?\b"
    r"|\bpre-?school(?:ers)?\b|\bK-12\b"
)
# Words for children of one age, for a request that states the age as a number ("im 15"): a text about babies does
# not state that it serves a 15-year-old, though both are children.
_CHILD_STAGES: tuple[tuple[int, int, str], ...] = (
    (0, 5, r"\binfants?\b|\btoddlers?\b|\bbab(?:y|ies)\b|\bnewborns?\b|\bpre-?school(?:ers)?\b|\bchild(?:ren)?\b"),
    (6, 12, r"\bchild(?:ren)?\b|\bkids?\b|\bboys\b|\bgirls\b|\bminors?\b|\byouths?\b|\bK-12\b|\bschool-?age\b"),
    (13, 17, r"\bteens?\b|\bteenagers?\b|\badolescents?\b|\byouths?\b|\bminors?\b|\bjuveniles?\b|\bK-12\b"),
)


def _child_stage_words(lo: int, hi: int) -> str | None:
    stages = [words for a, b, words in _CHILD_STAGES if a <= hi and lo <= b]
    return "|".join(stages) or None


_ALL_AGES = r"\ball\s+ages\b|\bany\s+age\b|\bregardless\s+of\s+age\b|\bno\s+age\s+(?:limit|restriction|requirement)s?\b"
_PERSON = (
    r"(?:children|kids|youths?|adults?|persons?|people|individuals|students|seniors|members|girls|boys|men|women|"
    r"those|anyone|minors|teens|participants|patients|clients|residents|veterans)"
)
_UNITS_AFTER = r"(?!\s*(?:%|percent|days?|months?|weeks?|hours?|minutes?|miles?|pounds?|lbs|dollars?)\b)"
_AGE_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.I), how)
    for p, how in (
        (
            r"\bages?d?\s*(?:of\s+|from\s+|between\s+)?(\d{1,3})\s*(?:-|\u2013|to|through|thru|and)\s*(\d{1,3})\b",
            "range",
        ),
        (r"\b(\d{1,3})\s*(?:-|\u2013|to|through|thru)\s*(\d{1,3})\s*(?:years?|yrs?|y/?o)\b", "range"),
        (r"\bbetween\s+(\d{1,3})\s*(?:and|-|\u2013)\s*(\d{1,3})\s*(?:years?|yrs?)\b", "range"),
        (r"\b(\d{1,3})\s*(?:years?|yrs?)?\s*(?:of\s+age\s*)?(?:and|or|&)\s*(?:older|over|up|above)\b", "min"),
        (r"\bages?d?\s*(\d{1,3})\s*\+", "min"),
        (r"\b(\d{1,3})\s*(?:years?|yrs?)?\s*(?:of\s+age\s*)?(?:and|or|&)\s*(?:under|younger|below)\b", "upto"),
        (r"\b(\d{1,3})\s*\+\s*(?:years?|yrs?)", "min"),
        (r"\b(?:over|older\s+than|above)\s+(?:the\s+)?ages?\s+(?:of\s+)?(\d{1,3})\b", "over"),
        (r"\b(?:over|older\s+than|above)\s+(\d{1,3})\s*(?:years?\s+old|years?\s+of\s+age|yrs?\s+old|y/?o)\b", "over"),
        (rf"\b{_PERSON}\s+(?:over|older\s+than|above)\s+(\d{{1,3}})\b{_UNITS_AFTER}", "over"),
        (r"\b(?:under|younger\s+than|below|less\s+than)\s+(?:the\s+)?ages?\s+(?:of\s+)?(\d{1,3})\b", "under"),
        (
            r"\b(?:under|younger\s+than|below)\s+(\d{1,3})\s*(?:years?\s+old|years?\s+of\s+age|yrs?\s+old|y/?o)\b",
            "under",
        ),
        (rf"\b{_PERSON}\s+(?:under|younger\s+than|below)\s+(\d{{1,3}})\b{_UNITS_AFTER}", "under"),
        (r"\bup\s+to\s+(?:the\s+)?ages?\s+(?:of\s+)?(\d{1,3})\b", "upto"),
        (r"\b(?:age|aged)\s+(\d{1,3})\b(?!\s*(?:-|\u2013|to|and|\+))", "exact"),
        (r"\b(\d{1,3})\s*(?:-\s*)?(?:years?|yrs?)(?:-|\s+)old\b", "exact"),
    )
)
_MAX_AGE = 150


def age_ranges(text: str) -> list[tuple[int, int, tuple[int, int]]]:
    """(youngest, oldest, span) for each age or age range stated in `text` ("5-17 years old", "60 and over")."""
    return list(_age_ranges(text))


@functools.lru_cache(maxsize=8192)  # each record's sentences are read once per condition and once for ranking
def _age_ranges(text: str) -> tuple[tuple[int, int, tuple[int, int]], ...]:
    found: list[tuple[int, int, tuple[int, int]]] = []
    taken: list[tuple[int, int]] = []
    for pattern, how in _AGE_PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            a = int(m.group(1))
            if how == "range":
                b = int(m.group(2))
                lo, hi = min(a, b), max(a, b)
            elif how == "min":
                lo, hi = a, _MAX_AGE
            elif how == "over":
                lo, hi = a + 1, _MAX_AGE
            elif how == "under":
                lo, hi = 0, max(0, a - 1)
            elif how == "upto":
                lo, hi = 0, a
            else:
                lo = hi = a
            if hi > 120 and hi != _MAX_AGE:
                continue  # not an age
            found.append((lo, hi, m.span()))
            taken.append(m.span())
    found.sort(key=lambda r: r[2])
    return tuple(found)


def _age_rule(topic: str, lo: int, hi: int, words: str | None, *, numeric: bool = False) -> _Rule:
    """An age group. For a group ("seniors") its words affirm like a fitting age range; for one age asked as a
    number ("my 5-year-old") the stated ranges decide, and the group's words count only where no range is stated."""
    words_rx = re.compile(words, re.I) if words else None
    all_ages = re.compile(_ALL_AGES, re.I)

    def fits(sentence: str, field: str) -> tuple[int, int] | None:
        m = all_ages.search(sentence)
        if m:
            return m.span()
        ranges = age_ranges(sentence)
        for a, b, span in ranges:
            if a <= hi and lo <= b:
                return span
        if ranges:
            return None  # "21 or older ... no provision for children": the ages decide, not the word
        m = words_rx.search(sentence) if words_rx and not numeric else None
        return m.span() if m else None

    def excludes(sentence: str, field: str) -> tuple[int, int] | None:
        ranges = age_ranges(sentence)
        return ranges[0][2] if ranges else None  # only reached when no stated age fits

    def named(sentence: str, field: str) -> tuple[int, int] | None:
        m = words_rx.search(sentence) if words_rx else None
        return m.span() if m else None

    return _Rule(
        topic,
        (("affirm", fits), ("deny", excludes), ("weak", named)),
        union=True,
        affirm_says=f"is for {topic}",
        deny_says=f"states ages that leave out {topic}",
        ages=(lo, hi),
    )


# -- the other topics -------------------------------------------------------------------------------------------

_VETERANS = r"\bveterans?'?s?\b|\bvets\b|\bmilitary\b|\barmed\s+forces\b|\bservice\s+members?\b"


def _veterans_rule(country: CountryWords) -> _Rule:
    """Veterans, with the country's own words for them (its veterans' office, its discharge papers)."""
    steps: list[tuple[Kind, Step]] = [("affirm", _rx(f"{_VETERANS}|{country.veterans_affirm}".rstrip("|")))]
    if country.veterans_affirm_exact:  # an acronym whose lowercase is another word
        steps.append(("affirm", _rx(country.veterans_affirm_exact, 0)))
    return _Rule("veterans", tuple(steps), union=True, affirm_says="is for veterans", deny_says="")


_WOMEN = _Rule(
    "women",
    (
        ("deny", _rx(r"\b(?:men|males?)\s+only\b|\bonly\s+(?:for\s+)?(?:men|males?)\b")),
        (
            "affirm",
            _rx(
                r"\bwom[ae]n'?s?\b|\bfemales?\b|\bmothers?\b|\bmoms?\b|\bladies\b|\bgirls\b|\bpregnan(?:t|cy)\b"
                r"|\bmaternity\b|\bexpectant\b|\bprenatal\b"
            ),
        ),
    ),
    union=True,
    affirm_says="is for women",
    deny_says="is for men only",
)
_LOW_INCOME = (
    r"\blow[- ]income\b|\blimited\s+income\b|\bfixed\s+income\b|\bincome[- ](?:eligible|eligibility|based|"
    r"guidelines?|limits?|requirements?|qualif\w*|levels?)\b|\bpoverty\b"
    r"|\bproof\s+of\s+income\b|\bfinancial\s+(?:need|hardship)\b|\bindigent\b|\beconomically\s+disadvantaged\b"
    r"|\bsliding[- ]scale\b|\bregardless\s+of\s+(?:income|ability\s+to\s+pay)\b|\bno\s+income\s+"
    r"(?:requirements?|limits?|restrictions?|threshold)\b|\bunable\s+to\s+(?:pay|afford)\b|\buninsured\b"
    r"|\bneedy\b"
)


def _low_income_rule(country: CountryWords) -> _Rule:
    compiled = _with(_LOW_INCOME, country.low_income_affirm)
    return _Rule(
        "low income",
        (("affirm", lambda sentence, field: _span(compiled.search(sentence))),),
        union=True,
        affirm_says="is for people with low income",
        deny_says="",
    )


def _span(m: re.Match[str] | None) -> tuple[int, int] | None:
    return m.span() if m else None


# "free transportation", "free of health problems": something else is free, not the service.
_FREE_EXTRA = (
    r"(?!\s+of\s+(?!charge|cost)\w)(?!\s+(?:prescription\s+)?(?:transportation|delivery|parking|wi-?fi|shuttle|"
    r"refreshments|snacks|coffee|local\s+phone|phone\s+calls?|mail|pick-?up|confidential\s+assessment|consultation)\b)"
)
_FREE_SAID = re.compile(
    r"(?<![-\w])(?<!feel )(?<!toll )free\b(?![- ](?:standing|from)\b)"
    + _FREE_EXTRA
    + r"|\bno\s+(?:fees?|costs?|charges?)\b"
    r"|\bat\s+no\s+(?:cost|charge)\b|\bwithout\s+(?:cost|charge)\b|\bno-cost\b|\bcost-free\b|\bgratis\b",
    re.I,
)
_PRICE = re.compile(
    r"\$\s?\d[\d,.]*\s*(?:per|a|an|/|each)\s*(?:visit|session|class|month|week|year|person|child|"
    r"test|night|day|semester|course)\b",
    re.I,
)
_FEE_SAID = re.compile(
    r"\bfees?\b|\bco-?pays?\b|\bsliding[- ]scale\b|\bcosts?\s+(?:is|are|of|\$)|\bcharges?\s+"
    r"(?:is|are|of|apply)\b|\btuition\b|\bdues\b|\bpaid\s+by\s+the\s+client\b",
    re.I,
)
_AMOUNT = re.compile(r"\$\s?\d", re.I)


def _free_and_fee(sentence: str, field: str) -> tuple[int, int] | None:
    """A sentence that says free and states a fee the "free" does not cover ("Flat fee; free consultation"):
    the fee's span. "No fees" is one free statement, not both."""
    free = [m.span() for m in _FREE_SAID.finditer(sentence)]
    if not free:
        return None
    for rx in (_PRICE, _FEE_SAID, _AMOUNT):
        for m in rx.finditer(sentence):
            if not any(a <= m.start() < b for a, b in free):
                return m.span()
    return None


def _amount_in_fees(sentence: str, field: str) -> tuple[int, int] | None:
    """An amount written in the fees field ("$25") is a fee, whatever words are around it."""
    return _span(_AMOUNT.search(sentence)) if field == "fees" else None


_FREE = _Rule(
    "free",
    (
        ("both", _free_and_fee),
        ("affirm", lambda sentence, field: _span(_FREE_SAID.search(sentence))),
        ("deny", lambda sentence, field: _span(_PRICE.search(sentence))),
        ("deny", lambda sentence, field: _span(_FEE_SAID.search(sentence))),
        ("deny", _amount_in_fees),
    ),
    union=False,
    affirm_says="says it is free",
    deny_says="states a fee or cost",
)


def _required(compiled: re.Pattern[str], other_doc: re.Pattern[str], *, asked: bool = False) -> Step:
    """Like `_rx`, skipping a match made optional next to it ("birth certificate if available"); with `asked`,
    only where documents are asked for (the application or eligibility text, or next to "must", "bring", ...)."""

    def step(sentence: str, field: str) -> tuple[int, int] | None:
        if asked and field not in ("application_process", "eligibility", "fees") and not _ID_NEEDED.search(sentence):
            return None
        for m in compiled.finditer(sentence):
            if _optional_near(sentence, m.span(), other_doc) is None:
                return m.span()
        return None

    return step


_STATUS_AFFIRM = r"\bundocumented\b|\bregardless\s+of\s+(?:\w+\s+){0,2}status\b"
_STATUS_DENY = (
    r"\bcitizens?\s+only\b|\bproof\s+of\s+(?:citizenship|legal\s+(?:status|residency)|immigration\s+status"
    r"|lawful\s+\w+)\b|\blegal(?:ly)?\s+(?:permanent\s+)?residen(?:t|ts|cy|ce)\b"
)
_STATUS_SERVED = r"\bimmigrants?\b|\bimmigration\b|\brefugees?\b|\basylum\b|\basylees?\b"


def _immigration_rule(country: CountryWords, other_doc: re.Pattern[str]) -> _Rule:
    """Serves people whatever their status, or asks for proof of it; the country's own statuses and national
    number come from its CountryWords."""
    affirm = _with(_STATUS_AFFIRM, country.status_affirm)
    served = _with(_STATUS_SERVED, country.status_served)
    steps: list[tuple[Kind, Step]] = [
        ("affirm", lambda sentence, field: _span(affirm.search(sentence))),
        ("deny", _required(_with(_STATUS_DENY, country.status_deny), other_doc)),
    ]
    if country.status_number:
        steps.append(("deny", _required(re.compile(country.status_number, re.I), other_doc, asked=True)))
    steps.append(("affirm", lambda sentence, field: _span(served.search(sentence))))
    number = f" or {country.status_number_name}" if country.status_number and country.status_number_name else ""
    return _Rule(
        "immigration status",
        tuple(steps),
        union=False,
        affirm_says="serves people whatever their immigration status",
        deny_says=f"asks for proof of legal status{number}",
    )


_RESIDENCY_PHRASE = re.compile(
    r"\bresidents?\b|\bresidency\b|\bmust\s+(?:live|reside)\b|\b(?:who|that)\s+(?:live|reside)s?\s+in\b"
    r"|\bliving\s+in\b|\blives\s+in\b|\bserv(?:es|ing|ice\s+area)\b",
    re.I,
)


def _residency_rule(semantic_text: str, words: WordList, region: re.Pattern[str] | None) -> _Rule:
    """Residents of a place: a sentence naming the place's words next to a residency phrase affirms; so does one
    stating residents of the catalog's whole region (`region`, from the profile: the region's name and aliases
    in the word list's region phrases), since every place of the catalog lies in it."""
    place = [w for w in fold_key(semantic_text).split() if w not in words.residency_words]

    def names_place(sentence: str, field: str) -> tuple[int, int] | None:
        phrase = _RESIDENCY_PHRASE.search(sentence)
        if phrase is None:
            return None
        if not place:  # "residents only": any stated residency condition
            return phrase.span() if not phrase.group().lower().startswith("serv") else None
        if " " + " ".join(place) + " " in " " + fold_key(sentence) + " ":
            m = re.search(r"[\W_]+".join(re.escape(w) for w in place), sentence, re.I)
            return m.span() if m else phrase.span()
        m = region.search(sentence) if region is not None else None
        return m.span() if m else None

    def other_place(sentence: str, field: str) -> tuple[int, int] | None:
        m = re.search(r"\bresiden(?:ts?|cy)\s+(?:of|in)\b|\bmust\s+(?:live|reside)\s+in\b", sentence, re.I)
        return m.span() if m else None

    where = " ".join(place) or "the area"
    return _Rule(
        "residency",
        (("affirm", names_place), ("unclear", other_place)),
        union=True,
        affirm_says=f"serves residents of {where}" if place else "states a residency requirement",
        deny_says="",
    )


def _found(compiled: re.Pattern[str]) -> Step:
    def step(sentence: str, field: str) -> tuple[int, int] | None:
        return _span(compiled.search(sentence))

    return step


def _fact_rule(fact: StatedFact) -> _Rule:
    """A stated fact's rule from its word list entry: a sentence contradicting it, else one supporting it; a text
    that does both is unclear."""
    steps: list[tuple[Kind, Step]] = []
    if fact.deny is not None:
        steps.append(("deny", _found(fact.deny)))
    if fact.affirm is not None:
        steps.append(("affirm", _found(fact.affirm)))
    topic = fact.condition.removeprefix("for ")
    return _Rule(topic, tuple(steps), union=False, affirm_says=fact.affirm_says, deny_says=fact.deny_says)


def _duration_rule(duration: Duration, days: int) -> _Rule:
    """A time the person has kept to something against the minimum a record asks ("at least 6 months of
    sobriety" for two months sober): a longer minimum contradicts it, a shorter or equal one supports it."""

    def asked(longer: bool) -> Step:
        def step(sentence: str, field: str) -> tuple[int, int] | None:
            for pattern in duration.required:
                for m in pattern.finditer(sentence):
                    need = duration.days(m)
                    if need is not None and (need > days) == longer:
                        return m.span()
            return None

        return step

    topic = duration.as_condition(days).removeprefix("for ")
    steps: tuple[tuple[Kind, Step], ...] = (("deny", asked(True)), ("affirm", asked(False)))
    return _Rule(topic, steps, union=False, affirm_says=duration.affirm_says, deny_says=duration.deny_says)


_Maker = Callable[[str, "RuleChecker"], _Rule]


def _topics(country: CountryWords) -> tuple[tuple[re.Pattern[str], _Maker], ...]:
    """Which rule a condition's text asks for, first match first; the country adds its own request words."""
    return tuple(
        (_with(p, extra), make)
        for p, extra, make in (
            (
                r"undocumented|immigra|citizen|legal\s+status|asylum|refugee|(?:no|without)\s+papers",
                country.status_request,
                lambda t, c: c.immigration,
            ),
            (_ID_TRIGGER.pattern, "", lambda t, c: c.id_rule),
            (r"\bveteran|\bvets?\b|military|armed\s+forces", "", lambda t, c: c.veterans),
            (r"\bwom[ae]n|female|mother|\bmoms?\b|ladies|pregnan|maternity", "", lambda t, c: _WOMEN),
            (
                r"\bsenior|\belder|older\s+(?:adult|people|person)|retire|geriatric",
                "",
                lambda t, c: _age_rule("seniors", 60, _MAX_AGE, _SENIOR_WORDS),
            ),
            (
                r"\bchild|\bkids?\b|youth|minors?\b|\bteen|adolescen|juvenile|infant|toddler|bab(?:y|ies)|\bboys?\b"
                r"|\bgirls?\b|pediatric",
                "",
                lambda t, c: _age_rule("children", 0, 17, _CHILD_WORDS),
            ),
            (
                r"low[- ]income|\bincome\b|poverty|\bpoor\b|afford|financial\s+need|indigent",
                country.low_income_request,
                lambda t, c: c.low_income,
            ),
            (r"\bfree\b|no\s+(?:fee|cost|charge)|\bfees?\b|\bcost\b|\bcharge\b|\bpay\b", "", lambda t, c: _FREE),
            (
                r"resident|residency|\blives?\s+in\b|\bliving\s+in\b|\breside\b",
                "",
                lambda t, c: _residency_rule(t, c.words, c.region),
            ),
        )
    )


_NEGATION_CUE = re.compile(r"\b(?:no|not|without|never|none|except|excluding|cannot)\b|n't\b", re.I)


class RuleChecker:
    """The rules for one catalog: its word list (sentence abbreviations, stop words, residency words), its
    profile (the region a residency condition may state) and its country's own terms (`CountryWords`, by the
    profile's `country`). Rules are built once per condition text."""

    def __init__(self, words: WordList, profile: CatalogProfile | None = None):
        self.words = words
        self.profile = profile or CatalogProfile(language=words.language)
        names = [n for n in (self.profile.region, *self.profile.region_aliases) if n]
        phrases = fill_region(words.region_phrases, sorted(names, key=len, reverse=True))
        self.region = (
            re.compile("|".join(rf"\b{_spaced(p)}\b" for p in phrases), re.I) if phrases else None
        )  # residents of the catalog's whole region: any place of it is included
        self.country = CountryWords.load(self.profile.country)
        other_doc = _with(_OTHER_DOC, self.country.other_documents)
        self.id_rule = _id_rule(other_doc)
        self.immigration = _immigration_rule(self.country, other_doc)
        self.low_income = _low_income_rule(self.country)
        self.veterans = _veterans_rule(self.country)
        self._topics = _topics(self.country)
        self._rules: dict[str, _Rule | None] = {}
        self.restrictions = RestrictionFinder(words, self.country)
        self.facts = self.restrictions.facts  # the language's stated facts and the country's

    def sentences(self, text: str) -> list[tuple[int, int]]:
        return sentence_spans(text, self.words.abbreviations)

    def rule_for(self, semantic_text: str) -> _Rule | None:
        if semantic_text not in self._rules:
            self._rules[semantic_text] = self._make(semantic_text)
        return self._rules[semantic_text]

    def _make(self, semantic_text: str) -> _Rule | None:
        if self.words.language not in RULE_LANGUAGES:
            return None
        fact = self.facts.fact(semantic_text)
        if fact is not None and fact.affirm is not None:
            return _fact_rule(fact)
        for duration in self.facts.durations:
            days = duration.stated_days(semantic_text)
            if days is not None:
                return _duration_rule(duration, days)
        for trigger, make in self._topics:
            if trigger.search(semantic_text):
                return make(semantic_text, self)
        ages = age_ranges(semantic_text)
        if ages:
            lo, hi, _ = ages[0]
            group = _SENIOR_WORDS if lo >= 60 else _child_stage_words(lo, hi) if hi < 18 else None
            topic = f"age {lo}" if lo == hi else f"ages {lo}-{hi}" if hi < _MAX_AGE else f"ages {lo}+"
            return _age_rule(topic, lo, hi, group, numeric=True)
        return None

    def check(self, record: ServiceRecord, semantic: Semantic) -> Evidence:
        """A rule-based verdict on `semantic` from the record's own text (see `catalog.evidence`).

        A request phrased as a negation of ID ("no ID required", "without ID") asks for records that do not
        require it; `semantic.negated` flips the request once more (Semantic("ID required", negated=True) asks
        the same)."""
        text = record.text()
        rule = self.rule_for(semantic.text)
        if rule is None:
            return self._generic(record, text, semantic)
        negated = semantic.negated
        if rule is self.id_rule and _SELF_NEGATED.search(semantic.text):
            negated = not negated
        if not negated:
            outside = self.outside(record, rule, semantic)
            if outside is not None:
                reason = f'the text restricts it to {outside.group} ("{outside.said}"), which {rule.topic} is not'
                return Evidence(False, reason, outside.quote_span, outside.quote, "rules", semantic)
        fields = field_spans(record, text)
        hits: dict[Kind, list[tuple[tuple[int, int], tuple[int, int]]]] = {
            k: [] for k in ("affirm", "deny", "weak", "unclear", "both")
        }
        in_name: list[tuple[tuple[int, int], tuple[int, int]]] = []  # affirmed by the service's name alone
        for start, end in self.sentences(text):
            field = next((name for name, a, b in fields if a <= start < b), "")
            sentence = text[start:end]
            for kind, step in rule.steps:
                found = step(sentence, field)
                if found is None:
                    continue
                at = (start + found[0], start + found[1])
                if self.restrictions.other_sense(text, at):
                    continue  # "graduating high school seniors": not the group the rule means
                if kind == "both":
                    hits["affirm"].append(((start, end), at))
                    hits["deny"].append(((start, end), at))
                elif kind in ("affirm", "weak") and field == "name":
                    in_name.append(((start, end), at))
                else:
                    hits[kind].append(((start, end), at))
                break
        if in_name and not any(hits[k] for k in ("affirm", "deny", "weak")):
            return self._named_only(record, text, rule, semantic, negated, in_name[0])

        def evidence(passed: bool | None, reason: str, hit: tuple[tuple[int, int], tuple[int, int]]) -> Evidence:
            span = quote_span(text, *hit)
            matched = text[hit[1][0] : hit[1][1]]
            return Evidence(passed, f'{reason} ("{matched}")', span, text[span[0] : span[1]], "rules", semantic)

        affirm, deny = hits["affirm"], hits["deny"]
        if affirm and (rule.union or not deny):
            return evidence(not negated, f"the text {rule.affirm_says}", affirm[0])
        if deny and not affirm:
            return evidence(negated, f"the text {rule.deny_says}", deny[0])
        if affirm and deny:
            # Conflicting sentences: quote the one that would fail the request, and leave the verdict open.
            first = affirm[0] if negated else deny[0]
            other = deny[0] if negated else affirm[0]
            said = text[other[1][0] : other[1][1]]
            return evidence(None, f'the text says both ways (also "{said}"): unclear', first)
        if hits["weak"]:
            return evidence(not negated, f"the text {rule.affirm_says}", hits["weak"][0])
        if hits["unclear"]:
            return evidence(
                None, f"the text has a {rule.topic} condition the rules cannot match to the request", hits["unclear"][0]
            )
        return Evidence(None, f"the text says nothing about {rule.topic}", None, "", "rules", semantic)

    def _named_only(
        self,
        record: ServiceRecord,
        text: str,
        rule: _Rule,
        semantic: Semantic,
        negated: bool,
        hit: tuple[tuple[int, int], tuple[int, int]],
    ) -> Evidence:
        """Only the service's name matches. A name is what a service is called, not what it states: it counts
        only where it names the group the record is restricted to ("Women's Residence" for a women's condition,
        with no other text opening it to others); otherwise the condition is not stated."""
        said = text[hit[1][0] : hit[1][1]]
        alone = Constraints(semantic=[semantic])
        for restriction in self.restrictions.find(record):
            if restriction.span[0] < hit[0][1] and self.restrictions.claimed(restriction, alone, self.ages(alone)):
                reason = f'the service\'s name says it is for {restriction.group} ("{restriction.said}")'
                span = quote_span(text, *hit)
                return Evidence(not negated, reason, span, text[span[0] : span[1]], "rules", semantic)
        reason = f'only the service\'s name mentions it ("{said}"): its text says nothing about {rule.topic}'
        return Evidence(None, reason, None, "", "rules", semantic)

    def outside(self, record: ServiceRecord, rule: _Rule, semantic: Semantic) -> Restriction | None:
        """The restriction of the record that leaves out who the condition is about: a group the stated fact
        rules out (a man and "for single women"), or an age group whose ages miss the condition's ("no
        provision for children" for a 17-year-old)."""
        fact = self.facts.fact(semantic.text)
        groups = set(fact.outside) if fact is not None else set()
        ages = rule.ages or (fact.ages if fact is not None else None)
        for restriction in self.restrictions.find(record):
            if restriction.group in groups:
                return restriction
            if ages is not None and restriction.ages is not None:
                (lo, hi), (a, b) = ages, restriction.ages
                if not (a <= hi and lo <= b):
                    return restriction
        return None

    def ages(self, constraints: Constraints) -> list[tuple[int, int]]:
        """The ages the request's conditions state, youngest and oldest of each ("for people aged 17": 17, 17;
        "for seniors": 60 and over)."""
        out = []
        for semantic in constraints.semantic:
            rule = None if semantic.negated else self.rule_for(semantic.text)
            if rule is not None and rule.ages is not None:
                out.append(rule.ages)
        return out

    def unclaimed(self, record: ServiceRecord, constraints: Constraints) -> list[Restriction]:
        """The record's restrictions to groups the request does not claim (`RestrictionFinder.unclaimed`), and an
        age group its stated ages confine it to ("residents over the age of 60") when the request states no age
        in it. Ages alone (no words naming a group) rank it after, never leave it out: in a directory of youth
        programmes every record states ages."""
        ages = self.ages(constraints)
        found = self.restrictions.unclaimed(record, constraints, ages)
        text = record.text()
        stated = age_ranges(text)
        if stated and not found:
            lo, hi = min(a for a, _, _ in stated), max(b for _, b, _ in stated)
            for group in self.facts.restrictions:
                if group.ages is None or not group.rank_after or group.said is None:
                    continue
                g_lo, g_hi = group.ages
                inside = g_lo <= lo and hi <= g_hi and (g_lo > 0 or g_hi < 18)  # "over 60", "ages 5-12"
                said = " ".join([constraints.topic, *(s.text for s in constraints.semantic if not s.negated)])
                if inside and not group.named_by(said) and not any(a <= hi and lo <= b for a, b in ages):
                    span = stated[0][2]
                    sentence = next(((a, b) for a, b in self.sentences(text) if a <= span[0] < b), span)
                    quoted = quote_span(text, sentence, span)
                    said_words = text[span[0] : span[1]]
                    quote = text[quoted[0] : quoted[1]]
                    found.append(Restriction(group.group, span, quote, quoted, said_words, group.ages, leave_out=False))
                    break
        return found

    # -- the generic fallback: every content word of the condition, in one sentence -------------------------

    def _stems(self, text: str) -> list[str]:
        return [stem(w, self.words.language) for w in fold_key(text).split()]

    def _content_stems(self, text: str) -> dict[str, str]:
        """Stem → the word as written, for the words that carry meaning."""
        out: dict[str, str] = {}
        for word in fold_key(text).split():
            if word in self.words.text_stop or (len(word) < 3 and not word.isdigit()):
                continue
            out.setdefault(stem(word, self.words.language), word)
        return out

    def _generic(self, record: ServiceRecord, text: str, semantic: Semantic) -> Evidence:
        wanted = self._content_stems(semantic.text)
        if not wanted:
            return Evidence(None, "the constraint has no content words to look for", None, "", "rules", semantic)
        # The service's name is what it is called, not what it states: the words must be in its other text.
        name_end = next((b for name, a, b in field_spans(record, text) if name == "name"), 0)
        everywhere = set(self._stems(text[name_end:]))
        missing = [w for w in wanted if w not in everywhere]
        if missing and not [w for w in wanted if w not in set(self._stems(text))]:
            reason = f"only the service's name mentions {', '.join(wanted[w] for w in missing)}"
            return Evidence(None, reason, None, "", "rules", semantic)
        best, best_count = None, 0
        for start, end in self.sentences(text):
            if start < name_end:
                continue
            count = len(set(wanted) & set(self._stems(text[start:end])))
            if count > best_count:
                best, best_count = (start, end), count
        if missing or best is None:
            reason = f"the text does not mention {', '.join(wanted[w] for w in missing)}"
            return Evidence(None, reason, None, "", "rules", semantic)
        span = quote_span(text, best, best)
        quote = text[span[0] : span[1]]
        if semantic.negated or _NEGATION_CUE.search(quote):
            reason = "the text mentions every word of it, but whether it applies or is excluded needs a reading"
            return Evidence(None, reason, span, quote, "rules", semantic)
        return Evidence(True, "the text mentions every word of it", span, quote, "rules", semantic)


def _spaced(phrase: str) -> str:
    """A phrase as a pattern: its words in order, any run of spaces between them."""
    return r"\s+".join(re.escape(w) for w in phrase.split())
