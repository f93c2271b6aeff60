"""How a chunk is a Qdrant point, for the cluster engine (`qdrant_server`: a server or
cluster): its id, its payload, the language field its text is indexed in, and a search filter as conditions on
that payload. Pure data: each engine turns the conditions into its own API's classes, so that the two store and
filter alike and a collection moves from one to the other as it is (`tracerag migrate`).

A point (one per chunk):
- id: uuid5 of the chunk id, so re-upserting a chunk replaces it (idempotent, resumable ingest);
- payload: chunk_id, doc_id, corpus (with its parents: "letemps/gdl" is also "letemps"), language,
  date_start/date_end (RFC 3339, the day's first and last second), fields.*, and the index text in `text_{lang}`:
  one BM25 text index per language, each with its own Snowball stemmer (`STEMMERS`; "xx" is every other
  language: folded, not stemmed);
- vector "dense" (cosine) when the collection has an embedding model; it may be added later.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from tracerag.engine import IndexedChunk
from tracerag.model import Filter

DENSE = "dense"
IDS = ["chunk_id", "doc_id"]  # the payload a search reads back: enough to make an `EngineHit`
KEYWORD_FIELDS = ("doc_id", "corpus", "language")
DATETIME_FIELDS = ("date_start", "date_end")
_NAMESPACE = uuid.UUID("7d4c1f0e-3a52-4f7b-9a51-2c8f0d6e8b11")

# language code -> the Snowball stemmer of its text index (Qdrant's names); "xx", every other language: none.
STEMMERS: dict[str, str | None] = {
    "fr": "french",
    "de": "german",
    "en": "english",
    "fi": "finnish",
    "sv": "swedish",
    "it": "italian",
    "es": "spanish",
    "nl": "dutch",
    "pt": "portuguese",
    "xx": None,
}
TEXT_PREFIX = "text_"


def text_field(language: str | None) -> str:
    """The payload field (and text index) of a chunk in `language`: "fr-ch" → text_fr, "la" → text_xx."""
    lang = (language or "").lower()[:2]
    return f"{TEXT_PREFIX}{lang if lang in STEMMERS else 'xx'}"


def field_language(field: str) -> str:
    """text_fr → "fr": how `FieldHits` and `field_stats` name a text field."""
    return field.removeprefix(TEXT_PREFIX)


def corpus_path(corpus: str) -> list[str]:
    """A corpus and its parents ("letemps/gdl" → ["letemps", "letemps/gdl"]), so a filter may name either."""
    parts = corpus.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def point_id(chunk_id: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, chunk_id)


def day_start(iso_day: str) -> str:
    return f"{iso_day}T00:00:00Z"


def day_end(iso_day: str) -> str:
    return f"{iso_day}T23:59:59Z"


def payload(chunk: IndexedChunk) -> dict[str, Any]:
    """The payload of `chunk`'s point (see the module docstring)."""
    found: dict[str, Any] = {
        "chunk_id": chunk.chunk_id,
        "doc_id": chunk.doc_id,
        "corpus": corpus_path(chunk.corpus),
        "language": chunk.language or "xx",
        text_field(chunk.language): chunk.text,
    }
    if chunk.date_start:
        found["date_start"] = day_start(chunk.date_start)
        found["date_end"] = day_end(chunk.date_end or chunk.date_start)
    if chunk.fields:
        found["fields"] = chunk.fields
    return found


@dataclass(frozen=True, slots=True)
class StoredPoint:
    """A point as an engine holds it, for moving a collection from one engine to another without re-embedding:
    its id (the uuid as text), its dense vector (None when it has none yet) and its payload."""

    id: str
    dense: list[float] | None
    payload: dict[str, Any]


# -- filters ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AnyOf:
    """The payload value at `key` is one of `values` (keyword match)."""

    key: str
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Equals:
    """The payload value at `key` is `value` (a structured field's exact value)."""

    key: str
    value: Any


@dataclass(frozen=True, slots=True)
class Within:
    """The datetime at `key` is at least `gte` and at most `lte` (RFC 3339; None: unbounded)."""

    key: str
    gte: str | None = None
    lte: str | None = None


@dataclass(frozen=True, slots=True)
class Phrase:
    """The text field `key` holds the words of `text` in order (after its analysers)."""

    key: str
    text: str


Condition = AnyOf | Equals | Within | Phrase


def conditions(flt: Filter | None) -> list[Condition]:
    """What `flt` asks of a point's payload; every condition must hold."""
    if flt is None:
        return []
    must: list[Condition] = []
    if flt.corpora:
        must.append(AnyOf("corpus", tuple(flt.corpora)))
    if flt.languages:
        must.append(AnyOf("language", tuple(flt.languages)))
    if flt.doc_ids:
        must.append(AnyOf("doc_id", tuple(flt.doc_ids)))
    # A document matches a date range when its own (possibly partial) date range overlaps it; an undated one never.
    if flt.date_to:
        must.append(Within("date_start", lte=day_end(flt.date_to)))
    if flt.date_from:
        must.append(Within("date_end", gte=day_start(flt.date_from)))
    for key, value in flt.fields:
        must.append(Equals(f"fields.{key}", value))
    return must
