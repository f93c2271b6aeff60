"""The document store: SQLite, the collection's source of truth. The engine index can always be rebuilt
from it. Writes go through transactions, so a killed ingest leaves either the old or the new state of a
document, flagged `pending` until the engine has it too.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import numpy as np

from tracerag.errors import CollectionError, ReadOnlyError
from tracerag.ingest.alto_regions import BOXES, StoredBox
from tracerag.ingest.entities import EntityForm, EntityWork, StoredMention
from tracerag.ingest.language import DETECTED, LANGUAGE_SOURCE
from tracerag.ingest.ocr_quality import OcrQuality
from tracerag.model import Chunk, Document, Filter

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
  id TEXT PRIMARY KEY, corpus TEXT NOT NULL, title TEXT, date TEXT, date_start TEXT, date_end TEXT,
  language TEXT, source TEXT NOT NULL, text TEXT NOT NULL, fields TEXT NOT NULL, ocr_quality REAL,
  content_hash TEXT NOT NULL, state TEXT NOT NULL CHECK (state IN ('pending', 'indexed'))
);
CREATE INDEX IF NOT EXISTS documents_state ON documents(state);
CREATE TABLE IF NOT EXISTS chunks (
  id TEXT PRIMARY KEY, doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
  n INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL, index_text TEXT NOT NULL,
  text_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
CREATE INDEX IF NOT EXISTS chunks_text_hash ON chunks(text_hash);
-- One vector per distinct index text: repeated notices and re-ingested documents are embedded once. Vectors
-- outlive their chunks (a document changed back reuses them); the collection has a single model.
CREATE TABLE IF NOT EXISTS vectors (text_hash TEXT PRIMARY KEY, vector BLOB NOT NULL);
-- The text of a huge document (its documents.text is then ''), in parts of at most _PART_CHARS characters from
-- `start` to `stop`: written and read without one 200 MB value, and a cited span is read from its parts alone.
CREATE TABLE IF NOT EXISTS document_parts (
  doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE, n INTEGER NOT NULL,
  start INTEGER NOT NULL, stop INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (doc_id, n)
);
-- Named entities found in each chunk (ingest/entities.py), spans as offsets into the document's text; they go with
-- their chunk. `entity_chunks` marks the chunks looked at and by what (a pipeline, or the collection's gazetteer),
-- so that a chunk with no entity is not looked at again and an interrupted run resumes.
CREATE TABLE IF NOT EXISTS entity_chunks (
  chunk_id TEXT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE, finder TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entities (
  chunk_id TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  surface TEXT NOT NULL, label TEXT NOT NULL, folded TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entities_chunk ON entities(chunk_id);
CREATE INDEX IF NOT EXISTS entities_folded ON entities(folded);
-- The page box of each ALTO String by its character span in the document's text (ingest/alto_regions.py), in the
-- file's MeasurementUnit; `page` indexes the document's source["pages"]. A cited span's region is the union of the
-- boxes it overlaps, per page. Written with the document (its source keeps the pages, not the boxes).
CREATE TABLE IF NOT EXISTS string_boxes (
  doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE, start INTEGER NOT NULL, "end" INTEGER NOT NULL,
  page INTEGER NOT NULL, x REAL NOT NULL, y REAL NOT NULL, w REAL NOT NULL, h REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS string_boxes_doc ON string_boxes(doc_id, start);
-- Each document's OCR-quality estimate with its parts, and the certain OCR repairs its index text received
-- (ingest/ocr_quality.py, ingest/ocr_fixes.py; `fixes` a JSON object kind -> count). Apart from `documents`, whose
-- ocr_quality is what the source itself states and is part of the content hash.
CREATE TABLE IF NOT EXISTS ocr_estimates (
  doc_id TEXT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE, score REAL, lexicon_share REAL,
  garbage_rate REAL NOT NULL, words INTEGER NOT NULL, tokens INTEGER NOT NULL, language TEXT, lexicon TEXT,
  note TEXT, fixes TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS ocr_estimates_score ON ocr_estimates(score);
"""


_CHUNK_COLUMNS = 'id, doc_id, n, start, "end", index_text, text_hash'  # the fields of StoredChunk, in order
_CHUNK_COLUMNS_C = ", ".join(f"c.{col}" for col in _CHUNK_COLUMNS.split(", "))


@dataclass(frozen=True, slots=True)
class StoredChunk:
    id: str
    doc_id: str
    n: int
    start: int
    end: int
    index_text: str
    text_hash: str  # what its vector is stored under


@dataclass(frozen=True, slots=True)
class CorpusInfo:
    name: str
    documents: int
    date_min: str | None
    date_max: str | None
    languages: dict[str, int]
    # of `languages`, the documents whose language was detected at ingest (`tracerag.ingest.language`)
    languages_detected: dict[str, int] = field(default_factory=dict)


# Texts longer than this (characters) are stored in parts of this length (`document_parts`).
_PART_CHARS = 1 << 22


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class DocumentStore:
    """`read_only` opens the database without ever writing it: readers share a collection with a writer (they
    see its commits), and a collection on storage this user cannot write is readable at all. Only a writer sets
    the journal mode and creates the schema (`PRAGMA journal_mode=WAL` writes, and fails on read-only storage).
    """

    def __init__(self, path: Path, *, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self._parts_table: bool | None = None  # whether document_parts exists, once looked at
        self._local = threading.local()  # a reader's connection per thread (see `_db`)
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        if read_only:
            self._local.db = self._reader()  # opened here: a missing or unfinished store is said at once
            return
        # A generous busy timeout (readers' too, in `connect_read_only`): after a writer is killed, the next
        # connection recovers the WAL index, and another one may wait for that (readers never wait on a writer
        # otherwise).
        self._writer = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)  # explicit transactions only
        self._writer.execute("PRAGMA journal_mode=WAL")
        self._writer.execute("PRAGMA synchronous=NORMAL")
        self._writer.execute("PRAGMA foreign_keys=ON")
        self._writer.executescript(_SCHEMA)

    @property
    def _db(self) -> sqlite3.Connection:
        """The connection of this store for the calling thread. A writer has one (one thread writes). A reader has
        one per thread, so that a collection opened once can be searched from several threads (a connection is
        not to be shared between threads): each opens on first use, with the same read-only mode."""
        if not self.read_only:
            return self._writer
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._reader()
        return db

    def _reader(self) -> sqlite3.Connection:
        db = connect_read_only(self.path)
        with self._readers_lock:
            self._readers.append(db)
        return db

    def close(self) -> None:
        if not self.read_only:
            self._writer.close()
            return
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for db in readers:
            db.close()

    # -- writes ---------------------------------------------------------------------------------------

    def state_of(self, doc_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """doc id -> (content hash, state) for the ids already stored."""
        out: dict[str, tuple[str, str]] = {}
        for part in _batches(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            for row in self._db.execute(f"SELECT id, content_hash, state FROM documents WHERE id IN ({marks})", part):
                out[row[0]] = (row[1], row[2])
        return out

    def put_pending(self, items: Sequence[tuple[Document, str, tuple[str, str] | None]]) -> None:
        """Store documents as `pending`, replacing any older version and its chunks, in one transaction.

        items: (document, content hash, (date_start, date_end) or None). The chunks follow with `put_chunks`;
        a pending document's chunks are never trusted: an interrupted ingest redoes them from its stored text.
        """
        with self._transaction():
            for doc, digest, span in items:
                self._db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc.id,))
                self._db.execute("DELETE FROM document_parts WHERE doc_id = ?", (doc.id,))
                self._db.execute("DELETE FROM string_boxes WHERE doc_id = ?", (doc.id,))
                boxes = doc.source.get(BOXES) or ()  # in a table of their own: a page holds thousands of Strings
                source = {k: v for k, v in doc.source.items() if k != BOXES} if boxes else doc.source
                huge = len(doc.text) > _PART_CHARS
                self._db.execute(
                    "INSERT OR REPLACE INTO documents VALUES (?,?,?,?,?,?,?,?,?,?,?,?, 'pending')",
                    (
                        doc.id,
                        doc.corpus,
                        doc.title,
                        doc.date,
                        span[0] if span else None,
                        span[1] if span else None,
                        doc.language,
                        json.dumps(source, ensure_ascii=False),
                        "" if huge else doc.text,
                        json.dumps(doc.fields, ensure_ascii=False),
                        doc.ocr_quality,
                        digest,
                    ),
                )
                if boxes:
                    self._db.executemany(
                        "INSERT INTO string_boxes VALUES (?,?,?,?,?,?,?,?)", ((doc.id, *box[:7]) for box in boxes)
                    )
                if huge:
                    # Bound as one value, a 200 MB text cost 575 MB more (its UTF-8 form, which Python then keeps
                    # with the string for as long as it lives, and SQLite's copies); in parts, a part's worth.
                    self._db.executemany(
                        "INSERT INTO document_parts VALUES (?,?,?,?,?)",
                        (
                            (doc.id, n, i, min(i + _PART_CHARS, len(doc.text)), doc.text[i : i + _PART_CHARS])
                            for n, i in enumerate(range(0, len(doc.text), _PART_CHARS))
                        ),
                    )

    def put_chunks(self, chunks: Sequence[Chunk]) -> list[StoredChunk]:
        """Add chunks of pending documents, in one transaction: a huge document is written a sub-batch at a time."""
        stored = [
            StoredChunk(c.id, c.doc_id, c.n, c.start, c.end, c.index_text, text_hash(c.index_text)) for c in chunks
        ]
        with self._transaction():
            self._db.executemany(
                "INSERT INTO chunks VALUES (?,?,?,?,?,?,?)",
                [(c.id, c.doc_id, c.n, c.start, c.end, c.index_text, c.text_hash) for c in stored],
            )
        return stored

    def delete_chunks(self, doc_ids: Sequence[str]) -> None:
        """Forget the chunks of `doc_ids` (pending documents whose chunking is redone)."""
        with self._transaction():
            self._db.executemany("DELETE FROM chunks WHERE doc_id = ?", [(d,) for d in doc_ids])

    def put_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        """Store vectors by the hash of the index text they embed."""
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()],
            )

    def adopt_vectors(self, other: Path, dim: int) -> int:
        """Copy into this store the vectors of another store (made with the same model: the caller checks) for
        texts this one has none of; returns how many were new. Vectors are keyed by the index text's hash, so a
        vector is adopted only where the text is the same to the byte."""
        source = connect_read_only(other, frozenset({"vectors"}))
        added = 0
        try:
            rows = source.execute("SELECT text_hash, vector FROM vectors")
            while part := rows.fetchmany(1000):
                fit = [(h, blob) for h, blob in part if len(blob) == dim * 4]
                with self._transaction():
                    before = self._db.total_changes
                    self._db.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", fit)
                    added += self._db.total_changes - before
        finally:
            source.close()
        return added

    def vectors_by_hash(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The vectors already computed for these index texts."""
        out: dict[str, np.ndarray] = {}
        for part in _batches(list(set(hashes)), 500):
            marks = ",".join("?" * len(part))
            for h, blob in self._db.execute(
                f"SELECT text_hash, vector FROM vectors WHERE text_hash IN ({marks})", part
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def mark_indexed(self, doc_ids: Sequence[str]) -> None:
        with self._transaction():
            self._db.executemany("UPDATE documents SET state = 'indexed' WHERE id = ?", [(d,) for d in doc_ids])

    def delete(self, doc_ids: Sequence[str]) -> None:
        with self._transaction():
            self._db.executemany("DELETE FROM documents WHERE id = ?", [(d,) for d in doc_ids])

    def _transaction(self):
        if self.read_only:
            raise ReadOnlyError(f"{self.path} is open for reading: writing it needs the collection opened for writing")
        return _Transaction(self._db)

    # -- reads ----------------------------------------------------------------------------------------

    def indexed_digests(self) -> Iterator[tuple[str, str]]:
        """(id, content hash) of every indexed document, streamed: what a distributed ingest's workers are told, so
        that they prepare and embed only what changed."""
        yield from self._db.execute("SELECT id, content_hash FROM documents WHERE state = 'indexed'")

    def vector_hashes(self) -> Iterator[str]:
        """The text hash of every stored vector, streamed (a distributed ingest's workers embed only the others)."""
        for (h,) in self._db.execute("SELECT text_hash FROM vectors"):
            yield h

    def pending_ids(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT id FROM documents WHERE state = 'pending' ORDER BY id")]

    def chunks_of(self, doc_ids: Sequence[str]) -> list[StoredChunk]:
        out: list[StoredChunk] = []
        for part in _batches(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            out.extend(
                StoredChunk(*row)
                for row in self._db.execute(
                    f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE doc_id IN ({marks}) ORDER BY doc_id, n",
                    part,
                )
            )
        return out

    def vectors_of(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for part in _batches(list(chunk_ids), 500):
            marks = ",".join("?" * len(part))
            for cid, blob in self._db.execute(
                f"SELECT c.id, v.vector FROM chunks c JOIN vectors v USING (text_hash) WHERE c.id IN ({marks})", part
            ):
                out[cid] = np.frombuffer(blob, dtype=np.float32)
        return out

    _WITHOUT_VECTOR = "LEFT JOIN vectors v USING (text_hash) WHERE v.text_hash IS NULL"

    def chunks_without_vectors(self, limit: int, after: tuple[str, int] = ("", -1)) -> list[StoredChunk]:
        """Chunks whose text has no vector yet, in (doc_id, n) order from after `after` (keyset paging)."""
        return [
            StoredChunk(*row)
            for row in self._db.execute(
                f"SELECT {_CHUNK_COLUMNS_C} FROM chunks c {self._WITHOUT_VECTOR} "
                "AND (c.doc_id, c.n) > (?, ?) ORDER BY c.doc_id, c.n LIMIT ?",
                (*after, limit),
            )
        ]

    def chunks_with_texts(self, hashes: Iterable[str]) -> list[tuple[str, str]]:
        """(chunk id, text hash) of every chunk whose index text has one of `hashes`, in (doc_id, n) order: the
        chunks one computed vector serves."""
        out: list[tuple[str, str]] = []
        for part in _batches(list(dict.fromkeys(hashes)), 500):
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT id, text_hash FROM chunks WHERE text_hash IN ({marks}) ORDER BY doc_id, n", part
            )
            out.extend((str(r[0]), str(r[1])) for r in rows)
        return out

    def count_chunks(self, *, without_vectors: bool = False) -> int:
        query = (
            f"SELECT count(*) FROM chunks c {self._WITHOUT_VECTOR}"
            if without_vectors
            else "SELECT count(*) FROM chunks"
        )
        return int(self._db.execute(query).fetchone()[0])

    def has_vectors(self) -> bool:
        """Whether any stored chunk has a vector (the dense channel has something to search)."""
        row = self._db.execute("SELECT 1 FROM chunks c JOIN vectors v USING (text_hash) LIMIT 1").fetchone()
        return row is not None

    def count_documents(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM documents").fetchone()[0])

    def document_ids(self) -> list[str]:
        """The ids of the indexed documents, sorted (a seeded draw from them is then reproducible)."""
        return [row[0] for row in self._db.execute("SELECT id FROM documents WHERE state = 'indexed' ORDER BY id")]

    def get_documents(self, doc_ids: Sequence[str], *, text: bool = True) -> dict[str, Document]:
        """The documents of `doc_ids` that are stored; with `text=False` their metadata only (text ''): what a
        result list needs from a 200 MB document, whose cited spans come from `text_spans`."""
        out: dict[str, Document] = {}
        text_column = "text" if text else "''"
        for part in _batches(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            for row in self._db.execute(
                f"SELECT id, {text_column}, corpus, title, date, language, source, fields, ocr_quality "
                f"FROM documents WHERE id IN ({marks})",
                part,
            ):
                out[row[0]] = Document(
                    id=row[0],
                    text=row[1] or (self._huge_text(row[0]) if text else ""),
                    corpus=row[2],
                    title=row[3],
                    date=row[4],
                    language=row[5],
                    source=json.loads(row[6]),
                    fields=json.loads(row[7]),
                    ocr_quality=row[8],
                )
        return out

    def languages_of(self, doc_ids: Sequence[str]) -> dict[str, str | None]:
        """The stated or detected language of each stored document of `doc_ids` (None: neither)."""
        out: dict[str, str | None] = {}
        for part in _batches(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            for row in self._db.execute(f"SELECT id, language FROM documents WHERE id IN ({marks})", part):
                out[row[0]] = row[1]
        return out

    def _huge_text(self, doc_id: str) -> str:
        """The text of a document stored in parts ('' for one whose text is empty)."""
        if not self._has_parts():
            return ""
        parts = self._db.execute("SELECT text FROM document_parts WHERE doc_id = ? ORDER BY n", (doc_id,))
        return "".join(row[0] for row in parts)

    def _has_parts(self) -> bool:
        """Whether the store has `document_parts` (a store made before it, opened read-only, has not)."""
        if self._parts_table is None:
            found = self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'document_parts'").fetchone()
            self._parts_table = found is not None
        return self._parts_table

    def text_spans(self, spans: Iterable[tuple[str, int, int]]) -> dict[tuple[str, int, int], str]:
        """`document.text[start:end]` for each (doc_id, start, end); of a huge document only the parts a span falls
        in are read (a citation from a 200 MB document reads 4 MB, not 200). Missing documents are left out."""
        out: dict[tuple[str, int, int], str] = {}
        texts: dict[str, str | None] = {}  # a document's text, or None when it is in parts
        for doc_id, start, end in spans:
            if doc_id not in texts:
                # (not SQL substr(): SQLite's text functions stop at a NUL, which OCR text may hold)
                row = self._db.execute("SELECT text FROM documents WHERE id = ?", (doc_id,)).fetchone()
                if row is None:
                    continue
                texts[doc_id] = row[0] or None
            text = texts[doc_id]
            if text is not None:
                piece = text[start:end]
            elif self._has_parts():
                parts = self._db.execute(
                    "SELECT start, text FROM document_parts WHERE doc_id = ? AND start < ? AND stop > ? ORDER BY n",
                    (doc_id, end, start),
                )
                piece = "".join(part[max(0, start - first) : end - first] for first, part in parts)
            else:
                piece = ""
            out[(doc_id, start, end)] = piece
        return out

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        out: dict[str, StoredChunk] = {}
        for part in _batches(list(chunk_ids), 500):
            marks = ",".join("?" * len(part))
            for row in self._db.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", part):
                out[row[0]] = StoredChunk(*row)
        return out

    def boxes_in(self, doc_id: str, start: int, end: int) -> list[StoredBox]:
        """(page, x, y, w, h) of every String box of `doc_id` that overlaps `[start, end)`, in text order; none for
        a document without boxes or a store made before they were kept."""
        if not self._has_table("string_boxes"):
            return []
        rows = self._db.execute(
            'SELECT page, x, y, w, h FROM string_boxes WHERE doc_id = ? AND start < ? AND "end" > ? ORDER BY start',
            (doc_id, end, start),
        )
        return [(int(r[0]), float(r[1]), float(r[2]), float(r[3]), float(r[4])) for r in rows]

    def keeps_boxes(self) -> bool:
        """Whether any document of this store has String boxes (page regions can be given at all)."""
        if not self._has_table("string_boxes"):
            return False
        return self._db.execute("SELECT 1 FROM string_boxes LIMIT 1").fetchone() is not None

    def _has_table(self, name: str) -> bool:
        """Whether the store has table `name` (one made before it, opened read-only, has not)."""
        found = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return found.fetchone() is not None

    def documents_per_year(self, flt: Filter | None = None) -> dict[int | None, int]:
        """How many indexed documents `flt` admits in each year (a document's first year; None: undated), the
        corpus side of a search's time windows (`retrieval/window_share.py`). One grouped pass over the store."""
        conditions, args = _filter_sql(flt)
        rows = self._db.execute(
            "SELECT CAST(substr(d.date_start, 1, 4) AS INTEGER), count(*) FROM documents d "
            f"WHERE d.state = 'indexed'{conditions} GROUP BY 1",
            args,
        )
        return {(None if year is None else int(year)): int(n) for year, n in rows}

    def date_spans(self, doc_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for part in _batches(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            for row in self._db.execute(
                f"SELECT id, date_start, date_end FROM documents WHERE id IN ({marks}) AND date_start IS NOT NULL",
                part,
            ):
                out[row[0]] = (row[1], row[2])
        return out

    def corpora(self) -> list[CorpusInfo]:
        # One statement, so one snapshot: two queries let a writer's commit in between add a corpus the first
        # did not see (a reader's `info` during an ingest failed so).
        infos: dict[str, CorpusInfo] = {}
        for name, lang, n, detected, dmin, dmax in self._db.execute(
            "SELECT corpus, coalesce(language, '?'), count(*), "
            f"sum(coalesce(json_extract(fields, '$.{LANGUAGE_SOURCE}') = '{DETECTED}', 0)), min(date_start), "
            "max(date_end) FROM documents GROUP BY corpus, language ORDER BY corpus"
        ):
            info = infos.get(name)
            if info is None:
                info = infos[name] = CorpusInfo(name, n, dmin, dmax, {lang: n})
            else:
                info.languages[lang] = n
                span = (_least(info.date_min, dmin), _most(info.date_max, dmax))
                info = infos[name] = CorpusInfo(
                    name, info.documents + n, *span, info.languages, info.languages_detected
                )
            if detected:
                info.languages_detected[lang] = detected
        return list(infos.values())

    def metadata_keys(self, column: str = "fields") -> list[str]:
        """The top-level keys of the documents' `fields` (with a scalar value: what the index gives each chunk, and
        `--field` can filter on) or, with `column="source"`, of their `source`; sorted. One pass over the documents,
        for a search that found nothing to say why."""
        if column not in ("fields", "source"):
            raise ValueError(f"column must be 'fields' or 'source', not {column!r}")
        scalar = "WHERE j.type NOT IN ('null', 'array', 'object')" if column == "fields" else ""
        rows = self._db.execute(f"SELECT DISTINCT j.key FROM documents d, json_each(d.{column}) j {scalar} ORDER BY 1")
        return [str(row[0]) for row in rows]

    # -- named entities (ingest/entities.py writes them, retrieval/entities.py reads them) ------------------------

    def has_entity_tables(self) -> bool:
        """Whether this store has the entity tables (a collection made before them, opened read-only, has not)."""
        found = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'entities'")
        return found.fetchone() is not None

    def chunks_for_entities(
        self, limit: int, after: tuple[str, int] = ("", -1), finders: Sequence[str] = ()
    ) -> list[EntityWork]:
        """Chunks of indexed documents looked at for entities by none of `finders` (or not at all), in (doc_id, n)
        order from after `after` (keyset paging), with their document's language."""
        marks = ",".join("?" * len(finders))
        others = f" OR ec.finder NOT IN ({marks})" if finders else ""  # (NOT IN () would hold for every chunk)
        rows = self._db.execute(
            'SELECT c.id, c.doc_id, c.n, c.start, c."end", d.language '
            "FROM chunks c JOIN documents d ON d.id = c.doc_id "
            "LEFT JOIN entity_chunks ec ON ec.chunk_id = c.id WHERE d.state = 'indexed' "
            f"AND (ec.chunk_id IS NULL{others}) AND (c.doc_id, c.n) > (?, ?) "
            "ORDER BY c.doc_id, c.n LIMIT ?",
            (*finders, *after, limit),
        )
        return [EntityWork(*row) for row in rows]

    def entity_version(self) -> tuple[int, int]:
        """Changes whenever the entities do (chunks looked at, largest row id): what a cached lexicon is keyed by."""
        if not self.has_entity_tables():
            return (0, 0)
        row = self._db.execute("SELECT (SELECT count(*) FROM entity_chunks), (SELECT max(rowid) FROM entities)")
        looked_at, last = row.fetchone()
        return int(looked_at), int(last or 0)

    def count_chunks_for_entities(self) -> tuple[int, int]:
        """(chunks looked at for entities, chunks of indexed documents)."""
        if not self.has_entity_tables():
            return 0, self.count_chunks()
        done = self._db.execute("SELECT count(*) FROM entity_chunks").fetchone()[0]
        return int(done), self.count_chunks()

    def put_entities(self, finder_of: dict[str, str], mentions: Sequence[StoredMention]) -> None:
        """Record the chunks of `finder_of` (chunk id -> what looked at it) as looked at, replacing what an earlier
        finder found there, and their mentions, in one transaction."""
        with self._transaction():
            ids = [(c,) for c in finder_of]
            self._db.executemany("DELETE FROM entities WHERE chunk_id = ?", ids)
            self._db.executemany("INSERT OR REPLACE INTO entity_chunks VALUES (?, ?)", list(finder_of.items()))
            self._db.executemany(
                "INSERT INTO entities VALUES (?,?,?,?,?,?)",
                [(m.chunk_id, m.start, m.end, m.surface, m.label, m.folded) for m in mentions],
            )

    def entity_forms(self, finders: Sequence[str] | None = None) -> list[EntityForm]:
        """Every folded entity form: in how many chunks it stands, its most frequent label and surface; of the
        mentions `finders` found when given (the gazetteer is built from the pipelines' finds only)."""
        if not self.has_entity_tables():
            return []
        where, args = "", []
        if finders is not None:
            marks = ",".join("?" * len(finders))
            where = f"JOIN entity_chunks ec ON ec.chunk_id = e.chunk_id WHERE ec.finder IN ({marks})"
            args = list(finders)
        rows = self._db.execute(
            f"SELECT e.folded, e.label, e.surface, count(DISTINCT e.chunk_id) FROM entities e {where} "
            "GROUP BY e.folded, e.label, e.surface",
            args,
        )
        best: dict[str, tuple[int, str, str, int]] = {}  # folded -> (count of the best pair, label, surface, chunks)
        for folded, label, surface, n in rows:
            seen = best.get(folded)
            if seen is None:
                best[folded] = (n, label, surface, n)
            else:
                top = (n, label, surface) if (n, label, surface) > seen[:3] else seen[:3]
                best[folded] = (*top, seen[3] + n)
        return [EntityForm(f, label, surface, chunks) for f, (_, label, surface, chunks) in sorted(best.items())]

    def entity_chunks(self, forms: Sequence[str], flt: Filter | None = None) -> list[tuple[str, str, str, int]]:
        """(chunk id, doc id, folded form, mentions) of every chunk holding one of `forms` that `flt` admits. The
        filter has the engine's meaning (engine/points.py `conditions`): a corpus or any of its parents, a
        language, an allow-list of documents, a date range that overlaps the document's, exact field values."""
        out: list[tuple[str, str, str, int]] = []
        conditions, args = _filter_sql(flt)
        for part in _batches(list(dict.fromkeys(forms)), 400):
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                "SELECT e.chunk_id, c.doc_id, e.folded, count(*) FROM entities e JOIN chunks c ON c.id = e.chunk_id "
                f"JOIN documents d ON d.id = c.doc_id WHERE e.folded IN ({marks}) {conditions} "
                "GROUP BY e.chunk_id, e.folded",
                (*part, *args),
            )
            out.extend((str(r[0]), str(r[1]), str(r[2]), int(r[3])) for r in rows)
        return out

    def mentions_of(self, chunk_ids: Sequence[str]) -> list[StoredMention]:
        """The mentions stored for these chunks, in chunk and text order."""
        out: list[StoredMention] = []
        for part in _batches(list(chunk_ids), 500):
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f'SELECT chunk_id, start, "end", surface, label, folded FROM entities WHERE chunk_id IN ({marks}) '
                'ORDER BY chunk_id, start, "end"',
                part,
            )
            out.extend(StoredMention(*r) for r in rows)
        return out

    def iter_documents(self) -> Iterator[Document]:
        ids = [r[0] for r in self._db.execute("SELECT id FROM documents ORDER BY id")]
        for part in _batches(ids, 200):
            docs = self.get_documents(part)
            yield from (docs[i] for i in part)

    # -- OCR quality ----------------------------------------------------------------------------------

    def put_ocr_estimates(self, items: Sequence[tuple[str, OcrQuality, dict[str, int]]]) -> None:
        """(doc id, estimate, repairs by kind) for documents already stored; replaces what they had."""
        rows = [
            (
                i,
                q.score,
                q.lexicon_share,
                q.garbage_rate,
                q.words,
                q.tokens,
                q.language,
                q.lexicon,
                q.note,
                json.dumps(dict(sorted(fixes.items()))),
            )
            for i, q, fixes in items
        ]
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO ocr_estimates VALUES (?,?,?,?,?,?,?,?,?,?)", rows)

    def _has_ocr_table(self) -> bool:
        """Whether the store has `ocr_estimates` (a store made before it, opened read-only, has not)."""
        return self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'ocr_estimates'").fetchone() is not None

    def ids_without_ocr_estimate(self) -> list[str]:
        if not self._has_ocr_table():
            return []
        return [
            r[0]
            for r in self._db.execute(
                "SELECT id FROM documents WHERE id NOT IN (SELECT doc_id FROM ocr_estimates) ORDER BY id"
            )
        ]

    def ocr_estimates(self, doc_ids: Sequence[str]) -> dict[str, dict]:
        """doc id -> the estimate's fields (score, lexicon_share, garbage_rate, words, tokens, language, lexicon,
        note) and `fixes`; documents without an estimate are absent."""
        out: dict[str, dict] = {}
        if not self._has_ocr_table():
            return out
        for part in _batches(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            cursor = self._db.execute(f"SELECT * FROM ocr_estimates WHERE doc_id IN ({marks})", part)
            names = [c[0] for c in cursor.description]
            for row in cursor:
                record = dict(zip(names, row, strict=True))
                record["fixes"] = json.loads(record["fixes"])
                out[record.pop("doc_id")] = record
        return out

    def ids_with_ocr_at_least(self, minimum: float) -> list[str]:
        """The documents whose estimated OCR quality is at least `minimum`, exactly (no estimate: not among them)."""
        if not self._has_ocr_table():
            return []
        return [
            r[0]
            for r in self._db.execute("SELECT doc_id FROM ocr_estimates WHERE score >= ? ORDER BY doc_id", (minimum,))
        ]

    def ocr_by_corpus(self) -> dict[str, dict] | None:
        """Per sub-corpus: the estimates' scores (sorted), how many documents have an estimate without a score
        (`unscored`: no lexicon, no language, too few words) or none yet (`unestimated`: ingested before estimates
        were made, until the next ingest), and the repairs made, by kind. None: a store made before estimates
        existed, opened read-only (it has no table for them)."""
        out: dict[str, dict] = {}
        if not self._has_ocr_table():
            return None
        for corpus, estimated, score, fixes in self._db.execute(
            "SELECT d.corpus, e.doc_id, e.score, e.fixes FROM documents d LEFT JOIN ocr_estimates e ON e.doc_id = d.id"
        ):
            entry = out.setdefault(corpus, {"scores": [], "unscored": 0, "unestimated": 0, "fixes": {}})
            if estimated is None:
                entry["unestimated"] += 1
            elif score is None:
                entry["unscored"] += 1
            else:
                entry["scores"].append(score)
            for kind, n in json.loads(fixes or "{}").items():
                entry["fixes"][kind] = entry["fixes"].get(kind, 0) + n
        for entry in out.values():
            entry["scores"].sort()
        return out


def connect_read_only(
    path: Path, tables: frozenset[str] = frozenset({"documents", "chunks", "vectors"}), *, what: str = "document store"
) -> sqlite3.Connection:
    """A connection that never writes the SQLite file at `path`, which must hold `tables`.

    `mode=ro` first: it reads the WAL, so it sees a live writer's commits (it needs the -shm file to exist or
    be creatable). Where it cannot work (read-only storage, a folder of another user's with no live writer),
    `immutable=1`: SQLite then reads the main file as a snapshot and takes no locks at all."""
    if not path.is_file():
        raise CollectionError(f"{path}: the {what} is missing")
    uri = "file:" + urllib.parse.quote(str(path.resolve()))
    problems = []
    for suffix in ("?mode=ro", "?immutable=1"):
        # check_same_thread off: a store's readers are each used by one thread, and closed by whichever closes it
        db = sqlite3.connect(uri + suffix, uri=True, isolation_level=None, timeout=30.0, check_same_thread=False)
        try:
            found = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.Error as exc:
            db.close()
            problems.append(f"{suffix[1:]}: {exc}")
            continue
        if not tables <= found:
            db.close()
            missing = ", ".join(sorted(tables - found))
            raise CollectionError(f"{path}: not a {what}, or one not finished (no table {missing})")
        db.execute("PRAGMA foreign_keys=ON")
        return db
    raise CollectionError(f"{path}: cannot open the {what} read-only ({'; '.join(problems)})")


class _Transaction:
    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._db.execute("ROLLBACK" if exc_type else "COMMIT")


def _filter_sql(flt: Filter | None) -> tuple[str, list]:
    """`AND ...` conditions on the documents table `d` with the meaning the engine gives `flt`."""
    if flt is None:
        return "", []
    sql, args = [], []
    if flt.corpora:
        # the corpus itself, or one inside it ("letemps" admits "letemps/gdl")
        sql.append("(" + " OR ".join("d.corpus = ? OR substr(d.corpus, 1, length(?)) = ?" for _ in flt.corpora) + ")")
        for c in flt.corpora:
            args += [c, c + "/", c + "/"]
    if flt.languages:
        sql.append(f"d.language IN ({','.join('?' * len(flt.languages))})")
        args += list(flt.languages)
    if flt.doc_ids:
        sql.append(f"d.id IN ({','.join('?' * len(flt.doc_ids))})")
        args += list(flt.doc_ids)
    if flt.date_to:
        sql.append("d.date_start <= ?")
        args.append(flt.date_to)
    if flt.date_from:
        sql.append("d.date_end >= ?")
        args.append(flt.date_from)
    for key, value in flt.fields:
        sql.append("CAST(json_extract(d.fields, ?) AS TEXT) = ?")
        args += ["$." + json.dumps(key), str(value)]
    return "".join(f" AND {s}" for s in sql), args


def _batches(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _least(a: str | None, b: str | None) -> str | None:
    return b if a is None else a if b is None else min(a, b)


def _most(a: str | None, b: str | None) -> str | None:
    return b if a is None else a if b is None else max(a, b)
