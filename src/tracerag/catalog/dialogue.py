"""A conversation's constraints from one turn to the next ("what about Sunday?" keeps the city and the topic).

The answer to the clarifying question keeps the topic: "food", "Which city …?", "Hillcrest" is food in Hillcrest
(the turn states a place and no topic); "food", "Which city …?", "eastgate" (a name the catalog lacks) is no
new topic either (`place_answer`): the name is an unknown place, said and asked about, and food is kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from tracerag.catalog.matchers import ACCESS, NOW
from tracerag.catalog.model import ConstraintKind, Constraints
from tracerag.catalog.words import WordList
from tracerag.text import fold_key

__all__ = ["LOCATION", "PLACE_ANSWER_WORDS", "merge", "place_answer", "unheld_place_words", "unknown_places"]

LOCATION = (ConstraintKind.CITY, ConstraintKind.COUNTY, ConstraintKind.ZIP, ConstraintKind.AREA)
PLACE_ANSWER_WORDS = 3  # a longer reply to "which city?" is a new request, not a place name
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def place_answer(previous: Constraints, new: Constraints, is_topic: Callable[[str], bool]) -> Constraints:
    """`new`, read as the answer to "which city or postal code?" when it is one: the conversation has a topic
    and no place yet, and the turn states no place, no service type and a few words the catalog holds no
    service about (`is_topic`: the assistant's topic check). Those words are then a place the catalog lacks
    (`unknown`), not a topic, so `merge` keeps the topic. Any other turn is returned as it is."""
    if not previous.topic or previous.has_location() or new.has_location() or not new.topic:
        return new
    if new.of(ConstraintKind.SERVICE_TYPE) is not None or len(new.topic.split()) > PLACE_ANSWER_WORDS:
        return new
    if is_topic(new.topic):
        return new
    return replace(new, topic="", unknown=[*new.unknown, new.topic], structural=list(new.structural))


def unheld_place_words(request: str, new: Constraints, words: WordList, is_topic: Callable[[str], bool]) -> Constraints:
    """`new` with a word written after a place word ("food in eastgate") moved from the topic to `unknown` when
    the turn states no place, the word could be a name (no word of the word list, not inflected: "paying" is
    "pay" + "ing") and the catalog holds nothing about it (`is_topic`): a place the catalog lacks, written in
    small letters, so `matchers.unknown_places` could not tell it from a word. Any other turn is returned as
    it is."""
    if new.has_location() or not new.topic:
        return new
    tokens = [fold_key(t) for t in _WORD.findall(request)]
    topic = new.topic.split()
    places = [
        word
        for before, word in zip(tokens, tokens[1:], strict=False)
        if before in words.place_context and word in topic and _name_like(word, words) and not is_topic(word)
    ]
    if not places:
        return new
    kept = " ".join(w for w in topic if w not in places)
    return replace(new, topic=kept, unknown=[*new.unknown, *places], structural=list(new.structural))


def _name_like(word: str, words: WordList) -> bool:
    return len(word) >= 4 and word not in words.ordinary and words.lemma(word) == word


def unknown_places(c: Constraints, words: WordList) -> list[str]:
    """The unknowns of `c` that were places (a city, region or area the catalog lacks)."""
    return [u for u in c.unknown if _unknown_kinds(u, words) == set(LOCATION)]


def merge(previous: Constraints, new: Constraints, words: WordList) -> Constraints:
    """The constraints after a follow-up turn.

    A kind the new turn states replaces that kind (city, county and postal code replace one another: one place
    at a time); kinds it does not state are kept. A new topic replaces the topic, and the service type with it.
    Semantic conditions accumulate (a repeated one once; a repeated one with the opposite sense replaces it).
    Earlier unknowns are kept, so the reply can still say what it could not filter on, unless the new turn
    states that kind ("today" unresolved, then "what about Sunday?": the day is now known)."""
    replaced = {s.kind for s in new.structural}
    if replaced & set(LOCATION):
        replaced |= set(LOCATION)
    if new.topic:
        replaced.add(ConstraintKind.SERVICE_TYPE)
    structural = [s for s in previous.structural if s.kind not in replaced] + list(new.structural)
    structural.sort(key=lambda s: list(ConstraintKind).index(s.kind))
    fresh = {fold_key(s.text) for s in new.semantic}
    semantic = [s for s in previous.semantic if fold_key(s.text) not in fresh] + list(new.semantic)
    kept = [u for u in previous.unknown if not (_unknown_kinds(u, words) & replaced)]
    unknown = list(dict.fromkeys([*kept, *new.unknown]))
    return Constraints(structural=structural, semantic=semantic, topic=new.topic or previous.topic, unknown=unknown)


def _unknown_kinds(said: str, words: WordList) -> set[ConstraintKind]:
    """The kinds an unmatched phrase was about, by what the matchers put there: a day or time word, a language,
    access, or else a place (a city, county or postal code the catalog lacks)."""
    norm = fold_key(said)
    if norm in ("today", "tomorrow", "open now") or NOW.search(said):
        return {ConstraintKind.WEEKDAY, ConstraintKind.TIME}
    if norm in words.language_names:
        return {ConstraintKind.LANGUAGE}
    if ACCESS.search(said):
        return {ConstraintKind.ACCESSIBILITY}
    return set(LOCATION)
