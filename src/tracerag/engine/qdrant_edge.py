"""The embedded default engine: Qdrant Edge, the Qdrant engine in-process (`qdrant-edge-py`, pinned).

Every use of the young Edge API lives in this module. Layout of a point (one per chunk):
- id: uuid5 of the chunk id, so re-upserting a chunk replaces it (idempotent, resumable ingest);
- payload: chunk_id, doc_id, corpus (with its parents: "letemps/gdl" is also "letemps"), language,
  date_start/date_end (RFC 3339), fields.*, and the index text in
  `text_{lang}`: one BM25 text index per language (Word tokenizer, so numbers are tokens), each with its own
  Snowball stemmer, all with lowercasing and ASCII folding (so "grève" and "greve" meet) and no stopword list:
  BM25's IDF already discounts function words, and removing them cost known-item search over OCR (a quoted
  span is mostly function words) 0.025 nDCG@10 while gaining PIAF 0.003. A query
  is scored against every language field present and the lists are merged by score;
- vector "dense" (cosine, HNSW) when the collection has an embedding model; it may be added later.
Payload indexes are created with enable_hnsw=False: their extra HNSW links are not needed for our filters
and at 60k points they took the optimize step from 44 s to 108 s.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from qdrant_edge import Bm25Params as _Bm25Params
from qdrant_edge import (
    CountRequest,
    DatetimeIndexParams,
    DisabledStemmer,
    Distance,
    EdgeConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    FacetRequest,
    FieldCondition,
    Filter,
    KeywordIndexParams,
    Language,
    MatchAny,
    MatchPhrase,
    MatchValue,
    Point,
    PointVectors,
    Query,
    QueryBatchRequest,
    QueryRequest,
    RangeDateTime,
    ScoredPoint,
    SnowballLanguage,
    SnowballParams,
    StopwordsSet,
    TextIndexParams,
    TextQuery,
    TokenizerType,
    UpdateOperation,
)

from tracerag import model
from tracerag.engine import EngineHit, IndexedChunk

DENSE = "dense"
_NAMESPACE = uuid.UUID("7d4c1f0e-3a52-4f7b-9a51-2c8f0d6e8b11")

# language code -> (Snowball stemmer, stopword list); "xx" is every other language: folded, not stemmed.
LANGUAGES: dict[str, tuple[SnowballLanguage | None, Language | None]] = {
    "fr": (SnowballLanguage.French, Language.French),
    "de": (SnowballLanguage.German, Language.German),
    "en": (SnowballLanguage.English, Language.English),
    "fi": (SnowballLanguage.Finnish, Language.Finnish),
    "sv": (SnowballLanguage.Swedish, Language.Swedish),
    "it": (SnowballLanguage.Italian, Language.Italian),
    "es": (SnowballLanguage.Spanish, Language.Spanish),
    "nl": (SnowballLanguage.Dutch, Language.Dutch),
    "pt": (SnowballLanguage.Portuguese, Language.Portuguese),
    "xx": (None, None),
}
_PAYLOAD = ["chunk_id", "doc_id"]


def text_field(language: str | None) -> str:
    lang = (language or "").lower()[:2]
    return f"text_{lang if lang in LANGUAGES else 'xx'}"


def corpus_path(corpus: str) -> list[str]:
    """A corpus and its parents ("letemps/gdl" → ["letemps", "letemps/gdl"]), so a filter may name either."""
    parts = corpus.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def point_id(chunk_id: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, chunk_id)


def _day_start(iso_day: str) -> str:
    return f"{iso_day}T00:00:00Z"


def _day_end(iso_day: str) -> str:
    return f"{iso_day}T23:59:59Z"


def _text_index(language: str) -> TextIndexParams:
    stemmer, _ = LANGUAGES[language]
    # Word, not Multilingual: the Multilingual tokenizer (charabia) drops every purely numeric token, so years
    # and dates ("1789") could never match. Word splits on non-alphanumerics (elisions, hyphens) and keeps them.
    return TextIndexParams(
        tokenizer=TokenizerType.Word,
        lowercase=True,
        ascii_folding=True,
        phrase_matching=True,
        stopwords=StopwordsSet(),  # none: see the module docstring
        stemmer=SnowballParams(stemmer) if stemmer is not None else DisabledStemmer(),
        scoring=True,
        enable_hnsw=False,
    )


class QdrantEdgeEngine:
    """A Qdrant Edge shard in `path`. `dim=None` makes a lexical-only index (no dense vectors)."""

    def __init__(self, path: Path, dim: int | None, *, k1: float = 1.2, b: float = 0.75):
        self.path = Path(path)
        self.dim = dim
        self._bm25 = _Bm25Params(k=k1, b=b)
        vectors = {DENSE: EdgeVectorParams(size=dim, distance=Distance.Cosine)} if dim else {}
        # Edge wants at least one vector space; a lexical-only shard gets an empty sparse one.
        sparse = {} if dim else {"sparse": EdgeSparseVectorParams()}
        config = EdgeConfig(vectors=vectors or None, sparse_vectors=sparse or None)
        if (self.path / "segments").exists():
            self._shard = EdgeShard.load(str(self.path))
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            self._shard = EdgeShard.create(str(self.path), config)
            self._create_indexes()
        self._fields: set[str] | None = None
        # Text indexes are made when a language's first chunk arrives: each one maps a 32 MiB page file that
        # stays resident, so creating all ten up front cost ~130 MiB of RSS for languages a collection lacks.
        self._text_indexes = {k for k in self._shard.info().payload_schema if k.startswith("text_")}

    def _create_indexes(self) -> None:
        for key in ("doc_id", "corpus", "language"):
            self._shard.update(UpdateOperation.create_field_index(key, KeywordIndexParams(enable_hnsw=False)))
        for key in ("date_start", "date_end"):
            self._shard.update(UpdateOperation.create_field_index(key, DatetimeIndexParams(enable_hnsw=False)))

    # -- writes ---------------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[IndexedChunk], vectors: np.ndarray | None) -> None:
        if vectors is not None and len(vectors) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        for field in sorted({text_field(c.language) for c in chunks} - self._text_indexes):
            self._shard.update(UpdateOperation.create_field_index(field, _text_index(field.removeprefix("text_"))))
            self._text_indexes.add(field)
        points = []
        for i, c in enumerate(chunks):
            payload = {
                "chunk_id": c.chunk_id,
                "doc_id": c.doc_id,
                "corpus": corpus_path(c.corpus),
                "language": c.language or "xx",
                text_field(c.language): c.text,
            }
            if c.date_start:
                payload["date_start"] = _day_start(c.date_start)
                payload["date_end"] = _day_end(c.date_end or c.date_start)
            if c.fields:
                payload["fields"] = c.fields
            vector = {DENSE: vectors[i].tolist()} if vectors is not None and self.dim else {}
            points.append(Point(point_id(c.chunk_id), vector, payload))
        if points:
            self._shard.update(UpdateOperation.upsert_points(points))
            if self._fields is not None:
                self._fields |= {text_field(c.language) for c in chunks}

    def set_vectors(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        if not self.dim:
            raise ValueError("this index has no dense vectors")
        self._shard.update(
            UpdateOperation.update_vectors(
                [PointVectors(point_id(cid), {DENSE: v.tolist()}) for cid, v in zip(chunk_ids, vectors, strict=True)]
            )
        )

    def delete(self, doc_ids: Sequence[str]) -> None:
        if doc_ids:
            self._shard.update(
                UpdateOperation.delete_points_by_filter(
                    Filter(must=[FieldCondition("doc_id", match=MatchAny(list(doc_ids)))])
                )
            )
            self._fields = None

    def flush(self) -> None:
        self._shard.flush()

    def optimize(self) -> None:
        self._shard.optimize()

    def close(self) -> None:
        self._shard.close()

    # -- reads ----------------------------------------------------------------------------------------

    def _present_fields(self) -> list[str]:
        """Language fields that hold at least one chunk: only those are queried. Found from the languages stored,
        mapped as `upsert` maps them ("la", "pl" → text_xx; "fr-ch" → text_fr)."""
        if self._fields is None:
            found = self._shard.facet(FacetRequest("language", limit=100_000, exact=True))
            self._fields = {text_field(str(hit.value)) for hit in found.hits}
        return sorted(self._fields)

    def _merged(self, requests: list[QueryRequest], k: int) -> list[EngineHit]:
        if not requests:
            return []
        results = self._shard.query_batch(QueryBatchRequest(requests))
        best: dict[str, tuple[float, ScoredPoint]] = {}
        for points in results:
            for p in points:
                cid = p.payload["chunk_id"]
                if cid not in best or p.score > best[cid][0]:
                    best[cid] = (p.score, p)
        ranked = sorted(best.values(), key=lambda sp: (-sp[0], sp[1].payload["chunk_id"]))[:k]
        return [EngineHit(p.payload["chunk_id"], p.payload["doc_id"], float(s)) for s, p in ranked]

    def bm25(self, text: str, k: int, filter: model.Filter | None = None) -> list[EngineHit]:
        flt = self._filter(filter)
        return self._merged(
            [
                QueryRequest(limit=k, query=TextQuery(f, text, self._bm25), filter=flt, with_payload=_PAYLOAD)
                for f in self._present_fields()
            ],
            k,
        )

    def phrase(self, text: str, k: int, filter: model.Filter | None = None) -> list[EngineHit]:
        """Chunks containing the words of `text` in order (after folding and stemming), ranked by BM25."""
        requests = []
        for f in self._present_fields():
            flt = self._filter(filter, extra=[FieldCondition(f, match=MatchPhrase(text))])
            requests.append(
                QueryRequest(limit=k, query=TextQuery(f, text, self._bm25), filter=flt, with_payload=_PAYLOAD)
            )
        return self._merged(requests, k)

    def dense(self, vector: np.ndarray, k: int, filter: model.Filter | None = None) -> list[EngineHit]:
        if not self.dim:
            return []
        request = QueryRequest(
            limit=k,
            query=Query.Nearest(np.asarray(vector, dtype=np.float32).tolist(), using=DENSE),
            filter=self._filter(filter),
            with_payload=_PAYLOAD,
        )
        return [
            EngineHit(p.payload["chunk_id"], p.payload["doc_id"], float(p.score)) for p in self._shard.query(request)
        ]

    def count(self, filter: model.Filter | None = None) -> int:
        return int(self._shard.count(CountRequest(exact=True, filter=self._filter(filter))))

    def _filter(self, flt: model.Filter | None, extra: list | None = None) -> Filter | None:
        must = list(extra or [])
        if flt is not None:
            if flt.corpora:
                must.append(FieldCondition("corpus", match=MatchAny(list(flt.corpora))))
            if flt.languages:
                must.append(FieldCondition("language", match=MatchAny(list(flt.languages))))
            if flt.doc_ids:
                must.append(FieldCondition("doc_id", match=MatchAny(list(flt.doc_ids))))
            # A document matches a date range when its own (possibly partial) date range overlaps it.
            if flt.date_to:
                must.append(FieldCondition("date_start", range=RangeDateTime(lte=_day_end(flt.date_to))))
            if flt.date_from:
                must.append(FieldCondition("date_end", range=RangeDateTime(gte=_day_start(flt.date_from))))
            for key, value in flt.fields:
                must.append(FieldCondition(f"fields.{key}", match=MatchValue(value)))
        return Filter(must=must) if must else None
