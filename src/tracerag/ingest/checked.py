"""The records of a file or folder, with the path, the format and the reader's options checked before anything is
written: readers are generators that check their options only when the first record is asked for, so it is asked
for here, before any collection exists, and put back."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from tracerag.errors import ConfigError
from tracerag.ingest import Item, detect_format, read_documents
from tracerag.ingest.prepare import PreparedDocument
from tracerag.model import Document

# The options each reader understands beyond `encoding` (which every reader takes) and `corpus`/`language`
# (every reader but hipe's, whose files say both).
_CSV_OPTIONS = (
    "id_column",
    "text_column",
    "title_column",
    "date_column",
    "corpus_column",
    "language_column",
    "on_columns",  # told which column fills which field, file by file
)


def read_checked(path: Path, fmt: str | None, options: Mapping[str, Any]) -> Iterator[Item]:
    """The records of `path` in `fmt` (guessed when None), given only the `options` its reader understands (None
    values are left out). Raises ConfigError on a missing path, an unknown format or a bad option."""
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder")
    fmt = fmt or detect_format(path)
    delimiter = options.get("delimiter")
    if delimiter is not None and len(delimiter) != 1:
        raise ConfigError(f"--delimiter {delimiter!r}: expected one character")
    records = read_documents(path, fmt, **reader_options(fmt, options))
    for first in records:
        return itertools.chain([first], records)
    return iter(())


def reader_options(fmt: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Only the options the reader of `fmt` understands, without the unset ones."""
    given = {key: value for key, value in options.items() if value is not None}
    chosen = {key: given[key] for key in ("encoding",) if key in given}
    if fmt in ("csv", "alto", "jsonl", "txt"):
        chosen |= {key: given[key] for key in ("corpus", "language") if key in given}
    if fmt == "csv":
        chosen |= {key: given[key] for key in (*_CSV_OPTIONS, "delimiter") if key in given}
    if fmt == "alto":
        chosen |= {key: given[key] for key in ("unit", "date") if key in given and given[key] != ""}
    return chosen


def take_documents(records: Iterable[Item | PreparedDocument], limit: int) -> Iterator[Item | PreparedDocument]:
    """The records up to the `limit`-th document (the errors and warnings between documents do not count)."""
    n = 0
    for r in records:
        if n >= limit:
            return
        if isinstance(r, Document | PreparedDocument):
            n += 1
        yield r
