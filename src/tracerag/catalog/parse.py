"""A request in words → `Constraints`, every structural value matched against the catalog's own values.

Rule-based (`parse_request`): each matcher recognises its kind of phrase, looks the words up in the `Gazetteer`
and consumes them, so a word feeds one constraint only (the "Miami" of "Miami-Dade County" is a county, not a
city; the "60" of "over 60" is an age, not a time). What is left becomes the topic, which is matched against the
taxonomy's term names. A phrase whose value the catalog does not hold goes to `unknown`, never into a filter.

With a model (`parse_with_llm`): the model proposes a parse, and each proposed value goes through the same
lookups; what does not validate is dropped with a note. The model can add validated values, never remove the
rule-based ones. `merge` carries the constraints of a dialogue from one turn to the next.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain

from pydantic import BaseModel, Field
from rapidfuzz import fuzz, process

from tracerag.catalog.model import WEEKDAYS, ConstraintKind, Constraints, Gazetteer, Semantic, Structural
from tracerag.errors import LLMError
from tracerag.llm.base import LLM, Message

__all__ = [
    "ProposedParse",
    "content_words",
    "merge",
    "normalise",
    "parse_request",
    "parse_with_llm",
]

FUZZY_CUTOFF = 88  # rapidfuzz ratio (0-100) for a typo to count as a catalog value: "Hialeh" → "Hialeah" (92)
SERVICE_FUZZY_CUTOFF = 85  # a misspelt topic word against the taxonomy's words ("utilites" → "utility": 86)
FUZZY_MIN_LETTERS = 4  # shorter words are never matched fuzzily (one letter off in 3 is another word)
MAX_SERVICE_TERMS = 5  # directly matched taxonomy terms kept as alternatives

# ---------------------------------------------------------------------------------------------------- normalise

_APOSTROPHES = re.compile(r"['’‘`´]")
_NON_WORD = re.compile(r"[\W_]+")


def normalise(text: str) -> str:
    """The key form of a name: casefolded, accents and punctuation stripped, spaces collapsed.

    Apostrophes vanish ("Women's" → "womens"); other punctuation separates ("Miami-Dade" → "miami dade")."""
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = _APOSTROPHES.sub("", text)
    return " ".join(_NON_WORD.sub(" ", text).split())


# ----------------------------------------------------------------------------------------------------- word lists


def _words(text: str) -> list[str]:
    return text.split()


# Words that carry no topic; also never taken for a misspelt place or language.
_STOPWORDS = frozenset(
    _words(
        """
        a about above after again all also am an and any anyone anything anywhere are around as at available be been
        before being both but by can cant close closed closest code could currently did do does doesnt dont during each
        else every find finding for from get getting give go going had has have having he hello help helping helps her
        here hey hi his how i id if im in instead into is it its ive just know like located location looking look me
        might more most much must my near nearby nearest need needed needing needs no nope not now of ok okay on one
        only open opened opening opens or other our out over place places please really right same she should show so
        some someone something somewhere speak speaker speakers speaking speaks still such take takes taking than thank
        thanks that the their them then there these they thing things this those through to too under until up us very
        want wants was
        we well were what whats when where which while who whom whose why will with within without would yes you your
        zip zipcode area town city live lives living
        """
    )
)

# Common English words that are also the names of places in some directory: never fuzzy-matched to a place or a
# language, and matched exactly only when written capitalised or after "in", "near"...
_COMMON_WORDS = _STOPWORDS | frozenset(
    _words(
        """
        apply assistance bank bay beach bill care center centre child clinic clothes cost day days doctor early evening
        family food free friday groceries grocery health home homeless house housing income job jobs late legal lake
        low marathon meal meals medley medical money morning night noon office park phone plantation point rent shelter
        sunrise highland venice phoenix jupiter columbia today tomorrow tonight week weekend weekends work
        """
    )
)

_PLACE_CONTEXT = frozenset({"in", "near", "around", "from", "of"})


def content_words(text: str) -> list[str]:
    """The normalised words of `text` that can say what is asked for: alphabetic and not filler words."""
    return [w for w in normalise(text).split() if w.isalpha() and w not in _STOPWORDS]


# ------------------------------------------------------------------------------------------------------- the text


@dataclass(slots=True)
class _Token:
    norm: str
    raw: str
    start: int
    end: int


_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


class _Doc:
    """The request's words with their offsets; a word consumed by one matcher is not seen by the next."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = [_Token(normalise(m.group()), m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
        self.used = [False] * len(self.tokens)
        self.clause = [False] * len(self.tokens)

    def indices(self, start: int, end: int) -> list[int]:
        return [i for i, t in enumerate(self.tokens) if t.start < end and t.end > start]

    def free(self, start: int, end: int) -> bool:
        ids = self.indices(start, end)
        return bool(ids) and not any(self.used[i] for i in ids)

    def take(self, start: int, end: int) -> str:
        for i in self.indices(start, end):
            self.used[i] = True
        return self.text[start:end].strip()

    def take_tokens(self, i: int, j: int) -> str:
        for k in range(i, j):
            self.used[k] = True
        return self.text[self.tokens[i].start : self.tokens[j - 1].end]

    def prev_norm(self, i: int) -> str:
        return self.tokens[i - 1].norm if i > 0 else ""

    def matches(self, pattern: re.Pattern[str]) -> Iterable[re.Match[str]]:
        """Matches of `pattern` over words not consumed yet (the caller consumes what it keeps)."""
        for m in pattern.finditer(self.text):
            if m.end() > m.start() and self.free(m.start(), m.end()):
                yield m


def _said(doc: _Doc, spans: Sequence[tuple[int, int]]) -> str:
    """The words as written: one stretch when only "or", "and" or commas separate the matches."""
    if not spans:
        return ""
    groups = [[s] for s in sorted(spans)[:1]]
    for span in sorted(spans)[1:]:
        gap = doc.text[groups[-1][-1][1] : span[0]]
        if _CONNECTOR.fullmatch(gap):
            groups[-1].append(span)
        else:
            groups.append([span])
    return "; ".join(doc.text[g[0][0] : g[-1][1]].strip() for g in groups)


_CONNECTOR = re.compile(r"[\s,/&]*(?:\b(?:or|and|in|on)\b[\s,/&]*)*", re.I)


# --------------------------------------------------------------------------------------------- gazetteer index


def _lemma(word: str) -> str:
    """Plural-insensitive form: "pantries" → "pantry", "shelters" → "shelter", "children" → "child"."""
    irregular = {"children": "child", "people": "person", "women": "woman", "men": "man", "teeth": "tooth"}
    if word in irregular:
        return irregular[word]
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# Words of a taxonomy term name that say nothing about the kind of service.
_TERM_FILLER = frozenset(
    _words("a an and as assistance based by comprehensive for general in of on or other program related service")
    + _words("specific the to with")
)

# Everyday words for common requests → taxonomy term names (AIRS). Used only for names the catalog holds.
_SERVICE_SYNONYMS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("food", "pantry"): ("Emergency Food",),
    ("pantry",): ("Emergency Food",),
    ("food", "bank"): ("Emergency Food", "Food Banks/Food Distribution Warehouses"),
    ("food",): ("Emergency Food",),
    ("grocery",): ("Emergency Food",),
    ("hungry",): ("Emergency Food", "Soup Kitchens"),
    ("soup", "kitchen"): ("Soup Kitchens",),
    ("hot", "meal"): ("Soup Kitchens",),
    ("meal",): ("Soup Kitchens", "Home Delivered Meals", "Congregate Meals/Nutrition Sites"),
    ("food", "stamp"): ("Food Stamps/SNAP", "Food Stamps/SNAP Applications"),
    ("snap",): ("Food Stamps/SNAP", "Food Stamps/SNAP Applications"),
    ("ebt",): ("Food Stamps/SNAP",),
    ("shelter",): ("Homeless Shelter", "Emergency Shelter"),
    ("rent",): ("Rent Payment Assistance",),
    ("legal",): ("General Legal Aid", "Legal Representation"),
    ("lawyer",): ("General Legal Aid", "Legal Representation"),
    ("attorney",): ("General Legal Aid", "Legal Representation"),
    ("clinic",): ("Community Clinics",),
    ("doctor",): ("General Medical Care", "Community Clinics"),
    ("medical",): ("General Medical Care", "Community Clinics"),
    ("dentist",): ("Dental Care",),
    ("dental",): ("Dental Care",),
    ("tooth",): ("Dental Care",),
    ("job",): ("Job Search/Placement", "Job Finding Assistance"),
    ("employment",): ("Job Search/Placement", "Job Finding Assistance"),
    ("therapy",): ("Individual Counseling", "General Counseling Services"),
    ("therapist",): ("Individual Counseling", "General Counseling Services"),
    ("counseling",): ("Individual Counseling", "General Counseling Services"),
    ("counselling",): ("Individual Counseling", "General Counseling Services"),
    ("counselor",): ("Individual Counseling", "General Counseling Services"),
    ("utility",): ("Utility Service Payment Assistance",),
    ("electric",): ("Utility Service Payment Assistance",),
    ("electricity",): ("Utility Service Payment Assistance",),
    ("light", "bill"): ("Utility Service Payment Assistance",),
    ("eviction",): ("Eviction Prevention Legal Assistance",),
    ("evicted",): ("Eviction Prevention Legal Assistance",),
    ("clothes",): ("Clothing", "General Clothing Provision"),
    ("clothing",): ("Clothing", "General Clothing Provision"),
    ("diaper",): ("Baby Clothing/Diaper Donation Programs", "Diapers"),
    ("rehab",): ("Substance Use Disorder Treatment Programs",),
    ("detox",): ("Substance Use Disorder Treatment Programs",),
    ("addiction",): ("Substance Use Disorder Treatment Programs",),
    ("immigration",): ("Immigration/Naturalization Legal Services",),
    ("domestic", "violence"): ("Domestic Violence Shelters", "Domestic/Family Violence Legal Services"),
    ("mental", "health"): ("Community Mental Health Agencies", "Outpatient Mental Health Facilities"),
}

# Language names the catalog may not hold: said, they are reported as unknown rather than dropped silently.
_WORLD_LANGUAGES = frozenset(
    _words(
        """
        albanian amharic arabic armenian bengali bosnian bulgarian burmese cantonese chinese creole croatian czech
        danish dutch english farsi finnish french german greek gujarati hebrew hindi hmong hungarian icelandic
        indonesian italian japanese khmer korean kreyol lao mandarin nepali norwegian pashto persian polish
        portuguese punjabi romanian russian serbian sindhi somali spanish swahili swedish tagalog taiwanese thai
        turkish ukrainian urdu vietnamese yiddish
        """
    )
)
_LANGUAGE_ALIASES: dict[str, tuple[str, ...]] = {
    "creole": ("haitian creole", "haitian"),
    "haitian creole": ("creole", "haitian"),
    "haitian": ("creole", "haitian creole"),
    "kreyol": ("creole", "haitian creole"),
    "espanol": ("spanish",),
    "castellano": ("spanish",),
    "asl": ("american sign language", "sign language"),
    "american sign language": ("asl", "sign language"),
    "sign language": ("asl", "american sign language"),
    "farsi": ("persian",),
    "mandarin": ("chinese",),
}
# Words that mark a catalog language value as a remark ("Other languages available upon request") rather than a name.
_LANGUAGE_REMARK = frozenset(
    _words(
        """
        a all and any as available be can for in is languages limited line may needed of only other others request
        service services some the to translation translator translators interpreter interpreters interpretation upon
        via website with
        """
    )
)
_LANGUAGE_CONTEXT = frozenset({"in", "speak", "speaks", "speaking", "speaker", "speakers", "language", "habla"})


@dataclass
class _Index:
    gazetteer: Gazetteer
    fingerprint: tuple[int, ...]
    cities: dict[str, str] = field(default_factory=dict)  # normalised → catalog value
    cities_by_size: dict[int, list[str]] = field(default_factory=dict)
    city_words: set[str] = field(default_factory=set)
    city_max: int = 1
    counties: dict[str, str] = field(default_factory=dict)
    languages: dict[str, list[str]] = field(default_factory=dict)  # name ("spanish") → catalog values that name it
    language_max: int = 1
    vocab: frozenset[str] = frozenset()  # ordinary words: never taken for a misspelt place or language
    terms: list[tuple[str, frozenset[str]]] = field(default_factory=list)  # (term id, content lemmas)
    service_words: frozenset[str] = frozenset()  # the taxonomy's lemmas and the synonym table's words
    service_word_list: list[str] = field(default_factory=list)
    names: dict[str, list[str]] = field(default_factory=dict)  # normalised term name → ids
    accessibility: dict[str, str] = field(default_factory=dict)


_CACHE: list[_Index] = []


def _fingerprint(g: Gazetteer) -> tuple[int, ...]:
    return (len(g.cities), len(g.counties), len(g.zips), len(g.languages), len(g.taxonomy), len(g.accessibility))


def _index(gazetteer: Gazetteer) -> _Index:
    """The lookups derived from a gazetteer, built once per gazetteer (rebuilt if it changed size)."""
    for entry in _CACHE:
        if entry.gazetteer is gazetteer and entry.fingerprint == _fingerprint(gazetteer):
            return entry
    idx = _Index(gazetteer, _fingerprint(gazetteer))
    for key, value in gazetteer.cities.items():
        norm = normalise(key)
        if norm:
            idx.cities[norm] = value
            idx.cities_by_size.setdefault(len(norm.split()), []).append(norm)
            idx.city_words.update(norm.split())
    idx.city_max = max(idx.cities_by_size, default=1)
    idx.counties = {normalise(k): v for k, v in gazetteer.counties.items() if normalise(k)}
    idx.accessibility = {normalise(k): v for k, v in gazetteer.accessibility.items() if normalise(k)}

    language_keys = {normalise(k): v for k, v in gazetteer.languages.items() if normalise(k)}
    names = {
        k
        for k in language_keys
        if len(k.split()) <= 3 and all(w.isalpha() and w not in _LANGUAGE_REMARK for w in k.split())
    }
    for name in names:
        group = {name, *_LANGUAGE_ALIASES.get(name, ())}
        exact = [language_keys[g] for g in sorted(group) if g in language_keys]
        rest = sorted(
            {v for k, v in language_keys.items() if any(_contains(k.split(), g.split()) for g in group)} - set(exact)
        )
        idx.languages[name] = exact + rest
    for alias, targets in _LANGUAGE_ALIASES.items():
        if alias not in idx.languages:
            known = [t for t in targets if t in idx.languages]
            if known:
                idx.languages[alias] = idx.languages[known[0]]
    idx.language_max = max((len(n.split()) for n in idx.languages), default=1)

    vocab: set[str] = set(_COMMON_WORDS)
    for term_id, name in gazetteer.taxonomy.items():
        words = normalise(name).split()
        vocab.update(words)
        if term_id.upper().startswith("Y") or not name.strip():
            continue  # AIRS "Y" terms are target populations ("Homeless Shelter Residents"), not services
        lemmas = frozenset(_lemma(w) for w in words if w not in _TERM_FILLER)
        if lemmas:
            idx.terms.append((term_id, lemmas))
        idx.names.setdefault(normalise(name), []).append(term_id)
    lemmas = {lemma for _, term_lemmas in idx.terms for lemma in term_lemmas}
    lemmas |= {w for key in _SERVICE_SYNONYMS for w in key}
    idx.service_words = frozenset(lemmas)
    idx.service_word_list = sorted(lemmas | {w for name in idx.names for w in name.split() if w.isalpha()})
    idx.vocab = frozenset(vocab)
    _CACHE.insert(0, idx)
    del _CACHE[4:]
    return idx


def _contains(words: Sequence[str], part: Sequence[str]) -> bool:
    n = len(part)
    return any(tuple(words[i : i + n]) == tuple(part) for i in range(len(words) - n + 1))


def _unknown_word(word: str, idx: _Index) -> bool:
    """A word that may be a misspelt name: long enough, alphabetic, and no ordinary word."""
    return len(word) >= FUZZY_MIN_LETTERS and word.isalpha() and word not in idx.vocab and word not in _STOPWORDS


def _fuzzy(query: str, choices: Sequence[str]) -> str | None:
    if not choices:
        return None
    hit = process.extractOne(query, choices, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF)
    return hit[0] if hit else None


# --------------------------------------------------------------------------------------------- value lookups
# Shared by the rule-based parser (over the words of a request) and the validation of a model's proposals.


def _lookup_city(phrase: str, idx: _Index) -> str | None:
    norm = normalise(phrase)
    if norm in idx.cities:
        return idx.cities[norm]
    words = norm.split()
    eligible = all(w in idx.city_words or _unknown_word(w, idx) for w in words)
    if words and eligible and any(_unknown_word(w, idx) for w in words):
        hit = _fuzzy(norm, idx.cities_by_size.get(len(words), []))
        return idx.cities[hit] if hit else None
    return None


def _lookup_county(phrase: str, idx: _Index) -> str | None:
    norm = normalise(phrase)
    bare = re.sub(r"\s*\b(?:county|counties)\b\s*", " ", norm).strip()
    for key in (norm, bare, f"{bare} county"):
        if key in idx.counties:
            return idx.counties[key]
    return None


def _lookup_language(phrase: str, idx: _Index, *, fuzzy: bool = True) -> tuple[str, list[str]] | None:
    """(the language's name, the catalog values naming it)."""
    norm = normalise(phrase)
    if norm in idx.languages:
        return norm, idx.languages[norm]
    if fuzzy and all(_unknown_word(w, idx) or w in _WORLD_LANGUAGES for w in norm.split()):
        hit = _fuzzy(norm, [n for n in idx.languages if len(n.split()) == len(norm.split())])
        if hit:
            return hit, idx.languages[hit]
    return None


def _lookup_zip(phrase: str, gazetteer: Gazetteer) -> str | None:
    m = re.fullmatch(r"\s*(\d{5})(?:-\d{4})?\s*", phrase)
    return m.group(1) if m and m.group(1) in gazetteer.zips else None


def _accessibility_values(said: str, idx: _Index) -> list[str]:
    cues = ("wheelchair", "handicap", "accessib", "access", "disab", "ada", "ramp")
    values = [v for k, v in idx.accessibility.items() if any(c in k for c in cues)]
    if "wheel" in said.casefold():
        values.sort(key=lambda v: "wheel" not in v.casefold())
    return values


def _service_terms(words: Sequence[str], idx: _Index) -> list[str]:
    """Taxonomy term ids for a topic's (normalised) words, compared as lemmas: the synonym table, then term names
    whose every content word was asked for. Narrower terms are not listed: a term's filter covers the terms under
    it (`catalog.filters`). A misspelt word is first corrected to the nearest word of the taxonomy
    ("counceling" → "counseling")."""
    if not idx.terms:
        return []
    asked: list[str] = []
    for word in words:
        w = _lemma(word)
        if word in _STOPWORDS or w in _STOPWORDS:
            continue
        if w not in idx.service_words and len(word) >= 5 and word.isalpha():
            hits = [
                process.extractOne(q, idx.service_word_list, scorer=fuzz.ratio, score_cutoff=SERVICE_FUZZY_CUTOFF)
                for q in {word, w}
            ]
            best = max((h for h in hits if h and h[0][0] == word[0]), key=lambda h: h[1], default=None)
            if best:
                w = _lemma(best[0])
        asked.append(w)
    if not asked:
        return []
    chosen: list[str] = []
    left = list(asked)
    for key in sorted(_SERVICE_SYNONYMS, key=len, reverse=True):
        if all(k in left for k in key):
            for name in _SERVICE_SYNONYMS[key]:
                chosen.extend(i for i in idx.names.get(normalise(name), []) if i not in chosen)
            for k in key:
                left.remove(k)
    asked_set = set(asked)
    asked_text = " ".join(asked)
    full: list[tuple[int, float, str]] = []
    partial: list[str] = []
    for term_id, t_lemmas in idx.terms:
        hit = t_lemmas & asked_set
        if not hit:
            continue
        if hit == t_lemmas:
            score = fuzz.token_set_ratio(asked_text, " ".join(sorted(t_lemmas)))
            full.append((len(t_lemmas), score, term_id))
        elif len(hit) / len(t_lemmas) >= 0.5 and asked_set <= t_lemmas:
            partial.append(term_id)
    full.sort(key=lambda x: (-x[0], -x[1], x[2]))
    for _, _, term_id in full:
        if len(chosen) >= MAX_SERVICE_TERMS:
            break
        if term_id not in chosen:
            chosen.append(term_id)
    if not chosen and 0 < len(partial) <= 3:  # every asked word in a few terms: confident enough
        chosen = partial
    return chosen


# ------------------------------------------------------------------------------------------------- the matchers

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
_RESIDENTS_BEFORE = re.compile(
    r"\b(?:for\s+)?(?P<place>[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*){0,2}(?:\s+[Cc]ounty)?)\s+residents\b"
)


def _eligibility_with_places(doc: _Doc, idx: _Index, out: Constraints) -> None:
    """Ages and residence: numbers and places that are eligibility, not a time, a zip or the service's city."""
    for m in doc.matches(_AGE):
        doc.take(m.start(), m.end())
        g = m.groupdict()
        if g["lo"]:
            text = f"for people aged {g['lo']} to {g['hi']}"
        elif g["plus"] or g["over"]:
            text = f"for people aged {g['plus'] or g['over']} or older"
        elif g["under"]:
            text = f"for people under {g['under']}"
        else:
            text = f"for people aged {g['age'] or g['age2']}"
        _add_semantic(out, Semantic(text))
    for m in doc.matches(_RESIDENTS):
        place = _known_place_prefix(m.group("place"), idx)
        doc.take(m.start(), m.start("place") + len(place))
        _add_semantic(out, Semantic(f"for residents of {place}"))
    for m in doc.matches(_RESIDENTS_BEFORE):
        doc.take(m.start(), m.end())
        _add_semantic(out, Semantic(f"for residents of {m.group('place')}"))


def _known_place_prefix(text: str, idx: _Index) -> str:
    """The longest leading words of `text` that name a place: a catalog city, "X County", or capitalised words."""
    words = re.findall(r"\S+", text)
    for n in range(len(words), 0, -1):
        cand = " ".join(words[:n]).rstrip(".,")
        norm = normalise(cand)
        if norm in idx.cities or norm.endswith(" county") or _lookup_county(cand, idx):
            return cand
    caps = []
    for w in words:
        if not w[:1].isupper():
            break
        caps.append(w)
    return " ".join(caps).rstrip(".,") if caps else words[0].rstrip(".,")


_COUNTY_OF = re.compile(r"\bcounty\s+of\s+(?:the\s+)?(?P<name>[A-Z][\w'’.]*(?:[\s-]+[A-Z][\w'’.]*)?)", re.I)
_COUNTY = re.compile(
    r"\b(?P<name>(?:[^\W\d_][\w'’.]*[\s-]+){0,2}?[^\W\d_][\w'’.]*)\s+count(?:y|ies)\b"
    r"|\b(?P<dade>(?:miami[\s-]+)?dade)\b",
    re.I,
)


def _county(doc: _Doc, idx: _Index, out: Constraints) -> None:
    """ "Miami-Dade County", "county of Monroe", "Dade": a county value, or `unknown` when the catalog has none."""
    values: list[str] = []
    spans: list[tuple[int, int]] = []
    for m in chain(doc.matches(_COUNTY_OF), doc.matches(_COUNTY)):  # lazily: "county of X" is taken first
        start, end = m.start(), m.end()
        if m.re is _COUNTY_OF:
            pass
        elif m.group("dade"):
            start, end = m.start("dade"), m.end("dade")
        elif m.group("name"):
            base = m.start("name")
            words = [(w.group(), base + w.start()) for w in re.finditer(r"\S+", m.group("name"))]
            while words and normalise(words[0][0]) in _STOPWORDS:  # "in the Monroe county" → "Monroe"
                words.pop(0)
            pick = next((k for k in range(len(words)) if _lookup_county(" ".join(w for w, _ in words[k:]), idx)), None)
            if pick is None and words:  # unknown county: its name is the last word, or the last two capitalised
                pick = len(words) - 1
                prev, last = (words[pick - 1][0], words[pick][0]) if pick else ("", "")
                both_capitalised = prev[:1].isupper() and last[:1].isupper()
                if pick and (both_capitalised or normalise(f"{prev} {last}") == "miami dade"):
                    pick -= 1
            if pick is not None:
                start = words[pick][1]
        phrase = doc.text[start:end]
        doc.take(start, end)
        value = _lookup_county(phrase, idx)
        if value:
            if value not in values:
                values.append(value)
            spans.append((start, end))
        else:
            out.unknown.append(phrase)
    if values:
        out.structural.append(Structural(ConstraintKind.COUNTY, tuple(values), _said(doc, spans)))


_ZIP = re.compile(r"\b\d{5}(?:-\d{4})?\b")


def _zips(doc: _Doc, gazetteer: Gazetteer, out: Constraints) -> None:
    values, spans = [], []
    for m in doc.matches(_ZIP):
        doc.take(m.start(), m.end())
        value = _lookup_zip(m.group(), gazetteer)
        if value:
            if value not in values:
                values.append(value)
            spans.append((m.start(), m.end()))
        else:
            out.unknown.append(m.group())
    if values:
        out.structural.append(Structural(ConstraintKind.ZIP, tuple(values), _said(doc, spans)))


_PERIOD_MINUTES = {"morning": 9 * 60, "afternoon": 14 * 60, "evening": 18 * 60, "night": 19 * 60, "tonight": 19 * 60}
_TIME = re.compile(
    r"(?:\b(?P<cue>at|after|before|by|around|from|until|till|til|past|open)\s+)?"
    r"\b(?P<h>\d{1,2})(?!\d)(?:[:.](?P<m>[0-5]\d))?(?:\s*(?P<ampm>[ap])\.?\s?m\b\.?)?"
    r"(?:\s*(?P<oclock>o'?clock))?"
    r"(?:\s*(?:-|–|to|until|till)\s*\d{1,2}(?:[:.][0-5]\d)?(?:\s*[ap]\.?\s?m\b\.?)?)?"  # "9am to 5pm": from 9
    r"(?:\s+(?P<period>in\s+the\s+(?:morning|afternoon|evening)|at\s+night|tonight|this\s+(?:morning|afternoon|evening)))?",
    re.I,
)
_NOON = re.compile(
    r"(?:\b(?P<cue>at|after|before|by|around|from|until|till)\s+)?\b(?P<word>noon|midday|midnight)\b", re.I
)
_PERIOD = re.compile(
    r"\b(?:(?:in|during)\s+the\s+|this\s+|at\s+|late\s+)?(?P<word>mornings?|afternoons?|evenings?|tonight|nights?)\b",
    re.I,
)
_NOW = re.compile(r"\bopen\s+(?:right\s+)?now\b|\b(?:currently|still)\s+open\b|\bopen\s+at\s+the\s+moment\b", re.I)
_BARE_HOUR_NEXT_OK = frozenset(
    {"on", "in", "at", "or", "and", "to", "till", "until", "today", "tomorrow", "tonight", "please", "the", "this"}
)


def _times(doc: _Doc, out: Constraints, today: int | None) -> str:
    """The time constraint (one value: minutes after midnight); returns the words that mean today ("tonight",
    "open now"), if any."""
    found = re.search(r"\btonight\b", doc.text, re.I)
    tonight = found.group() if found else ""
    value: int | None = None
    said = ""
    for m in doc.matches(_TIME):
        g = m.groupdict()
        h, minute = int(g["h"]), int(g["m"] or 0)
        if not (g["cue"] or g["m"] or g["ampm"] or g["oclock"]):
            continue  # "a family of 5 tonight": a number, not a time
        if not (g["ampm"] or g["m"] or g["oclock"] or g["period"]):  # "after 5": a bare hour after a cue
            nxt = doc.indices(m.end(), len(doc.text))
            if nxt and doc.tokens[nxt[0]].norm.isalpha() and doc.tokens[nxt[0]].norm not in _BARE_HOUR_NEXT_OK:
                continue  # "at 2 locations"
        if h > 23 or (g["ampm"] and not 1 <= h <= 12):
            continue
        period = (g["period"] or "").casefold()
        if g["ampm"]:
            pm = g["ampm"].casefold() == "p"
            h = (h % 12) + (12 if pm else 0)
        elif h <= 12 and period:
            if any(p in period for p in ("afternoon", "evening", "night", "tonight")) and h < 12:
                h += 12
            elif "morning" in period and h == 12:
                h = 0
        elif 1 <= h <= 6:  # opening hours: "after 5" is 5 pm
            h += 12
        minutes = h * 60 + minute
        if (g["cue"] or "").casefold() in ("before", "by", "until", "till", "til"):
            minutes = max(0, minutes - 30)  # open some time before then: half an hour before
        value, said = minutes, doc.take(m.start(), m.end())
        break
    if value is None:
        for m in doc.matches(_NOON):
            word = m.group("word").casefold()
            minutes = 0 if word == "midnight" else 12 * 60
            if (m.group("cue") or "").casefold() in ("before", "by", "until", "till"):
                minutes = max(0, minutes - 30)
            value, said = minutes, doc.take(m.start(), m.end())
            break
    if value is None:
        for m in doc.matches(_PERIOD):
            word = m.group("word").casefold().rstrip("s")
            value, said = _PERIOD_MINUTES["night" if word == "night" else word], doc.take(m.start(), m.end())
            break
    for m in doc.matches(_PERIOD):  # "7:30 ... in the evening" said apart from the time: already applied
        if value is not None:
            doc.take(m.start(), m.end())
    for m in doc.matches(_NOW):
        doc.take(m.start(), m.end())
        if value is None:
            out.unknown.append(m.group().strip())
        if today is not None and not tonight:
            tonight = m.group().strip()  # "open now" is about today
    if value is not None:
        out.structural.append(Structural(ConstraintKind.TIME, (str(value),), said))
    return tonight


_DAY_WORDS = {
    "monday": 0, "mon": 0,
    "tuesday": 1, "tue": 1, "tues": 1,
    "wednesday": 2, "wed": 2, "weds": 2,
    "thursday": 3, "thu": 3, "thur": 3, "thurs": 3,
    "friday": 4, "fri": 4,
    "saturday": 5, "sat": 5,
    "sunday": 6, "sun": 6,
}  # fmt: skip
_AMBIGUOUS_DAYS = frozenset({"mon", "wed", "sat", "sun"})  # "sat", "the sun": need a capital or "on"/"open"...
_DAY_CONTEXT = frozenset({"on", "open", "or", "and", "every", "next", "this", "from", "through", "thru", "to", "til"})
_DAY = "(?:" + "|".join(sorted(_DAY_WORDS, key=len, reverse=True)) + r")s?\b\.?"
_DAY_RANGE = re.compile(rf"\b(?P<a>{_DAY})\s*(?:-|–|to|through|thru|until|till)\s*(?P<b>{_DAY})", re.I)
_DAY_ONE = re.compile(rf"\b{_DAY}", re.I)
_DAY_GROUPS = re.compile(
    r"\b(?P<weekend>(?:this\s+|on\s+(?:the\s+)?)?weekends?)\b|\b(?P<weekdays>weekdays?|during\s+the\s+week)\b"
    r"|\b(?P<today>today|tonight)\b|\b(?P<tomorrow>tomorrow)\b",
    re.I,
)


def _day_number(word: str) -> int:
    w = normalise(word)
    return _DAY_WORDS[w] if w in _DAY_WORDS else _DAY_WORDS[w.removesuffix("s")]


def _weekdays(doc: _Doc, out: Constraints, today: int | None, tonight: str) -> None:
    days: list[int] = []
    spans: list[tuple[int, int]] = []
    for m in doc.matches(_DAY_RANGE):
        a, b = _day_number(m.group("a")), _day_number(m.group("b"))
        days.extend((a + k) % 7 for k in range((b - a) % 7 + 1))
        spans.append((m.start(), m.end()))
        doc.take(m.start(), m.end())
    for m in doc.matches(_DAY_ONE):
        word = normalise(m.group())
        if word.removesuffix("s") in _AMBIGUOUS_DAYS or word in _AMBIGUOUS_DAYS:
            i = doc.indices(m.start(), m.end())[0]
            nxt = doc.tokens[i + 1].norm if i + 1 < len(doc.tokens) else ""
            after = doc.text[m.end() : m.end() + 2]
            if not (m.group()[0].isupper() or doc.prev_norm(i) in _DAY_CONTEXT or nxt in ("or", "and") or "," in after):
                continue
        days.append(_day_number(m.group()))
        spans.append((m.start(), m.end()))
        doc.take(m.start(), m.end())
    for m in doc.matches(_DAY_GROUPS):
        if m.group("weekend"):
            days.extend((5, 6))
        elif m.group("weekdays"):
            days.extend(range(5))
        else:
            offset = 0 if m.group("today") else 1
            if today is None:
                if m.group("today") and m.group("today").casefold() == "tonight":
                    doc.take(m.start(), m.end())
                    continue
                out.unknown.append(m.group())
                doc.take(m.start(), m.end())
                continue
            days.append((today + offset) % 7)
        spans.append((m.start(), m.end()))
        doc.take(m.start(), m.end())
    said = _said(doc, spans)
    if not days and tonight and today is not None:
        days.append(today)
        said = tonight
    if days:
        values = tuple(str(d) for d in sorted(set(days)))
        out.structural.append(Structural(ConstraintKind.WEEKDAY, values, said))


_ACCESS = re.compile(
    r"\b(?:(?:wheel\s?chair|handicap(?:ped)?|disabled|disability|ada)[\s-]+(?:accessible|access|accessibility|friendly|"
    r"compliant)|accessible\s+(?:for|to|by)\s+(?:the\s+)?(?:disabled|wheel\s?chairs?|handicapped|people\s+with\s+"
    r"disabilities)|(?:in|use|uses|using)\s+a\s+wheel\s?chair|handicap(?:ped)?\s+parking)\b",
    re.I,
)


def _accessibility(doc: _Doc, idx: _Index, out: Constraints) -> None:
    for m in doc.matches(_ACCESS):
        said = doc.take(m.start(), m.end())
        values = _accessibility_values(said, idx)
        if values:
            out.structural.append(Structural(ConstraintKind.ACCESSIBILITY, tuple(values), said))
        else:
            out.unknown.append(said)
        return


def _languages(doc: _Doc, idx: _Index, out: Constraints) -> None:
    values: list[str] = []
    spans: list[tuple[int, int]] = []
    tokens = doc.tokens
    i = 0
    while i < len(tokens):
        if doc.used[i] or not tokens[i].norm.isalpha():
            i += 1
            continue
        hit = None
        for size in range(min(idx.language_max, len(tokens) - i), 0, -1):
            if any(doc.used[k] for k in range(i, i + size)):
                continue
            phrase = " ".join(t.norm for t in tokens[i : i + size])
            context = doc.prev_norm(i) in _LANGUAGE_CONTEXT or (
                i + size < len(tokens) and tokens[i + size].norm in _LANGUAGE_CONTEXT
            )
            found = _lookup_language(phrase, idx, fuzzy=context)
            if found:
                hit = (found[1], size)
                break
            if size == 1 and phrase in _WORLD_LANGUAGES:
                hit = ([], 1)
                break
        if hit is None:
            i += 1
            continue
        found_values, size = hit
        said = doc.take_tokens(i, i + size)
        if found_values:
            values.extend(v for v in found_values if v not in values)
            spans.append((tokens[i].start, tokens[i + size - 1].end))
        else:
            out.unknown.append(said)
        i += size
    if values:
        out.structural.append(Structural(ConstraintKind.LANGUAGE, tuple(values), _said(doc, spans)))


_SEMANTIC_PATTERNS: list[tuple[re.Pattern[str], Semantic]] = [
    (
        re.compile(
            r"\b(?:(?:does\s*n[o']?t|do\s*n[o']?t|doesnt|dont|won'?t|will\s+not|not|never)\s+"
            r"(?:need|require|ask\s+for|check|want)\w*\s+(?:an?\s+|any\s+|my\s+|your\s+|photo\s+|picture\s+)*"
            r"(?:id|i\.d\.?|ids|identification|documents?)"
            r"|no\s+(?:photo\s+|picture\s+)?(?:id|i\.d\.?|identification)(?:\s+(?:is\s+)?(?:required|needed|necessary))?"
            r"|without\s+(?:an?\s+|any\s+)?(?:photo\s+)?(?:id|i\.d\.?|identification)"
            r"|(?:do\s*n[o']?t|dont|doesn'?t|does\s+not)\s+have\s+(?:an?\s+|any\s+)?(?:photo\s+)?(?:id|identification)"
            r"|(?:id|identification)\s+(?:is\s+)?not\s+(?:required|needed|necessary))(?![\w])",
            re.I,
        ),
        Semantic("ID required", negated=True),
    ),
    (
        re.compile(
            r"\bundocumented\b|\b(?:no|without|dont\s+have|don'?t\s+have)\s+(?:legal\s+)?(?:papers|status)\b"
            r"|\billegal\s+immigrants?\b|\bregardless\s+of\s+(?:immigration\s+)?status\b",
            re.I,
        ),
        Semantic("serves undocumented immigrants"),
    ),
    (
        re.compile(
            r"\b(?:for\s+(?:the\s+)?)?(?:seniors|senior\s+citizens?|elderly|older\s+(?:adults|people|persons))\b"
            r"|\bfor\s+(?:a\s+)?senior\b",
            re.I,
        ),
        Semantic("for seniors"),
    ),
    (re.compile(r"\b(?:for\s+)?(?:veterans?|military\s+veterans?|ex-military)\b", re.I), Semantic("for veterans")),
    (
        re.compile(
            r"\b(?:for\s+(?:my\s+|the\s+)?)?(?:children|kids?|youths?|teens|teenagers|minors|adolescents)\b"
            r"|\b(?:for\s+)?my\s+(?:child|son|daughter|baby)\b",
            re.I,
        ),
        Semantic("for children and youth"),
    ),
    (re.compile(r"\b(?:for\s+)?(?:women|woman|females|ladies)\b", re.I), Semantic("for women")),
    (re.compile(r"\bfor\s+men\b", re.I), Semantic("for men")),
    (
        re.compile(
            r"(?<![\w-])(?<!toll\s)(?<!toll-)(?:(?:for\s+|at\s+)?free(?:\s+of\s+charge)?(?![\w-])|(?:at\s+)?no[\s-]cost"
            r"|no\s+(?:fees?|charge)|without\s+(?:a\s+)?(?:fee|charge|cost))\b",
            re.I,
        ),
        Semantic("free of charge"),
    ),
    (
        re.compile(r"\b(?:for\s+)?low[\s-]income\b|\b(?:can'?t|cannot|can\s+not)\s+afford\b", re.I),
        Semantic("for low-income people"),
    ),
]


def _add_semantic(out: Constraints, sem: Semantic) -> None:
    if all((normalise(s.text), s.negated) != (normalise(sem.text), sem.negated) for s in out.semantic):
        out.semantic.append(sem)


# Who a request is for after "my"/"our" ("child" and "baby" are left out: "child care", "baby formula" are services)
_CHILD_NOUNS = frozenset(_words("son sons daughter daughters children kid kids grandson granddaughter"))
_POSSESSIVES = frozenset({"my", "our"})


def _semantic_phrases(doc: _Doc, out: Constraints) -> None:
    for pattern, sem in _SEMANTIC_PATTERNS:
        for m in doc.matches(pattern):
            doc.take(m.start(), m.end())
            _add_semantic(out, sem)
    # "my autistic son": the child is who it is for, the word between is what it is about (kept for the topic)
    for i, tok in enumerate(doc.tokens):
        if tok.norm in _CHILD_NOUNS and not doc.used[i] and _POSSESSIVES & {doc.prev_norm(i), doc.prev_norm(i - 1)}:
            doc.used[i] = True
            _add_semantic(out, Semantic("for children and youth"))


def _cities(doc: _Doc, idx: _Index, out: Constraints) -> None:
    """Longest catalog city names first ("North Miami Beach" before "Miami"); a misspelt one by rapidfuzz."""
    values: list[str] = []
    spans: list[tuple[int, int]] = []
    tokens = doc.tokens
    i = 0
    while i < len(tokens):
        if doc.used[i] or not tokens[i].norm.isalpha():
            i += 1
            continue
        hit = None
        for size in range(min(idx.city_max, len(tokens) - i), 0, -1):
            if any(doc.used[k] or not tokens[k].norm.isalpha() for k in range(i, i + size)):
                continue
            words = [t.norm for t in tokens[i : i + size]]
            phrase = " ".join(words)
            if phrase in idx.cities:
                if size == 1 and phrase in _COMMON_WORDS:
                    raw = tokens[i].raw
                    if not (raw[:1].isupper() and i > 0) and doc.prev_norm(i) not in _PLACE_CONTEXT:
                        continue  # "a marathon", "sunrise": a word, not the place
                hit = (idx.cities[phrase], size)
                break
            if any(_unknown_word(w, idx) for w in words):
                value = _lookup_city(phrase, idx)
                if value:
                    hit = (value, size)
                    break
        if hit is None:
            i += 1
            continue
        value, size = hit
        doc.take_tokens(i, i + size)
        if value not in values:
            values.append(value)
        spans.append((tokens[i].start, tokens[i + size - 1].end))
        i += size
    if values:
        out.structural.append(Structural(ConstraintKind.CITY, tuple(values), _said(doc, spans)))


_UNKNOWN_PLACE = re.compile(
    r"\b(?:in|near|around)\s+(?P<place>[A-Z][a-z]+(?:[\s-]+[A-Z][a-z]+){0,2})\b",
)


def _unknown_places(doc: _Doc, idx: _Index, out: Constraints) -> None:
    """ "in Springfield": a capitalised place the catalog does not hold. Said, so the reply can say so."""
    if out.has_location():
        return
    for m in doc.matches(_UNKNOWN_PLACE):
        place = m.group("place")
        first = normalise(place).split()[0]
        if first in idx.vocab or first in _DAY_WORDS or first in _WORLD_LANGUAGES:
            continue
        doc.take(m.start("place"), m.end("place"))
        out.unknown.append(place)


_CLAUSE_MARKERS = frozenset({"that", "who", "which"})
_CLAUSE_END = re.compile(r"[.?!;,]")


def _clauses(doc: _Doc, out: Constraints) -> None:
    """What is left of a "that/who/which" clause is a condition on the service, kept as text."""
    tokens = doc.tokens
    for i, tok in enumerate(tokens):
        if tok.norm not in _CLAUSE_MARKERS or doc.used[i] or doc.clause[i] or i == 0:
            continue
        if _CLAUSE_END.search(doc.text[tokens[i - 1].end : tok.start]):
            continue  # "... . Who can help?": a new sentence, not a clause
        end = _CLAUSE_END.search(doc.text, tok.end)
        stop = end.start() if end else len(doc.text)
        span = [k for k in range(i, len(tokens)) if tokens[k].start < stop]
        for k in span:
            doc.clause[k] = True
        free = [k for k in span[1:] if not doc.used[k]]
        while free and tokens[free[0]].norm in _STOPWORDS:
            free.pop(0)
        while free and tokens[free[-1]].norm in _STOPWORDS:
            free.pop()
        if any(tokens[k].norm not in _STOPWORDS for k in free):
            _add_semantic(out, Semantic(" ".join(tokens[k].raw for k in free)))


def _topic_tokens(doc: _Doc) -> list[_Token]:
    return [
        t
        for k, t in enumerate(doc.tokens)
        if not doc.used[k] and not doc.clause[k] and t.norm not in _STOPWORDS and t.norm.isalpha()
    ]


# ----------------------------------------------------------------------------------------------------- the parser


def parse_request(text: str, gazetteer: Gazetteer, *, today: int | None = None) -> Constraints:
    """The constraints a request states, each structural value a catalog value (rule-based, no model).

    `today` is the current weekday (0 = Monday), for "today" and "tomorrow"; without it they go to `unknown`."""
    idx = _index(gazetteer)
    doc = _Doc(text)
    out = Constraints()
    _eligibility_with_places(doc, idx, out)
    _county(doc, idx, out)
    _zips(doc, gazetteer, out)
    tonight = _times(doc, out, today)
    _weekdays(doc, out, today, tonight)
    _accessibility(doc, idx, out)
    _languages(doc, idx, out)
    _semantic_phrases(doc, out)
    _cities(doc, idx, out)
    _unknown_places(doc, idx, out)
    _clauses(doc, out)
    topic = _topic_tokens(doc)
    out.topic = " ".join(t.raw.casefold() for t in topic)
    terms = _service_terms([t.norm for t in topic], idx)
    if terms:
        out.structural.append(Structural(ConstraintKind.SERVICE_TYPE, tuple(terms), out.topic))
    out.structural.sort(key=lambda s: list(ConstraintKind).index(s.kind))
    return out


# ------------------------------------------------------------------------------------------------ with a model


class ProposedCondition(BaseModel):
    condition: str = Field(description="an eligibility condition in a few words, e.g. 'ID required', 'for seniors'")
    negated: bool = Field(False, description="true when the person wants the condition NOT to apply ('no ID')")


class ProposedParse(BaseModel):
    """What a model proposes; every value is checked against the catalog before it is used."""

    cities: list[str] = Field(default_factory=list, description="city names as the person wrote them")
    counties: list[str] = Field(default_factory=list)
    zips: list[str] = Field(default_factory=list, description="5-digit ZIP codes")
    weekdays: list[str] = Field(default_factory=list, description="day names, 'weekend', 'today' or 'tomorrow'")
    time: str | None = Field(None, description="when it must be open, e.g. '6pm', '18:00', 'morning'")
    languages: list[str] = Field(default_factory=list, description="languages the staff must speak")
    service_types: list[str] = Field(default_factory=list, description="kinds of service in words, e.g. 'food pantry'")
    accessibility: bool = Field(False, description="true when wheelchair / disabled access is required")
    eligibility: list[ProposedCondition] = Field(default_factory=list)
    topic: str = Field("", description="what is asked for, in a few words")


_SYSTEM = (
    "You turn a request to a directory of public services into search constraints. Extract only what the "
    "request states: places (cities, counties, ZIP codes), days and times it must be open, languages, kinds of "
    "service, wheelchair access, and eligibility conditions (who it is for, ID, cost). Leave a field empty when "
    "the request does not state it; never guess a place."
)


_NUMBER = re.compile(r"\d")


def _condition_grounded(condition: str, text: str) -> bool:
    """A model-proposed eligibility condition counts only if the request shares a content word with it (by its
    first five letters, so "seniors" meets "senior" and "children" meets "child"): a small model otherwise adds
    conditions nobody asked for ("for seniors", "ID required")."""
    request = {w[:5] for w in normalise(text).split() if len(w) > 1}
    words = [w for w in normalise(condition).split() if len(w) > 1 and w not in _CONDITION_STOP]
    return any(w[:5] in request for w in words)


_CONDITION_STOP = {
    "the",
    "and",
    "for",
    "not",
    "no",
    "of",
    "to",
    "in",
    "is",
    "be",
    "required",
    "must",
    "with",
    "who",
    "that",
    "are",
    "have",
    "has",
    "need",
    "needs",
    "only",
    "people",
}


def _grounded(phrase: str, value: str, text: str) -> bool:
    """Whether the request says the proposed value (or something close to it)."""
    words = normalise(text)
    for cand in {normalise(phrase), normalise(value)}:
        if not cand:
            continue
        if f" {cand} " in f" {words} " or fuzz.partial_ratio(cand, words) >= FUZZY_CUTOFF:
            return True
    return False


def parse_with_llm(
    text: str, gazetteer: Gazetteer, llm: LLM, *, today: int | None = None
) -> tuple[Constraints, list[str]]:
    """The rule-based parse, plus what a model proposes that validates against the catalog; notes say what was
    dropped and why. An unusable answer leaves the rule-based parse, with a note."""
    rules = parse_request(text, gazetteer, today=today)
    day = f"\nToday is {WEEKDAYS[today]}." if today is not None else ""
    messages = [Message("system", _SYSTEM), Message("user", f"Request: {text}{day}")]
    try:
        completion = llm.complete(messages, ProposedParse)
    except LLMError as exc:
        return rules, [f"the model could not be asked ({exc}); used the rule-based parse"]
    proposed = completion.parsed
    if completion.error or not isinstance(proposed, ProposedParse):
        why = completion.error or "no parse"
        return rules, [f"the model's parse was unusable ({why}); used the rule-based parse"]

    idx = _index(gazetteer)
    notes: list[str] = []
    found: dict[ConstraintKind, tuple[list[str], list[str]]] = {}  # kind → (values, said)

    def keep(kind: ConstraintKind, values: Iterable[str], said: str) -> None:
        vals, saids = found.setdefault(kind, ([], []))
        vals.extend(v for v in values if v not in vals)
        if said not in saids:
            saids.append(said)

    def drop(what: str, phrase: str, why: str) -> None:
        notes.append(f"model proposed {what} '{phrase}': {why}")

    for phrase in proposed.cities:
        value = _lookup_city(phrase, idx)
        if value is None:
            drop("city", phrase, "not in the catalog")
        elif not _grounded(phrase, value, text):
            drop("city", phrase, "not in the request")
        else:
            keep(ConstraintKind.CITY, [value], phrase)
    for phrase in proposed.counties:
        value = _lookup_county(phrase, idx)
        if value is None:
            drop("county", phrase, "not in the catalog" if idx.counties else "the catalog has no counties")
        elif not _grounded(phrase, value, text):
            drop("county", phrase, "not in the request")
        else:
            keep(ConstraintKind.COUNTY, [value], phrase)
    for phrase in proposed.zips:
        value = _lookup_zip(phrase, gazetteer)
        if value is None:
            drop("ZIP code", phrase, "not in the catalog")
        elif value not in text:
            drop("ZIP code", phrase, "not in the request")
        else:
            keep(ConstraintKind.ZIP, [value], phrase)
    for phrase in proposed.weekdays:
        sub = Constraints()
        _weekdays(_Doc(f"on {phrase}"), sub, today, tonight="")
        got = sub.of(ConstraintKind.WEEKDAY)
        if got is None:
            drop("weekday", phrase, "not a day" if today is not None else "not a day (or today is not known)")
        elif not _grounded(phrase, phrase, text):
            drop("weekday", phrase, "not in the request")
        else:
            keep(ConstraintKind.WEEKDAY, got.values, phrase)
    if proposed.time:
        sub = Constraints()
        _times(_Doc(proposed.time), sub, today)
        if sub.of(ConstraintKind.TIME) is None:
            _times(_Doc(f"at {proposed.time}"), sub, today)
        got = sub.of(ConstraintKind.TIME)
        if got is None:
            drop("time", proposed.time, "not a time of day")
        elif not _grounded(proposed.time, proposed.time, text) and not _NUMBER.search(text):
            drop("time", proposed.time, "not in the request")
        else:
            keep(ConstraintKind.TIME, got.values, proposed.time)
    for phrase in proposed.languages:
        hit = _lookup_language(phrase, idx)
        if hit is None:
            drop("language", phrase, "not in the catalog")
        elif not _grounded(phrase, hit[0], text):
            drop("language", phrase, "not in the request")
        else:
            keep(ConstraintKind.LANGUAGE, hit[1], phrase)
    for phrase in proposed.service_types:
        terms = _service_terms(normalise(phrase).split(), idx)
        if not terms:
            drop("service type", phrase, "no catalog term matches")
        else:
            keep(ConstraintKind.SERVICE_TYPE, terms, phrase)
    if proposed.accessibility:
        values = _accessibility_values("", idx)
        if not values:
            drop("accessibility", "wheelchair access", "the catalog records no accessibility")
        elif not re.search(r"wheel|handicap|accessib|disab|\bada\b", text, re.I):
            drop("accessibility", "wheelchair access", "not in the request")
        else:
            keep(ConstraintKind.ACCESSIBILITY, values, "accessible")

    merged = Constraints(
        structural=[],
        semantic=list(rules.semantic),
        topic=rules.topic or normalise(proposed.topic),
        unknown=list(rules.unknown),
    )
    for kind in ConstraintKind:
        ours = rules.of(kind)
        proposed_values, saids = found.get(kind, ([], []))
        if ours is not None and kind is ConstraintKind.TIME and proposed_values:
            if tuple(proposed_values) != ours.values:
                drop("time", saids[0], f"the request says '{ours.said}'")
            proposed_values = []  # one time only: the one the words state
        extra = tuple(v for v in proposed_values if ours is None or v not in ours.values)
        if ours is not None:
            merged.structural.append(Structural(kind, ours.values + extra, ours.said) if extra else ours)
        elif extra:
            merged.structural.append(Structural(kind, extra, "; ".join(saids)))
    for cond in proposed.eligibility:
        condition = cond.condition.strip()
        if not condition:
            continue
        if not _condition_grounded(condition, text):
            drop("condition", condition, "not in the request")
            continue
        _add_semantic(merged, Semantic(condition, cond.negated))
    return merged, notes


# ------------------------------------------------------------------------------------------------------ dialogue

_LOCATION = (ConstraintKind.CITY, ConstraintKind.COUNTY, ConstraintKind.ZIP)


def merge(previous: Constraints, new: Constraints) -> Constraints:
    """The constraints after a follow-up turn ("what about Sunday?").

    A kind the new turn states replaces that kind (city, county and ZIP replace one another: one place at a time);
    kinds it does not state are kept. A new topic replaces the topic, and the service type with it. Semantic
    conditions accumulate (a repeated one once; a repeated one with the opposite sense replaces it). Earlier
    unknowns are kept, so the reply can still say what it could not filter on, unless the new turn states that
    kind ("today" unresolved, then "what about Sunday?": the day is now known)."""
    replaced = {s.kind for s in new.structural}
    if replaced & set(_LOCATION):
        replaced |= set(_LOCATION)
    if new.topic:
        replaced.add(ConstraintKind.SERVICE_TYPE)
    structural = [s for s in previous.structural if s.kind not in replaced] + list(new.structural)
    structural.sort(key=lambda s: list(ConstraintKind).index(s.kind))
    fresh = {normalise(s.text) for s in new.semantic}
    semantic = [s for s in previous.semantic if normalise(s.text) not in fresh] + list(new.semantic)
    kept = [u for u in previous.unknown if not (_unknown_kinds(u) & replaced)]
    unknown = list(dict.fromkeys([*kept, *new.unknown]))
    return Constraints(structural=structural, semantic=semantic, topic=new.topic or previous.topic, unknown=unknown)


def _unknown_kinds(said: str) -> set[ConstraintKind]:
    """The kinds an unmatched phrase was about, by what the matchers put there: a day or time word, a language,
    access, or else a place (a city, county or ZIP the catalog lacks)."""
    norm = normalise(said)
    if norm in ("today", "tomorrow", "open now") or _NOW.search(said):
        return {ConstraintKind.WEEKDAY, ConstraintKind.TIME}
    if norm in _WORLD_LANGUAGES:
        return {ConstraintKind.LANGUAGE}
    if _ACCESS.search(said):
        return {ConstraintKind.ACCESSIBILITY}
    return set(_LOCATION)
