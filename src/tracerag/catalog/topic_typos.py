"""Misspelt topic words corrected to the words the catalog's records use ("fod pantyr" → "food pantry").

The parser corrects place names against the catalog's places and topic words against the taxonomy's term names,
but a word of the records' own texts that a person misspells ("sucide hotline", "socer leage", "tutering") met
nothing: the topic judge found no record using it, and the request was refused. Here a topic word is corrected
when all of these hold (`TypoFixer.fix`):

1. no record uses it (its folded form and its stem are in no record's name, description, eligibility, fees,
   application process or taxonomy terms; `CatalogVocabulary`);
2. it is no word the word list gives a meaning (filler, the people a request is about, an everyday phrase, a
   synonym key) and no word of the catalog's place names;
3. the language rarely writes it: its Zipf frequency in wordfreq's list for the catalog's language is below
   `MAX_TYPO_ZIPF`. Real words the catalog lacks are written often ("golf" 4.6, "tuxedo" 3.1, "skydiving"
   3.0); misspellings are not ("fod" 2.2, "sumer" 2.4, "yuoth" 0). A language wordfreq has no list for gets no
   correction: without it a real word cannot be told from a typo;
4. a word some record uses (or one the word list gives a meaning: "daugter" → "daughter", a person) is close:
   one edit for 4 to 6 letters, two for 7 or more (insert, delete, substitute, swap two neighbours: optimal
   string alignment), and for 3 letters only a letter put back ("fod" → "food"); a different first letter only
   at one edit ("imergency" → "emergency");
5. the language writes the correction at least `MIN_GAIN` Zipf more often (30 times) than the word as typed:
   the correction is the likelier word, not a rarer neighbour.

Among several, the nearest wins, then the one reached by putting back or taking out letters rather than
changing one ("lawer": "lawyer", not "lower"), then the one more records use. The catalog's not-in-catalog
topics stay refused: their words are frequent words of the language, never corrected. Measured on the three
shared directories (`tests/catalog/test_topic_typos.py`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache

import wordfreq
from rapidfuzz import process
from rapidfuzz.distance import OSA, Indel

from tracerag.catalog.topic_match import CatalogVocabulary
from tracerag.catalog.words import WordList
from tracerag.text import fold_key

__all__ = ["MAX_TYPO_ZIPF", "MIN_GAIN", "Fix", "TypoFixer", "corrected", "fixer_of", "suspects"]

MAX_TYPO_ZIPF = 3.0  # a word the language writes once per million words or more is a real word, never a typo
MIN_GAIN = 1.5  # the correction is written at least 10**1.5 (about 30) times as often as the typed word
MIN_LETTERS = 3  # shorter words are never corrected ("sf", "ppl" stays: one letter of 3 is another word)
SHORT = 3  # words of this length: only a letter put back ("fod" → "food")
LONG = 7  # from this length two edits are allowed, one of them a letter put back or taken out


@dataclass(frozen=True, slots=True)
class Fix:
    """One corrected word, for the trail ("fod → food")."""

    said: str
    meant: str
    records: int  # records using the correction (0: a word of the word list, "daughter")

    def note(self) -> str:
        return f"typo: {self.said} → {self.meant}"


@dataclass
class TypoFixer:
    """The records' words with the records using each, plus the word list's meaningful words: what a misspelt
    topic word may be corrected to."""

    language: str
    forms: Mapping[str, int]  # folded word of the records → records using it
    stems: frozenset[str]  # the records' stems (a word whose stem some record uses is no typo)
    words: WordList
    stem: Callable[[str], str]  # the vocabulary's stemmer
    _targets: list[str] = field(default_factory=list)
    _meaningful: frozenset[str] = frozenset()  # the word list's words for people, everyday needs, synonyms
    _synonym_keys: frozenset[str] = frozenset()

    @classmethod
    def build(
        cls, forms: Mapping[str, int], stems: Iterable[str], words: WordList, stem: Callable[[str], str]
    ) -> TypoFixer:
        wl = words
        meaningful = set(wl.everyday_people)
        meaningful |= {k[0] for k in wl.everyday_words if len(k) == 1}
        meaningful |= {w for written in wl.synonym_words.values() for w in written if w.isalpha()}
        keys = frozenset(k[0] for k in wl.service_synonyms if len(k) == 1)
        fixer = cls(wl.language, forms, frozenset(stems), wl, stem, _meaningful=frozenset(meaningful))
        fixer._synonym_keys = keys
        # A filler word is a target too: "aftr school" is "after school", whose "after" the parser then drops.
        targets = {w for w in forms if len(w) >= MIN_LETTERS and w.isalpha()}
        fixer._targets = sorted(targets | {w for w in meaningful if w.isalpha()})
        return fixer

    def fix(self, topic: str, keep: Iterable[str] = (), holds: Callable[[str], bool] | None = None) -> list[Fix]:
        """The corrections of `topic`'s words (see the module docstring); `keep`: words never corrected (the
        catalog's place names). `holds(topic)`: whether the catalog holds a topic; among the nearest
        corrections of a word, one that makes the topic held wins ("soop kitchen": "soup", not "stop")."""
        kept = set(keep)
        words = fold_key(topic).split()
        out: list[Fix] = []
        for word in suspects(topic, self.words):
            if not self._candidate(word, kept):
                continue
            choices = self._nearest(word)
            if not choices:
                continue
            meant = choices[0][1]
            if holds is not None and len(choices) > 1:
                nearest = [c for edits, c in choices if edits == choices[0][0]]
                meant = next((c for c in nearest if holds(" ".join(c if w == word else w for w in words))), meant)
            words = [meant if w == word else w for w in words]
            out.append(Fix(word, meant, self.forms.get(meant, 0)))
        return out

    def _candidate(self, word: str, keep: set[str]) -> bool:
        wl = self.words
        if word in keep or word in self._meaningful or wl.lemma(word) in self._synonym_keys:
            return False
        return word not in self.forms and self.stem(word) not in self.stems

    def _nearest(self, word: str) -> list[tuple[int, str]]:
        """The words `word` may misspell, best first: (edits, word) by fewest edits, then by letters put back
        or taken out rather than changed, then by the records using them."""
        n = len(word)
        limit = 2 if n >= LONG else 1
        floor = _zipf(word, self.language) + MIN_GAIN
        found: list[tuple[int, int, int, str]] = []
        for choice, edits, _ in process.extract(
            word, self._targets, scorer=OSA.distance, score_cutoff=limit, limit=None
        ):
            if choice[0] != word[0] and edits > 1:
                continue  # another first letter: one edit at most
            indel = Indel.distance(word, choice)
            if edits == 2 and indel > 3:
                continue  # two edits, both changed letters ("swiming" is not "sailing"): too far
            if n == SHORT and not (len(choice) == n + 1 and indel == 1):
                continue  # three letters: only a letter put back
            if _zipf(choice, self.language) < floor:
                continue
            found.append((int(edits), indel, -self.forms.get(choice, 0), choice))
        return [(edits, choice) for edits, _, _, choice in sorted(found)]


_FIXERS: dict[int, tuple[CatalogVocabulary, TypoFixer]] = {}


def fixer_of(vocabulary: CatalogVocabulary) -> TypoFixer:
    """The fixer of one catalog's vocabulary, built once (about 0.1 s) and shared like the vocabulary is."""
    held = _FIXERS.get(id(vocabulary))
    if held is None or held[0] is not vocabulary:
        _FIXERS.clear()  # one catalog at a time, as the vocabularies are kept
        fixer = TypoFixer.build(vocabulary.forms, vocabulary.postings, vocabulary.words, vocabulary.stem)
        held = _FIXERS[id(vocabulary)] = (vocabulary, fixer)
    return held[1]


def suspects(topic: str, words: WordList) -> list[str]:
    """The words of `topic` that may be misspelt, by the language alone (cheap: no catalog needed): alphabetic,
    three letters or more, no filler word, and rare in the language (`MAX_TYPO_ZIPF`); none in a language
    wordfreq has no list for."""
    if not lexicon_available(words.language):
        return []
    return [
        w
        for w in dict.fromkeys(fold_key(topic).split())
        if len(w) >= MIN_LETTERS and w.isalpha() and w not in words.filler and _zipf(w, words.language) < MAX_TYPO_ZIPF
    ]


def corrected(text: str, fixes: Iterable[Fix]) -> str:
    """`text` with each misspelt word replaced by its correction (whole words, any case)."""
    for f in fixes:
        text = re.sub(rf"(?<![^\W\d_]){re.escape(f.said)}(?![^\W\d_])", f.meant, text, flags=re.I)
    return text


@cache
def lexicon_available(language: str) -> bool:
    return language in wordfreq.available_languages("best")


@cache
def _zipf(word: str, language: str) -> float:
    return float(wordfreq.zipf_frequency(word, language))
