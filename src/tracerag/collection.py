"""A collection is a directory: `collection.toml` (what built it), `store.sqlite` (the documents, source of
truth), `index/` (the engine), `trails/` (run records). `Collection` ties them to the embedding model and runs
the ingest: read → normalise → chunk → store (pending) → embed → index → mark indexed.
"""

from __future__ import annotations

import json
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from tracerag import __version__
from tracerag.config import INDEX_VERSION, ChunkSettings, Settings
from tracerag.embed import Embedder, load_embedder
from tracerag.engine import IndexedChunk, SearchEngine
from tracerag.engine.qdrant_edge import QdrantEdgeEngine
from tracerag.errors import CollectionError, ModelMismatchError, RecordError
from tracerag.ingest.chunk import chunk_text
from tracerag.ingest.dates import normalise_date, parse_partial_date
from tracerag.ingest.normalise import normalise
from tracerag.model import Chunk, Document
from tracerag.store import DocumentStore, StoredChunk

MANIFEST = "collection.toml"


@dataclass
class IngestReport:
    """What an ingest did. `skipped` keeps every unreadable record with its file and line."""

    read: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    resumed: int = 0
    chunks: int = 0
    embedded: int = 0
    seconds: float = 0.0
    skipped: list[RecordError] = field(default_factory=list)
    languages: Counter = field(default_factory=Counter)
    corpora: Counter = field(default_factory=Counter)

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
            "languages": dict(self.languages),
            "corpora": dict(self.corpora),
            "errors": [{"file": e.file, "line": e.line, "reason": e.reason} for e in self.skipped],
        }


def _write_manifest(path: Path, data: dict) -> None:
    """Atomic write of collection.toml (written by hand: the stdlib reads TOML but does not write it)."""
    lines = []
    for section, values in data.items():
        lines.append(f"[{section}]")
        for key, value in values.items():
            if value is not None:
                lines.append(f"{key} = {json.dumps(value)}")
        lines.append("")
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines), encoding="utf-8")
    tmp.replace(path)


class Collection:
    """Open or create with `Collection.open(path, settings, create=True)`."""

    def __init__(self, path: Path, settings: Settings, manifest: dict):
        self.path = Path(path)
        self.settings = settings
        self.manifest = manifest
        self.store = DocumentStore(self.path / "store.sqlite")
        emb = manifest["embedding"]
        self.dim: int | None = emb.get("dim")
        self.engine: SearchEngine = QdrantEdgeEngine(
            self.path / "index", self.dim, k1=settings.retrieval.bm25_k1, b=settings.retrieval.bm25_b
        )
        self._embedder: Embedder | None = None
        self._spelling = _load_spelling(settings.ingest.spelling_map)

    # -- lifecycle ------------------------------------------------------------------------------------

    @classmethod
    def open(
        cls, path: Path, settings: Settings, *, create: bool = False, embed_model: str | None = None
    ) -> Collection:
        """Open the collection at `path` (or create it with `settings` when `create`). `embed_model` is the model
        the caller asked for explicitly: a different one from the model that built the index is an error.
        """
        path = Path(path)
        if embed_model is not None:
            settings = settings.model_copy(update={"embed": settings.embed.model_copy(update={"model": embed_model})})
        manifest_path = path / MANIFEST
        if manifest_path.exists():
            try:
                manifest = tomllib.loads(manifest_path.read_text(encoding="utf-8"))
            except tomllib.TOMLDecodeError as exc:
                raise CollectionError(f"{manifest_path}: damaged manifest: {exc}") from exc
            recorded = manifest["embedding"]["spec"]
            if embed_model is not None and embed_model != recorded:
                emb = manifest["embedding"]
                built = f"{emb['name']}, dim {emb['dim']}" if emb.get("dim") else "lexical only, no vectors"
                raise ModelMismatchError(
                    f"{path} was built with embedding model {recorded!r} ({built}); asked for {embed_model!r}. "
                    "Use the same model, or ingest into a new collection."
                )
            built = manifest["collection"].get("index_version", 1)
            if built != INDEX_VERSION:
                raise CollectionError(
                    f"{path} was built by an older TRACE index (version {built}, this one reads {INDEX_VERSION}: "
                    "tokenizer, stopwords and titles changed); ingest the documents into a new collection"
                )
            # The index was shaped by its own model and chunking: those win over whatever the caller has.
            settings = settings.model_copy(
                update={
                    "embed": settings.embed.model_copy(update={"model": recorded}),
                    "chunk": ChunkSettings(**manifest["chunk"]),
                }
            )
            return cls(path, settings, manifest)
        if not create:
            raise CollectionError(f"{path}: not a TRACE collection (no {MANIFEST}); create it with `tracerag ingest`")
        path.mkdir(parents=True, exist_ok=True)
        embedder = load_embedder(settings.embed)
        manifest = {
            "collection": {
                "created": datetime.now(UTC).isoformat(timespec="seconds"),
                "tracerag_version": __version__,
                "engine": "qdrant-edge",
                "settings_hash": settings.index_hash(),
                "index_version": INDEX_VERSION,
            },
            "embedding": {
                "spec": settings.embed.model,
                "name": embedder.name if embedder else None,
                "version": embedder.version if embedder else None,
                "dim": embedder.dim if embedder else None,
            },
            "chunk": settings.chunk.model_dump(),
        }
        _write_manifest(path / MANIFEST, manifest)
        (path / "trails").mkdir(exist_ok=True)
        col = cls(path, settings, manifest)
        col._embedder = embedder
        return col

    def close(self) -> None:
        self.engine.flush()
        self.engine.close()
        self.store.close()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def embedder(self) -> Embedder | None:
        """The collection's embedding model, loaded on first use and checked against what built the index."""
        if self._embedder is None and self.dim:
            emb = load_embedder(self.settings.embed)
            recorded = self.manifest["embedding"]
            if emb is not None and (emb.name, emb.version, emb.dim) != (
                recorded["name"],
                recorded["version"],
                recorded["dim"],
            ):
                raise ModelMismatchError(
                    f"{self.path} was built with {recorded['name']} {recorded['version']} (dim {recorded['dim']}) "
                    f"but this installation provides {emb.name} {emb.version} (dim {emb.dim})"
                )
            self._embedder = emb
        return self._embedder

    # -- ingest ---------------------------------------------------------------------------------------

    def ingest(
        self,
        records: Iterable[Document | RecordError],
        *,
        dense: bool = True,
        progress: Callable[[int, int], None] | None = None,
        on_batch: Callable[[IngestReport], None] | None = None,
    ) -> IngestReport:
        """Add or update documents. Unchanged documents (same content hash) are a no-op; a changed one has its
        chunks replaced; documents left `pending` by an interrupted ingest are finished first.

        progress(documents_read, chunks_indexed) is called as work advances; on_batch after each committed batch.
        """
        report = IngestReport()
        start = time.perf_counter()
        dense = dense and bool(self.dim)
        pending = self.store.pending_ids()
        if pending:
            report.resumed = len(pending)
            for i in range(0, len(pending), self.settings.ingest.batch_documents):
                report.chunks += self._index(pending[i : i + self.settings.ingest.batch_documents], dense, report)
        batch: list[Document] = []
        seen: set[str] = set()

        def commit() -> None:
            self._ingest_batch(batch, dense, report)
            batch.clear()
            if progress:
                progress(report.read, report.chunks)
            if on_batch:
                on_batch(report)

        for item in records:
            if isinstance(item, RecordError):
                report.skipped.append(item)
                continue
            where = {"file": str(item.source.get("file", item.id)), "line": item.source.get("line")}
            if item.id in seen:
                report.skipped.append(RecordError(f"duplicate document id {item.id!r}", **where))
                continue
            try:  # readers check dates already; documents built by library users may not
                item.date = normalise_date(item.date)
            except ValueError as exc:
                report.skipped.append(RecordError(f"document {item.id}: {exc}", **where))
                continue
            seen.add(item.id)
            report.read += 1
            report.languages[item.language or "?"] += 1
            report.corpora[item.corpus] += 1
            batch.append(item)
            if len(batch) >= self.settings.ingest.batch_documents:
                commit()
        if batch:
            commit()
        self.engine.optimize()
        report.seconds = time.perf_counter() - start
        return report

    def _ingest_batch(self, docs: Sequence[Document], dense: bool, report: IngestReport) -> None:
        known = self.store.state_of([d.id for d in docs])
        todo = []
        for doc in docs:
            span = parse_partial_date(doc.date) if doc.date else None
            digest = doc.content_hash()
            previous = known.get(doc.id)
            if previous == (digest, "indexed"):
                report.unchanged += 1
                continue
            if previous is None:
                report.added += 1
            else:
                report.updated += 1
            chunks = self._chunk(doc)
            todo.append((doc, digest, (span.start, span.end) if span else None, chunks))
        if not todo:
            return
        self.store.put_pending(todo)
        report.chunks += self._index([doc.id for doc, *_ in todo], dense, report)

    def _chunk(self, doc: Document) -> list[Chunk]:
        # The title is part of every chunk's index text (not of its cited text): a title's words are evidence
        # for the whole document, and whole-document peers (bm25s) see them too.
        title = f"{doc.title.strip()}\n" if doc.title and doc.title.strip() else ""
        return chunk_text(
            doc.id,
            doc.text,
            size=self.settings.chunk.size,
            overlap=self.settings.chunk.overlap,
            index_form=lambda s: normalise(title + s, self._spelling),
        )

    def _index(self, doc_ids: Sequence[str], dense: bool, report: IngestReport) -> int:
        """Make the engine hold exactly the stored chunks of `doc_ids`, then mark them indexed."""
        chunks = self.store.chunks_of(doc_ids)
        vectors = None
        if dense and chunks:
            vectors = self._vectors_for(chunks, report)
        docs = self.store.get_documents(doc_ids)
        spans = self.store.date_spans(doc_ids)
        self.engine.delete(doc_ids)
        self.engine.upsert([self._indexed(c, docs[c.doc_id], spans.get(c.doc_id)) for c in chunks], vectors)
        if vectors is None and self.dim and chunks:
            # Without the model, texts embedded before (a reprint, a re-ingest) still get their vector: the store
            # counts a chunk as embedded by its text, so its point must carry the vector too.
            known = self.store.vectors_by_hash(c.text_hash for c in chunks)
            have = [c for c in chunks if c.text_hash in known]
            if have:
                self.engine.set_vectors([c.id for c in have], np.stack([known[c.text_hash] for c in have]))
        self.engine.flush()
        self.store.mark_indexed(doc_ids)
        return len(chunks)

    def _vectors_for(self, chunks: Sequence[StoredChunk], report: IngestReport) -> np.ndarray:
        """Vectors for `chunks`: from the store when the same text was embedded before, else from the model."""
        known = self.store.vectors_by_hash(c.text_hash for c in chunks)
        fresh = {c.text_hash: c.index_text for c in chunks if c.text_hash not in known}
        if fresh:
            computed = dict(zip(fresh, self._encode(list(fresh.values())), strict=True))
            self.store.put_vectors(computed)
            known.update(computed)
            report.embedded += len(fresh)
        return np.stack([known[c.text_hash] for c in chunks])

    def _encode(self, texts: list[str]) -> np.ndarray:
        embedder = self.embedder
        assert embedder is not None
        size = self.settings.embed.batch_size
        parts = [embedder.encode_documents(texts[i : i + size]) for i in range(0, len(texts), size)]
        return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), np.float32)

    def embed_missing(self, *, progress: Callable[[int, int], None] | None = None) -> int:
        """Compute and index the vectors of chunks ingested with dense=False. Resumable: done work stays."""
        if not self.dim:
            raise CollectionError(f"{self.path} has no embedding model (built with 'none')")
        total = self.store.count_chunks(without_vectors=True)
        done = 0
        report = IngestReport()
        after = ("", -1)
        while True:
            chunks = self.store.chunks_without_vectors(self.settings.embed.batch_size * 4, after)
            if not chunks:
                break
            after = (chunks[-1].doc_id, chunks[-1].n)
            vectors = self._vectors_for(chunks, report)
            self.engine.set_vectors([c.id for c in chunks], vectors)
            self.engine.flush()
            done += len(chunks)
            if progress:
                progress(done, total)
        self.engine.optimize()
        return done

    def _indexed(self, c: StoredChunk, doc: Document, span: tuple[str, str] | None) -> IndexedChunk:
        return IndexedChunk(
            chunk_id=c.id,
            doc_id=c.doc_id,
            text=c.index_text,
            corpus=doc.corpus,
            language=doc.language,
            date_start=span[0] if span else None,
            date_end=span[1] if span else None,
            fields={k: v for k, v in doc.fields.items() if isinstance(v, str | int | float | bool)},
        )

    def stats(self) -> dict:
        return {
            "documents": self.store.count_documents(),
            "chunks": self.store.count_chunks(),
            "chunks_without_vectors": self.store.count_chunks(without_vectors=True) if self.dim else None,
            "indexed_points": self.engine.count(),
            "embedding": self.manifest["embedding"],
            "corpora": [asdict(c) for c in self.store.corpora()],
        }


def _load_spelling(path: Path | None) -> dict[str, str] | None:
    """A user's spelling map: JSON object, or TSV lines `old<TAB>new`."""
    if path is None:
        return None
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CollectionError(f"{path}: cannot read spelling map: {exc}") from exc
    if path.suffix.lower() == ".json":
        return dict(json.loads(text))
    mapping = {}
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.startswith("#"):
            parts = line.split("\t")
            if len(parts) != 2:
                raise CollectionError(f"{path}:{n}: expected 'old<TAB>new', got {line!r}")
            mapping[parts[0]] = parts[1]
    return mapping
