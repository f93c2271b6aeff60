"""The embedded default engine: Qdrant Edge, the Qdrant engine in-process (`qdrant-edge-py`, pinned).

Every use of the young Edge API lives in this module. A point is laid out as `engine/points.py` says (shared with
the cluster engine, `engine/qdrant_server.py`); here, the text indexes: one BM25 text index per language (Word
tokenizer, so numbers are tokens), each with its own Snowball stemmer, all with lowercasing and ASCII folding (so
"grève" and "greve" meet) and no stopword list: BM25's IDF already discounts function words, and removing them
cost known-item search over OCR (a quoted span is mostly function words) 0.025 nDCG@10 while gaining PIAF 0.003.
A query is scored against every language field present and each field's ranking is returned as it is
(`FieldHits`, keyed by the language): their scores are on different scales, and merging them is retrieval's
decision. BM25 counts a word the query repeats as often as it repeats it (`engine/lexical.py`: Edge's TextQuery
scores a query as a set of words, so a query with repeats is a weighted sum of set-of-words scores, repeats counted
on the field's own analysed tokens).
Payload indexes are created with enable_hnsw=False: their extra HNSW links are not needed for our filters
and at 60k points they took the optimize step from 44 s to 108 s.

Segments, and why every point carries a one-entry sparse vector "seal". A segment that still takes writes
(appendable) keeps its text index in a mutable form that Qdrant rebuilds in RAM at every load, ~70 µs and ~10 KB
a chunk: a 233,821-chunk collection took 19.5 s and 2.5 GB to open. Only the optimizer seals a segment (makes it
immutable, its indexes files mapped from disk), and it sizes segments by their vectors alone: chunks without a
dense vector (any lexical collection, any ingest with --no-dense) weighed nothing, so their one segment was
never sealed. With the seal vector, optimizer settings for it (`_optimizers`) and `Memory.Cold` indexes, every
few thousand chunks written are sealed, and a sealed segment costs a few MB at open whatever its size. Writes
seal as they go (`SEAL_EVERY`), and reopen the shard after a seal: a segment the optimizer just built keeps its
text index in RAM in the process that built it. A shard made before is brought to this layout by its first
write (`_prepare_for_writes`); a reader opens it as it is, as slowly as before.
"""

from __future__ import annotations

import ctypes
import functools
import json
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np
import regex
from qdrant_edge import (
    Bm25,
    Bm25Config,
    CountRequest,
    DatetimeIndexParams,
    DisabledStemmer,
    Distance,
    EdgeConfig,
    EdgeOptimizersConfig,
    EdgeShard,
    EdgeSparseVectorParams,
    EdgeVectorParams,
    FacetRequest,
    FieldCondition,
    Filter,
    HasIdCondition,
    HasVectorCondition,
    KeywordIndexParams,
    MatchAny,
    MatchPhrase,
    MatchText,
    MatchValue,
    Memory,
    Point,
    PointVectors,
    Query,
    QueryBatchRequest,
    QueryRequest,
    RangeDateTime,
    ScrollRequest,
    SearchParams,
    SnowballLanguage,
    SnowballParams,
    SparseVector,
    StopwordsSet,
    TextIndexParams,
    TextQuery,
    TokenizerType,
    UpdateOperation,
)
from qdrant_edge import Bm25Params as _Bm25Params

from tracerag import model
from tracerag.engine import EngineHit, FieldHits, FieldStats, IndexedChunk, TermStats
from tracerag.engine.lexical import DF_CACHE_SIZE as _DF_CACHE_SIZE
from tracerag.engine.lexical import LEAST_LIMIT, QUERY_TF_DEPTH, LevelQuery, Scored, counted_top, needs_counting
from tracerag.engine.lexical import repeat_levels as _repeat_levels
from tracerag.engine.points import DENSE, IDS, STEMMERS, AnyOf, Condition, Equals, StoredPoint, Within, point_id
from tracerag.engine.points import conditions as filter_conditions
from tracerag.engine.points import corpus_path as corpus_path  # re-exported: the channel tests build filters with it
from tracerag.engine.points import payload as chunk_payload
from tracerag.engine.points import text_field as text_field  # re-exported: benchmarks name a language's field with it

if TYPE_CHECKING:  # type aliases that exist only in qdrant_edge's .pyi
    from qdrant_edge import NamedVector, PointId, ScoredPoint

# The HNSW search's candidate list. Qdrant's default (ef = k) at a search's depth of 100 chunks left the dense channel
# inside the hybrid at 0.508 nDCG@10 on xling-hipe (8,103 chunks), against 0.707 for the same channel searched
# deeper; on its first 80 questions R@10 was 0.46 at ef = k, 0.75 at 512, 0.81 at 2048 (at about the same time
# per search there).
DENSE_EF = 1024
SEAL = "seal"  # the one-entry sparse vector every point carries so that the optimizer can size its segment
_SEAL_VECTOR = SparseVector([0], [1.0])
_WITH_DENSE = Filter(must=[HasVectorCondition(DENSE)])
# Optimizer settings. Qdrant sizes segments by their vectors alone, so a point weighs what its seal and its
# dense vector weigh; measured with qdrant-edge 0.9.0, its sealing rule counts ~12 bytes for a seal, its merge
# rule ~4 (a 384-d vector adds 1,536 to both).
# - indexing_threshold 64 KB: optimize() seals a segment of ~5,300 chunks without dense vectors (left appendable,
#   those would cost ~1/3 s at every open), of ~40 with them.
# - writes seal every SEAL_EVERY points, so a huge ingest never holds more in its appendable segment.
# - max_segment_size: merges stop at `segment_chunks` (default SEGMENT_CHUNKS, ~12,500; `engine.segment_chunks`),
#   so two small segments left by small ingests are joined but two of SEAL_EVERY are not. Sealing or merging n
#   chunks needs ~50 MB + 15 KB a chunk of RAM while the text index is built: with Qdrant's default cap (from the
#   cores: 512 MB of vectors, tens of millions of chunks without dense vectors) the merges of a 234k-chunk ingest
#   kept growing, to 1.4 GB and 24,000-chunk segments. A larger cap means fewer segments to search: every query
#   searches each segment (its HNSW graph, its postings) one after another, and every open loads each one; a
#   100k-chunk collection with vectors merged from 14 segments into 2: dense kNN p50 18.3 -> 7.7 ms, open 2.2 ->
#   0.3 s, for a merge of 179 s and 1.1 GB (benchmarks/results/scale.md).
# - default_segment_number 8 (`engine.segments`): with the default (from 2 cores) every seal was merged into the
#   last one.
_MERGE_BYTES = 4
SEGMENT_CHUNKS = 12_500
SEGMENTS = 8
SEAL_EVERY = 7_000  # points written since the last optimize after which a write seals the appendable segment


class _Optimizers(TypedDict):
    """The `EdgeOptimizersConfig` arguments TRACE sets (also compared with what a shard has persisted)."""

    indexing_threshold: int
    max_segment_size: int
    default_segment_number: int


def _optimizers(dense_dim: int | None, segment_chunks: int = SEGMENT_CHUNKS, segments: int = SEGMENTS) -> _Optimizers:
    """The optimizer settings of a shard whose points carry a `dense_dim` vector (None: only their seal), whose
    merges go on while it has more than `segments` segments and stop at `segment_chunks` chunks a segment."""
    dense_bytes = 4 * (dense_dim or 0)
    return {
        "indexing_threshold": 64,
        "max_segment_size": segment_chunks * (_MERGE_BYTES + dense_bytes) // 1024,
        "default_segment_number": segments,
    }


_PAYLOAD = IDS
# language code -> its text index's Snowball stemmer (None: "xx", every other language, is folded, not stemmed)
LANGUAGES: dict[str, SnowballLanguage | None] = {
    code: getattr(SnowballLanguage, name.capitalize()) if name else None for code, name in STEMMERS.items()
}


def segment_layout(path: Path) -> dict[str, int]:
    """What the optimizer has made of the shard at `path`: its segments, and how many are sealed (immutable, their
    indexes mapped from disk) or appendable (text index rebuilt in RAM at every open). Read from the segments' own
    `segment.json` (Edge's API tells neither), so it needs no open shard."""
    sealed = appendable = 0
    for segment in (Path(path) / "segments").glob("*/segment.json"):
        config = json.loads(segment.read_text(encoding="utf-8"))["config"]
        mutable = [v["index"]["type"] == "plain" for v in (config.get("vector_data") or {}).values()]
        mutable += [v["index"]["index_type"] == "MutableRam" for v in (config.get("sparse_vector_data") or {}).values()]
        if all(mutable):
            appendable += 1
        else:
            sealed += 1
    return {"segments": sealed + appendable, "sealed": sealed, "appendable": appendable}


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc
    except (AttributeError, OSError):
        return None


_MALLOC_TRIM = _malloc_trim()


def _release_freed_memory() -> None:
    """Hand back to the system the heap the optimizer freed. glibc keeps freed pages for reuse, and the engine's
    threads leave them scattered: after sealing 20,000 chunks 490 MB stayed resident, 40 MB after malloc_trim."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _keyword_index() -> KeywordIndexParams:
    return KeywordIndexParams(enable_hnsw=False, memory=Memory.Cold)


def _datetime_index() -> DatetimeIndexParams:
    return DatetimeIndexParams(enable_hnsw=False, memory=Memory.Cold)


def _text_index(language: str) -> TextIndexParams:
    stemmer = LANGUAGES[language]
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
        memory=Memory.Cold,  # see the module docstring
    )


@functools.cache
def _analyzer(language: str) -> Bm25:
    """Edge's own analyzer with the settings of `_text_index(language)`: its sparse vector's indices are the
    hashes of the tokens that field's index stores, so two words count as one term exactly when the index
    makes one token of them (folding, stemming and all; tests/engine/test_query_tf.py checks it on words)."""
    stemmer = LANGUAGES[language]
    return Bm25(
        Bm25Config(
            tokenizer=TokenizerType.Word,
            lowercase=True,
            ascii_folding=True,
            stopwords=StopwordsSet(),
            stemmer=SnowballParams(stemmer) if stemmer is not None else DisabledStemmer(),
        )
    )


# The pieces the Word tokenizer cuts text into: runs of what Rust's `char::is_alphanumeric` keeps (Unicode
# Alphabetic or Numeric). Not Python's `[^\W_]`: it splits the combining letters of OCR'd German ("Voͤrse", U+0364),
# which Qdrant keeps in the word; a chunk of such words had another length here, and another BM25 score.
_WORD_PIECE = regex.compile(r"[\p{Alphabetic}\p{N}]+")


def query_terms(text: str, language: str) -> list[tuple[str, int]]:
    """The terms of a query as the text index of `language` analyses them, in order of first occurrence: each
    term's first surface word and how many times the query holds it ("Strikes strike" is one English term,
    twice). A word the analyzer drops is left out."""
    analyzer = _analyzer(language)
    counts: dict[tuple[int, ...], list] = {}
    for word in _WORD_PIECE.findall(text):
        token = tuple(analyzer.embed_query(word).indices)
        if token:
            counts.setdefault(token, [word, 0])[1] += 1
    return [(word, n) for word, n in counts.values()]


def token_ids(text: str, language: str) -> list[int]:
    """The tokens the text index of `language` makes of `text`, in order, each as the analyzer's id of it (a hash
    of the token): two words are one token exactly when the index makes one token of them. What a client that
    cannot analyse like the index (qdrant-client's local mode, `engine/qdrant_server.py`) indexes instead."""
    analyzer = _analyzer(language)
    return [i for word in _WORD_PIECE.findall(text) for i in analyzer.embed_query(word).indices]


class QdrantEdgeEngine:
    """A Qdrant Edge shard in `path`. `dim=None` makes a lexical-only index (no dense vectors)."""

    # The least first depth of a query with repeats (`_counted`); a class attribute a benchmark may set.
    query_tf_depth: int = QUERY_TF_DEPTH

    def __init__(
        self,
        path: Path,
        dim: int | None,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        query_tf: bool = False,
        segment_chunks: int = SEGMENT_CHUNKS,
        segments: int = SEGMENTS,
    ):
        self.path = Path(path)
        self.dim = dim
        self.segment_chunks = segment_chunks  # merges stop there, and go on while there are more than `segments`
        self.segments = segments  # (see _optimizers); a writer's settings
        # Whether BM25 counts a repeated query word (`retrieval.query_tf`; False: once, as Edge's TextQuery
        # alone does). benchmarks/bm25_query_tf.py measures what counting gains and costs.
        self.query_tf = query_tf
        self._bm25 = _Bm25Params(k=k1, b=b)
        if (self.path / "segments").exists():
            self._shard = EdgeShard.load(str(self.path))  # no config: a reader must not write the shard's files
            self._checked = False  # whether this process set the optimizer settings (its first write does)
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            self._shard = EdgeShard.create(str(self.path), self._config(dense=False))
            self._create_indexes()
            self._checked = True
        self._for_dense = False  # whether the optimizer settings are those of a shard holding dense vectors
        self._fields: dict[str, int] | None = None  # language field → its chunks (BM25's N), from the facet
        self._dfs: dict[tuple[str, str], int] = {}  # (field, word) → chunks holding the word's token
        # Text indexes are made when a language's first chunk arrives: each one maps a 32 MiB page file that
        # stays resident, so creating all ten up front cost ~130 MiB of RSS for languages a collection lacks.
        self._text_indexes = {k for k in self._shard.info().payload_schema if k.startswith("text_")}
        self._unsealed = 0  # points written since the last optimize

    def _config(self, *, dense: bool) -> EdgeConfig:
        vectors = None
        if self.dim:
            vectors = {DENSE: EdgeVectorParams(size=self.dim, distance=Distance.Cosine, memory=Memory.Cold)}
        return EdgeConfig(
            vectors=vectors,
            sparse_vectors={SEAL: EdgeSparseVectorParams()},
            optimizers=EdgeOptimizersConfig(
                **_optimizers(self.dim if dense else None, self.segment_chunks, self.segments)
            ),
        )

    def _create_indexes(self) -> None:
        for key in ("doc_id", "corpus", "language"):
            self._shard.update(UpdateOperation.create_field_index(key, _keyword_index()))
        for key in ("date_start", "date_end"):
            self._shard.update(UpdateOperation.create_field_index(key, _datetime_index()))

    def _prepare_for_writes(self, dense: bool = False) -> None:
        """Before a write (`dense`: one that brings dense vectors): the optimizer settings for what the shard
        holds. They are taken at load only, so the shard is reloaded with them (this process is the writer, so
        it may write them); readers never get here."""
        if self._checked and (self._for_dense or not dense or not self.dim):
            return
        persisted = json.loads((self.path / "edge_config.json").read_text(encoding="utf-8"))
        has_dense = dense or bool(self.dim and self._shard.count(CountRequest(exact=True, filter=_WITH_DENSE)))
        wanted = _optimizers(self.dim if has_dense else None, self.segment_chunks, self.segments)
        if {k: (persisted.get("optimizers") or {}).get(k) for k in wanted} != wanted:
            self._shard.close()
            self._shard = EdgeShard.load(str(self.path), self._config(dense=has_dense))
        self._checked = True
        self._for_dense = has_dense

    def _written(self, points: int) -> None:
        """Seal the appendable segment once it holds `SEAL_EVERY` points written since the last optimize."""
        self._unsealed += points
        if self._unsealed >= SEAL_EVERY:
            self.optimize()

    # -- writes ---------------------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[IndexedChunk], vectors: np.ndarray | None) -> None:
        if vectors is not None and len(vectors) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        self._prepare_for_writes(dense=vectors is not None and bool(len(chunks)))
        for field in sorted({text_field(c.language) for c in chunks} - self._text_indexes):
            self._shard.update(UpdateOperation.create_field_index(field, _text_index(field.removeprefix("text_"))))
            self._text_indexes.add(field)
        written = []
        for i, c in enumerate(chunks):
            vector: dict[str, NamedVector] = {SEAL: _SEAL_VECTOR}
            if vectors is not None and self.dim:
                vector[DENSE] = vectors[i].tolist()
            written.append(Point(point_id(c.chunk_id), vector, chunk_payload(c)))
        if written:
            self._shard.update(UpdateOperation.upsert_points(written))
            self._fields = None  # chunk counts changed (and an upsert may replace a chunk: not a sum)
            self._dfs.clear()
            self._written(len(written))

    def set_vectors(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        if not self.dim:
            raise ValueError("this index has no dense vectors")
        self._prepare_for_writes(dense=bool(len(chunk_ids)))
        self._shard.update(
            UpdateOperation.update_vectors(
                [PointVectors(point_id(cid), {DENSE: v.tolist()}) for cid, v in zip(chunk_ids, vectors, strict=True)]
            )
        )
        # A point of a sealed segment that changes moves to the appendable one: it counts as written.
        self._written(len(chunk_ids))

    def delete(self, doc_ids: Sequence[str]) -> None:
        if doc_ids:
            self._prepare_for_writes()
            self._shard.update(
                UpdateOperation.delete_points_by_filter(
                    Filter(must=[FieldCondition("doc_id", match=MatchAny(list(doc_ids)))])
                )
            )
            self._fields = None
            self._dfs.clear()

    def flush(self) -> None:
        self._shard.flush()

    def optimize(self) -> None:
        """Seal what the writes since the last call left appendable (when it weighs the indexing threshold), and
        merge small segments; see the module docstring."""
        self._prepare_for_writes()
        if self._shard.optimize():
            # A segment the optimizer built keeps its text index in this process's RAM (~8 KB a chunk, for as
            # long as the shard stays open) instead of mapping it from its files: reopened, a long ingest holds
            # only what it is writing. A load of sealed segments takes a fraction of a second.
            self._shard.flush()
            self._shard.close()
            _release_freed_memory()
            self._shard = EdgeShard.load(str(self.path))
        self._unsealed = 0
        _release_freed_memory()

    def close(self) -> None:
        self._shard.close()

    def layout(self) -> dict[str, int]:
        return segment_layout(self.path)

    def count_with_vectors(self) -> int:
        """How many points carry a dense vector (what `tracerag migrate` checks)."""
        return int(self._shard.count(CountRequest(exact=True, filter=_WITH_DENSE))) if self.dim else 0

    def scroll_points(self, offset: str | None, limit: int) -> tuple[list[StoredPoint], str | None]:
        """Up to `limit` points from `offset` (None: the first), in id order, with their dense vector and payload,
        and the offset of the next page (None after the last): a collection moved to another engine as it is
        stored, without re-embedding (`tracerag migrate`)."""
        request = ScrollRequest(
            offset=None if offset is None else uuid.UUID(offset),
            limit=limit,
            with_payload=True,
            with_vector=[DENSE] if self.dim else False,
        )
        records, after = self._shard.scroll(request)
        found = []
        for r in records:
            vectors = r.vector if isinstance(r.vector, dict) else {}
            dense = vectors.get(DENSE)
            vector = np.asarray(dense, dtype=np.float32).tolist() if isinstance(dense, list) else None
            found.append(StoredPoint(str(r.id), vector, dict(r.payload or {})))
        return found, None if after is None else str(after)

    # -- reads ----------------------------------------------------------------------------------------

    def _field_sizes(self) -> dict[str, int]:
        """Language fields that hold at least one chunk, with their chunk counts (BM25's N in that field). Found
        from the languages stored, mapped as `upsert` maps them ("la", "pl" → text_xx; "fr-ch" → text_fr)."""
        if self._fields is None:
            found = self._shard.facet(FacetRequest("language", limit=100_000, exact=True))
            sizes: dict[str, int] = {}
            for hit in found.hits:
                if hit.count > 0:  # a language whose chunks were all deleted may still be listed, at 0
                    field = text_field(str(hit.value))
                    sizes[field] = sizes.get(field, 0) + int(hit.count)
            self._fields = sizes
        return self._fields

    def _present_fields(self) -> list[str]:
        """Language fields that hold at least one chunk: only those are queried."""
        return sorted(self._field_sizes())

    def _chunks_with(self, field: str, word: str) -> int:
        """How many chunks of `field` hold the token `word` analyses to (its BM25 document frequency).

        Edge's estimate, read off the text index's posting list: an exact count walks the list and checks every
        point (1 ms a word at 100k chunks, 0.04 ms estimated; it grows with the collection, and a query asks it for
        every word in every language field). On a shard written once the two are equal (tests/engine/
        test_field_stats.py); after chunks are replaced (vectors added later, documents updated) the estimate may
        count a replaced chunk's old version until the optimizer drops it: 186 of 600 words 1-2% higher on a
        100k-chunk collection embedded after its ingest. It only rescales a field's scores (retrieval/fields.py)."""
        key = (field, word)
        if key not in self._dfs:
            if len(self._dfs) >= _DF_CACHE_SIZE:
                self._dfs.clear()
            condition = FieldCondition(field, match=MatchText(word))
            self._dfs[key] = int(self._shard.count(CountRequest(exact=False, filter=Filter(must=[condition]))))
        return self._dfs[key]

    def field_stats(self, text: str) -> dict[str, FieldStats]:
        """Each present field's N and the query's terms as that field analyses them (`query_terms`), each with
        its document frequency in the field and how many times `bm25` counts it (`query_tf`)."""
        stats: dict[str, FieldStats] = {}
        for field, size in sorted(self._field_sizes().items()):
            terms = query_terms(text, field.removeprefix("text_"))
            stats[field.removeprefix("text_")] = FieldStats(
                size,
                tuple(TermStats(word, n if self.query_tf else 1, self._chunks_with(field, word)) for word, n in terms),
            )
        return stats

    def _per_field(self, requests: dict[str, QueryRequest]) -> FieldHits:
        """One query per text field, run as a batch; each field's hits best first, ties by chunk id (so the
        order does not depend on where the engine stored a point)."""
        if not requests:
            return {}
        found: FieldHits = {}
        results = self._shard.query_batch(QueryBatchRequest(list(requests.values())))
        for field, points in zip(requests, results, strict=True):
            hits = [_hit(p) for p in points]
            if hits:
                found[field.removeprefix("text_")] = sorted(hits, key=lambda h: (-h.score, h.chunk_id))
        return found

    def _lexical(self, text: str, k: int, conditions: Callable[[str], list]) -> FieldHits:
        """BM25 of `text` in every field, `conditions(field)` the filter's; a word the query repeats counted as
        often as it is repeated. A field where the query repeats nothing is one TextQuery (all of them in one
        batch); one where it does is `_counted`. Every k up to `LEAST_LIMIT` is asked of Edge as that limit and
        cut, so that a shorter k is a prefix of a longer one, scores and all (see `LEAST_LIMIT`)."""
        limit = max(k, LEAST_LIMIT)
        plain: dict[str, QueryRequest] = {}
        counted: dict[str, list[tuple[int, str]]] = {}
        for f in self._present_fields():
            levels = _repeat_levels(query_terms(text, f.removeprefix("text_"))) if self.query_tf else []
            if not needs_counting(levels):
                query = TextQuery(f, text, self._bm25)
                plain[f] = QueryRequest(limit=limit, query=query, filter=_must(conditions(f)), with_payload=_PAYLOAD)
            else:
                counted[f] = levels
        found = self._per_field(plain)
        for f, levels in counted.items():
            hits = self._counted(f, levels, limit, conditions(f))
            if hits:
                found[f.removeprefix("text_")] = hits
        return {field: found[field][:k] for field in sorted(found)}

    def _counted(self, field: str, levels: list[tuple[int, str]], k: int, conditions: list) -> list[EngineHit]:
        """BM25 with query term frequency over one field, exact (`engine/lexical.py`'s `counted_top`)."""

        def search(queries: list[LevelQuery]) -> list[list[Scored]]:
            # ids and scores only: reading the payload of a thousand points costs ten times their scoring
            batch = []
            for q in queries:
                among: list[HasIdCondition] = []
                if q.among is not None:
                    only: set[PointId] = set(q.among)
                    among.append(HasIdCondition(only))
                query = TextQuery(field, q.words, self._bm25)
                batch.append(QueryRequest(limit=q.limit, query=query, filter=_must([*conditions, *among])))
            results = self._shard.query_batch(QueryBatchRequest(batch))
            return [[(str(p.id), p.score) for p in found] for found in results]

        top = counted_top(levels, k, self.query_tf_depth, search)
        if not top:
            return []
        ids: list[PointId] = [pid for pid, _ in top]
        payloads = {str(r.id): r.payload for r in self._shard.retrieve(ids, _PAYLOAD, False)}
        hits = [_engine_hit(pid, payloads.get(pid), score) for pid, score in top]
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id))

    def bm25(self, text: str, k: int, filter: model.Filter | None = None) -> FieldHits:
        return self._lexical(text, k, lambda field: self._conditions(filter))

    def phrase(self, text: str, k: int, filter: model.Filter | None = None) -> FieldHits:
        """Chunks containing the words of `text` in order (after folding and stemming), ranked by BM25."""
        return self._lexical(
            text, k, lambda field: self._conditions(filter, extra=[FieldCondition(field, match=MatchPhrase(text))])
        )

    def dense(self, vector: np.ndarray, k: int, filter: model.Filter | None = None) -> list[EngineHit]:
        if not self.dim:
            return []
        request = QueryRequest(
            limit=k,
            query=Query.Nearest(np.asarray(vector, dtype=np.float32).tolist(), using=DENSE),
            filter=self._filter(filter),
            with_payload=_PAYLOAD,
            params=SearchParams(hnsw_ef=max(k, DENSE_EF)),
        )
        return [_hit(p) for p in self._shard.query(request)]

    def count(self, filter: model.Filter | None = None) -> int:
        return int(self._shard.count(CountRequest(exact=True, filter=self._filter(filter))))

    def _filter(self, flt: model.Filter | None) -> Filter | None:
        return _must(self._conditions(flt))

    def _conditions(self, flt: model.Filter | None, extra: list | None = None) -> list:
        return list(extra or []) + [_condition(c) for c in filter_conditions(flt)]


def _condition(c: Condition) -> FieldCondition:
    """A filter condition (`engine/points.py`) as Edge's."""
    if isinstance(c, AnyOf):
        return FieldCondition(c.key, match=MatchAny(list(c.values)))
    if isinstance(c, Equals):
        return FieldCondition(c.key, match=MatchValue(c.value))
    if isinstance(c, Within):
        return FieldCondition(c.key, range=RangeDateTime(gte=c.gte, lte=c.lte))
    return FieldCondition(c.key, match=MatchPhrase(c.text))


def _must(conditions: list) -> Filter | None:
    return Filter(must=conditions) if conditions else None


def _hit(point: ScoredPoint) -> EngineHit:
    """A scored point as an engine hit; every query here asks for the ids in the payload (`_PAYLOAD`)."""
    return _engine_hit(point.id, point.payload, point.score)


def _engine_hit(point_id: object, payload: dict | None, score: float) -> EngineHit:
    if payload is None:
        raise RuntimeError(f"qdrant-edge returned point {point_id} without the payload it was asked for")
    return EngineHit(payload["chunk_id"], payload["doc_id"], float(score))
