"""The chunks of each document and the vectors of their index texts: one vector per distinct text, so that a
text repeated or re-ingested is embedded once; read back by chunk, by text, or as the chunks still without one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tracerag.model import Chunk
from tracerag.store.sqlite import StoreBase, batches, connect_read_only

CHUNK_COLUMNS = 'id, doc_id, n, start, "end", index_text, text_hash'  # the fields of StoredChunk, in order
CHUNK_COLUMNS_C = ", ".join(f"c.{col}" for col in CHUNK_COLUMNS.split(", "))


@dataclass(frozen=True, slots=True)
class StoredChunk:
    id: str
    doc_id: str
    n: int
    start: int
    end: int
    index_text: str
    text_hash: str  # what its vector is stored under


def text_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class ChunkTables(StoreBase):
    """The `chunks` and `vectors` tables."""

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
        for part in batches(list(set(hashes)), 500):
            marks = ",".join("?" * len(part))
            for h, blob in self._db.execute(
                f"SELECT text_hash, vector FROM vectors WHERE text_hash IN ({marks})", part
            ):
                out[h] = np.frombuffer(blob, dtype=np.float32)
        return out

    def vector_hashes(self) -> Iterator[str]:
        """The text hash of every stored vector, streamed (a distributed ingest's workers embed only the others)."""
        for (h,) in self._db.execute("SELECT text_hash FROM vectors"):
            yield h

    def chunks_of(self, doc_ids: Sequence[str]) -> list[StoredChunk]:
        out: list[StoredChunk] = []
        for part in batches(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            out.extend(
                StoredChunk(*row)
                for row in self._db.execute(
                    f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE doc_id IN ({marks}) ORDER BY doc_id, n",
                    part,
                )
            )
        return out

    def vectors_of(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for part in batches(list(chunk_ids), 500):
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
                f"SELECT {CHUNK_COLUMNS_C} FROM chunks c {self._WITHOUT_VECTOR} "
                "AND (c.doc_id, c.n) > (?, ?) ORDER BY c.doc_id, c.n LIMIT ?",
                (*after, limit),
            )
        ]

    def chunks_with_texts(self, hashes: Iterable[str]) -> list[tuple[str, str]]:
        """(chunk id, text hash) of every chunk whose index text has one of `hashes`, in (doc_id, n) order: the
        chunks one computed vector serves."""
        out: list[tuple[str, str]] = []
        for part in batches(list(dict.fromkeys(hashes)), 500):
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

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, StoredChunk]:
        out: dict[str, StoredChunk] = {}
        for part in batches(list(chunk_ids), 500):
            marks = ",".join("?" * len(part))
            for row in self._db.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", part):
                out[row[0]] = StoredChunk(*row)
        return out
