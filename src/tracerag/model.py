"""The nouns every layer shares: documents, chunks, filters, hits and rankings. Plain data, no I/O."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class DateRange:
    """A closed range of ISO days. A partial historical date (`1887`, `1887-05`) is the range it covers."""

    start: str  # "1887-01-01"
    end: str  # "1887-12-31"

    def overlaps(self, other: DateRange) -> bool:
        return self.start <= other.end and other.start <= self.end


_HASH_SLICE = 1 << 20  # characters of a document's text encoded at a time by `Document.content_hash`


@dataclass(slots=True)
class Document:
    """One source as read: `text` is kept exactly; every chunk offset points into it."""

    id: str
    text: str
    corpus: str = "default"
    title: str | None = None
    date: str | None = None  # ISO, possibly partial: "1887", "1887-05", "1887-05-17"
    language: str | None = None  # ISO 639-1 ("fr", "de", "en", ...)
    source: dict[str, Any] = field(default_factory=dict)  # publication, file, page, URL, IIIF/ark id...
    fields: dict[str, Any] = field(default_factory=dict)  # structured fields (catalog records)
    ocr_quality: float | None = None

    def content_hash(self) -> str:
        """Hash of everything that shapes the index; equal hash means re-ingest is a no-op.

        It is the sha256 of the JSON list [text, corpus, title, date, language, source, fields, ocr_quality], with
        the text encoded a slice at a time: JSON escapes a string character by character, so the slices join into
        the same bytes, and a 200 MB text is never copied whole (a JSON copy and a UTF-8 copy doubled its memory).
        """
        rest = json.dumps(
            [self.corpus, self.title, self.date, self.language, self.source, self.fields, self.ocr_quality],
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        digest = hashlib.sha256(b'["')
        for i in range(0, len(self.text), _HASH_SLICE):
            digest.update(json.dumps(self.text[i : i + _HASH_SLICE], ensure_ascii=False)[1:-1].encode("utf-8"))
        digest.update(b'", ' + rest[1:].encode("utf-8"))
        return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Chunk:
    """A span of a document. `text` is `document.text[start:end]`; `index_text` is what the engine indexes."""

    doc_id: str
    n: int
    start: int
    end: int
    text: str
    index_text: str

    @property
    def id(self) -> str:
        return chunk_id(self.doc_id, self.n)


def chunk_id(doc_id: str, n: int) -> str:
    """Stable chunk id: a trail written today points at the same span tomorrow."""
    return f"{doc_id}#{n}"


@dataclass(frozen=True, slots=True)
class Filter:
    """What a search may return. One type; each engine translates it.

    corpora: allowed sub-corpora; date_from/date_to: inclusive ISO bounds, a document matches when its date
    range overlaps them; languages: allowed languages; fields: exact values of structured fields;
    doc_ids: an allow-list of documents.
    """

    corpora: tuple[str, ...] = ()
    date_from: str | None = None
    date_to: str | None = None
    languages: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()
    doc_ids: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        return not (self.corpora or self.date_from or self.date_to or self.languages or self.fields or self.doc_ids)

    def narrowed(self, **changes: Any) -> Filter:
        from dataclasses import replace

        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "corpora": list(self.corpora),
            "date_from": self.date_from,
            "date_to": self.date_to,
            "languages": list(self.languages),
            "fields": dict(self.fields),
            "doc_ids": list(self.doc_ids),
        }


@dataclass(frozen=True, slots=True)
class Hit:
    """One chunk found by one channel, at a rank (1-based) with that channel's own score."""

    chunk_id: str
    doc_id: str
    channel: str
    rank: int
    score: float


@dataclass(frozen=True, slots=True)
class ChannelEvidence:
    """How one channel saw a document: its rank among documents, its score, and the chunk that earned it."""

    channel: str
    rank: int
    score: float
    chunk_id: str
    doc_id: str


@dataclass(slots=True)
class RankedDocument:
    """A document in a fused ranking, with the provenance of every channel that found it."""

    doc_id: str
    rank: int
    score: float
    channels: list[ChannelEvidence]
    best_chunk_id: str
    window: str | None = None  # the time window that admitted it, when windowing is on


@dataclass(slots=True)
class Ranking:
    """A fused list of documents plus the per-channel rankings that made it (kept for --explain and trails)."""

    documents: list[RankedDocument]
    channel_hits: dict[str, list[Hit]] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    def doc_ids(self) -> list[str]:
        return [d.doc_id for d in self.documents]
