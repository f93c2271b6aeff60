"""The store's SQLite file: its schema, the writer's and readers' connections (`StoreBase`: one writing
connection, or one read-only connection per reading thread), transactions, and the SQL a search filter becomes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from tracerag.errors import CollectionError, ReadOnlyError
from tracerag.model import Filter

SCHEMA = """
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
-- The text of a huge document (its documents.text is then ''), in parts of at most PART_CHARS characters from
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


class StoreBase:
    """The connections of a store (see `DocumentStore`): one writing connection, or one read-only connection per
    reading thread."""

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
        self._writer.executescript(SCHEMA)

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

    def _transaction(self):
        if self.read_only:
            raise ReadOnlyError(f"{self.path} is open for reading: writing it needs the collection opened for writing")
        return Transaction(self._db)

    def _has_table(self, name: str) -> bool:
        """Whether the store has table `name` (one made before it, opened read-only, has not)."""
        found = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return found.fetchone() is not None


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


class Transaction:
    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._db.execute("ROLLBACK" if exc_type else "COMMIT")


def filter_sql(flt: Filter | None) -> tuple[str, list]:
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


def batches(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
