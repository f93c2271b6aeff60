"""Readers turn files into `Document`s, streaming, one record at a time.

Every reader is a module with `read(path, **options) -> Iterator[Document | RecordError | RecordWarning]`: `path`
is a file or a folder (walked in sorted order for the reader's file types). A record that cannot be read is
yielded as a `RecordError` naming its file and line, and reading goes on: the ingest counts and reports it,
nothing is lost. A record that could be read only by repairing or guessing something (bytes replaced, an encoding
detected, a date dropped) is kept, and a `RecordWarning` saying what was done comes just before it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracerag.errors import ConfigError, RecordError
from tracerag.model import Document
from tracerag.text import first_control

# format name -> module under tracerag.ingest
FORMATS: dict[str, str] = {
    "jsonl": "jsonl",
    "csv": "table",
    "txt": "textdir",
    "alto": "alto",
    "hipe": "hipe",
}


@dataclass(frozen=True, slots=True)
class RecordWarning:
    """What a reader repaired or guessed in a record it kept. Not an error: the record is ingested, not skipped,
    and the report lists the warning so the user can fix the source (or pass `--encoding`) and re-ingest."""

    reason: str
    file: str
    line: int | None = None
    record: str | None = None  # the document id (or key) it concerns, when known

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.reason}"


Item = Document | RecordError | RecordWarning  # what readers yield


@dataclass(frozen=True, slots=True)
class ReadPart:
    """Some of the files a reader would read under a folder (in its order), read by one worker of a distributed
    ingest as the reader reads them in the whole walk: ids, sub-corpora and metadata are the folder's. `lead`: this
    part comes first, and also yields the records that belong to the folder rather than to a file (the rows of a
    text folder's `metadata.csv` that are bad), so that they are reported once."""

    files: tuple[Path, ...]
    lead: bool = True


_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".txt": "txt",
    ".xml": "alto",
    ".tsv": "hipe",
}


def id_problem(doc_id: str) -> str | None:
    """Why `doc_id` cannot be a document's id, or None: it holds a control character (ESC, NUL, a line break), as
    the ids of a binary file read as records do. Every reader reports such a record and skips it."""
    found = first_control(doc_id)
    return f"id holds a control character ({found[1]} at character {found[0] + 1})" if found else None


def detect_format(path: Path) -> str:
    """Guess a format from file suffixes; a folder is judged by its most common known suffix."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    counts: dict[str, int] = {}
    for f in files:
        fmt = _SUFFIXES.get(f.suffix.lower())
        if fmt:
            counts[fmt] = counts.get(fmt, 0) + 1
    if not counts:
        raise ConfigError(f"{path}: cannot tell the format (no .jsonl/.csv/.txt/.xml/.tsv files); pass --format")
    return max(counts, key=lambda k: counts[k])


def read_documents(path: Path, fmt: str | None = None, **options: Any) -> Iterator[Item]:
    """Stream the documents (the records that failed, the warnings) of `path` in format `fmt` (guessed if None)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder")
    fmt = fmt or detect_format(path)
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    module = importlib.import_module(f"tracerag.ingest.{FORMATS[fmt]}")
    items = module.read(path, **options)
    return items if fmt in _CHECK_IDS else _checked_ids(items, path)


# The formats whose readers check each id themselves (`id_problem`), naming the line.
_CHECK_IDS = ("jsonl", "csv", "txt")


def _checked_ids(items: Iterator[Item], path: Path) -> Iterator[Item]:
    """The items of a reader that does not check ids (ALTO: a file name and block id; HIPE: a document id), with a
    document whose id holds a control character turned into a `RecordError`."""
    for item in items:
        if isinstance(item, Document) and (problem := id_problem(item.id)):
            where = item.source.get("file")
            yield RecordError(problem, file=where if isinstance(where, str) else str(path), record=item.id)
            continue
        yield item


def reader_files(path: Path, fmt: str, **options: Any) -> list[Path]:
    """The files the reader of `fmt` reads under `path` with these options, in its order (to split into `ReadPart`s)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    module = importlib.import_module(f"tracerag.ingest.{FORMATS[fmt]}")
    return list(module.walk(Path(path), **options))


def read_part(path: Path, fmt: str, part: ReadPart, **options: Any) -> Iterator[Item]:
    """The records `read_documents(path, fmt, **options)` yields for the files of `part`, in the same order."""
    return read_documents(path, fmt, part=part, **options)


def iter_files(path: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    """The files under `path` (or `path` itself) with one of `suffixes`, in a stable order."""
    if path.is_file():
        yield path
        return
    for f in sorted(path.rglob("*")):
        if f.is_file() and f.suffix.lower() in suffixes:
            yield f


__all__ = [
    "FORMATS",
    "Item",
    "ReadPart",
    "RecordError",
    "RecordWarning",
    "detect_format",
    "id_problem",
    "iter_files",
    "read_documents",
    "read_part",
    "reader_files",
]
