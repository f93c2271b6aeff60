"""The document store: SQLite, the collection's source of truth. The engine index can always be rebuilt
from it. Writes go through transactions, so a killed ingest leaves either the old or the new state of a
document, flagged `pending` until the engine has it too.

One module per group of tables: the file, its schema and connections (sqlite.py), the documents (documents.py),
their chunks and vectors (chunks.py), the named entities (entities.py), the OCR estimates (ocr.py).
`DocumentStore` joins them: one object, one connection, as before.
"""

from tracerag.store.chunks import StoredChunk, text_hash
from tracerag.store.documents import CorpusInfo, DocumentTables
from tracerag.store.entities import EntityTables
from tracerag.store.ocr import OcrTables
from tracerag.store.sqlite import connect_read_only


class DocumentStore(DocumentTables, EntityTables, OcrTables):
    """`read_only` opens the database without ever writing it: readers share a collection with a writer (they
    see its commits), and a collection on storage this user cannot write is readable at all. Only a writer sets
    the journal mode and creates the schema (`PRAGMA journal_mode=WAL` writes, and fails on read-only storage).
    """


__all__ = ["CorpusInfo", "DocumentStore", "StoredChunk", "connect_read_only", "text_hash"]
