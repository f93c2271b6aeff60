"""The entity channel: chunks that mention a named entity of the query, found at ingest (ingest/entities.py).

The query's entities are its spans that are entities of the collection. Candidate spans: what the spaCy
pipelines find in the query (when installed), its quoted parts, runs of capitalised words, and, in a short query
(a keyword query, `SHORT_QUERY_WORDS`), every run of its words; a date the query states is left out (it is the
date channel's). A model alone misses most entities of a one- or two-word query (there is no sentence around
them), and a candidate that is no entity of the collection matches nothing, so generous candidates cost little.

Each candidate is matched against the collection's entity forms (folded: case, accents and punctuation apart):
exactly (1); for a folded candidate of at least `entity_fuzzy_min_chars` characters, also as a run of whole words
of a longer form ("France" in "la France": `CONTAINED`) and by similarity (rapidfuzz `ratio` at least
`entity_fuzzy`, counting 0.5 at the cutoff to 1), which finds an OCR-misspelled name ("Lausaune" for "Lausanne")
either way round. The longest matching candidates are kept, never overlapping. A chunk scores, for each query entity it
mentions, the similarity of its best matching form times the entity's IDF over the chunks looked at (a rare
name counts more than a common one), summed over the query's entities.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz, process

from tracerag.ingest.entities import Pipelines, spacy_missing
from tracerag.model import Filter, Hit
from tracerag.retrieval.channels import SHORT_QUERY_WORDS, Ranks, quotes_of, read_date
from tracerag.retrieval.registry import ChannelKind, Need, Prepared, QueryContext, Reading, register
from tracerag.store import DocumentStore
from tracerag.text import fold_key

# What a longer form holding the candidate counts (an exact match counts 1, a fuzzy one 0.5 to 1): the same name
# in most cases ("la France"), another entity named after it in some ("Conseil fédéral" for "Conseil").
CONTAINED = 0.8
_FUZZY_LIMIT = 20  # similar forms kept per candidate: OCR variants of one name are a handful, not hundreds


@dataclass(frozen=True)
class Lexicon:
    """The collection's folded entity forms, how many chunks hold each, and how many chunks were looked at."""

    chunks: dict[str, int]
    looked_at: int
    forms: tuple[str, ...]
    by_word: dict[str, tuple[str, ...]]  # folded word -> the multi-word forms holding it

    def containing(self, folded: str) -> list[str]:
        """The longer forms that hold `folded` as a run of whole words ("france" in "la france")."""
        words = folded.split()
        if not words or words[0] not in self.by_word:
            return []
        padded = f" {folded} "
        return [f for f in self.by_word[words[0]] if f != folded and padded in f" {f} "]

    @classmethod
    def of(cls, store: DocumentStore) -> Lexicon:
        key = (str(store.path), store.entity_version())
        if key not in _LEXICONS:
            forms = store.entity_forms()
            by_word: dict[str, list[str]] = {}
            for f in forms:
                words = f.folded.split()
                if len(words) > 1:
                    for w in dict.fromkeys(words):
                        by_word.setdefault(w, []).append(f.folded)
            if len(_LEXICONS) >= 4:  # a process searches a few collections at most (tests, an eval's benchmarks)
                _LEXICONS.pop(next(iter(_LEXICONS)))
            _LEXICONS[key] = cls(
                {f.folded: f.chunks for f in forms},
                store.count_chunks_for_entities()[0],
                tuple(f.folded for f in forms),
                {w: tuple(fs) for w, fs in by_word.items()},
            )
        return _LEXICONS[key]


_LEXICONS: dict[tuple[str, tuple[int, int]], Lexicon] = {}


@dataclass(frozen=True)
class QueryEntity:
    """A span of the query that is an entity of the collection: the forms it matches and how closely (0-1)."""

    text: str
    start: int
    end: int
    found_by: str  # "pipeline", "quoted", "capitalised" or "words"
    matches: dict[str, float]

    def describe(self) -> str:
        exact = [f for f, s in self.matches.items() if s == 1.0]
        fuzzy = sorted(((s, f) for f, s in self.matches.items() if s < 1.0), reverse=True)
        parts = [f"{f!r}" for f in exact[:1]] + [
            (f"in {f!r}" if s == CONTAINED else f"~{f!r} {s:.2f}") for s, f in fuzzy[:3]
        ]
        more = len(self.matches) - len(parts)
        return f"{self.text!r} ({self.found_by}): " + ", ".join(parts) + (f" +{more}" if more > 0 else "")


@dataclass(frozen=True)
class _Candidate:
    start: int
    end: int
    found_by: str


def candidates(query: str, pipelines: Pipelines | None) -> list[_Candidate]:
    """The spans of the query that may name an entity (see the module docstring), without a stated date."""
    stated, _ = read_date(query)
    cut = (stated.start, stated.end) if stated is not None else (len(query), len(query))
    words = [(s, e) for s, e in _words(query) if e <= cut[0] or s >= cut[1]]
    short = len(words) <= SHORT_QUERY_WORDS
    # a short query's every run of words is a candidate already: the pipelines read the longer ones
    out = [] if short else _pipeline_candidates(query, pipelines)
    quotes, _ = quotes_of(query)
    out.extend(_Candidate(q.start + 1, q.end - 1, "quoted") for q in quotes if q.end - q.start > 2)
    for run in [words] if short else _capitalised_runs(query, words):
        out.extend(_run_candidates(query, run, short))
    return out


def _pipeline_candidates(query: str, pipelines: Pipelines | None) -> list[_Candidate]:
    """The entities the spaCy pipelines find in the query, in each language they can read (none without spaCy)."""
    if pipelines is None or spacy_missing() is not None:
        return []
    return [
        _Candidate(start, end, "pipeline")
        for lang in sorted(pipelines.names)
        if pipelines.why_not(lang) is None
        for start, end, _ in pipelines.find(lang, [query])[0]
    ]


def _capitalised_runs(query: str, words: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The runs of capitalised words of a longer query, each a source of candidates; a short lower-case word
    between two capitalised ones joins them ("Journal de Genève", "Rio de Janeiro")."""
    runs: list[list[tuple[int, int]]] = [[]]
    for i, (s, e) in enumerate(words):
        joins = runs[-1] and e - s <= 3 and i + 1 < len(words) and query[words[i + 1][0]].isupper()
        if query[s].isupper() or joins:
            runs[-1].append((s, e))
        elif runs[-1]:
            runs.append([])
    # a longer query's first word is capitalised as the sentence's start: alone, it names nothing
    return [r for r in runs if r and not (len(r) == 1 and r[0] == words[0])] if words else []


def _run_candidates(query: str, run: list[tuple[int, int]], short: bool) -> list[_Candidate]:
    """Every span of whole words of `run`: in a short query all of them ("words", "capitalised" when each word
    is), in a longer one those that start and end on a capitalised word."""
    out = []
    for i in range(len(run)):
        for j in range(i, len(run)):
            piece = query[run[i][0] : run[j][1]]
            if i == j and piece.islower() and len(piece) < 4:
                continue  # a lone short lower-case word ("de", "la") names nothing
            if not short and not (query[run[i][0]].isupper() and query[run[j][0]].isupper()):
                continue  # a joining word ("de") starts or ends no name
            kind = "words" if short and not all(query[s].isupper() for s, _ in run[i : j + 1]) else "capitalised"
            out.append(_Candidate(run[i][0], run[j][1], kind))
    return out


def _words(query: str) -> list[tuple[int, int]]:
    """Word spans: runs of non-space characters with their edge punctuation trimmed."""
    out, i = [], 0
    for piece in query.split():
        start = query.index(piece, i)
        i = start + len(piece)
        s, e = start, i
        while s < e and not query[s].isalnum():
            s += 1
        while e > s and not query[e - 1].isalnum():
            e -= 1
        if s < e:
            out.append((s, e))
    return out


def read_entities(
    query: str, lexicon: Lexicon, pipelines: Pipelines | None, fuzzy: float, fuzzy_min_chars: int
) -> list[QueryEntity]:
    """The query's entities: candidates that match a form of the lexicon, longest first, never overlapping."""
    matched: list[QueryEntity] = []
    seen: set[tuple[int, int]] = set()
    for c in candidates(query, pipelines):
        if (c.start, c.end) in seen:
            continue
        seen.add((c.start, c.end))
        folded = fold_key(query[c.start : c.end])
        if not folded:
            continue
        matches: dict[str, float] = {}
        if folded in lexicon.chunks:
            matches[folded] = 1.0
        if len(folded) >= fuzzy_min_chars:
            # a longer name holding the candidate ("la France" for "France", "général de Gaulle" for "de Gaulle")
            for form in lexicon.containing(folded):
                matches.setdefault(form, CONTAINED)
        if len(folded) >= fuzzy_min_chars and fuzzy < 100:
            for form, score, _ in process.extract(
                folded, lexicon.forms, scorer=fuzz.ratio, score_cutoff=fuzzy, limit=_FUZZY_LIMIT
            ):
                # a fuzzy match counts from 0.5 (at the cutoff) to 1 (identical): an exact match of the same name
                # always ranks ahead, and "conseil general" (87 to "conseil federal") counts half as much
                matches.setdefault(form, 0.5 + 0.5 * (score - fuzzy) / (100.0 - fuzzy))
        if matches:
            matched.append(QueryEntity(query[c.start : c.end], c.start, c.end, c.found_by, matches))
    matched.sort(key=lambda q: (-len(q.text.split()), -max(q.matches.values()), q.start))
    kept: list[QueryEntity] = []
    for q in matched:
        if all(q.end <= k.start or q.start >= k.end for k in kept):
            kept.append(q)
    return sorted(kept, key=lambda q: q.start)


def name_share(query: str, found: Sequence[QueryEntity]) -> float:
    """The share of the query's words (a stated date aside) inside its entities: 1 for "Lausanne" or "Conseil
    fédéral 1890", about 0.1 for a question that names one place in ten words; 1 when it names none."""
    if not found:
        return 1.0
    stated, _ = read_date(query)
    words = [(s, e) for s, e in _words(query) if stated is None or e <= stated.start or s >= stated.end]
    named = sum(1 for s, e in words if any(q.start <= s and e <= q.end for q in found))
    return named / len(words) if words else 1.0


@dataclass(frozen=True)
class EntityChannel:
    """Chunks mentioning the query's entities, ranked by how rare and how closely matched they are."""

    store: DocumentStore
    pipelines: Pipelines | None = None
    fuzzy: float = 85.0
    fuzzy_min_chars: int = 5
    name: str = "entity"

    @classmethod
    def of(cls, ctx: QueryContext) -> EntityChannel:
        """The channel over the collection's stored entities, the query read by the ingest's pipelines."""
        settings = ctx.settings
        pipelines = Pipelines(ctx.collection.settings.ingest.entity_pipelines)
        return cls(ctx.collection.store, pipelines, settings.entity_fuzzy, settings.entity_fuzzy_min_chars)

    def reading(self, query: str) -> tuple[list[QueryEntity], Reading]:
        """The query's entities, or why the channel takes none (for `--explain` and the trail)."""
        why_silent = self.why_silent()
        if why_silent is not None:
            return [], Reading(False, why_silent)
        lexicon = Lexicon.of(self.store)
        if not any(c.isalnum() for c in query):
            return [], Reading(False, "no words in the query")
        found = read_entities(query, lexicon, self.pipelines, self.fuzzy, self.fuzzy_min_chars)
        if not found:
            return [], Reading(False, f"no entity of the collection's {len(lexicon.forms):,} in the query")
        note = "" if spacy_missing() is None else " (spaCy not installed: candidates from the query's words only)"
        return found, Reading(True, "; ".join(q.describe() for q in found) + note)

    def why_silent(self) -> str | None:
        """Why the collection gives this channel nothing to search, or None."""
        looked_at, chunks = self.store.count_chunks_for_entities() if self.store.has_entity_tables() else (0, 0)
        if looked_at:
            return None
        missing = spacy_missing()
        if missing is not None:
            return f"no entities in the collection yet: {missing}, then run `tracerag entities`"
        return f"no entities in the collection yet ({chunks:,} chunks not looked at): run `tracerag entities`"

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
        found, _ = self.reading(query)
        return self.rank(found, k, flt)

    def for_query(self, query: str) -> tuple[QueryEntities, Reading]:
        """The channel with the query read once (a search runs it per corpus and per deepening), and the reading."""
        found, why = self.reading(query)
        return QueryEntities(self, tuple(found)), why

    def rank(self, found: Sequence[QueryEntity], k: int, flt: Filter | None) -> list[Hit]:
        """The chunks holding the query's entities, best first (ties by chunk id), at most k."""
        if not found:
            return []
        lexicon = Lexicon.of(self.store)
        total = max(lexicon.looked_at, 1)
        rows = self.store.entity_chunks(sorted({f for q in found for f in q.matches}), flt)
        by_chunk: dict[str, tuple[str, dict[str, int]]] = {}
        for chunk_id, doc_id, form, n in rows:
            by_chunk.setdefault(chunk_id, (doc_id, {}))[1][form] = n
        weights = []
        for q in found:  # IDF over the chunks any of its forms stand in: a common name counts less
            holding = sum(lexicon.chunks.get(f, 0) for f in q.matches)
            weights.append(math.log(1.0 + total / max(holding, 1)))
        scored = []
        for chunk_id, (doc_id, forms) in by_chunk.items():
            score = 0.0
            for q, w in zip(found, weights, strict=True):
                best = max((s for f, s in q.matches.items() if f in forms), default=0.0)
                score += w * best
            if score > 0:
                scored.append((-score, chunk_id, doc_id))
        scored.sort()
        return [Hit(c, d, self.name, i + 1, -s) for i, (s, c, d) in enumerate(scored[:k])]


@dataclass(frozen=True)
class QueryEntities:
    """The entity channel for one query whose entities are read: what a search runs."""

    channel: EntityChannel
    found: tuple[QueryEntity, ...]
    name: str = "entity"

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
        return self.channel.rank(self.found, k, flt)


def _prepare(ctx: QueryContext) -> Prepared:
    """The query's entities read once (not per corpus or deepening); the channel keeps the share of the query's
    words that name them of its fusion weight (`name_share`)."""
    channel, why = EntityChannel.of(ctx).for_query(ctx.query)
    return Prepared(Ranks(channel), why, name_share(ctx.query, channel.found))


register(ChannelKind("entity", frozenset({Need.ENTITIES}), _prepare))
