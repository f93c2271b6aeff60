"""JSON Lines reader: one JSON object per line (`.jsonl`, `.ndjson`), the format anything else can be exported to.

Keys of a record:

- `id` (required): the document id, a string or an integer, unique in the collection.
- `text` (required): the full text, kept exactly; `body` or `content` are read when `text` is absent.
- `corpus`: the sub-corpus (default: the `corpus` option, else "default").
- `title`: a display title.
- `date`: an ISO date, possibly partial: `1887`, `1887-05`, `1887-05-17` (`1887-5` is read as `1887-05`).
- `language`: an ISO 639-1 code (`fr`, `de`, `en`...), lower-cased (default: the `language` option).
- `source`: an object saying where the text comes from (publication, file, page, URL, IIIF/ark id...).
- `fields`: an object of structured fields (catalog records), filterable by exact value.
- `ocr_quality`: a number from 0 to 1.
- any other top-level key is kept in `source` (on a clash, the key inside `source` wins).

Options: `id_field` (default "id") names another key for the id; `text_field` names the one key to read the
text from (then `text`/`body`/`content` are ordinary keys, kept in `source`); `corpus` and `language` are the
defaults for records that carry none.

A line that is not UTF-8, not a JSON object, lacks its id or text, or has a bad value (a date such as
`1887-13`) is yielded as a `RecordError` with its line number, and reading goes on. Blank lines are skipped.
Files are read in binary and decoded line by line: one bad byte costs one record, and memory holds one line.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from tracerag.errors import RecordError
from tracerag.ingest import iter_files
from tracerag.ingest.dates import normalise_date
from tracerag.model import Document

SUFFIXES = (".jsonl", ".ndjson")
TEXT_KEYS = ("text", "body", "content")
_SNIPPET = 200
# A `\ud800`-`\udfff` escape may decode to a lone surrogate, which no later UTF-8 encoding accepts.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def read(
    path: Path,
    *,
    id_field: str = "id",
    text_field: str | None = None,
    corpus: str | None = None,
    language: str | None = None,
) -> Iterator[Document | RecordError]:
    """Stream the documents of the `.jsonl`/`.ndjson` files under `path` (keys: see the module docstring)."""
    text_keys = (text_field,) if text_field else TEXT_KEYS
    for f in iter_files(Path(path), SUFFIXES):
        for item in iter_records(f):
            if isinstance(item, RecordError):
                yield item
                continue
            line, obj, raw = item
            try:
                doc = document_from_record(
                    obj, id_field=id_field, text_keys=text_keys, corpus=corpus, language=language
                )
            except ValueError as e:
                yield RecordError(str(e), file=str(f), line=line, record=raw[:_SNIPPET])
                continue
            yield doc


def iter_records(f: Path) -> Iterator[tuple[int, Any, str] | RecordError]:
    """(line number, parsed value, line text) for every non-blank line; a line that cannot be decoded or
    parsed comes as a `RecordError`. Shared with the text-folder reader's `metadata.jsonl`."""
    name = str(f)
    with Path(f).open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            if n == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                shown = raw.decode("utf-8", "replace").rstrip("\r\n")[:_SNIPPET]
                yield RecordError(
                    f"not UTF-8 (byte {raw[e.start]:#04x} at offset {e.start})",
                    file=name,
                    line=n,
                    record=shown,
                )
                continue
            line = line.rstrip("\r\n")
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                yield RecordError(f"bad JSON: {e.msg} (column {e.colno})", file=name, line=n, record=line[:_SNIPPET])
                continue
            except RecursionError:
                yield RecordError("bad JSON: nested too deeply", file=name, line=n, record=line[:_SNIPPET])
                continue
            if _SURROGATE_ESCAPE.search(line) and not _encodable(obj):
                yield RecordError(
                    "bad JSON: a \\u escape makes a lone surrogate (not Unicode text)",
                    file=name,
                    line=n,
                    record=line[:_SNIPPET],
                )
                continue
            yield n, obj, line


def document_from_record(
    obj: Any,
    *,
    id_field: str = "id",
    text_keys: Collection[str] = TEXT_KEYS,
    corpus: str | None = None,
    language: str | None = None,
) -> Document:
    """The `Document` a parsed record describes; ValueError naming what is missing or wrong."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, found {_json_type(obj)}")
    doc_id = obj.get(id_field)
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id.strip():
        what = "missing" if doc_id is None or doc_id == "" else f"not a string or integer: {doc_id!r}"
        raise ValueError(f"id {what} (key {id_field!r})")
    text_key = next((k for k in text_keys if obj.get(k) is not None), None)
    if text_key is None:
        raise ValueError(f"text missing (key {' / '.join(map(repr, text_keys))})")
    text = obj[text_key]
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, found {_json_type(text)} (key {text_key!r})")
    if not text.strip():
        raise ValueError(f"text is empty (key {text_key!r})")
    meta = record_metadata(obj, skip=(id_field, text_key))
    meta.setdefault("corpus", corpus or "default")
    if language and "language" not in meta:
        meta["language"] = language.strip().lower()
    return Document(id=doc_id.strip(), text=text, **meta)


def record_metadata(obj: Mapping[str, Any], *, skip: Collection[str] = ()) -> dict[str, Any]:
    """The `Document` keywords besides id and text (corpus, title, date, language, source, fields, ocr_quality).

    Shared with the text-folder sidecars, so a key means the same in every format. Only keys with a value come
    back (null and "" count as absent), so callers can layer defaults under them; unknown keys go into `source`.
    Raises ValueError naming the key at fault.
    """
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        if key in skip or value is None or value == "":
            continue
        if key in ("corpus", "title", "language"):
            if not isinstance(value, str):
                raise ValueError(f"{key} must be a string, found {_json_type(value)}")
            if value.strip():
                out[key] = value.strip().lower() if key == "language" else value.strip()
        elif key == "date":
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise ValueError(f"date must be a string, found {_json_type(value)}")
            try:
                date = normalise_date(str(value))
            except ValueError as e:
                raise ValueError(f"bad date: {e}") from None
            if date:
                out["date"] = date
        elif key in ("source", "fields"):
            if not isinstance(value, dict):
                raise ValueError(f"{key} must be an object, found {_json_type(value)}")
            out[key] = dict(value)
        elif key == "ocr_quality":
            out[key] = _ocr_quality(value)
        else:
            extra[key] = value
    if extra:
        out["source"] = {**extra, **out.get("source", {})}
    return out


def _ocr_quality(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"ocr_quality must be a number from 0 to 1, found {value!r}")
    try:
        q = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"ocr_quality must be a number from 0 to 1, found {value!r}") from None
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"ocr_quality must be a number from 0 to 1, found {value!r}")
    return q


def _encodable(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)
