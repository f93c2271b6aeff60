"""The errors TRACE raises on purpose. The CLI turns them into messages and exit codes; nothing else catches them.
A full disk is recognised here too, in whatever error a library raised for it (`DiskFullError`, `disk_full`)."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict


class TraceError(Exception):
    """Base of every error that the user can act on."""


class ConfigError(TraceError):
    """A setting has a value that cannot be used."""


class CollectionError(TraceError):
    """A collection directory is missing, damaged, or built with something else than asked."""


class ModelMismatchError(CollectionError):
    """The collection was built with another embedding model than the one asked for."""


class Where(TypedDict):
    """Where a record was read: the keyword arguments of `RecordError` (and of ingest's `RecordWarning`), built once
    per record and passed as `**where` to each error about it."""

    file: str
    line: int | None


class RecordError(TraceError):
    """One input record cannot be read. Carries where, so the ingest can report it and go on."""

    def __init__(self, message: str, *, file: str, line: int | None = None, record: str | None = None):
        self.file = file
        self.line = line
        self.record = record
        where = file if line is None else f"{file}:{line}"
        super().__init__(f"{where}: {message}")
        self.reason = message

    def __reduce__(self) -> tuple:
        # Pickled with what it was made of (a distributed ingest's workers send their skipped records back):
        # an exception is rebuilt from `args`, which hold only the message.
        return (_record_error, (type(self), self.reason, self.file, self.line, self.record))


def _record_error(cls: type[RecordError], reason: str, file: str, line: int | None, record: str | None) -> RecordError:
    return cls(reason, file=file, line=line, record=record)


class EmbeddingError(TraceError):
    """The embedding model cannot be loaded or answered badly."""


class EngineError(TraceError):
    """The search engine's server could not be reached, or refused a request, after the retries its settings allow
    (the message names the server, the status and what to do)."""


class DataUnavailableError(TraceError):
    """Data the user asked for is neither on disk nor reachable."""


class LLMError(TraceError):
    """The language model could not be reached, or kept answering with something unusable."""


class LLMCallFailed(LLMError):
    """A model call that got no answer at all (endpoint unreachable, an HTTP error after its retries). The failed
    call (an `llm.Completion` with its attempts and error) travels with the error, so that the stage that made it
    records it in the trail like any other call before the run ends."""

    def __init__(self, message: str, completion: Any):
        super().__init__(message)
        self.completion = completion


class TrailError(TraceError):
    """A trail file is missing, or a line of it does not match the event schema. A damaged line carries its file
    and line, so that a listing can show them apart from the reason."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None):
        self.file = file
        self.line = line
        self.reason = message
        where = file if line is None else f"{file}:{line}"
        super().__init__(f"{where}: {message}" if file else message)


class CollectionBusyError(CollectionError):
    """Another process holds what this one needs (the writer lock, or the index it has not handed over yet).
    Temporary: the CLI exits 3 so that a script can retry, or the user can pass --wait."""


class ReadOnlyError(CollectionError):
    """The command must write, and the collection cannot be written here (read-only storage, another user's files)."""


class NothingIngestedError(ConfigError):
    """A first ingest read no document: no collection was made. Carries the ingest's report (what was skipped, and
    why), so that the CLI can print it before the error."""

    def __init__(self, message: str, report: object):
        super().__init__(message)
        self.report = report


class SelectionError(TraceError):
    """A research question's selection cannot be found, read or written as asked (no such question, an ambiguous
    prefix, a bad span, a selection file that cannot be opened)."""


class DiskFullError(TraceError):
    """A write found no space left on its disk (or the user's quota spent). Carries the folder it was writing in,
    what it was writing and, when known, how many bytes that write needed; the message adds the free space there.
    The CLI exits 4 (`ExitCode.NO_SPACE`), the web server answers 507. Made where the folder is known
    (`DiskFullError.of`, `on_full_disk`); anywhere else, `disk_full` recognises the error at the boundary."""

    def __init__(self, folder: str | os.PathLike[str] | None, writing: str, *, needed: int | None = None):
        self.folder = None if folder is None else Path(folder)
        self.writing = writing
        self.needed = needed
        self.free = free_space(self.folder) if self.folder is not None else None
        where = f"the disk of {self.folder}" if self.folder is not None else "a disk TRACE writes to"
        free = f" ({_size(self.free)} free)" if self.free is not None else ""
        need = f", which needed {_size(needed)}" if needed else ""
        super().__init__(
            f"no space left on {where}{free} while writing {writing}{need}. Free some space there and run the "
            "command again (what was committed stays; an ingest or embed resumes where it stopped)"
        )

    @classmethod
    def of(cls, exc: BaseException, folder: str | os.PathLike[str], writing: str | None = None) -> DiskFullError | None:
        """`exc` as a DiskFullError in `folder` when it says the disk is full (the DiskFullError it is, or was raised
        from, when there is one: it knows its folder best), else None. `writing` says what was being written; by
        default the file the error names, or the folder's files."""
        said = next((e for e in _chain(exc) if isinstance(e, DiskFullError)), None)
        if said is not None:
            return said
        if not says_disk_full(exc, folder):
            return None
        return cls(folder, writing or _written(exc, Path(folder)))


def disk_full(exc: BaseException) -> DiskFullError | None:
    """At the boundary (the CLI's `friendly`, the web server): any error from below that says the disk is full, as
    a DiskFullError (the one it was raised from, if any; else naming the folder of the file it names), else None."""
    chain = list(_chain(exc))
    said = next((e for e in chain if isinstance(e, DiskFullError)), None)
    if said is not None:
        return said
    named = next((e.filename for e in chain if isinstance(e, OSError) and e.filename), None)
    path = Path(os.fsdecode(named)) if isinstance(named, str | bytes) else None
    if not says_disk_full(exc, path.parent if path else None):
        return None
    if path is not None:
        return DiskFullError(path.parent, path.name)
    sqlite = any(getattr(e, "sqlite_errorcode", None) is not None for e in chain)
    return DiskFullError(None, "an SQLite database" if sqlite else "a file")


def raise_if_disk_full(exc: BaseException, folder: str | os.PathLike[str], writing: str | None = None) -> None:
    """Raise `exc` as a DiskFullError in `folder` (and `writing`) when it says the disk is full; else return, for
    the caller to raise `exc` as it is. Called where an error passes a place that knows the folder."""
    full = DiskFullError.of(exc, folder, writing) if isinstance(exc, Exception) else None
    if full is None or full is exc:
        return
    if full.__traceback__ is None:  # made here, from the library's error
        raise full from exc
    raise full from None  # the DiskFullError said further down, which `exc` only followed


@contextmanager
def on_full_disk(folder: str | os.PathLike[str], writing: str | None = None) -> Iterator[None]:
    """Within: an error saying the disk is full becomes a DiskFullError naming `folder` (and `writing`)."""
    try:
        yield
    except Exception as exc:
        raise_if_disk_full(exc, folder, writing)
        raise


# ENOSPC; EDQUOT (a quota spent) has the same remedy. SQLite's own codes: SQLITE_FULL, and SQLITE_IOERR, which is
# what it says when the shared-memory file of its WAL cannot grow (SQLITE_IOERR_SHMSIZE) on a full disk.
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
_SQLITE_FULL, _SQLITE_IOERR = 13, 10
# Native libraries (tantivy, Qdrant Edge: Rust's io::Error) raise errors with the system's words in the message.
_NO_SPACE_WORDS = ("no space left on device", "database or disk is full", "disk quota exceeded", "(os error 28)")
# An I/O error of SQLite is a full disk when the folder's disk has less than this left (a WAL page, a shm region)
LOW_SPACE = 1 << 20


def says_disk_full(exc: BaseException, folder: str | os.PathLike[str] | None = None) -> bool:
    """Whether `exc`, or an error that caused it, says that the disk is full. SQLite's generic I/O error counts
    only when `folder` is given and its disk is (nearly) full: SQLite says no more."""
    for error in _chain(exc):
        if isinstance(error, DiskFullError):
            return True
        if isinstance(error, OSError) and error.errno in _NO_SPACE:
            return True
        code = getattr(error, "sqlite_errorcode", None)
        if isinstance(code, int):
            if code & 0xFF == _SQLITE_FULL:
                return True
            if code & 0xFF == _SQLITE_IOERR and folder is not None:
                free = free_space(folder)
                if free is not None and free < LOW_SPACE:
                    return True
        # a library's own words (Qdrant Edge and tantivy raise plain Exceptions and ValueErrors); never ours, which
        # may quote anything (a TraceError counts by the error it was raised from)
        if not isinstance(error, TraceError) and any(words in str(error).lower() for words in _NO_SPACE_WORDS):
            return True
    return False


def free_space(folder: str | os.PathLike[str]) -> int | None:
    """Bytes free to this user on the disk of `folder`, or of its nearest existing parent (a folder removed by the
    failed write's cleanup); None when it cannot be known."""
    path = Path(folder).absolute()
    for candidate in (path, *path.parents):
        if candidate.exists():
            try:
                return shutil.disk_usage(candidate).free
            except OSError:
                return None
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and the errors it was raised from or while handling, each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _written(exc: BaseException, folder: Path) -> str:
    """What a failed write was writing, as far as the error says: the file it names, else SQLite's store."""
    for error in _chain(exc):
        if isinstance(error, OSError) and isinstance(error.filename, str | bytes):
            name = Path(os.fsdecode(error.filename))
            try:
                return str(name.absolute().relative_to(folder.absolute()))
            except ValueError:
                return str(name)
        if getattr(error, "sqlite_errorcode", None) is not None:
            return "its SQLite database"
    return "its files"


def _size(n: int | float) -> str:
    """Bytes for a person: 0 B, 812.0 KiB, 3.4 MiB, 1.2 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"
