"""What an ingest does to one document before anything is written, with no store, engine or model: its date
checked, its language detected when it states none, its chunks with their index text, its OCR-quality estimate.

`Collection.ingest` prepares the documents it reads with it, one batch at a time in its own process; a
distributed ingest (`tracerag.ingest.jobs.distributed`) prepares them with the same object on other processes or
machines and hands the collection `PreparedDocument`s. One code path for both, so both give the same chunks, texts and
estimates by construction. A `Preparation` pickles small (settings and the spelling map, never a loaded model).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tracerag.config import Settings
from tracerag.dates import normalise_date
from tracerag.errors import CollectionError
from tracerag.ingest import RecordWarning, ocr_fixes, ocr_quality
from tracerag.ingest.chunk import iter_chunks
from tracerag.ingest.language import DETECTED, LANGUAGE_SOURCE, LanguageDetector
from tracerag.ingest.normalise import hyphenation_forms, normalise
from tracerag.model import Chunk, Document

OCR_ESTIMATE_CHARS = 1_000_000  # an OCR-quality estimate reads a document's first million characters: plenty

# One document's OCR-quality row for the store: (document id, estimate, repairs made to its index text by kind).
OcrRow = tuple[str, ocr_quality.OcrQuality, dict[str, int]]


@dataclass
class PreparedDocument:
    """A document prepared elsewhere (`Preparation.prepare`), for `Collection.ingest`: admitted (date checked,
    language set), hashed, and, unless it is `unchanged` (already indexed with this hash: then its text and chunks
    are not carried), chunked and estimated, with the vectors of the chunk texts that were embedded
    (`vectors`: text hash → vector; a text embedded before is looked up in the store instead)."""

    doc: Document
    digest: str
    detected: str | None = None  # the language detected, when the document stated none
    warnings: list[RecordWarning] = field(default_factory=list)  # reported only if the document is kept
    unchanged: bool = False
    chunks: list[Chunk] | None = None
    ocr: OcrRow | None = None
    vectors: dict[str, np.ndarray] = field(default_factory=dict)


class IndexedDocuments:
    """Which documents a collection holds indexed, by (id, content hash), as a sorted array of 16-byte keys: what
    the processes preparing an ingest's documents are told, so that an unchanged document comes back `unchanged`
    without being chunked or estimated again. A million documents are 16 MB, where a Python set of their ids and
    hashes would be ~150 MB in every worker; looked up by bisection."""

    def __init__(self, pairs: Iterable[tuple[str, str]]):
        self.keys = sorted_keys((document_key(doc_id, digest) for doc_id, digest in pairs), 16)

    def holds(self, doc_id: str, digest: str) -> bool:
        return bool(held(self.keys, [document_key(doc_id, digest)])[0])


def document_key(doc_id: str, digest: str) -> bytes:
    return hashlib.blake2b(f"{doc_id}\0{digest}".encode(), digest_size=16).digest()


def sorted_keys(keys: Iterator[bytes], width: int) -> np.ndarray:
    """A sorted array of fixed-width keys, to look up by bisection (`held`)."""
    return np.sort(np.fromiter(keys, dtype=f"S{width}"))


def held(keys: np.ndarray, wanted: Sequence[bytes]) -> np.ndarray:
    """For each of `wanted`, whether the sorted `keys` hold it."""
    if not len(keys) or not wanted:
        return np.zeros(len(wanted), dtype=bool)
    probe = np.array(wanted, dtype=keys.dtype)
    at = np.minimum(np.searchsorted(keys, probe), len(keys) - 1)
    return np.asarray(keys[at] == probe)


class Preparation:
    """The per-document steps of an ingest, shaped by a collection's settings (its recorded chunking and OCR
    repairs win over the caller's: pass the opened collection's `settings`)."""

    def __init__(self, settings: Settings):
        self.size = settings.chunk.size
        self.overlap = settings.chunk.overlap
        self.ocr_fixes = settings.ingest.ocr_fixes
        self.detect_language = settings.ingest.detect_language
        self.languages = tuple(settings.ingest.languages)
        self.spelling = load_spelling(settings.ingest.spelling_map)
        # The detector is loaded at its first use (a labelled collection never pays the 1.3 s); with candidates it
        # is loaded at once, so that a bad code stops the ingest before anything is written.
        self._detector = LanguageDetector(self.languages) if self.detect_language and self.languages else None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_detector": None}  # each process loads its own (py3langid's model is 20 MB)

    def admit(self, doc: Document) -> tuple[list[RecordWarning], str | None]:
        """What the ingest does to every document it keeps, in place: its date normalised (a bad one costs the
        date, not the document: a warning), and its language detected when it states none. Returns the warnings
        and the language detected (None: stated, or not detected)."""
        warnings = []
        try:  # readers check dates already; documents built by library users may not
            doc.date = normalise_date(doc.date)
        except ValueError as exc:
            doc.date = None
            where = str(doc.source.get("file", doc.id))
            warnings.append(RecordWarning(f"document {doc.id}: {exc}; kept undated", where, doc.source.get("line")))
        detected = None
        if not doc.language and self.detect_language:
            if self._detector is None:
                self._detector = LanguageDetector(self.languages)
            title = f"{doc.title}\n" if doc.title else ""
            detected = self._detector.detect(title + doc.text)
            if detected is not None:
                doc.language = detected
                doc.fields[LANGUAGE_SOURCE] = DETECTED
        return warnings, detected

    def chunks(self, doc: Document) -> Iterator[Chunk]:
        """The document's chunks, streamed, each with its index text."""
        # The title is part of every chunk's index text (not of its cited text): a title's words are evidence
        # for the whole document, and whole-document peers (bm25s) see them too.
        title = f"{doc.title.strip()}\n" if doc.title and doc.title.strip() else ""
        forms = hyphenation_forms(doc.text, doc.source.get("hyphenated"))  # ALTO SUBS_CONTENT, for the index only
        if self.ocr_fixes:  # the repairs come first, so the OCR'd surfaces must be found repaired
            forms = {self._ocr_fixed(surface): self._ocr_fixed(word) for surface, word in forms.items()}
        return iter_chunks(
            doc.id,
            doc.text,
            size=self.size,
            overlap=self.overlap,
            index_form=lambda s: normalise(self._ocr_fixed(title + s), self.spelling, forms),
        )

    def ocr_row(self, doc: Document) -> OcrRow:
        """The document's OCR-quality estimate, and the repairs its index text got (none with `ingest.ocr_fixes`
        off). The estimate reads the repaired text either way, so that it means the same in every collection."""
        sample = doc.text[:OCR_ESTIMATE_CHARS]
        fixed = ocr_fixes.fix(sample)[0]
        fixes = ocr_fixes.count(doc.text) if self.ocr_fixes else {}
        return doc.id, ocr_quality.estimate(normalise(fixed), doc.language), dict(fixes)

    def prepare(self, doc: Document, is_indexed: Callable[[str, str], bool] | None = None) -> PreparedDocument:
        """Everything but the vectors, for a document read on another process. `is_indexed(doc_id, digest)` says
        whether the collection holds it indexed with this digest already: such a document comes back `unchanged`,
        without its text, chunks and estimate (the ingest only counts it)."""
        warnings, detected = self.admit(doc)
        digest = doc.content_hash()
        if is_indexed is not None and is_indexed(doc.id, digest):
            return PreparedDocument(_without_text(doc), digest, detected, warnings, unchanged=True)
        return PreparedDocument(doc, digest, detected, warnings, chunks=list(self.chunks(doc)), ocr=self.ocr_row(doc))

    def _ocr_fixed(self, text: str) -> str:
        return ocr_fixes.fix(text)[0] if self.ocr_fixes else text


def load_spelling(path: Path | None) -> dict[str, str] | None:
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


def _without_text(doc: Document) -> Document:
    """What the ingest needs of an unchanged document: its id, what it counts, and where it was read (to name it)."""
    where: dict[str, Any] = {key: doc.source[key] for key in ("file", "line") if key in doc.source}
    return Document(doc.id, "", doc.corpus, doc.title, doc.date, doc.language, where, {}, doc.ocr_quality)
