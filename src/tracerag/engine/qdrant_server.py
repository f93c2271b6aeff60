"""The cluster engine: a Qdrant server, one node or a cluster (shards, replicas), through `qdrant-client` (the
`qdrant` extra, pinned). Every use of the client's API lives in this module.

Same protocol and the same analysis as the embedded engine (`engine/embedded.py`): one BM25 text index per
language (Word tokenizer, lowercase, ASCII folding, no stopwords, the language's Snowball stemmer, phrase matching,
BM25 scoring), keyword and datetime payload indexes without their extra HNSW links, an HNSW "dense" vector
(cosine), and a query's repeats counted by repeat levels (`engine/lexical.py`), so that one query ranks the same
chunks alike in both (`benchmarks/engine_parity.py`). Points are laid out as `engine/points.py` says. Writes are
confirmed by the server before the call returns (`wait=True`) so `flush` and `optimize` have nothing to do, and IDF
is over the whole collection across shards (Qdrant's default for BM25 over a text index).

Every request is retried on a timeout, a dropped connection, 408, 429 and 5xx, `engine.retries` times with a
jittered doubling delay (`Retry-After` wins); then, as on any other refusal, an `EngineError` names the server,
the status, its message and what to do. Writes go `engine.batch_points` points a request; every write is
idempotent (point ids from chunk ids, deletes by document), so a retried request cannot duplicate anything.

qdrant-client's local mode (`QdrantClient(":memory:")` or `path=`, Python in-process, used by the tests) scores a
text query only over a text index with the default analysis (no folding, no stemming, no stopwords): refused
otherwise. There, this engine analyses the text itself, with Qdrant's own analyser (`qdrant_analysis.token_ids`,
the same Rust code as the server's), and stores each token as a word the default analysis keeps as it is: the same
tokens, hence the same BM25 statistics, phrase matches and text matches, with the index text in the payload
replaced by its tokens. Everything else (filters, datetime ranges, counts, facets, ids) is local mode's own.
"""

from __future__ import annotations

import functools
import json
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
from pydantic import ValidationError
from qdrant_client import QdrantClient, models
from qdrant_client.common.client_exceptions import QdrantException, ResourceExhaustedResponse
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from tracerag import model
from tracerag.config import EngineSettings, Settings
from tracerag.engine import EngineHit, FieldHits, FieldStats, IndexedChunk, TermStats
from tracerag.engine.lexical import (
    DF_CACHE_SIZE,
    LEAST_LIMIT,
    QUERY_TF_DEPTH,
    LevelQuery,
    Scored,
    counted_top,
    needs_counting,
    repeat_levels,
)
from tracerag.engine.points import (
    DATETIME_FIELDS,
    DENSE,
    IDS,
    KEYWORD_FIELDS,
    STEMMERS,
    TEXT_PREFIX,
    AnyOf,
    Condition,
    Equals,
    Phrase,
    StoredPoint,
    Within,
    conditions,
    field_language,
    payload,
    point_id,
    text_field,
)
from tracerag.engine.qdrant_analysis import query_terms, token_ids
from tracerag.errors import CollectionError, EngineError

T = TypeVar("T")
RETRIED = frozenset({408, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 60.0  # a server asking for a longer wait is waited this long at most, per retry
# Field statistics (chunks per language, document frequencies) are kept this long: other processes write the same
# server collection, and a long-lived reader (`tracerag serve`) must see their chunks counted soon after.
STATS_TTL_S = 5.0
_ORDERING = {
    "weak": models.WriteOrdering.WEAK,
    "medium": models.WriteOrdering.MEDIUM,
    "strong": models.WriteOrdering.STRONG,
}


def connect(url: str, api_key: str | None, timeout_s: float) -> QdrantClient:
    """A client of the server at `url` (REST). No request is made until the engine asks something."""
    # check_compatibility off: it is one more request at every open, and its only outcome is a warning; a server
    # too old for TRACE's text indexes refuses their creation, and that error says so.
    return QdrantClient(url=url, api_key=api_key, timeout=max(1, round(timeout_s)), check_compatibility=False)


def is_local(client: QdrantClient) -> bool:
    """Whether `client` is qdrant-client's local mode (in-process Python), not a server."""
    options = client.init_options
    return bool(options.get("path")) or options.get("location") == ":memory:"


def server_collection_name(folder: str, collection_id: str) -> str:
    """The server collection of the TRACE collection in `folder` with id `collection_id`: readable, unique."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "_", folder).strip("_")[:60] or "collection"
    return f"tracerag_{stem}_{collection_id[:12]}"


def analysed_for_local(text: str, field: str) -> str:
    """`text` as the text index of `field` analyses it (Edge's analyser: the server's Rust code), each token a word
    that local mode's default analysis keeps whole (lowercase letters and digits): what this engine gives local
    mode, which cannot fold or stem, for it to index and match."""
    return " ".join(f"t{token:x}" for token in token_ids(text, field_language(field)))


def _message(exc: UnexpectedResponse) -> str:
    """The server's own explanation of a refusal ({"status": {"error": ...}}), else its raw body, short."""
    try:
        error = json.loads(exc.content)["status"]["error"]
    except (ValueError, KeyError, TypeError):
        error = exc.content.decode("utf-8", "replace")
    return " ".join(str(error).split())[:300]


def _retry_after(exc: UnexpectedResponse) -> float | None:
    value = exc.headers.get("retry-after") if exc.headers is not None else None
    try:
        return min(float(value), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the jittered delay will do


class Requests:
    """Requests to one server collection, retried on what may pass (a timeout, a dropped connection, 408, 429,
    5xx: `settings.retries` times, a doubling delay from `settings.backoff_s` jittered, `Retry-After` winning);
    an EngineError naming the server, the status and what to do once they will not."""

    def __init__(
        self,
        settings: EngineSettings,
        url: str,
        name: str,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ):
        self.settings = settings
        self.url = url
        self.name = name
        self._sleep = sleep
        self._rng = rng or random.Random()

    def call(self, what: str, request: Callable[[], T]) -> T:
        """`request()`, retried; an EngineError once it will not pass (see the class docstring)."""
        for attempt in range(self.settings.retries + 1):
            try:
                return request()
            except UnexpectedResponse as exc:
                status = exc.status_code
                if status not in RETRIED or attempt == self.settings.retries:
                    raise EngineError(self._refused(what, status, exc.reason_phrase, _message(exc), attempt)) from None
                wait = _retry_after(exc)
            except ResourceExhaustedResponse as exc:  # qdrant-client's 429 with a Retry-After (whole seconds)
                if attempt == self.settings.retries:
                    raise EngineError(self._refused(what, 429, "Too Many Requests", exc.message, attempt)) from None
                wait = min(float(exc.retry_after_s), MAX_RETRY_AFTER_S)
            except QdrantException as exc:  # its 429 whose Retry-After is not a number of seconds
                if attempt == self.settings.retries:
                    raise EngineError(self._refused(what, 429, "Too Many Requests", str(exc), attempt)) from None
                wait = None
            except ResponseHandlingException as exc:
                if attempt == self.settings.retries:
                    raise EngineError(self._unreachable(what, exc, attempt)) from None
                wait = None
            if wait is None:  # doubling, jittered so that many clients retrying do not come back in step
                wait = self.settings.backoff_s * 2**attempt * self._rng.uniform(0.5, 1.0)
            self._sleep(wait)
        raise AssertionError("unreachable")  # the loop returns or raises

    def where(self) -> str:
        return f"Qdrant at {self.url}, collection {self.name}"

    def _refused(self, what: str, code: int | None, reason: str, message: str, attempt: int) -> str:
        status = f"{code or ''} {reason}".strip()
        tried = f" (after {attempt} retries)" if attempt else ""
        said = f"{self.where()}: {what} failed with {status}{tried}: {message}"
        code = code or 0
        if code in (401, 403):
            return f"{said}. Check the API key: the variable named by engine.api_key_env (QDRANT_API_KEY), or --api-key"
        if code == 404:
            return (
                f"{said}. The server has no collection {self.name}: check [qdrant] in collection.toml (url, "
                "collection), or move the collection there again (`tracerag migrate`)"
            )
        if code in RETRIED:
            return (
                f"{said}. The server kept failing: check its health and logs, then run the command again (writes "
                "are idempotent: an ingest resumes); engine.retries, engine.backoff_s and engine.timeout_s allow more"
            )
        return (
            f"{said}. The server refused the request as TRACE made it; a Qdrant older than the one qdrant-client "
            "1.20 speaks to (BM25 scoring on text indexes) refuses TRACE's text indexes"
        )

    def _unreachable(self, what: str, exc: ResponseHandlingException, attempt: int) -> str:
        cause = exc.source if getattr(exc, "source", None) is not None else exc
        return (
            f"{self.where()}: {what} failed, no answer after {attempt + 1} tries ({type(cause).__name__}: "
            f"{cause}). Is the server running, and is the URL its REST port (6333 by default)? A slow server: raise "
            "engine.timeout_s"
        )


class QdrantServerEngine:
    """The collection `name` on the server `client` talks to. `dim=None`: lexical only (no dense vectors).
    `create` makes the collection and its payload indexes (refused when one of that name already holds points);
    otherwise it must exist, with a dense vector of `dim` when `dim` is set. `settings` give the new collection's
    shape and the client's batches, retries and ordering; `url` names the server in errors. `close` closes the
    client when `owns_client` (a client shared by several engines is closed by whoever made it). `sleep` and `rng`
    are the retry delay's (tests replace them)."""

    query_tf_depth: int = QUERY_TF_DEPTH

    def __init__(
        self,
        client: QdrantClient,
        name: str,
        dim: int | None,
        *,
        settings: EngineSettings,
        url: str,
        k1: float = 1.2,
        b: float = 0.75,
        query_tf: bool = False,
        create: bool = False,
        owns_client: bool = True,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ):
        self.client = client
        self.name = name
        self.dim = dim
        self.settings = settings
        self.url = url
        self.query_tf = query_tf
        self.local = is_local(client)
        self._owns_client = owns_client
        self._scoring = models.Bm25Scoring(bm25=models.Bm25Params(k=k1, b=b))
        self._ordering = _ORDERING[settings.write_ordering]
        self._requests = Requests(settings, url, name, sleep, rng)
        self._lock = threading.Lock()  # the caches below; the client itself is thread-safe
        self._fields: tuple[float, dict[str, int]] | None = None  # (when read, language field → its chunks)
        self._dfs: dict[tuple[str, str], tuple[float, int]] = {}  # (field, word) → (when read, chunks holding it)
        info = self._create() if create else self._check_existing()
        self._text_indexes = self._existing_text_indexes(info)

    # -- requests -------------------------------------------------------------------------------------

    def _call(self, what: str, request: Callable[[], T]) -> T:
        return self._requests.call(what, request)

    # -- the collection ---------------------------------------------------------------------------------

    def _exists(self) -> bool:
        return bool(self._call("look for the collection", lambda: self.client.collection_exists(self.name)))

    def _create(self) -> models.CollectionInfo:
        """Make the collection and its payload indexes; an empty one of that name (a creation that stopped, or
        made by hand) is taken as it is, if its vectors fit."""
        if self._exists():
            held = self._call("count its points", lambda: self.client.count(self.name, exact=True).count)
            if held:
                raise CollectionError(
                    f"{self._requests.where()} already holds {held:,} points: another collection's index? Name a new "
                    "one (engine.collection, --qdrant-collection) or delete that one"
                )
            self._check_existing()
        else:
            vectors = {DENSE: models.VectorParams(size=self.dim, distance=models.Distance.COSINE)} if self.dim else {}
            s = self.settings
            try:
                self._call(
                    "create the collection",
                    lambda: self.client.create_collection(
                        self.name,
                        vectors_config=vectors,
                        shard_number=s.shard_number,
                        replication_factor=s.replication_factor,
                        write_consistency_factor=s.write_consistency_factor,
                    ),
                )
            except EngineError:
                if not self._exists():  # a creation whose answer was lost, retried: "already exists" is success
                    raise
        if not self.local:  # local mode has no payload indexes but text ones (it scans), and warns they do nothing
            for key in KEYWORD_FIELDS:
                self._index(key, models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, enable_hnsw=False))
            for key in DATETIME_FIELDS:
                self._index(key, models.DatetimeIndexParams(type=models.DatetimeIndexType.DATETIME, enable_hnsw=False))
        return self._call("read the collection", lambda: self.client.get_collection(self.name))

    def _check_existing(self) -> models.CollectionInfo:
        info = self._call("read the collection", lambda: self.client.get_collection(self.name))
        vectors = info.config.params.vectors
        size = vectors[DENSE].size if isinstance(vectors, dict) and DENSE in vectors else None
        if self.dim and size != self.dim:
            found = f"{size}-d" if size else "no"
            raise CollectionError(
                f"{self._requests.where()} has {found} dense vectors, the collection's model {self.dim}-d: is it "
                "another collection's index? Check [qdrant] in collection.toml"
            )
        return info

    def _existing_text_indexes(self, info: models.CollectionInfo) -> set[str]:
        if self.local:
            # Local mode's text indexes cost nothing (a setting each): all of them now, so that a text query never
            # meets a field without one, whatever the local store kept.
            for language in STEMMERS:
                self._index(text_field(language), self._text_index(language))
            return {text_field(language) for language in STEMMERS}
        return {key for key in info.payload_schema if key.startswith(TEXT_PREFIX)}

    def _index(self, key: str, schema: Any) -> None:
        self._call(
            f"create the payload index {key}",
            lambda: self.client.create_payload_index(self.name, key, field_schema=schema, wait=True),
        )

    def _text_index(self, language: str) -> models.TextIndexParams:
        if self.local:  # the only analysis local mode scores by: the tokens come analysed (module docstring)
            return models.TextIndexParams(
                type=models.TextIndexType.TEXT,
                tokenizer=models.TokenizerType.WORD,
                lowercase=True,
                phrase_matching=True,
                scoring=True,
            )
        stemmer = STEMMERS[language]
        return models.TextIndexParams(
            type=models.TextIndexType.TEXT,
            tokenizer=models.TokenizerType.WORD,  # numbers are tokens (the Multilingual one drops them)
            lowercase=True,
            ascii_folding=True,
            phrase_matching=True,
            stopwords=models.StopwordsSet(),  # none, as Edge's
            stemmer=(
                models.SnowballParams(type=models.Snowball.SNOWBALL, language=models.SnowballLanguage(stemmer))
                if stemmer is not None
                else models.DisabledStemmerParams(type=models.NoStemmer.NONE)
            ),
            scoring=True,
            enable_hnsw=False,
        )

    def _ensure_text_indexes(self, fields: set[str]) -> None:
        for field in sorted(fields - self._text_indexes):
            self._index(field, self._text_index(field_language(field)))
            self._text_indexes.add(field)

    def shape(self) -> dict[str, Any]:
        """The collection as the server made it (shards, replicas, write consistency): what the manifest records.
        Local mode keeps none of it: what was asked is given instead."""
        params = self._call("read the collection", lambda: self.client.get_collection(self.name)).config.params
        s = self.settings
        return {
            "shard_number": params.shard_number or s.shard_number,
            "replication_factor": params.replication_factor or s.replication_factor,
            "write_consistency_factor": params.write_consistency_factor or s.write_consistency_factor,
        }

    def drop(self) -> None:
        """Delete the server collection (a first ingest that read nothing, `tracerag migrate --restart`)."""
        self._call("delete the collection", lambda: self.client.delete_collection(self.name))
        self._forget()

    # -- writes ---------------------------------------------------------------------------------------

    def _analysed(self, text: str, field: str) -> str:
        """What the text index of `field` is given for `text`: the text itself on a server; in local mode the
        tokens Edge's analyser makes of it, as words (module docstring)."""
        return analysed_for_local(text, field) if self.local else text

    def _stored_payload(self, found: dict[str, Any]) -> dict[str, Any]:
        if not self.local:
            return found
        return {k: self._analysed(v, k) if k.startswith(TEXT_PREFIX) else v for k, v in found.items()}

    def _put(self, what: str, points: list[models.PointStruct]) -> None:
        self._ensure_text_indexes({k for p in points for k in (p.payload or {}) if k.startswith(TEXT_PREFIX)})
        size = self.settings.batch_points
        for i in range(0, len(points), size):
            part = points[i : i + size]
            self._call(
                f"{what} ({len(part)} points)",
                functools.partial(self.client.upsert, self.name, points=part, wait=True, ordering=self._ordering),
            )
        self._forget()

    def upsert(self, chunks: Sequence[IndexedChunk], vectors: np.ndarray | None) -> None:
        if vectors is not None and len(vectors) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        points = []
        for i, c in enumerate(chunks):
            vector = (
                {DENSE: np.asarray(vectors[i], dtype=np.float32).tolist()} if vectors is not None and self.dim else {}
            )
            points.append(
                models.PointStruct(
                    id=str(point_id(c.chunk_id)), vector=vector, payload=self._stored_payload(payload(c))
                )
            )
        if points:
            self._put("upsert", points)

    def write_points(self, stored: Sequence[StoredPoint]) -> None:
        """Points as another engine stored them (`scroll_points`), written as they are: no re-embedding."""
        points = []
        for p in stored:
            vector = {DENSE: p.dense} if p.dense is not None and self.dim else {}
            points.append(models.PointStruct(id=p.id, vector=vector, payload=self._stored_payload(p.payload)))
        if points:
            self._put("write migrated points", points)

    def set_vectors(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        if not self.dim:
            raise ValueError("this index has no dense vectors")
        updates = [
            models.PointVectors(id=str(point_id(cid)), vector={DENSE: np.asarray(v, dtype=np.float32).tolist()})
            for cid, v in zip(chunk_ids, vectors, strict=True)
        ]
        size = self.settings.batch_points
        for i in range(0, len(updates), size):
            part = updates[i : i + size]
            self._call(
                f"set vectors ({len(part)} points)",
                functools.partial(
                    self.client.update_vectors, self.name, points=part, wait=True, ordering=self._ordering
                ),
            )

    def delete(self, doc_ids: Sequence[str]) -> None:
        ids = list(doc_ids)
        size = self.settings.batch_points
        for i in range(0, len(ids), size):
            selector = models.FilterSelector(filter=self._filter_of([AnyOf("doc_id", tuple(ids[i : i + size]))]))
            self._call(
                "delete documents",
                functools.partial(
                    self.client.delete, self.name, points_selector=selector, wait=True, ordering=self._ordering
                ),
            )
        if ids:
            self._forget()

    def flush(self) -> None:
        """Nothing to do: every write returned once the server had applied it (`wait=True`)."""

    def optimize(self) -> None:
        """Nothing to do: the server's optimizer builds the indexes as points arrive."""

    def close(self) -> None:
        if self._owns_client:
            self.client.close()

    def scroll_points(self, offset: str | None, limit: int) -> tuple[list[StoredPoint], str | None]:
        """Up to `limit` points from `offset`, in id order, with vectors and payload, and the next offset."""
        records, after = self._call(
            "scroll points",
            lambda: self.client.scroll(
                self.name, offset=offset, limit=limit, with_payload=True, with_vectors=[DENSE] if self.dim else False
            ),
        )
        found = []
        for r in records:
            vectors = r.vector if isinstance(r.vector, dict) else {}
            dense = vectors.get(DENSE)
            vector = np.asarray(dense, dtype=np.float32).tolist() if isinstance(dense, list) else None
            found.append(StoredPoint(str(r.id), vector, dict(r.payload or {})))
        return found, None if after is None else str(after)

    def count_with_vectors(self) -> int:
        """How many points carry a dense vector (what `tracerag migrate` checks)."""
        if not self.dim:
            return 0
        flt = models.Filter(must=[models.HasVectorCondition(has_vector=DENSE)])
        return self._call("count", lambda: self.client.count(self.name, count_filter=flt, exact=True).count)

    # -- reads ----------------------------------------------------------------------------------------

    def _forget(self) -> None:
        with self._lock:
            self._fields = None
            self._dfs.clear()

    def field_sizes(self) -> dict[str, int]:
        """Language fields that hold at least one chunk, with their chunk counts (BM25's N in that field)."""
        with self._lock:
            cached = self._fields
        if cached is not None and time.monotonic() - cached[0] < STATS_TTL_S:
            return cached[1]
        found = self._call(
            "count chunks per language",
            lambda: self.client.facet(self.name, key="language", limit=100_000, exact=True),
        )
        sizes: dict[str, int] = {}
        for hit in found.hits:
            if hit.count > 0:
                field = text_field(str(hit.value))
                sizes[field] = sizes.get(field, 0) + int(hit.count)
        with self._lock:
            self._fields = (time.monotonic(), sizes)
        return sizes

    def _chunks_with(self, field: str, word: str) -> int:
        """How many chunks of `field` hold the token `word` analyses to (its BM25 document frequency)."""
        key = (field, word)
        with self._lock:
            cached = self._dfs.get(key)
        if cached is not None and time.monotonic() - cached[0] < STATS_TTL_S:
            return cached[1]
        match = models.MatchText(text=self._analysed(word, field))
        flt = models.Filter(must=[models.FieldCondition(key=field, match=match)])
        # the server's estimate from the posting list: exact counts walk the list at every query
        n = int(self._call("count", lambda: self.client.count(self.name, count_filter=flt, exact=False).count))
        with self._lock:
            if len(self._dfs) >= DF_CACHE_SIZE:
                self._dfs.clear()
            self._dfs[key] = (time.monotonic(), n)
        return n

    def field_stats(self, text: str) -> dict[str, FieldStats]:
        stats: dict[str, FieldStats] = {}
        for field, size in sorted(self.field_sizes().items()):
            terms = query_terms(text, field_language(field))
            stats[field_language(field)] = FieldStats(
                size,
                tuple(TermStats(word, n if self.query_tf else 1, self._chunks_with(field, word)) for word, n in terms),
            )
        return stats

    def _text_query(
        self, field: str, words: str, limit: int, flt: models.Filter | None, ids: bool
    ) -> models.QueryRequest:
        query = models.TextQuery(text=models.TextQueryInput(query=self._analysed(words, field), scoring=self._scoring))
        return models.QueryRequest(
            query=query, using=field, filter=flt, limit=limit, with_payload=IDS if ids else False
        )

    def _batch(self, requests: list[models.QueryRequest]) -> list[list[models.ScoredPoint]]:
        answers = self._call("search", lambda: self.client.query_batch_points(self.name, requests=requests))
        return [answer.points for answer in answers]

    def _lexical(
        self, text: str, k: int, extra: Callable[[str], list[Condition]], flt: model.Filter | None
    ) -> FieldHits:
        """BM25 of `text` in every field, as Edge's `_lexical` (one batch of plain queries, `counted_top` where the
        query repeats a word, every k up to `LEAST_LIMIT` asked as that limit and cut)."""
        limit = max(k, LEAST_LIMIT)
        plain: dict[str, models.QueryRequest] = {}
        counted: dict[str, list[tuple[int, str]]] = {}
        for field in sorted(self.field_sizes()):
            terms = query_terms(text, field_language(field))
            if not terms:
                continue  # no token in this field's analysis: nothing to score, and no request to make
            levels = repeat_levels(terms) if self.query_tf else []
            if not needs_counting(levels):
                plain[field] = self._text_query(field, text, limit, self._filter_of(extra(field), flt), ids=True)
            else:
                counted[field] = levels
        found: FieldHits = {}
        if plain:
            for field, points in zip(plain, self._batch(list(plain.values())), strict=True):
                hits = [_hit(p) for p in points]
                if hits:
                    found[field_language(field)] = sorted(hits, key=lambda h: (-h.score, h.chunk_id))
        for field, levels in counted.items():
            hits = self._counted(field, levels, limit, extra(field), flt)
            if hits:
                found[field_language(field)] = hits
        return {field: found[field][:k] for field in sorted(found)}

    def _counted(
        self, field: str, levels: list[tuple[int, str]], k: int, extra: list[Condition], flt: model.Filter | None
    ) -> list[EngineHit]:
        def search(queries: list[LevelQuery]) -> list[list[Scored]]:
            requests = []
            for q in queries:
                among = [] if q.among is None else [models.HasIdCondition(has_id=sorted(q.among))]
                requests.append(self._text_query(field, q.words, q.limit, self._filter_of(extra, flt, among), False))
            return [[(str(p.id), p.score) for p in points] for points in self._batch(requests)]

        top = counted_top(levels, k, self.query_tf_depth, search)
        if not top:
            return []
        ids = [pid for pid, _ in top]
        records = self._call("read hits", lambda: self.client.retrieve(self.name, ids=ids, with_payload=IDS))
        payloads = {str(r.id): r.payload for r in records}
        hits = [_engine_hit(pid, payloads.get(pid), score) for pid, score in top]
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id))

    def bm25(self, text: str, k: int, filter: model.Filter | None = None) -> FieldHits:
        return self._lexical(text, k, lambda field: [], filter)

    def phrase(self, text: str, k: int, filter: model.Filter | None = None) -> FieldHits:
        """Chunks containing the words of `text` in order (after folding and stemming), ranked by BM25."""
        return self._lexical(text, k, lambda field: [Phrase(field, text)], filter)

    def dense(self, vector: np.ndarray, k: int, filter: model.Filter | None = None) -> list[EngineHit]:
        if not self.dim:
            return []
        query = np.asarray(vector, dtype=np.float32).tolist()
        flt = self._filter_of([], filter)
        found = self._call(
            "search",
            lambda: self.client.query_points(
                self.name, query=query, using=DENSE, query_filter=flt, limit=k, with_payload=IDS
            ),
        )
        return [_hit(p) for p in found.points]

    def count(self, filter: model.Filter | None = None) -> int:
        flt = self._filter_of([], filter)
        return int(self._call("count", lambda: self.client.count(self.name, count_filter=flt, exact=True).count))

    def _filter_of(
        self, extra: list[Condition], flt: model.Filter | None = None, more: list | None = None
    ) -> models.Filter | None:
        must = [self._condition(c) for c in [*extra, *conditions(flt)]] + list(more or [])
        return models.Filter(must=must) if must else None

    def _condition(self, c: Condition) -> models.FieldCondition:
        """A filter condition (`engine/points.py`) as the client's."""
        if isinstance(c, AnyOf):
            return models.FieldCondition(key=c.key, match=models.MatchAny(any=list(c.values)))
        if isinstance(c, Equals):
            return models.FieldCondition(key=c.key, match=models.MatchValue(value=c.value))
        if isinstance(c, Within):
            return models.FieldCondition(key=c.key, range=models.DatetimeRange(gte=c.gte, lte=c.lte))
        return models.FieldCondition(key=c.key, match=models.MatchPhrase(phrase=self._analysed(c.text, c.key)))


def _hit(point: models.ScoredPoint) -> EngineHit:
    return _engine_hit(str(point.id), point.payload, point.score)


def _engine_hit(pid: str, found: dict | None, score: float) -> EngineHit:
    if found is None:
        raise RuntimeError(f"the Qdrant server returned point {pid} without the payload it was asked for")
    return EngineHit(found["chunk_id"], found["doc_id"], float(score))


# -- the collection's record -----------------------------------------------------------------------------------


# How the client talks to the server: recorded with the collection, and used by every later open unless the
# settings give another value (anything but the setting's default).
CLIENT_SETTINGS = ("write_ordering", "batch_points", "retries", "backoff_s", "timeout_s")


def record_of(engine: QdrantServerEngine) -> dict[str, Any]:
    """What a collection's manifest keeps of its server index (`[qdrant]` in collection.toml): where it is, the
    shape the server gave it, and how the client talks to it. Never the API key."""
    client = {key: getattr(engine.settings, key) for key in CLIENT_SETTINGS}
    return {"url": engine.url, "collection": engine.name, **engine.shape(), **client}


def client_settings(record: dict[str, Any], asked: EngineSettings, where: str = "collection.toml") -> EngineSettings:
    """The engine settings an open of the recorded index uses: each of `CLIENT_SETTINGS` as `asked` when it is not
    the setting's default (the user gave it), else as recorded (checked as a setting is)."""
    defaults = EngineSettings()
    recorded = {
        key: record[key] for key in CLIENT_SETTINGS if key in record and getattr(asked, key) == getattr(defaults, key)
    }
    try:
        return EngineSettings(**{**asked.model_dump(), **recorded})
    except ValidationError as exc:
        raise CollectionError(f"{where} [qdrant]: {exc.errors()[0]['msg']} ({exc.errors()[0]['loc']})") from None


def open_recorded(
    record: dict[str, Any],
    dim: int | None,
    settings: Settings,
    *,
    api_key: str | None = None,
    create: bool = False,
    where: str = "collection.toml",
) -> QdrantServerEngine:
    """The engine of the server index `record` names (see `record_of`; `create`: make it, from the url and
    collection alone). The key: `api_key`, else the variable `engine.api_key_env` names."""
    url, name = record.get("url"), record.get("collection")
    if not isinstance(url, str) or not isinstance(name, str) or not url or not name:
        raise CollectionError(f"{where} [qdrant]: expected the server's url and collection, got {record!r:.200}")
    engine_settings = client_settings(record, settings.engine, where)
    client = connect(url, api_key or engine_settings.api_key(), engine_settings.timeout_s)
    try:
        return QdrantServerEngine(
            client,
            name,
            dim,
            settings=engine_settings,
            url=url,
            k1=settings.retrieval.bm25_k1,
            b=settings.retrieval.bm25_b,
            query_tf=settings.retrieval.query_tf,
            create=create,
        )
    except BaseException:
        client.close()
        raise


def delete_recorded(record: dict[str, Any], settings: Settings, *, api_key: str | None = None) -> bool:
    """Delete the server collection `record` names, if it is there (`tracerag migrate --restart`); whether it was."""
    url, name = str(record["url"]), str(record["collection"])
    client = connect(url, api_key or settings.engine.api_key(), settings.engine.timeout_s)
    try:
        requests = Requests(settings.engine, url, name)
        if not requests.call("look for the collection", lambda: client.collection_exists(name)):
            return False
        return bool(requests.call("delete the collection", lambda: client.delete_collection(name)))
    finally:
        client.close()
