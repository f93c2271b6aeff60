"""Text-folder reader: every `.txt` file under a folder is one document, kept exactly as written (UTF-8).

- id: the file's path relative to the folder, without `.txt`, with `/` separators (`letters/1887-05-17`).
- corpus: the `corpus` option, else the first sub-folder (`letters`), else the folder's own name.
- language: the `language` option, if given.

Metadata, optional, with the keys of the JSONL format (`title`, `date`, `language`, `corpus`, `source`,
`fields`, `ocr_quality`; any other key or column goes into `source`):

- `metadata.csv` or `metadata.jsonl` in the folder root, one row per document, found by an `id` value (the
  document id) or a `file` value (`letters/1887-05-17.txt`, or the bare file name `1887-05-17.txt`);
- `name.json` next to `name.txt`: one JSON object, which wins over the root metadata.

Metadata beats the options and the folder names. A text file that is not UTF-8 or is empty (blank) is yielded
as a `RecordError`. So is a bad metadata row (a date such as `1887-13`, no id/file, wrong column count) or a bad
`name.json`; when the bad row or sidecar names its document, that document is left out rather than ingested
half-described. The root metadata is held in memory (a small dict per row); the texts stream, a file at a time.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracerag.errors import RecordError
from tracerag.ingest import iter_files
from tracerag.ingest.jsonl import iter_records, record_metadata
from tracerag.ingest.table import iter_rows
from tracerag.model import Document

METADATA_FILES = ("metadata.csv", "metadata.jsonl")
_SNIPPET = 200
_KEYS = ("id", "file")  # how a metadata row names its document; not metadata themselves

# key -> metadata keywords, or None for a row that was reported as bad (its document is left out)
_Index = dict[str, dict[str, Any] | None]


def read(path: Path, *, corpus: str | None = None, language: str | None = None) -> Iterator[Document | RecordError]:
    """Stream the `.txt` files under `path` (a folder, or one file) as documents, with their metadata."""
    path = Path(path)
    root = path if path.is_dir() else path.parent
    index: _Index = {}
    for name in METADATA_FILES:
        if (root / name).is_file():
            yield from _load_metadata(root / name, index)
    for f in iter_files(path, (".txt",)):
        item = _document(f, root, index, corpus, language)
        if item is not None:
            yield item


def _document(
    f: Path, root: Path, index: _Index, corpus: str | None, language: str | None
) -> Document | RecordError | None:
    rel = f.relative_to(root)
    doc_id = rel.with_suffix("").as_posix()
    try:
        raw = f.read_bytes()
    except OSError as e:
        return RecordError(f"cannot read: {e.strerror or e}", file=str(f), record=doc_id)
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        return RecordError(f"not UTF-8 (byte {raw[e.start]:#04x})", file=str(f), line=line, record=doc_id)
    if not text.strip():
        return RecordError("empty", file=str(f), record=doc_id)

    meta: dict[str, Any] = {
        "corpus": corpus or (rel.parts[0] if len(rel.parts) > 1 else root.resolve().name or "default")
    }
    if language:
        meta["language"] = language.strip().lower()
    keys = [k for k in (doc_id, rel.as_posix(), f.name) if k in index]
    if keys:
        row = index[keys[0]]
        if row is None:  # its metadata row was bad and already reported
            return None
        _layer(meta, row)
    sidecar = f.with_suffix(".json")
    if sidecar.is_file():
        try:
            _layer(meta, _read_sidecar(sidecar))
        except ValueError as e:
            return RecordError(str(e), file=str(sidecar), record=doc_id)
    return Document(id=doc_id, text=text, **meta)


def _read_sidecar(path: Path) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise ValueError(f"not UTF-8 (byte {e.object[e.start]:#04x})") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"bad JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    return record_metadata(obj, skip=_KEYS)


def _load_metadata(path: Path, index: _Index) -> Iterator[RecordError]:
    """Fill `index` from one root metadata file, yielding an error per bad row."""
    name = str(path)
    if path.suffix == ".csv":
        rows = iter_rows(path)
        header = next(rows, None)
        if header is None:
            return
        if isinstance(header, RecordError):
            yield header
            return
        header_line, columns = header
        columns = [c.strip() for c in columns]
        if not any(k in columns for k in _KEYS):
            yield RecordError(
                f"no 'id' or 'file' column; the header has: {', '.join(map(repr, columns))}",
                file=name,
                line=header_line,
            )
            return
        records: Iterator[tuple[int, Any, str] | RecordError] = (
            item if isinstance(item, RecordError) else _csv_record(item, columns, name) for item in rows
        )
    else:
        records = iter_records(path)
    for item in records:
        if isinstance(item, RecordError):
            yield item
            continue
        line, obj, raw = item
        raw = raw[:_SNIPPET]
        if not isinstance(obj, dict):
            yield RecordError("expected a JSON object", file=name, line=line, record=raw)
            continue
        key = next((str(obj[k]).strip() for k in _KEYS if obj.get(k) not in (None, "")), None)
        if key is None:
            yield RecordError("no 'id' or 'file' to match a text file", file=name, line=line, record=raw)
            continue
        if key in index:
            yield RecordError(f"{key!r} described twice; the first row is kept", file=name, line=line, record=raw)
            continue
        try:
            index[key] = record_metadata(obj, skip=_KEYS)
        except ValueError as e:
            index[key] = None
            yield RecordError(str(e), file=name, line=line, record=key)


def _csv_record(item: tuple[int, list[str]], columns: list[str], name: str) -> tuple[int, Any, str] | RecordError:
    line, row = item
    if len(row) != len(columns):
        return RecordError(
            f"expected {len(columns)} columns, found {len(row)}", file=name, line=line, record=",".join(row)[:_SNIPPET]
        )
    values = {c: v.strip() for c, v in zip(columns, row, strict=True) if v.strip()}
    return line, values, ",".join(row)


def _layer(meta: dict[str, Any], more: dict[str, Any]) -> None:
    """Put `more` over `meta`; `source` and `fields` are merged key by key."""
    for key, value in more.items():
        meta[key] = {**meta.get(key, {}), **value} if key in ("source", "fields") else value
