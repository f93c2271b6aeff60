"""A collection directory on disk: the names of its files, whether this process may write them, where a read-only
collection's private copies and trails go, and the cleaning of a creation that was killed half-way.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pwd
import shutil
import sqlite3
import urllib.parse
from pathlib import Path

from tracerag.config import Settings
from tracerag.locks import Holder, WriterLock

MANIFEST = "collection.toml"
STORE_FILE = "store.sqlite"  # the document store, the source of truth
VOCABULARY_DIR = "vocabulary"  # the word model trained on the collection (retrieval/vocabulary.py)
# The researchers' selections (research/selection.py): a file of its own, so a re-ingest leaves them untouched and a
# decision is written without the writer lock while an ingest runs.
SELECTIONS_FILE = "selections.sqlite"
STATE_DIR = ".tracerag"  # the writer lock and its holder's note (locks.py), and a migration's checkpoint


def readable_as_the_rest(path: Path) -> None:
    """Give the index files the read permissions the collection's own files have. tantivy writes some of them
    (each language index's meta.json and .managed.json, replaced at every commit) with mode 0600 whatever the
    umask, which would make a collection shared read-only with colleagues unreadable to them; collection.toml was
    made with the user's umask, so its read bits say what the user meant."""
    try:
        wanted = (path / MANIFEST).stat().st_mode & 0o444
    except OSError:
        return
    for folder, dirs, files in os.walk(path / "index"):
        for name, bits in [(d, wanted | wanted >> 2) for d in dirs] + [(f, wanted) for f in files]:
            target = os.path.join(folder, name)
            with contextlib.suppress(OSError):  # best effort: the files work for this user either way
                mode = os.stat(target).st_mode
                if mode & bits != bits:
                    os.chmod(target, mode | bits)


def remove_unfinished_creation(path: Path) -> None:
    """A creation killed before it wrote collection.toml leaves an empty store and index, shaped by settings
    that may not be this run's (another embedding model, another dimension): start from nothing. Called under
    the writer lock; no reader opens a folder without a manifest. A store that holds documents is kept."""
    store = path / STORE_FILE
    if store.exists():
        try:
            with contextlib.closing(sqlite3.connect(f"file:{urllib.parse.quote(str(store))}?mode=ro", uri=True)) as db:
                if db.execute("SELECT count(*) FROM documents").fetchone()[0]:
                    return
        except sqlite3.Error:
            pass  # no documents table: nothing to keep
        for suffix in ("", "-wal", "-shm"):
            (path / f"{STORE_FILE}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(path / "index", ignore_errors=True)


def private_root(path: Path, settings: Settings) -> Path:
    """Where this user keeps what a read-only collection cannot hold: the private copies of its index, and
    the trails of runs on it."""
    return settings.cache_dir / "readonly" / hashlib.sha256(str(Path(path).resolve()).encode()).hexdigest()[:16]


def trail_roots(path: Path, settings: Settings) -> list[Path]:
    """The folders whose `trails/` hold the runs on the collection at `path`: its own, then the private one where
    runs went while it was read-only here (`tracerag.trail.find_trail` and `list_trails` take one of them)."""
    return [Path(path), private_root(path, settings)]


def holder_of(lock: WriterLock) -> Holder | None:
    """Who holds the writer lock; None also when it cannot be looked at (read-only storage without one)."""
    try:
        return lock.holder()
    except OSError:
        return None


def storage_problem(path: Path) -> str | None:
    """Why this process cannot write the collection at `path` ("on read-only storage", "owned by alice, not
    writable by this user"), or None when it can: the folder, the store and every file and folder of the index.
    The index may be changing under another process as we look (files come and go): a vanished file is fine."""
    targets = [path, path / STORE_FILE, path / f"{STORE_FILE}-wal", path / f"{STORE_FILE}-shm", path / STATE_DIR]
    for folder, dirs, files in os.walk(path / "index"):  # errors (a folder gone meanwhile) are skipped
        targets += [Path(folder) / name for name in (*dirs, *files)]
    targets.insert(1, path / "index")
    for target in targets:
        if os.access(target, os.W_OK) or not os.path.lexists(target):
            continue
        try:
            if os.statvfs(target).f_flag & os.ST_RDONLY:
                return "on read-only storage"
            uid = target.stat().st_uid
        except OSError:
            continue  # gone between the two looks
        try:
            owner = pwd.getpwuid(uid).pw_name
        except KeyError:
            owner = f"uid {uid}"
        where = target.relative_to(path) if target != path else "."
        return f"owned by {owner}, not writable by this user ({where})"
    return None
