"""The ingest: read → normalise → chunk → store (pending) → embed → index → mark indexed, in batches of documents
and of chunks, with the flush rhythm that decides when written work counts as done.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from tracerag.collection.state import CollectionState
from tracerag.dates import parse_partial_date
from tracerag.errors import CollectionError, RecordError, Where
from tracerag.ingest import RecordWarning
from tracerag.ingest.entities import EntityReport, Pipelines, find_entities, spacy_missing
from tracerag.ingest.entities import Progress as EntityProgress
from tracerag.ingest.prepare import PreparedDocument
from tracerag.model import Chunk, Document
from tracerag.store import StoredChunk

# Chunks stored and indexed together: a 200 MB document is written ~2,000 chunks (~4 MB of text) at a time.
CHUNK_BATCH = 2_000
# The index is flushed (its segments written to disk) and the documents written since marked indexed in the store
# once this many chunks have been written, or this many seconds have passed, and at the end of an ingest: a flush
# costs ~0.5 s whatever it holds (the payload store and every index write their files), and once per batch of 64
# documents it was 89 s of a 100k-chunk lexical ingest's 503 s (benchmarks/scale.py). Until then the documents stay
# pending, so an ingest killed in between redoes them (the engine's own log has them anyway).
FLUSH_CHUNKS = 10_000
FLUSH_SECONDS = 30.0
_Tick = Callable[[Document, int], None]  # told, after each sub-batch, the document and how far into it


@dataclass
class IngestReport:
    """What an ingest did. `skipped` keeps every unreadable record with its file and line; `warnings` what was
    repaired or guessed in records that were kept (bytes replaced, an encoding detected, a date dropped)."""

    read: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    resumed: int = 0
    chunks: int = 0
    embedded: int = 0
    seconds: float = 0.0
    skipped: list[RecordError] = field(default_factory=list)
    warnings: list[RecordWarning] = field(default_factory=list)
    languages: Counter = field(default_factory=Counter)
    detected: Counter = field(default_factory=Counter)  # of `languages`, those detected (none in the data)
    corpora: Counter = field(default_factory=Counter)
    committed: int = 0  # documents this run marked indexed: what it keeps whatever happens next

    def to_dict(self) -> dict:
        return {
            "read": self.read,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "resumed": self.resumed,
            "skipped": len(self.skipped),
            "chunks": self.chunks,
            "embedded": self.embedded,
            "seconds": round(self.seconds, 2),
            "chunks_per_second": round(self.chunks / self.seconds, 1) if self.seconds else None,
            "documents_per_second": round(self.read / self.seconds, 1) if self.seconds else None,
            "embedded_per_second": round(self.embedded / self.seconds, 2) if self.seconds else None,
            "languages": dict(self.languages),
            "languages_detected": dict(self.detected),
            "corpora": dict(self.corpora),
            "errors": [{"file": e.file, "line": e.line, "reason": e.reason} for e in self.skipped],
            "warnings": [{"file": w.file, "line": w.line, "reason": w.reason} for w in self.warnings],
        }


class CollectionIngest(CollectionState):
    """Adding and updating documents: `ingest`, and the named entities found after it."""

    def ingest(
        self,
        records: Iterable[Document | PreparedDocument | RecordError | RecordWarning],
        *,
        dense: bool = True,
        progress: Callable[[int, int], None] | None = None,
        on_batch: Callable[[IngestReport], None] | None = None,
        document_progress: Callable[[str, int, int], None] | None = None,
    ) -> IngestReport:
        """Add or update documents. Unchanged documents (same content hash) are a no-op; a changed one has its
        chunks replaced; documents left `pending` by an interrupted ingest are finished first.

        progress(documents_read, chunks_indexed) is called as work advances, within a large document too;
        document_progress(doc_id, characters_done, characters) after each sub-batch of chunks, so that one huge
        document shows how far it is; on_batch after each committed batch.

        A record may come prepared by another process (`PreparedDocument`: a distributed ingest): it is counted,
        checked and written as a document read here would be, with its chunks, estimate and vectors as given.
        """
        report = IngestReport()
        start = time.perf_counter()
        dense = dense and bool(self.dim)

        def tick(doc: Document, done: int) -> None:
            if progress:
                progress(report.read, report.chunks)
            if document_progress:
                document_progress(doc.id, done, len(doc.text))

        def checkpoint(*, force: bool = False) -> None:
            marked = self._checkpoint(force=force)
            report.committed += marked
            if marked and on_batch:
                on_batch(report)

        pending = self.store.pending_ids()
        if pending:
            report.resumed = len(pending)
            for i in range(0, len(pending), self.settings.ingest.batch_documents):
                self._resume(pending[i : i + self.settings.ingest.batch_documents], dense, report, tick)
            checkpoint(force=True)  # indexed before the input is read: there they are unchanged
        batch: list[Document | PreparedDocument] = []
        seen: set[str] = set()
        prep = self.preparation  # made before the first record: a bad language code stops the ingest here

        def commit() -> None:
            self._ingest_batch(batch, dense, report, tick)
            batch.clear()
            if progress:
                progress(report.read, report.chunks)
            checkpoint()

        try:
            for item in records:
                if isinstance(item, RecordError):
                    report.skipped.append(item)
                    continue
                if isinstance(item, RecordWarning):
                    report.warnings.append(item)
                    continue
                doc = item.doc if isinstance(item, PreparedDocument) else item
                where: Where = {"file": str(doc.source.get("file", doc.id)), "line": doc.source.get("line")}
                if doc.id in seen:
                    report.skipped.append(RecordError(f"duplicate document id {doc.id!r}", **where))
                    continue
                warnings, language = (
                    (item.warnings, item.detected) if isinstance(item, PreparedDocument) else prep.admit(doc)
                )
                report.warnings.extend(warnings)
                seen.add(doc.id)
                report.read += 1
                if language:
                    report.detected[language] += 1
                report.languages[doc.language or "?"] += 1
                report.corpora[doc.corpus] += 1
                batch.append(item)
                if len(batch) >= self.settings.ingest.batch_documents:
                    commit()
            if batch:
                commit()
        except BaseException:
            # What was written whole before the error (Ctrl-C, a model that stopped answering) is committed, as
            # it was when every batch was: best effort, since the error may be the index's own.
            with contextlib.suppress(Exception):
                checkpoint(force=True)
            raise
        checkpoint(force=True)
        missing = self.store.ids_without_ocr_estimate()  # documents ingested before estimates existed
        for i in range(0, len(missing), self.settings.ingest.batch_documents):
            part = missing[i : i + self.settings.ingest.batch_documents]
            self._estimate_ocr(self.store.get_documents(part).values())
        self.engine.optimize()
        if self.settings.ingest.entities and spacy_missing() is None:  # without spaCy: `tracerag entities` later
            self.find_entities()
        report.seconds = time.perf_counter() - start
        return report

    def find_entities(self, progress: EntityProgress | None = None) -> EntityReport:
        """Named entities for every chunk not yet looked at (`tracerag.ingest.entities`): after an ingest when
        `ingest.entities` is on, or by `tracerag entities` for a collection made without them. No re-embedding."""
        return find_entities(self.store, Pipelines(self.settings.ingest.entity_pipelines), progress)

    def _ingest_batch(
        self, items: Sequence[Document | PreparedDocument], dense: bool, report: IngestReport, tick: _Tick
    ) -> None:
        prepared = {i.doc.id: i for i in items if isinstance(i, PreparedDocument)}
        docs = [i.doc if isinstance(i, PreparedDocument) else i for i in items]
        known = self.store.state_of([d.id for d in docs])
        todo = []
        for doc in docs:
            span = parse_partial_date(doc.date) if doc.date else None
            given = prepared.get(doc.id)
            digest = given.digest if given else doc.content_hash()
            previous = known.get(doc.id)
            if previous == (digest, "indexed"):
                report.unchanged += 1
                continue
            if given is not None and given.unchanged:  # it came without its text: it must be what the store holds
                raise CollectionError(f"{self.path}: document {doc.id!r} changed in the store during this ingest")
            if previous is None:
                report.added += 1
            else:
                report.updated += 1
            todo.append((doc, digest, (span.start, span.end) if span else None))
        if not todo:
            return
        self.store.put_pending(todo)
        self._estimate_ocr(doc for doc, *_ in todo if doc.id not in prepared)
        estimated = [row for doc, *_ in todo if doc.id in prepared and (row := prepared[doc.id].ocr) is not None]
        if estimated:  # made where the document was prepared
            self.store.put_ocr_estimates(estimated)
        self._index([doc for doc, *_ in todo], dense, report, tick, prepared)

    def _resume(self, doc_ids: Sequence[str], dense: bool, report: IngestReport, tick: _Tick) -> None:
        """Finish documents an interrupted ingest left pending, from their stored text: whatever part of their
        chunks it had written is replaced."""
        docs = self.store.get_documents(doc_ids)
        self.store.delete_chunks(doc_ids)
        self._index([docs[i] for i in doc_ids], dense, report, tick)

    def _estimate_ocr(self, docs: Iterable[Document]) -> None:
        """Each document's OCR-quality estimate, and the repairs its index text got (none with `ingest.ocr_fixes`
        off). The estimate reads the repaired text either way, so that it means the same in every collection."""
        rows = [self.preparation.ocr_row(doc) for doc in docs]
        if rows:
            self.store.put_ocr_estimates(rows)

    def _index(
        self,
        docs: Sequence[Document],
        dense: bool,
        report: IngestReport,
        tick: _Tick,
        prepared: dict[str, PreparedDocument] | None = None,
    ) -> None:
        """Chunk `docs` (stored as pending) into the store and the engine, `CHUNK_BATCH` chunks at a time; the next
        `_checkpoint` marks them indexed. Memory stays bounded whatever a document's size; until then they stay
        pending, and an interrupted run redoes them (`_resume`). The `prepared` ones bring their chunks and vectors."""
        ids = [d.id for d in docs]
        by_id = {d.id: d for d in docs}
        prepared = prepared or {}
        given = {h: v for p in prepared.values() for h, v in p.vectors.items()}
        spans = self.store.date_spans(ids)
        self.engine.delete(ids)

        def chunks_of(doc: Document) -> Iterable[Chunk]:
            mine = prepared.get(doc.id)
            return mine.chunks if mine is not None and mine.chunks is not None else self.preparation.chunks(doc)

        for group in _batched((c for doc in docs for c in chunks_of(doc)), CHUNK_BATCH):
            stored = self.store.put_chunks(group)
            vectors = self._vectors_for(stored, report, given) if dense else None
            self.engine.upsert([self._indexed(c, by_id[c.doc_id], spans.get(c.doc_id)) for c in stored], vectors)
            if vectors is None and self.dim:
                self._carry_known_vectors(stored)
            report.chunks += len(stored)
            self._unflushed_chunks += len(stored)
            tick(by_id[group[-1].doc_id], group[-1].end)
        self._unflushed.extend(ids)

    def _checkpoint(self, *, force: bool = False) -> int:
        """Flush the index and mark the documents written since the last flush indexed, when `FLUSH_CHUNKS` chunks
        or `FLUSH_SECONDS` seconds have gone by (or `force`). In that order: a document the store calls indexed is
        on disk in the index. Returns how many documents were marked."""
        due = self._unflushed_chunks >= FLUSH_CHUNKS or time.monotonic() - self._flushed_at >= FLUSH_SECONDS
        if not self._unflushed or not (force or due):
            return 0
        self.engine.flush()
        self.store.mark_indexed(self._unflushed)
        marked = len(self._unflushed)
        self._unflushed, self._unflushed_chunks, self._flushed_at = [], 0, time.monotonic()
        return marked

    def _carry_known_vectors(self, chunks: Sequence[StoredChunk]) -> None:
        """Without the model, texts embedded before (a reprint, a re-ingest) still get their vector: the store
        counts a chunk as embedded by its text, so its point must carry the vector too."""
        known = self.store.vectors_by_hash(c.text_hash for c in chunks)
        have = [c for c in chunks if c.text_hash in known]
        if have:
            self.engine.set_vectors([c.id for c in have], np.stack([known[c.text_hash] for c in have]))

    def _vectors_for(
        self, chunks: Sequence[StoredChunk], report: IngestReport, given: dict[str, np.ndarray] | None = None
    ) -> np.ndarray:
        """Vectors for `chunks`: from the store when the same text was embedded before, else those `given` (computed
        by another process), else from the model."""
        known = self.store.vectors_by_hash(c.text_hash for c in chunks)
        fresh = {c.text_hash: c.index_text for c in chunks if c.text_hash not in known}
        if fresh:
            given = given or {}
            missing = [h for h in fresh if h not in given]
            encoded = dict(zip(missing, self._encode([fresh[h] for h in missing]), strict=True)) if missing else {}
            computed = {h: given[h] if h in given else encoded[h] for h in fresh}
            self.store.put_vectors(computed)
            known.update(computed)
            report.embedded += len(fresh)
        return np.stack([known[c.text_hash] for c in chunks])


def _batched(items: Iterable[Chunk], size: int) -> Iterator[list[Chunk]]:
    batch: list[Chunk] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
