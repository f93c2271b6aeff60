"""Channels: each ranks chunks for a query its own way. They return `Hit`s in rank order and never fuse
across channels. A lexical channel searches one text index per language: `run_fields` gives each field's own
ranking, `run` the channel's ranking after `fusion.merge_fields`. Every channel passes
tests/retrieval/test_channel_contract.py: ranks 1..n, at most k, the filter kept, the same answer twice, and
nothing (not noise) when it has nothing to say.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Protocol

import numpy as np

from tracerag.dates import QueryDate, find_query_date
from tracerag.engine import EngineHit, FieldHits, SearchEngine
from tracerag.model import DateRange, Filter, Hit
from tracerag.retrieval.fields import StatsSource
from tracerag.retrieval.fusion import FIELD_MERGE, Normalisation, merge_fields
from tracerag.retrieval.registry import ChannelKind, ChannelRanking, Need, Prepared, QueryContext, Reading, register
from tracerag.store import DocumentStore

_QUOTED = re.compile(r"[\"“«„]\s*([^\"”»“]+?)\s*[\"”»“]")

# Whether a query states a date or marks a phrase is read from its shape, not from any language's words.
# A short query is a keyword query: on the benchmarks, 99.5% of typed entity queries (with or without a year)
# hold at most 6 words (median 1-2, at most 11), and every known-item span pasted from a text holds 8-15. A short
# query names its date wherever it puts it; a longer one states it at an edge ("… strike in 1911?", "1911: …").
SHORT_QUERY_WORDS = 6
# Which closing quotes end a quote opened by each mark (German „…“, French «…», Danish »…«, Swedish ”…”).
_CLOSERS = {'"': '"', "“": "”“", "„": "“”", "«": "»", "»": "«»", "”": "”"}
_SENTENCE_PUNCT = ".,;:!?…"
_EDGE_PUNCT = " \t\n.,;:!?…()[]{}'\"“”„«»—–-"


@dataclass(frozen=True)
class Quote:
    """One quoted part of a query: the text between the marks and where it stands (`start`, `end` include them)."""

    text: str
    start: int
    end: int


def quotes_of(query: str) -> tuple[list[Quote], bool]:
    """The query's quoted parts, and whether its quote marks pair up. Marks that do not (a quote opened inside
    another, one left open) are what a span cut from a text with dialogue looks like."""
    quotes: list[Quote] = []
    opened: tuple[str, int] | None = None
    balanced = True
    for i, ch in enumerate(query):
        if opened is not None and ch in _CLOSERS[opened[0]]:
            quotes.append(Quote(query[opened[1] + 1 : i].strip(), opened[1], i + 1))
            opened = None
        elif ch in _CLOSERS:
            if opened is not None:
                balanced = False  # a quote inside a quote: speech cut from a text
            opened = (ch, i)  # ” and » open too: Swedish ”…”, Danish »…«
    return quotes, balanced and opened is None


def _words_outside(query: str, quotes: Sequence[Quote]) -> list[str]:
    kept, at = [], 0
    for q in quotes:
        kept.append(query[at : q.start])
        at = q.end
    kept.append(query[at:])
    return [w for w in " ".join(kept).split() if any(c.isalnum() for c in w)]


def _hits(channel: str, found: Sequence[EngineHit]) -> list[Hit]:
    return [Hit(h.chunk_id, h.doc_id, channel, i + 1, h.score) for i, h in enumerate(found)]


def _field_hits(channel: str, found: FieldHits) -> dict[str, list[Hit]]:
    return {field: _hits(channel, hits) for field, hits in sorted(found.items()) if hits}


@dataclass(frozen=True)
class Bm25Channel:
    """BM25 over the per-language stemmed, accent-folded text indexes."""

    engine: SearchEngine
    name: str = "bm25"

    def run_fields(self, query: str, k: int, flt: Filter | None) -> dict[str, list[Hit]]:
        """Each language field's own ranking (ranks 1..n within the field, raw BM25 scores of that index)."""
        text = _QUOTED.sub(r"\1", query)
        if not text.strip():
            return {}
        return _field_hits(self.name, self.engine.bm25(text, k, flt))

    def field_stats(self, query: str) -> StatsSource:
        """The query's term statistics per field, for `merge_fields` to ask if it needs them."""
        return lambda: self.engine.field_stats(query)

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
        return merge_fields(self.run_fields(query, k, flt), k, FIELD_MERGE, self.field_stats(query))


@dataclass(frozen=True)
class DenseChannel:
    """Cosine similarity between the query embedding and chunk embeddings (HNSW). The query is embedded once,
    by the caller, because a search may query several corpora or deepen its pool."""

    engine: SearchEngine
    query_vector: np.ndarray
    name: str = "dense"

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
        # A query without a letter or digit says nothing, and a vector of zero length (or NaN) points nowhere:
        # their "nearest" chunks would be arbitrary (with a zero vector, every chunk at cosine 0).
        norm = float(np.linalg.norm(self.query_vector))
        if not any(c.isalnum() for c in query) or not math.isfinite(norm) or norm == 0.0:
            return []
        return _hits(self.name, self.engine.dense(self.query_vector, k, flt))


def read_phrases(query: str) -> tuple[list[str], Reading]:
    """The phrases the user marks: quoted words of a short query (or a query that is all quotes), and, without
    quotes, a whole query of 2 to 6 words. Quotes inside a pasted passage mark the text's own speech
    (`verdict of "Guilty."`), not a phrase to match: their marks do not pair up, the quoted words carry their own
    sentence punctuation, or more than a short query's words stand outside them. A date the query states is the
    date channel's constraint, not words to match: "Kesälaks socken 1886" asks for the phrase "Kesälaks socken"."""
    stated, _ = read_date(query)
    if stated is not None:
        query = " ".join(f"{query[: stated.start]} {query[stated.end :]}".split())
    quotes, balanced = quotes_of(query)
    quotes = [q for q in quotes if any(c.isalnum() for c in q.text)]
    if not quotes:  # a stray mark in a short query is noise (OCR'd names hold them): the query is its phrase
        words = query.split()
        if 2 <= len(words) <= SHORT_QUERY_WORDS:  # a short query's own words: an entity name, a title
            aside = f", {stated.said!r} aside" if stated else ""
            return [query.strip()], Reading(True, f"the whole query as a phrase ({len(words)} words, no quotes{aside})")
        return [], Reading(
            False, f"no phrase marked: no quotes, and a whole query of {len(words)} word(s) is none (2 to 6 make one)"
        )
    outside = _words_outside(query, quotes)
    if not balanced:
        return [], Reading(False, "no phrase marked: the quote marks do not pair up (speech cut from a text)")
    if outside:
        spoken = [q.text for q in quotes if any(c in _SENTENCE_PUNCT for c in q.text)]
        if spoken:
            return [], Reading(
                False, f"no phrase marked: the quoted {spoken[0]!r} carries its own punctuation (speech in a passage)"
            )
        if len(outside) > SHORT_QUERY_WORDS:
            return [], Reading(
                False, f"no phrase marked: {len(outside)} words outside the quotes (quotes inside a passage)"
            )
    phrases = [q.text for q in quotes]
    return phrases, Reading(True, "quoted: " + "; ".join(repr(p) for p in phrases))


def phrases_of(query: str) -> list[str]:
    """The phrases a query asks for (see `read_phrases`)."""
    return read_phrases(query)[0]


def read_date(query: str) -> tuple[QueryDate | None, Reading]:
    """The date the query states as a constraint, or None and why. A short query names its date anywhere
    ("grève 1890", "strike 1911 docks"); a longer one states it at an edge, a question or keywords ending on it
    ("dock strike in Liverpool, what happened in 1911?") or opening with it; a year in the middle of a longer
    query, or inside quotes, belongs to a passage ("…the cheque was stolen in 1889. The prisoner…")."""
    found = find_query_date(query)
    if found is None:
        return None, Reading(False, "no date in the query")
    quotes, _ = quotes_of(query)
    if any(q.start < found.start and found.end <= q.end for q in quotes):
        return None, Reading(False, f"no date stated as a constraint: {found.said!r} is inside quotes")
    words = [w for w in query.split() if any(c.isalnum() for c in w)]
    stated = f"{found.said!r} ({found.range.start} … {found.range.end})"
    if len(words) <= SHORT_QUERY_WORDS:
        return found, Reading(True, f"{stated}, named by a short query")
    before, after = query[: found.start], query[found.end :]
    if not after.strip(_EDGE_PUNCT):
        return found, Reading(True, f"{stated}, stated at the end of the query")
    # opening the query, unless a comma or full stop carries the sentence on ("juillet 1937, elle a introduit…")
    if not before.strip(_EDGE_PUNCT) and after.lstrip()[:1] not in set(",.;"):
        return found, Reading(True, f"{stated}, stated at the start of the query")
    return None, Reading(
        False,
        f"no date stated as a constraint: {found.said!r} is inside a passage "
        f"({len(words)} words; a longer query states its date where it opens or ends)",
    )


@dataclass(frozen=True)
class PhraseChannel:
    """Chunks that contain a phrase of the query word for word (after folding), ranked by BM25 among them."""

    engine: SearchEngine
    name: str = "phrase"

    def run_fields(self, query: str, k: int, flt: Filter | None) -> dict[str, list[Hit]]:
        """Each language field's own ranking; a chunk matching several phrases counts at its best score."""
        found: dict[str, dict[str, EngineHit]] = {}
        for phrase in phrases_of(query):
            for field, hits in self.engine.phrase(phrase, k, flt).items():
                best = found.setdefault(field, {})
                for h in hits:
                    if h.chunk_id not in best or h.score > best[h.chunk_id].score:
                        best[h.chunk_id] = h
        return _field_hits(
            self.name, {f: sorted(b.values(), key=lambda h: (-h.score, h.chunk_id))[:k] for f, b in found.items()}
        )

    def field_stats(self, query: str) -> StatsSource:
        """The term statistics of the phrases searched (not of the words around them), for `merge_fields`."""
        return lambda: self.engine.field_stats(" ".join(phrases_of(query)))

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]:
        return merge_fields(self.run_fields(query, k, flt), k, FIELD_MERGE, self.field_stats(query))


def date_score(span: tuple[str, str], target: DateRange, half_life_days: float) -> float:
    """1 inside the target range, else exponential decay with the distance in days to the nearest edge."""
    start, end = date.fromisoformat(span[0]), date.fromisoformat(span[1])
    t0, t1 = date.fromisoformat(target.start), date.fromisoformat(target.end)
    if start <= t1 and t0 <= end:
        return 1.0
    gap = (t0 - end).days if end < t0 else (start - t1).days
    return math.exp(-math.log(2) * gap / half_life_days)


@dataclass(frozen=True)
class DateChannel:
    """Ranks the documents other channels found by closeness to the date written in the query.

    Built only when the query carries a date (`for_query`): a date channel without a date would only add noise
    to the fusion. It ranks the candidate pool rather than the whole collection, because "any document of
    1890" is not evidence for a question about a strike in 1890.
    """

    target: DateRange
    half_life_days: float
    name: str = "date"

    @classmethod
    def for_query(cls, query: str, half_life_days: float) -> DateChannel | None:
        return cls.reading(query, half_life_days)[0]

    @classmethod
    def reading(cls, query: str, half_life_days: float) -> tuple[DateChannel | None, Reading]:
        """The channel for the date the query states (see `read_date`), or None, with why."""
        found, why = read_date(query)
        return (cls(found.range, half_life_days) if found else None), why

    def rank(self, pool: Sequence[Hit], doc_dates: Mapping[str, tuple[str, str]], k: int) -> list[Hit]:
        best_chunk: dict[str, Hit] = {}
        for h in sorted(pool, key=lambda h: (h.rank, h.channel)):
            best_chunk.setdefault(h.doc_id, h)
        scored = [
            (date_score(doc_dates[d], self.target, self.half_life_days), best_chunk[d].rank, d)
            for d in best_chunk
            if d in doc_dates
        ]
        scored.sort(key=lambda t: (-t[0], t[1], t[2]))
        return [Hit(best_chunk[d].chunk_id, d, self.name, i + 1, s) for i, (s, _, d) in enumerate(scored[:k])]


# -- the built-in channels, as a search runs them (tracerag.retrieval.registry) -----------------------------------


@dataclass(frozen=True)
class Lexical:
    """A lexical channel in a search: each text field's ranking kept, merged as `retrieval.field_merge` says
    with the query's term statistics (BM25's asked once per search, since the fusion per query reads them too)."""

    channel: Bm25Channel | PhraseChannel
    merge: str
    stats: StatsSource

    @property
    def name(self) -> str:
        return self.channel.name

    def search(self, query: str, flt: Filter, k: int, earlier: Mapping[str, Sequence[Hit]]) -> ChannelRanking:
        found = self.channel.run_fields(query, k, flt)
        return ChannelRanking(merge_fields(found, k, self.merge, self.stats), found)


@dataclass(frozen=True)
class Ranks:
    """A channel whose `run(query, k, flt)` is its whole search (dense, entity)."""

    channel: RunsQuery

    @property
    def name(self) -> str:
        return self.channel.name

    def search(self, query: str, flt: Filter, k: int, earlier: Mapping[str, Sequence[Hit]]) -> ChannelRanking:
        return ChannelRanking(self.channel.run(query, k, flt))


class RunsQuery(Protocol):
    @property
    def name(self) -> str: ...

    def run(self, query: str, k: int, flt: Filter | None) -> list[Hit]: ...


@dataclass(frozen=True)
class DatedPool:
    """The date channel in a search: it ranks the documents the channels before it found on the same filter."""

    channel: DateChannel
    store: DocumentStore

    @property
    def name(self) -> str:
        return self.channel.name

    def search(self, query: str, flt: Filter, k: int, earlier: Mapping[str, Sequence[Hit]]) -> ChannelRanking:
        pool = [h for hs in earlier.values() for h in hs]
        dates = self.store.date_spans(sorted({h.doc_id for h in pool}))
        return ChannelRanking(self.channel.rank(pool, dates, k))


def _bm25(ctx: QueryContext) -> Prepared:
    return Prepared(Lexical(Bm25Channel(ctx.collection.engine), ctx.settings.field_merge, ctx.bm25_stats))


def _dense(ctx: QueryContext) -> Prepared:
    col = ctx.collection
    if not ctx.has_vectors():  # asked for, yet silent: say why
        if not col.dim:
            return Prepared(None, Reading(False, "no embedding model: the collection was built with 'none'"))
        missing = col.store.count_chunks(without_vectors=True)
        why = f"{missing:,} chunks have no vector yet: run `tracerag embed` (a part would rank first)"
        return Prepared(None, Reading(False, why))
    if col.embedder is None:
        return Prepared(None)
    return Prepared(Ranks(DenseChannel(col.engine, col.embedder.encode_queries([ctx.query])[0])))


def _phrase(ctx: QueryContext) -> Prepared:
    channel = PhraseChannel(ctx.collection.engine)
    merged = Lexical(channel, ctx.settings.field_merge, channel.field_stats(ctx.query))
    return Prepared(merged, read_phrases(ctx.query)[1])


def _date(ctx: QueryContext) -> Prepared:
    dated, why = DateChannel.reading(ctx.query, ctx.settings.date_scale_days)
    if dated is None:
        return Prepared(None, why)
    return Prepared(DatedPool(dated, ctx.collection.store), why, stated=dated.target)


register(ChannelKind("bm25", frozenset({Need.TEXT}), _bm25))
register(ChannelKind("dense", frozenset({Need.VECTORS}), _dense, Normalisation.MINMAX))  # every chunk has a cosine
register(ChannelKind("date", frozenset({Need.DATES, Need.POOL}), _date))
register(ChannelKind("phrase", frozenset({Need.TEXT}), _phrase))
