"""The embedded engine: tantivy for the words (`engine/text_index.py`, one index per language), plain files and
faiss for the vectors (`engine/vector_index.py`), in the collection's `index/` folder.

Why these (benchmarks/results/engine_choice.md): both are libraries made for the job, both let one process write
while any number of processes read the same files (tantivy's folder takes one writer and many readers; the vector
segments are immutable files named by an atomically replaced state), so no process has to serve the index to the
others; and both are as fast as the stack a user would wire up by hand, because they are that stack.

A reader sees each commit of the writer: tantivy's meta.json and the vectors' state.json change at a flush, and a
search looks at them first (a stat each). The writer sees its own writes: a read in the writing process commits
what it wrote first. Filters are exact on both sides: tantivy clauses on the words, a mask over the segments' rows
on the vectors (corpus, language, document and days are columns there; a structured field is asked of tantivy).
"""

from __future__ import annotations

import datetime as dt
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tracerag import model
from tracerag.engine import EngineHit, FieldHits, FieldStats, IndexedChunk
from tracerag.engine.text_index import Clauses, LanguageIndex, clauses, field_stats_of, language_of, query_terms
from tracerag.engine.vector_index import HNSW_EF, VectorIndex, key_of

TEXT = "text"  # the language indexes, one folder each
VECTORS = "vectors"
KIND = "tantivy"  # how collection.toml names this engine


def day(iso: str) -> int:
    """An ISO day as a day number (days since 0001-01-01), the unit of the date columns."""
    return dt.date.fromisoformat(iso[:10]).toordinal()


def is_embedded_index(path: Path) -> bool:
    """Whether `path` holds this engine's index (what a reader checks before opening)."""
    return (Path(path) / TEXT).is_dir()


class EmbeddedEngine:
    """The index in `path`. `dim=None`: words only. `writer=False`: a reader (any write raises)."""

    def __init__(
        self,
        path: Path,
        dim: int | None,
        *,
        query_tf: bool = True,
        writer: bool = False,
        text: Path | None = None,
        dense_ef: int = HNSW_EF,
    ):
        self.path = Path(path)
        self.dim = dim
        self.query_tf = query_tf
        self.writer = writer
        self.text = Path(text) if text is not None else self.path / TEXT  # a reader may search a copy of it
        if writer:
            self.text.mkdir(parents=True, exist_ok=True)
        elif not self.text.is_dir():
            raise FileNotFoundError(f"{self.path}: no index here")
        self._languages: dict[str, LanguageIndex] = {}
        self._listed: tuple[int, int] | None = None
        self._unready: set[str] = set()  # language folders without an index yet
        self._lock = threading.Lock()
        self.vectors = VectorIndex(self.path / VECTORS, dim, create=writer, ef=dense_ef) if dim else None

    # -- the language indexes -------------------------------------------------------------------------

    def _present(self) -> list[LanguageIndex]:
        """The language indexes that exist (another process may have made one since: the folder's stamp says).
        Threads of one process share the engine: the list is built whole under a lock, then published."""
        try:
            st = os.stat(self.text)
        except FileNotFoundError:
            return []
        stamp = (st.st_mtime_ns, st.st_nlink)
        if stamp != self._listed or self._unready:
            with self._lock:
                if stamp != self._listed or self._unready:
                    languages, unready = dict(self._languages), set()
                    for entry in sorted(os.scandir(self.text), key=lambda e: e.name):
                        if entry.name in languages or not entry.is_dir():
                            continue
                        if (Path(entry.path) / "meta.json").exists():
                            languages[entry.name] = LanguageIndex(Path(entry.path), entry.name, create=False)
                        else:  # being made by the writer: looked at again at the next read
                            unready.add(entry.name)
                    self._languages, self._unready, self._listed = languages, unready, stamp
        languages = self._languages
        return [languages[k] for k in sorted(languages)]

    def _language(self, language: str) -> LanguageIndex:
        self._present()
        if language not in self._languages:
            self._languages[language] = LanguageIndex(self.text / language, language, create=True)
        return self._languages[language]

    def _readable(self) -> list[LanguageIndex]:
        """What a search reads: in the writing process, its writes committed first."""
        if self.writer:
            self.flush()
        return self._present()

    # -- writes ---------------------------------------------------------------------------------------

    def _check_writer(self) -> None:
        if not self.writer:
            raise PermissionError(f"{self.path}: opened for reading")

    def upsert(self, chunks: Sequence[IndexedChunk], vectors: np.ndarray | None) -> None:
        self._check_writer()
        if vectors is not None and len(vectors) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if not chunks:
            return
        spans = [(day(c.date_start), day(c.date_end or c.date_start)) if c.date_start else None for c in chunks]
        keys = [key_of(c.chunk_id) for c in chunks]
        groups: dict[str, list[int]] = {}
        for i, c in enumerate(chunks):
            groups.setdefault(language_of(c.language), []).append(i)
        for other in self._present():  # a chunk that moved to another language leaves its old index
            moved = [chunks[i].chunk_id for lang, rows in groups.items() if lang != other.language for i in rows]
            if moved:
                other.delete_chunks(moved)
        for lang, rows in groups.items():
            index = self._language(lang)
            index.add([chunks[i] for i in rows], [keys[i] for i in rows], [spans[i] for i in rows])
        if self.vectors is not None:
            if vectors is not None:
                self.vectors.add(
                    [c.chunk_id for c in chunks],
                    [c.doc_id for c in chunks],
                    [c.corpus for c in chunks],
                    [c.language or "xx" for c in chunks],
                    spans,
                    vectors,
                )
            else:  # a chunk written again without a vector has none (as a replaced point would)
                self.vectors.delete_keys(keys)

    def set_vectors(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        self._check_writer()
        if self.vectors is None:
            raise ValueError("this index has no dense vectors")
        wanted = list(chunk_ids)
        stored: dict[str, dict[str, Any]] = {}
        for index in self._readable():
            for doc in index.matching(clauses(chunk_ids=wanted)):
                stored[doc["chunk_id"][0]] = doc
        rows = [i for i, cid in enumerate(wanted) if cid in stored]
        if not rows:
            return
        docs = [stored[wanted[i]] for i in rows]
        self.vectors.add(
            [wanted[i] for i in rows],
            [d["doc_id"][0] for d in docs],
            [max(d["corpus"], key=len) for d in docs],
            [d["language"][0] for d in docs],
            [(d["ds"][0], d["de"][0]) if d.get("ds") else None for d in docs],
            np.asarray(vectors)[rows],
        )

    def delete(self, doc_ids: Sequence[str]) -> None:
        self._check_writer()
        if not doc_ids:
            return
        for index in self._present():
            index.delete_documents(doc_ids)
        if self.vectors is not None:
            self.vectors.delete_docs(doc_ids)

    def flush(self) -> None:
        """Commit every language index, those that gained chunks first: the indexes commit one after the other,
        and a chunk that moved language is then, for a reader looking in between, in both (a search keeps it
        once), never in neither."""
        for index in sorted(self._languages.values(), key=lambda i: not i.gained):
            index.commit()
        if self.vectors is not None and self.writer:
            self.vectors.flush()

    def optimize(self) -> None:
        self._check_writer()
        for index in self._present():
            index.merge()
        if self.vectors is not None:
            self.vectors.optimize()

    def close(self) -> None:
        if self.writer:
            self.flush()
        for index in self._languages.values():
            index.close()
        self._languages = {}

    # -- reads ----------------------------------------------------------------------------------------

    def field_stats(self, text: str) -> dict[str, FieldStats]:
        found = {}
        for index in self._readable():
            if index.chunks():
                found[index.language] = field_stats_of(index, text, self.query_tf)
        return found

    def _lexical(self, text: str, k: int, flt: model.Filter | None, phrase: bool) -> FieldHits:
        where = _clauses(flt)
        found: FieldHits = {}
        for index in self._readable():
            terms = query_terms(text, index.language)
            if not self.query_tf:
                terms = [(token, word, 1) for token, word, _ in terms]
            require = index.phrase_query(text) if phrase else None
            if phrase and require is None:
                continue
            hits = index.search(terms, k, where, require)
            if hits:
                found[index.language] = hits
        return found

    def bm25(self, text: str, k: int, filter: model.Filter | None = None) -> FieldHits:
        return self._lexical(text, k, filter, phrase=False)

    def phrase(self, text: str, k: int, filter: model.Filter | None = None) -> FieldHits:
        """Chunks holding the words of `text` in order (after folding and stemming), ranked by BM25."""
        return self._lexical(text, k, filter, phrase=True)

    def dense(self, vector: np.ndarray, k: int, filter: model.Filter | None = None) -> list[EngineHit]:
        if self.vectors is None:
            return []
        if self.writer:
            self.flush()
        admit = None if filter is None or filter.is_empty() else self._admit(filter)
        return [EngineHit(c, d, s) for c, d, s in self.vectors.search(vector, k, admit)]

    def _admit(self, flt: model.Filter) -> Any:
        """The rows of a vector segment `flt` admits, as a mask over its `meta` columns."""
        assert self.vectors is not None
        vectors = self.vectors
        corpora = vectors.corpus_codes(flt.corpora) if flt.corpora else None
        languages = vectors.language_codes(flt.languages) if flt.languages else None
        docs = np.asarray([key_of(d) for d in flt.doc_ids], dtype=np.int64) if flt.doc_ids else None
        keys = None
        if flt.fields:  # structured fields are not columns of the vector segments: tantivy knows them
            where = clauses(fields=list(flt.fields))
            keys = np.asarray(sorted({k for index in self._present() for k in index.keys(where)}), dtype=np.int64)
        day_to = day(flt.date_to) if flt.date_to else None
        day_from = day(flt.date_from) if flt.date_from else None

        def admit(meta: np.ndarray) -> np.ndarray:
            mask = np.ones(len(meta), dtype=bool)
            if corpora is not None:
                mask &= np.isin(meta["corpus"], corpora)
            if languages is not None:
                mask &= np.isin(meta["lang"], languages)
            if docs is not None:
                mask &= np.isin(meta["doc"], docs)
            if keys is not None:
                mask &= np.isin(meta["key"], keys)
            if day_to is not None:
                mask &= meta["ds"] <= day_to
            if day_from is not None:
                mask &= meta["de"] >= day_from
            return mask

        return admit

    def count(self, filter: model.Filter | None = None) -> int:
        where = _clauses(filter)
        return sum(index.count(where) for index in self._readable())

    def chunk_ids(self) -> list[str]:
        """Every chunk id the words' indexes hold, once per chunk held (a check that nothing is lost or doubled)."""
        return [doc["chunk_id"][0] for index in self._readable() for doc in index.matching(clauses())]

    def count_with_vectors(self) -> int:
        return self.vectors.count() if self.vectors is not None else 0


def _clauses(flt: model.Filter | None) -> Clauses:
    if flt is None or flt.is_empty():
        return clauses()
    return clauses(
        corpora=flt.corpora,
        languages=flt.languages,
        doc_ids=flt.doc_ids,
        day_to=day(flt.date_to) if flt.date_to else None,
        day_from=day(flt.date_from) if flt.date_from else None,
        fields=list(flt.fields),
    )
