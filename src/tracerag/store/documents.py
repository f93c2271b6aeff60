"""The documents: written pending with their source, boxes and (for a huge text) parts, marked indexed,
read back whole or as cited spans, and counted by corpus, language and year.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from tracerag.ingest.alto_regions import BOXES, StoredBox
from tracerag.ingest.language import DETECTED, LANGUAGE_SOURCE
from tracerag.model import Document, Filter
from tracerag.store.sqlite import StoreBase, batches, filter_sql


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
PART_CHARS = 1 << 22


class DocumentTables(StoreBase):
    """The `documents`, `document_parts` and `string_boxes` tables."""

    def state_of(self, doc_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """doc id -> (content hash, state) for the ids already stored."""
        out: dict[str, tuple[str, str]] = {}
        for part in batches(list(doc_ids), 500):
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
                huge = len(doc.text) > PART_CHARS
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
                            (doc.id, n, i, min(i + PART_CHARS, len(doc.text)), doc.text[i : i + PART_CHARS])
                            for n, i in enumerate(range(0, len(doc.text), PART_CHARS))
                        ),
                    )

    def mark_indexed(self, doc_ids: Sequence[str]) -> None:
        with self._transaction():
            self._db.executemany("UPDATE documents SET state = 'indexed' WHERE id = ?", [(d,) for d in doc_ids])

    def delete(self, doc_ids: Sequence[str]) -> None:
        with self._transaction():
            self._db.executemany("DELETE FROM documents WHERE id = ?", [(d,) for d in doc_ids])

    def indexed_digests(self) -> Iterator[tuple[str, str]]:
        """(id, content hash) of every indexed document, streamed: what a distributed ingest's workers are told, so
        that they prepare and embed only what changed."""
        yield from self._db.execute("SELECT id, content_hash FROM documents WHERE state = 'indexed'")

    def pending_ids(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT id FROM documents WHERE state = 'pending' ORDER BY id")]

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
        for part in batches(list(doc_ids), 500):
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
        for part in batches(list(doc_ids), 500):
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

    def documents_per_year(self, flt: Filter | None = None) -> dict[int | None, int]:
        """How many indexed documents `flt` admits in each year (a document's first year; None: undated), the
        corpus side of a search's time windows (`retrieval/window_share.py`). One grouped pass over the store."""
        conditions, args = filter_sql(flt)
        rows = self._db.execute(
            "SELECT CAST(substr(d.date_start, 1, 4) AS INTEGER), count(*) FROM documents d "
            f"WHERE d.state = 'indexed'{conditions} GROUP BY 1",
            args,
        )
        return {(None if year is None else int(year)): int(n) for year, n in rows}

    def date_spans(self, doc_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for part in batches(list(doc_ids), 500):
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

    def iter_documents(self) -> Iterator[Document]:
        ids = [r[0] for r in self._db.execute("SELECT id FROM documents ORDER BY id")]
        for part in batches(ids, 200):
            docs = self.get_documents(part)
            yield from (docs[i] for i in part)


def _least(a: str | None, b: str | None) -> str | None:
    return b if a is None else a if b is None else min(a, b)


def _most(a: str | None, b: str | None) -> str | None:
    return b if a is None else a if b is None else max(a, b)
