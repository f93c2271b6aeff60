"""A request in words → `Constraints`, every structural value matched against the catalog's own values.

Rule-based and without a model: each matcher of `catalog.matchers` recognises its kind of phrase, looks the words
up in the `GazetteerIndex` and consumes them, so a word feeds one constraint only. What is left becomes the topic,
which is matched against the taxonomy's term names. A phrase whose value the catalog does not hold goes to
`unknown`, never into a filter. `catalog.llm_parse` adds what a model proposes; `catalog.dialogue` carries the
constraints of a conversation from one turn to the next.
"""

from __future__ import annotations

from tracerag.catalog import matchers
from tracerag.catalog.gazetteer import GazetteerIndex
from tracerag.catalog.model import ConstraintKind, Constraints, Structural
from tracerag.catalog.request_words import RequestWords, Token
from tracerag.catalog.stated_facts import stated_facts
from tracerag.catalog.words import WordList
from tracerag.text import fold_key

__all__ = ["content_words", "parse_request"]


def content_words(text: str, words: WordList) -> list[str]:
    """The folded words of `text` that can say what is asked for: alphabetic and not filler words."""
    return [w for w in fold_key(text).split() if w.isalpha() and w not in words.filler]


def parse_request(text: str, index: GazetteerIndex, *, today: int | None = None) -> Constraints:
    """The constraints a request states, each structural value a catalog value (rule-based, no model).

    `today` is the current weekday (0 = Monday), for "today" and "tomorrow"; without it they go to `unknown`.
    The order lets the specific phrase win: ages and residence before places and times ("over 60", "residents
    of X"), the profile's places file and counties before cities ("X County"), postal codes and times before the
    words around them, cities before coverage areas, and regions last ("Hillcrest LK": LK only says where
    Hillcrest is)."""
    words = RequestWords(text)
    out = Constraints()
    matchers.eligibility_with_places(words, index, out)
    matchers.gazetteer_places(words, index, out)
    matchers.counties(words, index, out)
    matchers.postal_codes(words, index, out)
    tonight = matchers.times(words, index, out, today)
    matchers.weekdays(words, index, out, today, tonight)
    matchers.accessibility(words, index, out)
    matchers.languages(words, index, out)
    stated_facts(words, index, out)  # "i'm 17", "a man", "me and my kids": facts about the person
    matchers.semantic_phrases(words, index, out)
    matchers.regions(words, index, out, names_of_words=2)
    matchers.cities_and_counties(words, index, out)
    matchers.areas(words, index, out)
    matchers.regions(words, index, out)
    matchers.unknown_places(words, index, out)
    matchers.clauses(words, index, out)
    topic = _topic_tokens(words, index.words)
    out.topic = " ".join(t.raw.casefold() for t in topic)
    terms = index.service_terms([t.norm for t in topic])
    if terms:
        out.structural.append(Structural(ConstraintKind.SERVICE_TYPE, tuple(terms), out.topic))
    out.structural.sort(key=lambda s: list(ConstraintKind).index(s.kind))
    return out


def _topic_tokens(words: RequestWords, wl: WordList) -> list[Token]:
    return [
        t
        for k, t in enumerate(words.tokens)
        if not words.used[k] and not words.clause[k] and t.norm not in wl.filler and t.norm.isalpha()
    ]
