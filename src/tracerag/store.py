"""The document store: SQLite, the collection's source of truth. The engine index can always be rebuilt
from it. Writes go through transactions, so a killed ingest leaves either the old or the new state of a
document, flagged `pending` until the engine has it too.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tracerag.model import Chunk, Document

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


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class DocumentStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._db = sqlite3.connect(self.path, isolation_level=None)  # explicit transactions only
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    # -- writes ---------------------------------------------------------------------------------------

    def state_of(self, doc_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """doc id -> (content hash, state) for the ids already stored."""
        out: dict[str, tuple[str, str]] = {}
        for part in _batches(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            for row in self._db.execute(f"SELECT id, content_hash, state FROM documents WHERE id IN ({marks})", part):
                out[row[0]] = (row[1], row[2])
        return out

    def put_pending(self, items: Sequence[tuple[Document, str, tuple[str, str] | None, list[Chunk]]]) -> None:
        """Store documents and their chunks as `pending`, replacing any older version, in one transaction.

        items: (document, content hash, (date_start, date_end) or None, chunks).
        """
        with self._transaction():
            for doc, digest, span, chunks in items:
                self._db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc.id,))
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
                        json.dumps(doc.source, ensure_ascii=False),
                        doc.text,
                        json.dumps(doc.fields, ensure_ascii=False),
                        doc.ocr_quality,
                        digest,
                    ),
                )
                self._db.executemany(
                    "INSERT INTO chunks VALUES (?,?,?,?,?,?,?)",
                    [(c.id, c.doc_id, c.n, c.start, c.end, c.index_text, text_hash(c.index_text)) for c in chunks],
                )

    def put_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        """Store vectors by the hash of the index text they embed."""
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()],
            )

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
        return _Transaction(self._db)

    # -- reads ----------------------------------------------------------------------------------------

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

    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, Document]:
        out: dict[str, Document] = {}
        for part in _batches(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            for row in self._db.execute(
                "SELECT id, text, corpus, title, date, language, source, fields, ocr_quality FROM documents "
                f"WHERE id IN ({marks})",
                part,
            ):
                out[row[0]] = Document(
                    id=row[0],
                    text=row[1],
                    corpus=row[2],
                    title=row[3],
                    date=row[4],
                    language=row[5],
                    source=json.loads(row[6]),
                    fields=json.loads(row[7]),
                    ocr_quality=row[8],
                )
        return out

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        out: dict[str, StoredChunk] = {}
        for part in _batches(list(chunk_ids), 500):
            marks = ",".join("?" * len(part))
            for row in self._db.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", part):
                out[row[0]] = StoredChunk(*row)
        return out

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
        infos: dict[str, CorpusInfo] = {}
        for name, n, dmin, dmax in self._db.execute(
            "SELECT corpus, count(*), min(date_start), max(date_end) FROM documents GROUP BY corpus ORDER BY corpus"
        ):
            infos[name] = CorpusInfo(name, n, dmin, dmax, {})
        for name, lang, n in self._db.execute(
            "SELECT corpus, coalesce(language, '?'), count(*) FROM documents GROUP BY corpus, language"
        ):
            infos[name].languages[lang] = n
        return list(infos.values())

    def iter_documents(self) -> Iterator[Document]:
        ids = [r[0] for r in self._db.execute("SELECT id FROM documents ORDER BY id")]
        for part in _batches(ids, 200):
            docs = self.get_documents(part)
            yield from (docs[i] for i in part)


class _Transaction:
    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, exc, tb) -> None:
        self._db.execute("ROLLBACK" if exc_type else "COMMIT")


def _batches(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
