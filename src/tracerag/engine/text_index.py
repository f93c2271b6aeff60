"""The embedded engine's lexical side: one tantivy index per language, each with its own analyser.

Why one index per language and not one field per language in one index: tantivy's BM25 takes N and the average
length from the whole index, so a French chunk's score would depend on how many German chunks the collection holds.
One index per language gives each language field its own N, document frequencies and average length, the BM25 of
a per-language text index that `retrieval/fields.py` puts on one scale (`FieldHits`, `field_stats`).

The analyser of every language: runs of letters or digits (tantivy's `simple` tokenizer splits on what Rust's
`char::is_alphanumeric` does not keep, so numbers are tokens and combining letters stay in their word), lowercase,
ASCII folding ("grève" and "greve" meet), the language's Snowball stemmer (`points.STEMMERS`; "xx", every other
language: none), no stopword list (BM25's IDF discounts function words; removing them cost known-item search over
OCR, where a quoted span is mostly function words). The analyser is not stored by tantivy: every open registers
it again under the name the schema gives.

A word the query repeats counts as often as it is repeated (linear query term frequency): each distinct term is one
clause of a boolean query, boosted by its count. Filters are clauses scored 0, so a score is BM25 alone.

tantivy allows one writer and any number of readers in any processes: a reader opens the folder and sees each
commit (`reload` when meta.json changed). A reader must create a lock file in the folder, so a folder this user
cannot write is read from a private copy (`engine/private_copy.py`).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex
import tantivy

from tracerag.engine import EngineHit, FieldStats, IndexedChunk, TermStats
from tracerag.engine.points import STEMMERS, corpus_path

ANALYSER = "trace_text"  # the name the schema gives the text field's analyser (registered at every open)
WRITER_HEAP = 64_000_000  # bytes of RAM each language's writer buffers before it writes a segment
META = "meta.json"  # tantivy's list of committed segments: its change is a commit to see
DF_CACHE_SIZE = 200_000  # document frequencies kept per index until its next commit (an eval's queries share words)
# The pieces the tokenizer cuts text into: runs of what Rust's `char::is_alphanumeric` keeps (Unicode Alphabetic
# or Numeric). Not Python's `[^\W_]`: it splits the combining letters of OCR'd German ("Voͤrse", U+0364).
_WORD_PIECE = regex.compile(r"[\p{Alphabetic}\p{N}]+")
# tantivy reports a failed write as "an index writer was killed (io::Error most likely)", without the error: with
# less free space than this in the index's folder, it is taken for a full disk (OSError ENOSPC, naming the folder).
LOW_SPACE = 64 * 2**20


def language_of(language: str | None) -> str:
    """The index a chunk in `language` goes to: "fr-ch" → "fr", "la" → "xx" (every language without a stemmer)."""
    lang = (language or "").lower()[:2]
    return lang if lang in STEMMERS else "xx"


@functools.cache
def analyser(language: str) -> Any:
    """The text analyser of `language`'s index (see the module docstring)."""
    builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    builder = builder.filter(tantivy.Filter.lowercase()).filter(tantivy.Filter.ascii_fold())
    stemmer = STEMMERS[language]
    if stemmer is not None:
        builder = builder.filter(tantivy.Filter.stemmer(stemmer))
    return builder.build()


@functools.lru_cache(maxsize=100_000)
def _token(language: str, word: str) -> str | None:
    found = analyser(language).analyze(word)
    return found[0] if found else None


def query_terms(text: str, language: str) -> list[tuple[str, str, int]]:
    """The terms of `text` as `language`'s index analyses them, in order of first occurrence: (token, first
    surface word, count). "Strikes strike" is one English term, twice."""
    counts: dict[str, list] = {}
    for word in _WORD_PIECE.findall(text):
        token = _token(language, word)
        if token:
            counts.setdefault(token, [word, 0])[1] += 1
    return [(token, word, n) for token, (word, n) in counts.items()]


def _schema() -> Any:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("doc_id", stored=True, tokenizer_name="raw")
    builder.add_text_field("corpus", stored=True, tokenizer_name="raw")  # the corpus and its parents
    builder.add_text_field("language", stored=True, tokenizer_name="raw")
    builder.add_text_field("field", tokenizer_name="raw")  # each structured field as "key\x1fvalue"
    builder.add_integer_field("ds", stored=True, indexed=True, fast=True)  # first day, days since 0001-01-01
    builder.add_integer_field("de", stored=True, indexed=True, fast=True)  # last day
    builder.add_integer_field("key", stored=True, fast=True)  # the chunk's key in the vector index
    builder.add_text_field("text", tokenizer_name=ANALYSER, index_option="position")
    return builder.build()


SCHEMA = _schema()


def field_term(key: str, value: Any) -> str:
    """A structured field's value as the one term the `field` field indexes ("genre", "news" → "genre\x1fnews")."""
    return f"{key}\x1f{value if isinstance(value, str) else repr(value)}"


@dataclass(frozen=True, slots=True)
class Clauses:
    """A filter as tantivy clauses (each scored 0), built once per search for every language index."""

    queries: tuple[Any, ...]

    @property
    def empty(self) -> bool:
        return not self.queries


def clauses(
    *,
    corpora: Sequence[str] = (),
    languages: Sequence[str] = (),
    doc_ids: Sequence[str] = (),
    chunk_ids: Sequence[str] = (),
    day_to: int | None = None,
    day_from: int | None = None,
    fields: Sequence[tuple[str, Any]] = (),
) -> Clauses:
    """Every condition must hold; a set of values means any of them."""
    s = SCHEMA
    found = []
    for name, values in (("corpus", corpora), ("language", languages), ("doc_id", doc_ids), ("chunk_id", chunk_ids)):
        if values:
            found.append(tantivy.Query.term_set_query(s, name, list(values)))
    # A document matches a date range when its own range overlaps it; an undated one has no day and never does.
    if day_to is not None:
        found.append(tantivy.Query.range_query(s, "ds", tantivy.FieldType.Integer, None, day_to))
    if day_from is not None:
        found.append(tantivy.Query.range_query(s, "de", tantivy.FieldType.Integer, day_from, None))
    for key, value in fields:
        found.append(tantivy.Query.term_query(s, "field", field_term(key, value)))
    return Clauses(tuple(tantivy.Query.const_score_query(q, 0.0) for q in found))


def _must(queries: Iterable[Any]) -> Any:
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, q) for q in queries])


class LanguageIndex:
    """One language's tantivy index in `path`: written by the one writer, read by anyone."""

    def __init__(self, path: Path, language: str, *, create: bool):
        self.path = path
        self.language = language
        if create:
            path.mkdir(parents=True, exist_ok=True)
            self.index = tantivy.Index(SCHEMA, path=str(path), reuse=True)
        else:
            self.index = tantivy.Index.open(str(path))
        self.index.register_tokenizer(ANALYSER, analyser(language))
        self._writer: Any = None
        self._dirty = False
        self._added: set[str] = set()  # chunk ids added since the last commit (a searcher does not see them yet)
        self._added_docs: set[str] = set()  # and their documents
        self._seen = self._meta_stamp()
        self._searcher: Any = None
        self._dfs: dict[str, int] = {}
        self._scored = 0  # BM25's N (`_read_scored_chunks`)

    # -- writes ---------------------------------------------------------------------------------------

    def writer(self) -> Any:
        if self._writer is None:
            try:
                self._writer = self.index.writer(WRITER_HEAP, 1)
            except ValueError as exc:
                raise self._failed(exc) from exc
        return self._writer

    def _failed(self, exc: Exception) -> Exception:
        """What a failed write was: a full disk (an OSError naming the folder, which the front doors explain), or
        tantivy's own error. The writer is dropped either way: tantivy kills it on an I/O error, and the next write
        makes a new one on the last commit."""
        self._writer = None
        self._dirty = False
        self._added, self._added_docs = set(), set()
        try:
            free = shutil.disk_usage(self.path).free
        except OSError:
            return exc
        if free < LOW_SPACE:
            return OSError(errno.ENOSPC, f"No space left on device ({free:,} bytes free)", str(self.path))
        return exc

    def holds(self, chunk_id: str) -> bool:
        """Whether the index may hold `chunk_id` (committed, or added since): only then does a write delete it
        first. A delete is a term looked up in every segment at the next commit, and an ingest's chunks are new."""
        if chunk_id in self._added:
            return True
        searcher = self._searcher or self.searcher()  # the writer's own last commit: no need to look for others'
        return bool(searcher.doc_freq("chunk_id", chunk_id))

    def add(self, chunks: Sequence[IndexedChunk], keys: Sequence[int], days: Sequence[tuple[int, int] | None]) -> None:
        w = self.writer()
        for c, key, span in zip(chunks, keys, days, strict=True):
            if self.holds(c.chunk_id):  # an upsert replaces a chunk of the same id
                w.delete_documents_by_term("chunk_id", c.chunk_id)
            self._added.add(c.chunk_id)
            self._added_docs.add(c.doc_id)
            doc = tantivy.Document()
            doc.add_text("chunk_id", c.chunk_id)
            doc.add_text("doc_id", c.doc_id)
            for corpus in corpus_path(c.corpus):
                doc.add_text("corpus", corpus)
            doc.add_text("language", c.language or "xx")
            for k, v in c.fields.items():
                doc.add_text("field", field_term(k, v))
            if span is not None:
                doc.add_integer("ds", span[0])
                doc.add_integer("de", span[1])
            doc.add_integer("key", key)
            doc.add_text("text", c.text)
            try:
                w.add_document(doc)
            except ValueError as exc:
                raise self._failed(exc) from exc
        self._dirty = True

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        """Delete every chunk of these documents (only those the index may hold: see `holds`)."""
        searcher = None
        for doc_id in doc_ids:
            if doc_id not in self._added_docs:
                searcher = searcher or self._searcher or self.searcher()
                if not searcher.doc_freq("doc_id", doc_id):
                    continue
            self.writer().delete_documents_by_term("doc_id", doc_id)
            self._dirty = True

    @property
    def gained(self) -> bool:
        """Whether chunks were added since the last commit."""
        return bool(self._added)

    def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        for chunk_id in chunk_ids:
            if self.holds(chunk_id):
                self.writer().delete_documents_by_term("chunk_id", chunk_id)
                self._dirty = True

    def commit(self) -> None:
        if self._dirty:
            try:
                self._writer.commit()
            except ValueError as exc:
                raise self._failed(exc) from exc
            self._dirty = False
            self._added, self._added_docs = set(), set()
            self.index.reload()
            self._searcher = None

    def merge(self) -> None:
        """Commit, then let the writer finish its merges (tantivy merges segments in the background as it goes)
        and let it go: a writer holds its heap until it is dropped."""
        self.commit()
        if self._writer is not None:
            writer, self._writer = self._writer, None
            try:
                writer.wait_merging_threads()
            except ValueError as exc:
                raise self._failed(exc) from exc
            self.index.reload()
            self._searcher = None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.commit()
        self._writer = None
        self._searcher = None

    # -- reads ----------------------------------------------------------------------------------------

    def _meta_stamp(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path / META)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def searcher(self) -> Any:
        """A searcher over the last commit, this process's or another's (meta.json changes at each commit)."""
        stamp = self._meta_stamp()
        if stamp != self._seen:
            self._seen = stamp
            self.index.reload()
            self._searcher = None
        if self._searcher is None:
            self._searcher = self.index.searcher()
            self._dfs = {}
            self._scored = self._read_scored_chunks()
        return self._searcher

    def _read_scored_chunks(self) -> int:
        """The N tantivy's BM25 scores with: every chunk of the committed segments, deleted ones included until a
        merge drops them (meta.json's `max_doc`s); the live count when meta.json cannot be read."""
        try:
            meta = json.loads((self.path / META).read_text(encoding="utf-8"))
            return sum(int(segment["max_doc"]) for segment in meta.get("segments", []))
        except (OSError, ValueError, KeyError, TypeError):
            return int(self._searcher.num_docs)

    def chunks(self) -> int:
        return int(self.searcher().num_docs)

    def scored_chunks(self) -> int:
        """BM25's N in this index: the chunks its scores count (see `_read_scored_chunks`)."""
        self.searcher()
        return self._scored

    def doc_freq(self, token: str) -> int:
        """How many chunks hold `token` as BM25 counts them (a replaced or deleted chunk counts until a merge drops
        it, as it does in the scores), kept until the next commit."""
        searcher = self.searcher()
        found = self._dfs.get(token)
        if found is None:
            found = int(searcher.doc_freq("text", token))
            if len(self._dfs) >= DF_CACHE_SIZE:
                self._dfs.clear()
            self._dfs[token] = found
        return found

    def search(self, terms: list[tuple[str, str, int]], k: int, flt: Clauses, require: Any = None) -> list[EngineHit]:
        """BM25 of the terms (each counted as given), among what `flt` admits and, given, what the query `require`
        matches (a phrase: it scores 0, BM25 ranks)."""
        if not terms:
            return []
        scored = [
            tantivy.Query.term_query(SCHEMA, "text", token, index_option="freq")
            if n == 1
            else tantivy.Query.boost_query(tantivy.Query.term_query(SCHEMA, "text", token, index_option="freq"), n)
            for token, _, n in terms
        ]
        query = (
            scored[0] if len(scored) == 1 else tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in scored])
        )
        extra = list(flt.queries)
        if require is not None:
            extra.append(tantivy.Query.const_score_query(require, 0.0))
        if extra:
            query = _must([query, *extra])
        searcher = self.searcher()
        found = searcher.search(query, k, count=False).hits
        hits = []
        for score, address in found:
            doc = searcher.doc(address)
            hits.append(EngineHit(doc["chunk_id"][0], doc["doc_id"][0], float(score)))
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id))

    def phrase_query(self, text: str) -> Any:
        """The chunks holding the words of `text` in order, after this index's analysis (None: no word)."""
        tokens = [t for t in (_token(self.language, w) for w in _WORD_PIECE.findall(text)) if t]
        if not tokens:
            return None
        if len(tokens) == 1:
            return tantivy.Query.term_query(SCHEMA, "text", tokens[0])
        words: list[str | tuple[int, str]] = list(tokens)
        return tantivy.Query.phrase_query(SCHEMA, "text", words)

    def count(self, flt: Clauses) -> int:
        searcher = self.searcher()
        if flt.empty:
            return int(searcher.num_docs)
        return int(searcher.search(_must(flt.queries), 1, count=True).count)

    def _admitted(self, flt: Clauses) -> list[Any]:
        """The addresses of every chunk `flt` admits, in this index's last commit."""
        total = self.count(flt)
        if not total:
            return []
        query = _must(flt.queries) if not flt.empty else tantivy.Query.all_query()
        return [address for _, address in self.searcher().search(query, total, count=False).hits]

    def matching(self, flt: Clauses) -> list[dict[str, Any]]:
        """Every chunk `flt` admits, as its stored fields (the vector index's filter on what it does not hold)."""
        searcher = self.searcher()
        return [searcher.doc(address).to_dict() for address in self._admitted(flt)]

    def keys(self, flt: Clauses) -> list[int]:
        """The vector keys of every chunk `flt` admits (a fast field: no stored document is read)."""
        found = self._admitted(flt)
        values = self.searcher().fast_field_values("key", found) if found else []
        return [int(k) for k in values if k is not None]


def field_stats_of(index: LanguageIndex, text: str, counted: bool) -> FieldStats:
    """The statistics `index`'s BM25 scores `text` with: retrieval rescales a field's scores by them
    (`retrieval/fields.py`), so they are tantivy's own, deleted chunks counted until a merge as in the scores
    (exact counts would make a field's scale disagree with its scores after a document is replaced)."""
    terms = query_terms(text, index.language)
    return FieldStats(
        index.scored_chunks(),
        tuple(TermStats(word, n if counted else 1, index.doc_freq(token)) for token, word, n in terms),
    )
