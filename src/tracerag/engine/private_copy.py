"""A private copy of a text index that this user cannot write (read-only storage, another user's collection).

tantivy's reader takes a lock file in the index folder (so that a merge does not delete a segment it is opening),
which it cannot create where it cannot write, so a reader searches a copy in its own cache:
`ROOT/<fingerprint>/index`, where the fingerprint hashes the names, sizes and modification times of the index files.
The copy is made once and reused while the fingerprint holds; when the original changes (its owner ingested more),
the next reader makes a fresh copy and old copies nobody serves are removed. The copy is checked against the
fingerprint taken before it: an index that changed while it was copied (its owner is writing it) is not used.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from tracerag.errors import CollectionBusyError, CollectionError
from tracerag.locks import FileLock

_COMPLETE = "complete"  # written last: a copy without it was interrupted
_STALE_PARTIAL_S = 3600.0


def fingerprint(index: Path) -> tuple[str, int]:
    """(hash of every file's relative path, size and mtime; bytes on disk) of an index folder. Bytes on disk,
    not file sizes: the engine's files are mostly holes (its WAL and text index pages are preallocated)."""
    digest = hashlib.sha256()
    total = 0
    for path in sorted(p for p in Path(index).rglob("*") if p.is_file()):
        st = path.stat()
        digest.update(f"{path.relative_to(index)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        total += st.st_blocks * 512
    return digest.hexdigest()[:20], total


def _fingerprint_now(index: Path, label: str) -> tuple[str, int]:
    try:
        return fingerprint(index)
    except FileNotFoundError:  # a file went away as we looked: its owner is writing it
        raise CollectionBusyError(f"the index of {label} is changing (it is being written); retry") from None
    except OSError as exc:
        raise CollectionError(f"{label}: cannot read its index: {exc}") from exc


IN_USE = Path(".tracerag") / "engine.lock"  # in a copy: held shared by every process searching it


def hold(copy: Path) -> FileLock | None:
    """Take the copy at `copy` (a folder `private_copy` returned) for as long as the lock is held: old copies are
    removed only when nobody holds theirs. None when the copy went meanwhile (a newer one replaced it)."""
    lock = FileLock(copy / IN_USE)
    try:
        (copy / IN_USE).parent.mkdir(exist_ok=True)
        taken = lock.acquire(shared=True, blocking=True)
    except OSError:
        return None
    if not taken or not (copy / _COMPLETE).is_file():
        lock.release()
        return None
    return lock


def private_copy(index: Path, root: Path, *, label: str, notify: Callable[[str], None]) -> Path:
    """The folder holding an up-to-date private copy of `index` (as `index/`, beside its own `.tracerag/`),
    made now if there is none. Hold it (`hold`) while searching it."""
    fp, size = _fingerprint_now(index, label)
    target = root / fp
    if (target / _COMPLETE).is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    partial = root / f".{fp}.{os.getpid()}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        _copy(index, partial / "index")
    except FileNotFoundError:
        shutil.rmtree(partial, ignore_errors=True)
        raise CollectionBusyError(
            f"the index of {label} changed while it was copied (it is being written); retry"
        ) from None
    except PermissionError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise CollectionError(
            f"{label}: this user cannot read its index ({exc.filename}): its owner can make it readable with "
            f"`chmod -R a+rX {index}` (TRACE's own writes keep the index as readable as the collection)"
        ) from None
    except OSError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise CollectionError(f"{label}: cannot copy its index into {root}: {exc}") from exc
    if _fingerprint_now(index, label)[0] != fp:
        shutil.rmtree(partial, ignore_errors=True)
        raise CollectionBusyError(f"the index of {label} changed while it was copied (it is being written); retry")
    (partial / _COMPLETE).write_text(f"{index}\n", encoding="utf-8")
    try:
        partial.rename(target)
    except OSError:  # another reader made the same copy first: use theirs
        shutil.rmtree(partial, ignore_errors=True)
        if not (target / _COMPLETE).is_file():
            raise
    else:
        notify(f"{label} is read-only here: searching a private copy of its index ({size / 2**20:.0f} MiB) in {target}")
    _remove_old_copies(root, keep=fp)
    return target


def _copy(source: Path, dest: Path) -> None:
    """Copy file contents only (the copy must be writable by us, whatever the modes of the original), and keep
    the holes: a HIPE-2022 index is 454 MiB of file sizes but 43 MiB on disk."""
    for folder, _dirs, files in os.walk(source):
        rel = Path(folder).relative_to(source)
        (dest / rel).mkdir(parents=True, exist_ok=True)
        for name in files:
            _copy_sparse(Path(folder) / name, dest / rel / name)


def _copy_sparse(source: Path, dest: Path) -> None:
    with open(source, "rb") as src, open(dest, "wb") as out:
        size = os.fstat(src.fileno()).st_size
        pos = 0
        while pos < size:
            try:
                start = os.lseek(src.fileno(), pos, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # nothing but a hole up to the end
                    break
                raise
            end = os.lseek(src.fileno(), start, os.SEEK_HOLE)
            src.seek(start)
            out.seek(start)
            left = end - start
            while left > 0:
                block = src.read(min(left, 1 << 20))
                if not block:
                    break
                out.write(block)
                left -= len(block)
            pos = end
        out.truncate(size)


def _remove_old_copies(root: Path, keep: str) -> None:
    """Copies of earlier states of the index that no process serves, and partial copies long abandoned."""
    for entry in root.iterdir():
        if entry.name in (keep, "trails") or not entry.is_dir():
            continue
        if entry.name.startswith("."):
            if entry.name.endswith(".partial") and time.time() - entry.stat().st_mtime > _STALE_PARTIAL_S:
                shutil.rmtree(entry, ignore_errors=True)
            continue
        lock_path = entry / IN_USE
        if not lock_path.exists():
            shutil.rmtree(entry, ignore_errors=True)
            continue
        lock = FileLock(lock_path)
        with contextlib.suppress(OSError):
            if lock.acquire():
                try:
                    shutil.rmtree(entry, ignore_errors=True)
                finally:
                    lock.release()
