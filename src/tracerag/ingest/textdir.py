"""Text-folder reader: every `.txt` file under a folder is one document, kept exactly as written (UTF-8).

- id: the file's path relative to the folder, without `.txt`, with `/` separators (`letters/1887-05-17`).
- corpus: the `corpus` option, else the first sub-folder (`letters`), else the folder's own name.
- language: the `language` option, if given.

Metadata, optional, with the keys of the JSONL format (`title`, `date`, `language`, `corpus`, `source`,
`fields`, `ocr_quality`; any other key or column goes into `source`):

- `metadata.csv` or `metadata.jsonl` in the folder root, one row per document, found by an `id` value (the
  document id) or a `file` value (`letters/1887-05-17.txt`, or the bare file name `1887-05-17.txt`);
- `name.json` next to `name.txt`: one JSON object, which wins over the root metadata.

Metadata beats the options and the folder names.

Encoding: each text file is decoded as `ingest.encoding` chooses (UTF-8 when it is; else the `encoding` option,
`--encoding`, or what charset-normalizer detects). A file that is not UTF-8, or has bytes its encoding cannot
decode (replaced by U+FFFD and counted), is kept with a warning saying how it was read. Empty (blank) files and
binary data are `RecordError`s. Metadata files and sidecars are UTF-8 (or the `encoding` option), with bad bytes
replaced and reported the same way.

A bad metadata row (no id/file, wrong column count, a bad value such as `ocr_quality` 1.5) or a bad `name.json`
is a `RecordError`; when the bad row or sidecar names its document, that document is left out rather than
ingested half-described. A date that is not a date (`1887-13`) costs only the date: the document is kept,
undated, with a warning. The root metadata is held in memory (a small dict per row); the texts stream, a file at
a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracerag.errors import RecordError
from tracerag.ingest import Item, ReadPart, RecordWarning, id_problem, iter_files
from tracerag.ingest.encoding import (
    UTF8,
    Encoding,
    asked_encoding,
    binary_reason,
    choice_note,
    decode,
    decode_file,
    replaced_note,
)
from tracerag.ingest.jsonl import iter_records, not_a_string, record_metadata
from tracerag.ingest.table import iter_rows
from tracerag.model import Document

METADATA_FILES = ("metadata.csv", "metadata.jsonl")
_SNIPPET = 200
_KEYS = ("id", "file")  # how a metadata row names its document; not metadata themselves

# key -> metadata keywords, or None for a row that was reported as bad (its document is left out)
_Index = dict[str, dict[str, Any] | None]


def read(
    path: Path,
    *,
    corpus: str | None = None,
    language: str | None = None,
    encoding: str | None = None,
    part: ReadPart | None = None,
) -> Iterator[Item]:
    """Stream the `.txt` files under `path` (a folder, or one file) as documents, with their metadata (`part`: some
    of the files, each part with the folder's metadata; the bad rows reported by the lead part only)."""
    path = Path(path)
    root = path if path.is_dir() else path.parent
    asked = asked_encoding(encoding)
    index: _Index = {}
    for name in METADATA_FILES:
        if (root / name).is_file():
            said = _load_metadata(root / name, index, asked)
            if part is None or part.lead:
                yield from said
            else:
                for _ in said:  # loaded all the same: each part needs the folder's metadata
                    pass
    for f in part.files if part is not None else walk(path):
        yield from _document(f, root, index, corpus, language, asked)


def walk(path: Path, **_: Any) -> Iterator[Path]:
    """The files `read` reads under `path`, in its order."""
    return iter_files(Path(path), (".txt",))


def _document(
    f: Path, root: Path, index: _Index, corpus: str | None, language: str | None, asked: Encoding | None
) -> Iterator[Item]:
    rel = f.relative_to(root)
    doc_id = rel.with_suffix("").as_posix()
    if problem := id_problem(doc_id):  # a file name may hold any byte but / and NUL
        yield RecordError(f"{problem}, from the file's name", file=str(f), record=doc_id)
        return
    try:
        raw = f.read_bytes()
    except OSError as e:
        yield RecordError(f"cannot read: {e.strerror or e}", file=str(f), record=doc_id)
        return
    enc, text, replaced, first = decode_file(raw, asked)
    binary = binary_reason(text, replaced, len(raw), enc)
    if binary:
        yield RecordError(binary, file=str(f), record=doc_id)
        return
    del raw  # only the text is kept: the bytes of a 200 MB file would live on while its document is ingested
    if not text or text.isspace():  # (not `strip()`: a copy of the whole text)
        yield RecordError("empty", file=str(f), record=doc_id)
        return
    notes = [choice_note(enc)] if enc.guessed and not replaced else []
    if replaced:
        notes.append(replaced_note(replaced, enc))
    line = text.count("\n", 0, first) + 1 if first is not None else None

    meta: dict[str, Any] = {
        "corpus": corpus or (rel.parts[0] if len(rel.parts) > 1 else root.resolve().name or "default")
    }
    if language:
        meta["language"] = language.strip().lower()
    keys = [k for k in (doc_id, rel.as_posix(), f.name) if k in index]
    if keys:
        row = index[keys[0]]
        if row is None:  # its metadata row was bad and already reported
            return
        _layer(meta, row)
    sidecar = f.with_suffix(".json")
    sidecar_notes: list[str] = []
    if sidecar.is_file():
        try:
            _layer(meta, _read_sidecar(sidecar, asked, sidecar_notes))
        except ValueError as e:
            yield RecordError(str(e), file=str(sidecar), record=doc_id)
            return
    if notes:
        yield RecordWarning("; ".join(notes), file=str(f), line=line, record=doc_id)
    if sidecar_notes:
        yield RecordWarning("; ".join(sidecar_notes), file=str(sidecar), record=doc_id)
    yield Document(id=doc_id, text=text, **meta)


def _read_sidecar(path: Path, asked: Encoding | None, notes: list[str]) -> dict[str, Any]:
    """The metadata of one `name.json`; what had to be repaired is added to `notes`."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ValueError(f"cannot read: {e.strerror or e}") from None
    enc = asked or UTF8  # JSON is UTF-8 (RFC 8259) unless the user says otherwise
    text, replaced, _ = decode(raw, enc)
    if replaced:
        notes.append(replaced_note(replaced, enc))
    try:
        obj = json.loads(text.lstrip("\ufeff"))
    except json.JSONDecodeError as e:
        raise ValueError(f"bad JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise ValueError("bad JSON: nested too deeply") from None
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    return record_metadata(obj, skip=_KEYS, notes=notes)


def _load_metadata(path: Path, index: _Index, asked: Encoding | None) -> Iterator[RecordError | RecordWarning]:
    """Fill `index` from one root metadata file, yielding an error per bad row and a warning per repaired one."""
    name = str(path)
    if path.suffix == ".csv":
        rows = iter_rows(path, encoding=asked, repair=True)
        header = None
        for row in rows:  # a warning about the file's encoding may come before its header
            if not isinstance(row, RecordWarning):
                header = row
                break
            yield row
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
        records: Iterator[tuple[int, Any, str] | RecordError | RecordWarning] = (
            item if isinstance(item, RecordError | RecordWarning) else _csv_record(item, columns, name) for item in rows
        )
    else:
        records = iter_records(path, encoding=asked, repair=True)
    for item in records:
        if isinstance(item, RecordError | RecordWarning):
            yield item
            continue
        line, obj, raw = item
        raw = raw[:_SNIPPET]
        if not isinstance(obj, dict):
            yield RecordError("expected a JSON object", file=name, line=line, record=raw)
            continue
        named = [k for k in _KEYS if obj.get(k) not in (None, "")]
        if named and not isinstance(obj[named[0]], str):  # as for the id of a JSONL record: see jsonl.py
            yield RecordError(not_a_string(named[0], obj[named[0]], named[0]), file=name, line=line, record=raw)
            continue
        key = obj[named[0]].strip() if named else None
        if key is None:
            yield RecordError("no 'id' or 'file' to match a text file", file=name, line=line, record=raw)
            continue
        if key in index:
            yield RecordError(f"{key!r} described twice; the first row is kept", file=name, line=line, record=raw)
            continue
        notes: list[str] = []
        try:
            index[key] = record_metadata(obj, skip=_KEYS, notes=notes)
        except ValueError as e:
            index[key] = None
            yield RecordError(str(e), file=name, line=line, record=key)
            continue
        if notes:
            yield RecordWarning("; ".join(notes), file=name, line=line, record=key)


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
