"""Whether the catalog holds anything like what a request asks for, judged without labels or a model.

A request's topic is what the parser left once it had taken the places, days, times, languages, access needs,
conditions and filler words ("piano tuning" of "piano tuning in Lakeside open on Sunday"). The catalog holds it when

1. a service type the parse matched (taxonomy term names, fuzzily and by lemma, or the synonym table) is carried
   by at least one record of the catalog, anywhere (a term of the taxonomy file that no record carries holds
   nothing); or
2. some record states the topic's *specific* words together: all of them within `PASSAGE_SPAN` words of one
   another in one field (the name, the description, one taxonomy term name...), compared by Snowball stem in
   the catalog's language (the stemmer the text index uses), so "tuning" meets "tune" and "shelters" meets
   "shelter"; a stem of five letters or more also meets the stems that begin like it but for its last two
   letters (`family`), so "autistic" meets "autism" and "medicine" meets "medication". One word that no record
   uses at all may be left out when two or more specific words remain together: "cheap glasses for my eyes" is
   held by "eye glasses"; "yacht charter" is not held by "charter".
3. some record's *name* states every specific word, however far apart: a name names one service, so its words
   are about that service together, and a long name asked for whole ("Department of Public Health Community
   Behavioral Health Services Team II - Adult Outpatient Services", 13 words) cannot fit within `PASSAGE_SPAN`,
   more so once the parser has taken a city out of its middle. A description or a taxonomy list names several
   things, so there the span holds.

Specific words are the topic's words that fewer than `COMMON_SHARE` of the records use: a word that a large part
of the catalog uses ("services", "program", "help") says nothing about which service is wanted, and is neither
required nor enough. A topic with no specific word ("services in Lakeside") is held: the catalog holds services.
Why together rather than anywhere in the record: a long description that mentions "dog" in one sentence and
carries the term "Personal/Grooming Supplies" is not a dog-grooming service. Why not the text search's best
score: BM25 rewards one rare word alone ("piano" of a youth symphony), which is exactly the unrelated hit a
request for piano tuning must not get. Why only one left-out word, and only one the catalog never uses: leaving
out a word the catalog does use changes what is asked ("sports car rental" is not "car rental"). Misspelt words
are corrected against the taxonomy by the parser; words of the records' texts are not corrected here, because a
word the catalog lacks is as often a real word it lacks as a typo ("auction" is one letter from "action").

Everyday wording (issue 22). People tell their situation rather than name a service ("my husband hits me",
"somewhere to sleep tonight"). The word list's `[everyday]` section makes three things of it: the story's words
("got", "using", "talk") are filler; the people a request is about ("mom", "husband", "teenage") stay in the topic,
since some services are named by them ("New Dad Parenting Programs"), but are never required of a record (a topic of
nothing but them and common words, "after school for my little brother", is held like one without specific words);
and an everyday word or phrase stands for the words records use for the same need ("sleep" for "shelter", "shut off"
for "utility" or "disconnection"). When the topic's own words are not found together, the *everyday reading* looks
for its slots together, each slot found by any of its words: an everyday phrase by its record words (a single word
also by itself), a one-word key of the synonym table by itself, every other specific word by itself. One slot that
is not an everyday phrase may be left out when an everyday phrase remains ("immigration papers": immigration); a
topic with neither an everyday phrase nor a person's word is never read this way, so "piano tuning" still needs both
its words together, and the bench's not-in-catalog topics stay refused. When the plain passage holds and the topic
has an everyday phrase, the everyday reading's records are candidates too (the shelters beside the records that say
"sleep"). The reading goes to the trail (`everyday`: what was said, read as which record words), and the text search
looks for those record words with the topic's (`TopicMatch.search_words`).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from tracerag import text as shared_text
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.parse import content_words
from tracerag.catalog.words import WordList

__all__ = ["COMMON_SHARE", "PASSAGE_SPAN", "CatalogVocabulary", "TopicMatch", "WordEvidence"]

PASSAGE_SPAN = 8  # words of one service are named close together ("piano and guitar tuning"): at most 8 apart
COMMON_SHARE = 0.15  # a word that 1 record in 7 uses ("program", "services", "help") is how the catalog says anything
FAMILY_MIN = 5  # stems this long meet those sharing all but their last two letters (never fewer than five)
_FIELD_GAP = PASSAGE_SPAN + 1  # positions skipped between fields, so a passage never spans two of them
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


@dataclass(frozen=True, slots=True)
class WordEvidence:
    """One content word of the topic and what the catalog says about it."""

    word: str  # as in the topic (normalised)
    stem: str  # its stem
    records: int  # records using the stem, or one of its family, in any field
    common: bool  # used by COMMON_SHARE of the records or more: not required
    family: tuple[str, ...] = ()  # the records' stems it meets (itself, "autism" for "autistic"...)

    def to_dict(self) -> dict[str, Any]:
        return {
            "word": self.word,
            "stem": self.stem,
            "records": self.records,
            "common": self.common,
            "family": list(self.family),
        }


@dataclass(frozen=True, slots=True)
class TopicMatch:
    """The decision about one topic, with its evidence (it goes to the trail as `to_dict()`)."""

    topic: str
    held: bool
    via: str  # "service_type", "passage", "everyday", "no_specific_words", "no_topic" (held) or "nothing" (not held)
    words: tuple[WordEvidence, ...] = ()
    service_types: tuple[dict[str, Any], ...] = ()  # {"id", "name", "records"} for each parsed term
    passage: dict[str, Any] | None = None  # the tightest one found: {"record_id", "field", "quote", "stems"}
    unmatched: tuple[str, ...] = ()  # the specific words no passage holds together with the others
    holders: frozenset[str] = frozenset()  # held by passage: every record holding one (the only fitting candidates)
    everyday: tuple[dict[str, Any], ...] = ()  # {"said", "as": record words} for each everyday phrase read

    def to_dict(self) -> dict[str, Any]:
        out = {
            "topic": self.topic,
            "held": self.held,
            "via": self.via,
            "words": [w.to_dict() for w in self.words],
            "service_types": list(self.service_types),
            "passage": self.passage,
            "unmatched": list(self.unmatched),
            "holders": len(self.holders),
        }
        if self.everyday:  # only when an everyday phrase was read: the trails of other requests keep their form
            out["everyday"] = list(self.everyday)
        return out

    @property
    def by_records(self) -> bool:
        """Held only by the records stating it (a passage, or the everyday reading): those are the candidates."""
        return self.held and self.via in ("passage", "everyday")

    @property
    def search_words(self) -> tuple[str, ...]:
        """The records' words an everyday phrase was read as ("shelter" for "sleep"): the text search looks for
        them with the topic's own words."""
        return tuple(dict.fromkeys(w for e in self.everyday for w in e["as"]))

    def explanation(self) -> str:
        """Why nothing matches, in one sentence from the evidence (for the reply)."""
        absent = [w.word for w in self.words if not w.common and w.records == 0]
        apart = [w for w in self.words if not w.common and w.records > 0]
        names = [t["name"] for t in self.service_types if t.get("name")]
        parts = [
            f"no service carries the service type {_quoted(names, 'or')}" if names else "no service type is about it"
        ]
        if absent:
            parts.append(f"{_quoted(absent, 'and')} appear{'s' if len(absent) == 1 else ''} in no service")
        counts = " and ".join(f"'{w.word}' ({w.records} service{'s' if w.records != 1 else ''})" for w in apart)
        if len(apart) > 1:
            parts.append(f"{counts} never appear together")
        elif apart:
            parts.append(f"{counts} never appears with {'it' if len(absent) == 1 else 'them'}")
        text = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + ", and " + parts[-1]
        return text[0].upper() + text[1:] + "."


def _quoted(words: Sequence[str], joiner: str) -> str:
    return f" {joiner} ".join(f"'{w}'" for w in words)


@dataclass
class _Field:
    record_id: str
    name: str  # which field: "name", "description", "taxonomy"...
    text: str
    offsets: list[tuple[int, int]]  # character span of each word in `text`


@dataclass
class CatalogVocabulary:
    """The words of every record, by stem with their positions: built once per catalog (about 1 s for 4k records)."""

    words: WordList
    records: int = 0
    postings: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # stem -> record id -> positions
    forms: dict[str, int] = field(default_factory=dict)  # each word as written (folded) -> records using it
    _fields: dict[str, list[tuple[int, _Field]]] = field(default_factory=dict)  # record id -> (first position, field)
    _name_words: dict[str, int] = field(default_factory=dict)  # record id -> words of its name (positions 0..n-1)
    _stems: dict[str, str] = field(default_factory=dict)
    _by_prefix: dict[str, list[str]] = field(default_factory=dict)  # first FAMILY_MIN letters -> stems
    _families: dict[str, tuple[tuple[str, ...], dict[str, list[int]]]] = field(default_factory=dict)

    @classmethod
    def build(cls, records: Iterable[ServiceRecord], words: WordList) -> CatalogVocabulary:
        """The vocabulary of `records`, stemmed in the word list's language (a language Snowball lacks: words
        compared as folded, like the index does)."""
        vocab = cls(words=words)
        postings: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        forms: dict[str, int] = defaultdict(int)
        for record in records:
            vocab.records += 1
            position = 0
            fields = []
            written: set[str] = set()
            for name, text in _record_fields(record):
                offsets, norms = _words_with_offsets(text)
                written.update(norms)
                if not norms:
                    continue
                fields.append((position, _Field(record.id, name, text, offsets)))
                if name == "name" and position == 0:
                    vocab._name_words[record.id] = len(norms)
                for k, word in enumerate(norms):
                    postings[vocab.stem(word)][record.id].append(position + k)
                position += len(norms) + _FIELD_GAP
            vocab._fields[record.id] = fields
            for word in written:
                forms[word] += 1
        vocab.postings = {s: dict(by_record) for s, by_record in postings.items()}
        vocab.forms = dict(forms)
        for stem in vocab.postings:
            if len(stem) >= FAMILY_MIN:
                vocab._by_prefix.setdefault(stem[:FAMILY_MIN], []).append(stem)
        return vocab

    def stem(self, word: str) -> str:
        stem = self._stems.get(word)
        if stem is None:
            stem = self._stems[word] = shared_text.stem(word, self.words.language)
        return stem

    def records_using(self, stem: str) -> int:
        return len(self.family(stem)[1])

    def family(self, stem: str) -> tuple[tuple[str, ...], dict[str, list[int]]]:
        """The records' stems a query stem meets, and their positions merged by record. Snowball leaves
        derivations apart ("autist" / "autism", "medicin" / "medic"): a stem of FAMILY_MIN letters or more meets
        the stems that begin with all of it but its last two letters (and at least FAMILY_MIN of it)."""
        if stem not in self._families:
            members: tuple[str, ...]
            if len(stem) < FAMILY_MIN:
                members = (stem,) if stem in self.postings else ()
            else:
                key = stem[: max(FAMILY_MIN, len(stem) - 2)]
                members = tuple(sorted(t for t in self._by_prefix.get(stem[:FAMILY_MIN], ()) if t.startswith(key)))
            merged: dict[str, list[int]] = defaultdict(list)
            for member in members:
                for rid, positions in self.postings[member].items():
                    merged[rid].extend(positions)
            self._families[stem] = (members, dict(merged))
        return self._families[stem]

    # -- the judgement --------------------------------------------------------------------------------

    def judge(self, topic: str, service_types: Sequence[dict[str, Any]] = ()) -> TopicMatch:
        """Whether the catalog holds `topic` (see the module docstring). `service_types` are the terms the parse
        matched, each {"id", "name", "records": records of the whole catalog carrying it or a term under it}."""
        topic = topic.strip()
        if any(t.get("records", 0) > 0 for t in service_types):
            return TopicMatch(topic, True, "service_type", service_types=tuple(service_types))
        words = content_words(topic, self.words)
        if not words:
            return TopicMatch(topic, True, "no_topic", service_types=tuple(service_types))
        evidence = tuple(self._evidence(w) for w in dict.fromkeys(words))
        specific = [w for w in evidence if not w.common]
        if not [w for w in specific if w.word not in self.words.everyday_people]:
            # nothing asked but who it is for ("after school for my little brother"): as a topic of common words
            return TopicMatch(topic, True, "no_specific_words", evidence, tuple(service_types))
        stems = list(dict.fromkeys(w.stem for w in specific))
        groups = [stems]
        unused = [w.stem for w in specific if w.records == 0]
        if len(unused) == 1 and len(stems) >= 3:  # one word no record uses, two or more left to hold together
            groups.append([t for t in stems if t != unused[0]])
        slots = self._slots(words, evidence)
        people = tuple(w for w in words if w in self.words.everyday_people)  # "mom": never required
        everyday = any(s.everyday for s in slots) or bool(people)
        for group in groups:
            found = self._passages(group)
            if found is not None:
                passage, holders = found
                unmatched = tuple(w.word for w in specific if w.stem not in group)
                read: tuple[dict[str, Any], ...] = ()
                if everyday:  # the everyday reading's records fit too ("sleep": also the shelters)
                    reading = self._everyday_reading(slots)
                    if reading is not None:
                        holders = holders | reading[1]
                        read = reading[3]
                return TopicMatch(
                    topic, True, "passage", evidence, tuple(service_types), passage, unmatched, holders, read
                )
        reading = self._everyday_reading(slots) if everyday else None
        if reading is not None:
            passage, holders, unmatched, read = reading
            unmatched = people + unmatched
            return TopicMatch(
                topic, True, "everyday", evidence, tuple(service_types), passage, unmatched, holders, read
            )
        return TopicMatch(
            topic, False, "nothing", evidence, tuple(service_types), None, tuple(w.word for w in specific)
        )

    def _slots(self, words: Sequence[str], evidence: Sequence[WordEvidence]) -> list[_Slot]:
        """The topic's words as the everyday reading takes them: each everyday phrase of the word list (longest
        first, compared by lemma) one slot standing for its record words (and, a single word, for itself); a
        one-word key of the synonym table a slot of its own word, marked everyday; every other specific word a
        slot of its own. Common words make no slot: they say nothing of which service is wanted."""
        wl = self.words
        lemmas = [wl.lemma(w) for w in words]
        common = {e.word for e in evidence if e.common}
        synonym_keys = {k[0] for k in wl.service_synonyms if len(k) == 1}
        slots: list[_Slot] = []
        i = 0
        keys = sorted(wl.everyday_words, key=len, reverse=True)
        while i < len(words):
            key = next((k for k in keys if tuple(lemmas[i : i + len(k)]) == k), None)
            if key is not None:
                said = " ".join(words[i : i + len(key)])
                alternatives = [*wl.everyday_words[key], *([words[i]] if len(key) == 1 else [])]
                stems = tuple(dict.fromkeys(s for s in map(self.stem, alternatives) if self.records_using(s)))
                slots.append(_Slot(said, stems, True, tuple(wl.everyday_words[key])))
                i += len(key)
                continue
            if words[i] not in common and words[i] not in wl.everyday_people:
                slots.append(_Slot(words[i], (self.stem(words[i]),), lemmas[i] in synonym_keys))
            i += 1
        return slots

    def _everyday_reading(
        self, slots: Sequence[_Slot]
    ) -> tuple[dict[str, Any], frozenset[str], tuple[str, ...], tuple[dict[str, Any], ...]] | None:
        """Where records state the slots together, each slot by any of its words: (passage, holders, the words
        left out, the everyday phrases read). Words of who the request is about ("mom") make no slot. One slot
        that is not an everyday phrase may be left out when an everyday phrase remains to say what is wanted
        ("immigration papers": immigration); a topic with neither is never read this way, so "piano tuning"
        still needs both its words together."""
        groups = [list(slots)]
        others = sorted((s for s in slots if not s.everyday), key=lambda s: self._slot_records(s))
        if len(slots) >= 2:
            groups += [[s for s in slots if s is not left] for left in others]
        for k, group in enumerate(groups):
            if not group or not all(s.stems for s in group) or (k and not any(s.everyday for s in group)):
                continue
            postings = [self._slot_postings(s) for s in group]
            found = self._passages_of(postings, ["|".join(s.stems) for s in group])
            if found is not None:
                left = tuple(s.said for s in slots if s not in group)
                read = tuple({"said": s.said, "as": list(s.record_words)} for s in group if s.record_words)
                return found[0], found[1], left, read
        return None

    def _slot_postings(self, slot: _Slot) -> dict[str, list[int]]:
        merged: dict[str, list[int]] = defaultdict(list)
        for s in slot.stems:
            for rid, positions in self.family(s)[1].items():
                merged[rid].extend(positions)
        return merged

    def _slot_records(self, slot: _Slot) -> int:
        return len(self._slot_postings(slot))

    def _evidence(self, word: str) -> WordEvidence:
        stem = self.stem(word)
        members, by_record = self.family(stem)
        records = len(by_record)
        common = self.records > 0 and records >= max(2, math.ceil(COMMON_SHARE * self.records))
        return WordEvidence(word, stem, records, common, members)

    def _passages(self, stems: Sequence[str]) -> tuple[dict[str, Any], frozenset[str]] | None:
        """Where records state all `stems` within PASSAGE_SPAN words, or anywhere in the record's name: (the
        tightest passage, every record holding one), or None."""
        return self._passages_of([self.family(s)[1] for s in stems], list(stems))

    def _passages_of(
        self, postings: Sequence[dict[str, list[int]]], stems: list[str]
    ) -> tuple[dict[str, Any], frozenset[str]] | None:
        """`_passages` for one posting list per thing to find together (a stem, or a slot's several stems)."""
        if not all(postings):
            return None
        holders: set[str] = set()
        best: tuple[int, str, int, int] | None = None  # (span, record id, first, last position)
        for rid in sorted(set.intersection(*(set(p) for p in postings))):
            positions = sorted((pos, k) for k, p in enumerate(postings) for pos in p[rid])
            window = _tightest(positions, len(stems))
            if window is None or window[1] - window[0] > PASSAGE_SPAN:
                in_name = [(pos, k) for pos, k in positions if pos < self._name_words.get(rid, 0)]
                window = _tightest(in_name, len(stems))  # the whole name holds them (rule 3)
            if window is not None:
                holders.add(rid)
                span = window[1] - window[0]
                if best is None or span < best[0]:
                    best = (span, rid, *window)
        if best is None:
            return None
        span, rid, first, last = best
        start, fld = max((f for f in self._fields[rid] if f[0] <= first), key=lambda f: f[0])
        a, b = fld.offsets[first - start][0], fld.offsets[last - start][1]
        passage = {"record_id": rid, "field": fld.name, "quote": fld.text[a:b], "stems": stems}
        return passage, frozenset(holders)


@dataclass(frozen=True, slots=True)
class _Slot:
    """One thing the topic asks for, found by any of its stems (an everyday phrase: its record words)."""

    said: str  # the word or phrase as in the topic
    stems: tuple[str, ...]  # any one of them stands for it (only stems some record uses)
    everyday: bool  # an everyday phrase of the word list, or a one-word key of its synonym table
    record_words: tuple[str, ...] = ()  # what the word list reads an everyday phrase as


def _tightest(positions: Sequence[tuple[int, int]], n: int) -> tuple[int, int] | None:
    """The shortest run of (position, which stem) holding all `n` stems: (first, last position)."""
    count: dict[int, int] = defaultdict(int)
    have = 0
    best: tuple[int, int] | None = None
    left = 0
    for pos, k in positions:
        count[k] += 1
        if count[k] == 1:
            have += 1
        while have == n:
            first = positions[left][0]
            if best is None or pos - first < best[1] - best[0]:
                best = (first, pos)
            lk = positions[left][1]
            count[lk] -= 1
            if count[lk] == 0:
                have -= 1
            left += 1
    return best


def _record_fields(record: ServiceRecord) -> list[tuple[str, str]]:
    """The fields a request's topic may be found in: what the record says it is and does, and its service types."""
    fields = [
        ("name", record.name),
        ("organization", record.organization),
        ("description", record.description),
        ("eligibility", record.eligibility),
        ("application_process", record.application_process),
        ("fees", record.fees),
    ]
    fields += [("taxonomy", name) for _, name in record.taxonomy]
    return [(n, t) for n, t in fields if t and t.strip()]


def _words_with_offsets(text: str) -> tuple[list[tuple[int, int]], list[str]]:
    """Each alphabetic word of `text` (normalised as the parser does) with its character span."""
    offsets: list[tuple[int, int]] = []
    norms: list[str] = []
    for m in _WORD.finditer(text):
        for part in _alpha_parts(m.group()):
            offsets.append((m.start(), m.end()))
            norms.append(part)
    return offsets, norms


@lru_cache(maxsize=1 << 16)
def _alpha_parts(token: str) -> tuple[str, ...]:
    """The normalised alphabetic words of one token (cached: a catalog repeats its words, and this is the cost of
    building the vocabulary)."""
    return tuple(part for part in shared_text.fold_key(token).split() if part.isalpha())
