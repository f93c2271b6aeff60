"""The lookups a request's words go through: the catalog's own values (its gazetteer) indexed for matching.

`GazetteerIndex.build(gazetteer, words, profile)` derives once what every lookup needs: the catalog's cities,
counties and languages by key, the profile's place aliases, the taxonomy's terms by lemma, the postal codes and
the words that are never a misspelt name. Whoever holds a gazetteer holds its index (the assistant builds one per
conversation); nothing is cached behind the caller's back.

Places as people name them, besides the cities and counties: the records' regions (their state column, by code,
by the country's subdivision name, and by the profile's region aliases: "LK", "L.K.", "Lakeshire"), the areas
their coverage columns name ("Eastgate", "Ridge County"; `filters.record_areas`), the initials of a multi-word
place name when no other place or word of the catalog has them ("NR" for North Ridge), and the profile's
optional places file (`load_places`: "the valley" → catalog cities). These become AREA constraints, matched on
the records' areas.

Every lookup returns a catalog value or None: a value the catalog does not hold never becomes a filter.
Misspelt place names are matched by edit distance with transpositions (optimal string alignment: "Hillcrset" is
one edit from "Hillcrest") or by rapidfuzz's ratio (two letters dropped from a long name); service-type words by
ratio against the taxonomy's words.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pycountry
from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from tracerag.catalog.filters import postal_head
from tracerag.catalog.model import Gazetteer
from tracerag.catalog.profile import CatalogProfile
from tracerag.catalog.words import WordList
from tracerag.errors import ConfigError
from tracerag.text import fold_key

__all__ = ["FUZZY_CUTOFF", "FUZZY_MIN_LETTERS", "GazetteerIndex", "load_places"]

FUZZY_CUTOFF = 88  # rapidfuzz ratio (0-100) for a typo to count as a catalog value: "Lakesde" → "Lakeside" (93)
PLACE_EDITS = 1  # or one edit (insert, delete, substitute, swap two neighbours) from a place name of 5+ letters
PLACE_EDIT_MIN_LETTERS = 5
SERVICE_FUZZY_CUTOFF = 85  # a misspelt topic word against the taxonomy's words ("utilites" → "utility": 86)
FUZZY_MIN_LETTERS = 4  # shorter words are never matched fuzzily (one letter off in 3 is another word)
MAX_SERVICE_TERMS = 5  # directly matched taxonomy terms kept as alternatives
INITIALS = (2, 4)  # letters of a place name's initials that may stand for it ("NR"); shorter or longer: never
MAIN_PLACE_SHARE = 0.1  # a place of this share of the records may be named by its initials alone ("NR food")


@dataclass
class GazetteerIndex:
    """The lookups derived from one gazetteer, with the word list and profile they were built for."""

    gazetteer: Gazetteer
    words: WordList
    profile: CatalogProfile
    cities: dict[str, str] = field(default_factory=dict)  # key → catalog value (aliases included)
    cities_by_size: dict[int, list[str]] = field(default_factory=dict)  # word count → keys of catalog names
    city_words: set[str] = field(default_factory=set)
    city_max: int = 1
    counties: dict[str, str] = field(default_factory=dict)
    languages: dict[str, list[str]] = field(default_factory=dict)  # name ("spanish") → catalog values naming it
    language_max: int = 1
    vocab: frozenset[str] = frozenset()  # ordinary words: never taken for a misspelt place or language
    terms: list[tuple[str, frozenset[str]]] = field(default_factory=list)  # (term id, content lemmas)
    service_words: frozenset[str] = frozenset()  # the taxonomy's lemmas and the synonym table's
    service_word_list: list[str] = field(default_factory=list)
    names: dict[str, list[str]] = field(default_factory=dict)  # term name key → ids
    accessibility: dict[str, str] = field(default_factory=dict)
    postal_code: re.Pattern[str] | None = None  # how a postal code is written in a request
    regions: dict[str, tuple[str, ...]] = field(default_factory=dict)  # "lk", "l k", "lakeshire" → state values
    areas: dict[str, tuple[str, ...]] = field(default_factory=dict)  # place key → the record areas it names
    area_max: int = 1
    initials: dict[str, str] = field(default_factory=dict)  # "nr" → "north ridge" (a key of cities/areas)
    main_initials: frozenset[str] = frozenset()  # those of the directory's main places (`MAIN_PLACE_SHARE`)
    own_regions: frozenset[str] = frozenset()  # region keys of the profile's own region ("lk", "l k")
    places: dict[str, tuple[str, ...]] = field(default_factory=dict)  # the places file: key → record areas
    places_max: int = 1

    @classmethod
    def build(
        cls,
        gazetteer: Gazetteer,
        words: WordList,
        profile: CatalogProfile | None = None,
        places: Mapping[str, Sequence[str]] | None = None,
    ) -> GazetteerIndex:
        """`places`: the profile's places file (`load_places`), names → catalog place values."""
        profile = profile or CatalogProfile(language=words.language)
        idx = cls(gazetteer, words, profile)
        for key, value in gazetteer.cities.items():
            norm = fold_key(key)
            if norm:
                idx.cities[norm] = value
                idx.cities_by_size.setdefault(len(norm.split()), []).append(norm)
                idx.city_words.update(norm.split())
        idx.counties = {fold_key(k): v for k, v in gazetteer.counties.items() if fold_key(k)}
        county_values, city_values = set(gazetteer.counties.values()), set(gazetteer.cities.values())
        for alias, value in profile.place_aliases.items():  # "Ridge" → "Ridge-Valley": wherever it lives
            key = fold_key(alias)
            if key and value in county_values:
                idx.counties.setdefault(key, value)
            elif key and value in city_values:
                idx.cities.setdefault(key, value)
                idx.city_words.update(key.split())
        idx.city_max = max((len(k.split()) for k in idx.cities), default=1)
        idx.accessibility = {fold_key(k): v for k, v in gazetteer.accessibility.items() if fold_key(k)}
        idx._index_languages()
        idx._index_terms()
        idx._index_regions()
        idx._index_areas()
        idx._index_initials()
        idx._index_places(places or {})
        pattern = profile.postal_code_pattern
        if pattern:
            idx.postal_code = re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])", re.I)
        elif gazetteer.zips:  # no pattern known: a word with a digit that the catalog holds as a code
            idx.postal_code = re.compile(r"(?<![\w-])(?=[\w-]*\d)[A-Za-z0-9]{3,10}(?:[\s-][A-Za-z0-9]{2,5})?(?![\w-])")
        return idx

    def _index_languages(self) -> None:
        w = self.words
        keys = {fold_key(k): v for k, v in self.gazetteer.languages.items() if fold_key(k)}
        names = {
            k
            for k in keys
            if len(k.split()) <= 3
            and all(p.isalpha() for p in k.split())
            # a remark ("other languages"), unless the list names it ("american sign language" holds "language")
            and (k in w.language_aliases or k in w.language_names or not any(p in w.language_remark for p in k.split()))
        }
        for name in names:
            group = {name, *w.language_aliases.get(name, ())}
            exact = [keys[g] for g in sorted(group) if g in keys]
            rest = sorted(
                {v for k, v in keys.items() if any(_contains(k.split(), g.split()) for g in group)} - set(exact)
            )
            self.languages[name] = exact + rest
        for alias, targets in w.language_aliases.items():
            if alias not in self.languages:
                known = [t for t in targets if t in self.languages]
                if known:
                    self.languages[alias] = self.languages[known[0]]
        self.language_max = max((len(n.split()) for n in self.languages), default=1)

    def _index_terms(self) -> None:
        w = self.words
        vocab: set[str] = set(w.ordinary)
        for term_id, name in self.gazetteer.taxonomy.items():
            words = fold_key(name).split()
            vocab.update(words)
            if term_id.upper().startswith("Y") or not name.strip():
                continue  # AIRS "Y" terms are target populations ("Homeless Shelter Residents"), not services
            # Filler in every form, plurals included: "Programs" is filler like "program" (it was not).
            lemmas = frozenset(w.lemma(word) for word in words if word not in w.term_filler)
            if lemmas:
                self.terms.append((term_id, lemmas))
            self.names.setdefault(fold_key(name), []).append(term_id)
        service_lemmas = {lemma for _, term_lemmas in self.terms for lemma in term_lemmas}
        service_lemmas |= {k for key in w.service_synonyms for k in key}
        self.service_words = frozenset(service_lemmas)
        self.service_word_list = sorted(
            service_lemmas | {part for name in self.names for part in name.split() if part.isalpha()}
        )
        self.vocab = frozenset(vocab)

    def _index_regions(self) -> None:
        """The records' regions by what people call them: the code as written ("LK", also "l k" for "L.K."),
        the country's subdivision of that code by name ("Lakeshire"), and the profile's region with
        its aliases when they name one of the records' regions."""
        country = (self.profile.country or "").upper()
        for value in self.gazetteer.regions:
            key = fold_key(value)
            if not key or value not in self.gazetteer.areas:
                continue  # a store written before areas were: its records cannot be filtered by region
            names = {key}
            if key.isalpha() and len(key) <= 3:
                names.add(" ".join(key))  # "D.C." is read as the words "d" and "c"
                sub = pycountry.subdivisions.get(code=f"{country}-{value.upper()}") if country else None
                if sub is not None:
                    names.add(fold_key(sub.name))
            for name in names:
                self.regions[name] = (*self.regions.get(name, ()), value)
        own = {fold_key(a) for a in (self.profile.region or "", *self.profile.region_aliases) if fold_key(a)}
        hits = tuple(dict.fromkeys(v for k in own for v in self.regions.get(k, ())))
        for name in own:
            if hits:
                self.regions.setdefault(name, hits)
        self.own_regions = frozenset(k for k, v in self.regions.items() if set(v) & set(hits))

    def _index_areas(self) -> None:
        """Coverage names and the records' other place values by key, with a county word or without it
        ("Ridge County" and "Ridge" are one place); postal codes and regions are matched elsewhere."""
        county = self.words.county_words
        for value in self.gazetteer.areas:
            key = fold_key(value)
            if not key or not any(c.isalpha() for c in key) or value in self.gazetteer.regions:
                continue
            parts = key.split()
            keys = {key}
            if len(parts) > 1 and parts[-1] in county:
                keys.add(" ".join(parts[:-1]))
            for k in keys:
                self.areas[k] = (*self.areas.get(k, ()), value)
        self.areas = {k: tuple(dict.fromkeys(v)) for k, v in self.areas.items()}
        self.area_max = max((len(k.split()) for k in self.areas), default=1)

    def _index_initials(self) -> None:
        """Initials of multi-word place names ("north ridge" → "nr"), kept only when certain: one place has
        them (a county word and filler words are not counted), and they are no region, place, language or word
        of the word list or taxonomy."""
        w = self.words
        owners: dict[str, set[str]] = {}
        for key in [*self.cities, *self.counties, *self.areas]:
            parts = [p for p in key.split() if p not in w.filler]
            if parts and parts[-1] in w.county_words:
                parts = parts[:-1]
            if len(parts) < 2 or not all(p.isalpha() for p in parts):
                continue
            initials = "".join(p[0] for p in parts)
            owners.setdefault(initials, set()).add(" ".join(parts))
        taken = set(self.regions) | set(self.cities) | set(self.counties) | set(self.areas) | set(self.languages)
        words = w.ordinary | w.filler | self.vocab | self.service_words | w.language_names
        for initials, places in owners.items():
            if len(places) != 1 or not INITIALS[0] <= len(initials) <= INITIALS[1]:
                continue
            if initials in taken or initials in words:
                continue
            name = next(iter(places))
            if name in self.cities or name in self.counties or name in self.areas:
                self.initials[initials] = name
        areas = self.gazetteer.areas
        located = sum(areas.get(v, 0) for v in set(self.gazetteer.cities.values())) or 1
        self.main_initials = frozenset(
            i
            for i, name in self.initials.items()
            if max((areas.get(v, 0) for v in self.areas.get(name, ())), default=0) >= MAIN_PLACE_SHARE * located
        )

    def _index_places(self, places: Mapping[str, Sequence[str]]) -> None:
        for name, values in places.items():
            key = fold_key(name)
            if key:
                self.places[key] = tuple(values)
        self.places_max = max((len(k.split()) for k in self.places), default=1)

    # -- lookups ------------------------------------------------------------------------------------------

    def unknown_word(self, word: str) -> bool:
        """A word that may be a misspelt name: long enough, alphabetic, and no ordinary word."""
        return len(word) >= FUZZY_MIN_LETTERS and word.isalpha() and word not in self.vocab

    def lookup_city(self, phrase: str) -> str | None:
        norm = fold_key(phrase)
        if norm in self.cities:
            return self.cities[norm]
        words = norm.split()
        eligible = all(w in self.city_words or self.unknown_word(w) for w in words)
        if words and eligible and any(self.unknown_word(w) for w in words):
            hit = _nearest_place(norm, self.cities_by_size.get(len(words), []))
            return self.cities[hit] if hit else None
        return None

    def lookup_area(self, phrase: str) -> tuple[str, ...] | None:
        """The record areas a place name (or its initials) names, exactly by key; None when no record has it."""
        norm = fold_key(phrase)
        parts = norm.split()
        keys = [norm]
        if len(parts) > 1 and parts[-1] in self.words.county_words:
            keys.append(" ".join(parts[:-1]))  # "Ridge County": the coverage entry and the county "Ridge"
        keys = [self.initials.get(k, k) for k in keys]  # "NR", "NR County"
        values = tuple(dict.fromkeys(v for k in keys for v in self.areas.get(k, ())))
        return values or None

    def lookup_region(self, phrase: str) -> tuple[str, ...] | None:
        return self.regions.get(fold_key(phrase))

    def lookup_county(self, phrase: str) -> str | None:
        norm = fold_key(phrase)
        names = "|".join(re.escape(w) for w in sorted(self.words.county_words, key=len, reverse=True))
        bare = re.sub(rf"\s*\b(?:{names})\b\s*", " ", norm).strip() if names else norm
        keys = [norm, bare, *(f"{bare} {w}" for w in sorted(self.words.county_words))]
        return next((self.counties[k] for k in keys if k in self.counties), None)

    def lookup_language(self, phrase: str, *, fuzzy: bool = True) -> tuple[str, list[str]] | None:
        """(the language's name, the catalog values naming it)."""
        norm = fold_key(phrase)
        if norm in self.languages:
            return norm, self.languages[norm]
        if fuzzy and all(self.unknown_word(w) or w in self.words.language_names for w in norm.split()):
            choices = [n for n in self.languages if len(n.split()) == len(norm.split())]
            hit = process.extractOne(norm, choices, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF) if choices else None
            if hit:
                return hit[0], self.languages[hit[0]]
        return None

    def lookup_postal_code(self, phrase: str) -> str | None:
        """The catalog's code for a written one: the code itself when the catalog holds it, else its head
        (`postal_head`) when the catalog holds that."""
        code = phrase.strip()
        zips = self.gazetteer.zips
        for cand in (code, code.upper(), postal_head(code, self.profile.postal_code_prefix)):
            if cand in zips:
                return cand
        return None

    def accessibility_values(self, said: str) -> list[str]:
        cues = ("wheelchair", "handicap", "accessib", "access", "disab", "ada", "ramp")
        values = [v for k, v in self.accessibility.items() if any(c in k for c in cues)]
        if "wheel" in said.casefold():
            values.sort(key=lambda v: "wheel" not in v.casefold())
        return values

    def service_terms(self, words: Sequence[str]) -> list[str]:
        """Taxonomy term ids for a topic's (folded) words, compared as lemmas: the synonym table, then term names
        whose every content word was asked for. Term filler is dropped on both sides in every form, so "programs"
        and "services" say nothing here as "program" and "service" do; a term whose words are all within another
        matched term's is left out ("Consumer Services" once "General Consumer Complaints" matched: the narrower
        one says what was asked). Narrower terms are not listed: a term's filter covers the terms under it
        (`catalog.filters`). A misspelt word is first corrected to the nearest
        word of the taxonomy ("counceling" → "counseling")."""
        if not self.terms:
            return []
        asked, kept = self._asked(words)
        if not asked:
            return []
        chosen = self._synonym_terms(asked, kept)
        full, partial = self._named_terms(asked)
        for term_id in full:
            if len(chosen) >= MAX_SERVICE_TERMS:
                break
            if term_id not in chosen:
                chosen.append(term_id)
        if not chosen and 0 < len(partial) <= 3:  # every asked word in a few terms: confident enough
            chosen = partial
        return chosen

    def _asked(self, words: Sequence[str]) -> tuple[list[str], list[str]]:
        """(lemmas, words) of a topic's words that may name a service (filler left out), a misspelt word
        corrected to the nearest word of the taxonomy with the same first letter."""
        w = self.words
        asked: list[str] = []
        kept: list[str] = []
        for word in words:
            lemma = w.lemma(word)
            if word in w.filler or word in w.term_filler:
                continue
            if lemma not in self.service_words and len(word) >= 5 and word.isalpha():
                hits = [
                    process.extractOne(q, self.service_word_list, scorer=fuzz.ratio, score_cutoff=SERVICE_FUZZY_CUTOFF)
                    for q in {word, lemma}
                ]
                best = max((h for h in hits if h and h[0][0] == word[0]), key=lambda h: h[1], default=None)
                if best:
                    lemma, word = w.lemma(best[0]), best[0]
            asked.append(lemma)
            kept.append(word)
        return asked, kept

    def _synonym_terms(self, asked: list[str], kept: list[str]) -> list[str]:
        """The terms the synonym table names for the words asked, longest keys first, each word used once (and
        only in an inflection the table allows)."""
        w = self.words
        chosen: list[str] = []
        left = list(asked)
        said = dict(zip(asked, kept, strict=True))  # lemma → the word as asked
        for key in sorted(w.service_synonyms, key=len, reverse=True):
            if all(k in left and _inflection_of(said[k], w.synonym_words[k], w.inflection_endings) for k in key):
                for name in w.service_synonyms[key]:
                    chosen.extend(i for i in self.names.get(fold_key(name), []) if i not in chosen)
                for k in key:
                    left.remove(k)
        return chosen

    def _named_terms(self, asked: list[str]) -> tuple[list[str], list[str]]:
        """(the terms all of whose words were asked, naming half of what was asked or more: the broadest dropped
        when a narrower one matched, most words and closest first; the terms holding every word asked)."""
        asked_set = set(asked)
        asked_text = " ".join(asked)
        full: list[tuple[int, float, str]] = []
        partial: list[str] = []
        for term_id, t_lemmas in self.terms:
            hit = t_lemmas & asked_set
            if not hit:
                continue
            if hit == t_lemmas and 2 * len(hit) >= len(asked_set):  # it names half of what was asked, or more
                score = fuzz.token_set_ratio(asked_text, " ".join(sorted(t_lemmas)))
                full.append((len(t_lemmas), score, term_id))
            elif len(hit) / len(t_lemmas) >= 0.5 and asked_set <= t_lemmas:
                partial.append(term_id)
        lemmas_of = dict(self.terms)
        full = [f for f in full if not any(lemmas_of[f[2]] < lemmas_of[o[2]] for o in full)]
        full.sort(key=lambda x: (-x[0], -x[1], x[2]))
        return [term_id for _, _, term_id in full], partial


def load_places(path: Path, gazetteer: Gazetteer) -> dict[str, tuple[str, ...]]:
    """A profile's places file: `name = "value"` or `name = ["value", ...]` lines (TOML), each value a place of
    the catalog as its records write it (a city, county, region, postal code or coverage area; case and
    punctuation are free). A value the catalog lacks, or a value that is not text, is a ConfigError naming the
    file, line and name."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the places file: {exc}") from exc
    known: dict[str, str] = {}
    for value in sorted(gazetteer.areas, key=lambda v: -gazetteer.areas[v]):
        known.setdefault(fold_key(value), value)
    lines = text.splitlines()
    out: dict[str, tuple[str, ...]] = {}
    for name, given in data.items():
        line = next((n for n, ln in enumerate(lines, 1) if ln.lstrip().lstrip('"').startswith(name)), 0)
        where = f"{path}:{line}: {name!r}"
        values = [given] if isinstance(given, str) else given
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            raise ConfigError(f"{where}: expected a place name or a list of them, got {given!r}")
        missing = [v for v in values if fold_key(v) not in known]
        if missing:
            raise ConfigError(f"{where}: not a place of this catalog: {', '.join(map(repr, missing))}")
        out[name] = tuple(dict.fromkeys(known[fold_key(v)] for v in values))
    return out


def _contains(words: Sequence[str], part: Sequence[str]) -> bool:
    n = len(part)
    return any(tuple(words[i : i + n]) == tuple(part) for i in range(len(words) - n + 1))


def _inflection_of(word: str, forms: frozenset[str], endings: frozenset[str]) -> bool:
    """Whether `word` is one of a synonym's written forms or one with an inflection ending of the word list
    ("pantries" of "pantry", "meals" of "meal"); a shared stem alone also joins derivations ("medication" and
    "medical" are both "medic")."""
    for form in forms:
        if word == form:
            return True
        for base in (form, form[:-1]):  # the last letter may change: "pantry" → "pantries"
            if word.startswith(base) and word[len(base) :] in endings:
                return True
    return False


def _nearest_place(query: str, choices: Sequence[str]) -> str | None:
    """The place name `query` misspells: one edit away with transpositions (a name of 5 letters or more), or
    close by ratio; the closest when several are."""
    best: tuple[int, float, str] | None = None
    for choice in choices:
        edits = OSA.distance(query, choice, score_cutoff=PLACE_EDITS)
        ratio = fuzz.ratio(query, choice)
        by_edits = edits <= PLACE_EDITS and min(len(query), len(choice)) >= PLACE_EDIT_MIN_LETTERS
        if by_edits or ratio >= FUZZY_CUTOFF:
            key = (edits, -ratio, choice)
            if best is None or key < best:
                best = key
    return best[2] if best else None
