"""The place of a one-place directory: a request that names no place is answered there, and the reply says so.

A city's own directory (nearly all its records in one city: `CatalogProfile.home_place`, inferred at ingest by
`profile_inference.infer_home_place`, editable) has only one answer to "which city or postal code?", so asking it
is a wasted turn. When the conversation asks for something and names no place, the home place becomes its
place constraint (an assumed one: `said` is empty), and the reply starts by saying where the services are. A
place the directory does not know ("in eastgate") is said, and the request is answered for the whole home place
instead of asked about again. A directory of several places has no home place and keeps asking.

The assumed place is taken away before each turn is read (`without_home`) and put back after (`with_home`), so
the dialogue reads every turn as it would in any directory: a place the person names replaces nothing but the
assumption, and an answer to the clarifying question is still read as a place (`dialogue.place_answer`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Set
from dataclasses import replace
from pathlib import Path

from tracerag.catalog.model import ConstraintKind, Constraints, Gazetteer, Structural
from tracerag.catalog.sentences import say
from tracerag.catalog.words import WordList
from tracerag.errors import ConfigError
from tracerag.text import fold_key

__all__ = [
    "MAX_NAME_WORDS",
    "home_constraint",
    "home_sentence",
    "named_elsewhere",
    "widened",
    "widened_sentence",
    "with_home",
    "without_home",
]

MAX_NAME_WORDS = 3  # "the sunset district", "bayview hunters point": longer runs are the request going on
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*|[,.;:!?]")


def home_constraint(home: str | None, gazetteer: Gazetteer, profile_path: Path) -> Structural | None:
    """The constraint that keeps the records of the profile's home place (a city, else a county, else any record
    area of the catalog, as its records write it), or None when the profile names none. A name the catalog
    lacks is a ConfigError naming the profile and the field."""
    if home is None or not home.strip():
        return None
    key = fold_key(home)
    for kind, values in ((ConstraintKind.CITY, gazetteer.cities), (ConstraintKind.COUNTY, gazetteer.counties)):
        found = next((v for k, v in values.items() if fold_key(k) == key), None)
        if found is not None:
            return Structural(kind, (found,))
    areas = sorted((a for a in gazetteer.areas if fold_key(a) == key), key=lambda a: -gazetteer.areas[a])
    if areas:
        return Structural(ConstraintKind.AREA, (areas[0],))
    raise ConfigError(f"{profile_path}: home_place: not a place of this catalog: {home!r}")


def without_home(state: Constraints, home: Structural | None) -> Constraints:
    """`state` without the assumed home place (the dialogue then reads the next turn as in any directory)."""
    if home is None or home not in state.structural:
        return state
    return replace(state, structural=[s for s in state.structural if s != home])


def with_home(state: Constraints, home: Structural | None) -> Constraints:
    """`state` with the home place when it asks for something (a topic, a constraint or a condition) and names
    no place; else `state` itself. An empty request still gets the question of what is wanted."""
    if home is None or state.has_location() or not (state.topic.strip() or state.structural or state.semantic):
        return state
    order = list(ConstraintKind)
    structural = sorted([*state.structural, home], key=lambda s: order.index(s.kind))
    return replace(state, structural=structural)


def named_elsewhere(text: str, c: Constraints, words: WordList, service_words: Set[str]) -> Constraints:
    """`c` with the names written after a place word ("food in the excelsior", "near bayview hunters point")
    moved from the topic to `unknown`, in a one-place directory: there a place the matchers did not find is a
    part of the place the directory does not know (a neighbourhood), though its records may use the word
    ("Excelsior Clubhouse"), so it is said, not searched for. A name starts with a word that may be one (of 4
    letters or more, no word of the word list or of the services, not inflected: "paying" is "pay" + "ing")
    and goes on over words of the topic of 3 letters or more ("sf" is the place's initials) that are no filler
    and no service word, up to `MAX_NAME_WORDS`. Any
    other turn is returned as it is."""
    tokens = [t.casefold() for t in _TOKEN.findall(text)]
    topic = c.topic.split()
    names: list[list[str]] = []
    i = 0
    while i < len(tokens) - 1:
        if tokens[i] not in words.place_context:
            i += 1
            continue
        j = i + 1
        while j < len(tokens) and tokens[j] in words.filler and tokens[j] not in words.place_context:
            j += 1  # "in the", "near my"
        start = tokens[j] if j < len(tokens) else ""
        if start not in topic or not _name_like(start, words, service_words):
            i += 1
            continue
        name = [start]
        for word in tokens[j + 1 : j + MAX_NAME_WORDS]:
            if len(word) < 3 or word not in topic or word in words.filler or word in service_words:
                break
            name.append(word)
        names.append(name)
        i = j + len(name)
    if not names:
        return c
    taken = {w for name in names for w in name}
    kept = " ".join(w for w in topic if w not in taken)
    structural = [
        replace(s, said=" ".join(w for w in s.said.split() if w not in taken))
        if s.kind is ConstraintKind.SERVICE_TYPE
        else s
        for s in c.structural
    ]
    unknown = [*c.unknown, *(" ".join(name) for name in names)]
    return replace(c, topic=kept, unknown=unknown, structural=structural)


def _name_like(word: str, words: WordList, service_words: Set[str]) -> bool:
    return len(word) >= 4 and word not in words.ordinary and word not in service_words and not _inflected(word, words)


def _inflected(word: str, words: WordList) -> bool:
    """Whether `word` is another word with an ending ("paying", "crisis" as a plural): its stem is not the word,
    and what the stem leaves is an inflection ending of the word list or longer than one letter (a stemmer's
    dropped last letter, as in "eastgate", is no ending)."""
    stem = words.lemma(word)
    if stem == word:
        return False
    rest = word[len(stem) :] if word.startswith(stem) else None
    return rest is None or rest in words.inflection_endings or len(rest) > 1


def widened(state: Constraints, home: Structural | None, places: Mapping[str, object]) -> Constraints | None:
    """`state` with the home place instead of a part of it that the profile's places file names (`places`, by
    key: "the valley" → its postal codes), for when nothing was found there: such a part is an approximation
    (postal codes do not follow a neighbourhood's lines), so the rest of the home place is looked in, and the
    reply says so. None when the state's place is not such a part."""
    area = state.of(ConstraintKind.AREA)
    if home is None or area is None or fold_key(area.said) not in places:
        return None
    return with_home(replace(state, structural=[s for s in state.structural if s is not area]), home)


def widened_sentence(narrow: str, home: Structural) -> str:
    """What the reply says first when a part of the home place had nothing (`widened`)."""
    return say("home_widened", narrow=narrow, where=say("or").join(home.values))


def home_sentence(home: Structural, unknown: list[str], answered: bool) -> str:
    """What the reply says first about the assumed place: where the services are, and the places the person
    named that the directory does not know ("I don't know 'eastgate' in this directory, so these are in
    Lakeside:")."""
    where = say("or").join(home.values)
    if not unknown:
        return say("home_answered" if answered else "home_looked", where=where)
    names = say("or").join(f"'{u}'" for u in unknown)
    return say("home_unknown_answered" if answered else "home_unknown_looked", names=names, where=where)
