"""A collection is a directory: `collection.toml` (what built it), `store.sqlite` (the documents, source of
truth), `index/` (the engine), `trails/` (run records). `Collection` ties them to the embedding model and runs
the ingest: read → normalise → chunk → store (pending) → embed → index → mark indexed.

One module per job: the folder's files and who may write them (layout.py), its manifest (manifest.py), the engine
its index is opened with (engines.py), what an open collection holds (state.py), opening and closing it under the
writer lock (opening.py, where `Collection` is put together), the ingest (ingest.py), and the work on what it
already holds: vectors added, chunks paged out for a new index, counts (maintenance.py).
"""

from tracerag.collection.ingest import IngestReport
from tracerag.collection.layout import (
    MANIFEST,
    SELECTIONS_FILE,
    STATE_DIR,
    STORE_FILE,
    VOCABULARY_DIR,
    private_root,
    storage_problem,
    trail_roots,
)
from tracerag.collection.manifest import OLD_ENGINE, engine_of, write_manifest
from tracerag.collection.opening import Collection
from tracerag.collection.state import Mode

__all__ = [
    "MANIFEST",
    "OLD_ENGINE",
    "SELECTIONS_FILE",
    "STATE_DIR",
    "STORE_FILE",
    "VOCABULARY_DIR",
    "Collection",
    "IngestReport",
    "Mode",
    "engine_of",
    "private_root",
    "storage_problem",
    "trail_roots",
    "write_manifest",
]
