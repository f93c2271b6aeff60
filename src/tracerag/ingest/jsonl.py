"""JSON Lines reader: one JSON object per line (`.jsonl`, `.ndjson`), the format anything else can be exported to.

Keys of a record:

- `id` (required): the document id, a string, unique in the collection. A number, list, object or null, or a
  string holding a control character (ESC, NUL, a line break), is a bad record: reported with its line, skipped.
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

A line that is not a JSON object, lacks its id or text, or has a bad value (`ocr_quality` 1.5) is yielded as a
`RecordError` with its line number, and reading goes on. Blank lines are skipped. JSON is UTF-8 (the `encoding`
option, `--encoding`, names another): files are read in binary and decoded line by line, and a byte that is not
UTF-8, or a `\\ud800`-style escape that makes a lone surrogate, is replaced by U+FFFD and counted in a
`RecordWarning` for that line, so one bad byte costs no record. A date that is not a date (`1887-13`, `18x7`)
costs only the date: the record is kept, undated, with a warning. Memory holds one line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from tracerag.dates import normalise_date
from tracerag.errors import RecordError
from tracerag.ingest import Item, ReadPart, RecordWarning, id_problem, iter_files
from tracerag.ingest.encoding import (
    REPLACEMENT,
    UTF8,
    Encoding,
    Lines,
    asked_encoding,
    bom_free,
    choice_note,
    first_marked_byte,
    replace_marks,
    replaced_note,
    sniff,
)
from tracerag.model import Document

SUFFIXES = (".jsonl", ".ndjson")
TEXT_KEYS = ("text", "body", "content")
_SNIPPET = 200
# What is read to see UTF-16 or binary data: no legacy encoding is guessed for JSON, so a short sample will do,
# and memory holds one line.
_SAMPLE = 1 << 16
# A `\ud800`-`\udfff` escape may decode to a lone surrogate, which no later UTF-8 encoding accepts.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def read(
    path: Path,
    *,
    id_field: str = "id",
    text_field: str | None = None,
    corpus: str | None = None,
    language: str | None = None,
    encoding: str | None = None,
    part: ReadPart | None = None,
) -> Iterator[Item]:
    """Stream the documents of the `.jsonl`/`.ndjson` files under `path` (keys: see the module docstring; `part`:
    of some of them)."""
    text_keys = (text_field,) if text_field else TEXT_KEYS
    asked = asked_encoding(encoding)
    for f in part.files if part is not None else walk(path):
        warning: RecordWarning | None = None
        for item in iter_records(f, encoding=asked, repair=True):
            if isinstance(item, RecordError):
                yield item
                continue
            if isinstance(item, RecordWarning):
                if item.line is None:  # about the whole file (its encoding)
                    yield item
                    continue
                warning = item  # said with the record it concerns, or not at all if the record is bad
                continue
            line, obj, raw = item
            notes = [warning.reason] if warning is not None and warning.line == line else []
            warning = None
            try:
                doc = document_from_record(
                    obj, id_field=id_field, text_keys=text_keys, corpus=corpus, language=language, notes=notes
                )
            except ValueError as e:
                yield RecordError(str(e), file=str(f), line=line, record=raw[:_SNIPPET])
                continue
            if notes:
                yield RecordWarning("; ".join(notes), file=str(f), line=line, record=doc.id)
            yield doc


def walk(path: Path, **_: Any) -> Iterator[Path]:
    """The files `read` reads under `path`, in its order."""
    return iter_files(Path(path), SUFFIXES)


def iter_records(
    f: Path, *, encoding: Encoding | None = None, repair: bool = False
) -> Iterator[tuple[int, Any, str] | RecordError | RecordWarning]:
    """(line number, parsed value, line text) for every non-blank line; a line that cannot be parsed comes as a
    `RecordError`. Shared with the text-folder reader's `metadata.jsonl` and the catalog's mapped JSONL.

    Bytes that are not UTF-8 (or not `encoding`): with `repair`, they are replaced by U+FFFD, as are lone
    surrogates made by `\\u` escapes, and a `RecordWarning` for the line comes just before it; without, the line
    is a `RecordError` (for callers that know no warnings). UTF-16 without a byte-order mark is seen and said in
    a `RecordWarning` without a line, first; a file whose first 64 KiB are binary data is one `RecordError`.
    """
    name = str(f)
    # JSON is UTF-8 (RFC 8259): no legacy encoding is guessed, but UTF-16 and a byte-order mark are seen
    enc = sniff(f, encoding if repair else UTF8, legacy=False, size=_SAMPLE)
    if isinstance(enc, RecordError):  # one error for the file, as for a text file, not a garbage record per line
        yield enc
        return
    if enc.guessed:
        yield RecordWarning(choice_note(enc), file=name)
    # A raw CR cannot be inside a JSON string: a lone \r ends a line (old Mac files) as \n does.
    lines = Lines(Path(f), bom_free(enc))
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        line = line.rstrip("\r\n")
        replaced = 0
        if lines.marking:
            byte = first_marked_byte(line)
            line, replaced, first = replace_marks(line)
            if byte is not None and not repair:
                yield RecordError(
                    f"not {enc.label} (byte {byte:#04x} at character {(first or 0) + 1})",
                    file=name,
                    line=n,
                    record=line[:_SNIPPET],
                )
                continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            yield RecordError(f"bad JSON: {e.msg} (column {e.colno})", file=name, line=n, record=line[:_SNIPPET])
            continue
        except RecursionError:
            yield RecordError("bad JSON: nested too deeply", file=name, line=n, record=line[:_SNIPPET])
            continue
        surrogates = 0
        try:
            if _SURROGATE_ESCAPE.search(line) and not _encodable(obj):
                if not repair:
                    yield RecordError(
                        "bad JSON: a \\u escape makes a lone surrogate (not Unicode text)",
                        file=name,
                        line=n,
                        record=line[:_SNIPPET],
                    )
                    continue
                obj, surrogates = _without_surrogates(obj)
        except RecursionError:
            yield RecordError("bad JSON: nested too deeply", file=name, line=n, record=line[:_SNIPPET])
            continue
        if replaced or surrogates:
            notes = [replaced_note(replaced, enc)] if replaced else []
            if surrogates:
                s = "" if surrogates == 1 else "s"
                notes.append(f"{surrogates} \\u escape{s} making a lone surrogate replaced by U+FFFD")
            yield RecordWarning("; ".join(notes), file=name, line=n)
        yield n, obj, line


def _without_surrogates(obj: Any) -> tuple[Any, int]:
    """`obj` with every lone surrogate in its strings (keys too) replaced by U+FFFD, and how many there were."""
    count = 0

    def clean(value: Any) -> Any:
        nonlocal count
        if isinstance(value, str):
            fixed, k = _SURROGATE.subn(REPLACEMENT, value)
            count += k
            return fixed
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        return value

    return clean(obj), count


def document_from_record(
    obj: Any,
    *,
    id_field: str = "id",
    text_keys: Collection[str] = TEXT_KEYS,
    corpus: str | None = None,
    language: str | None = None,
    notes: list[str] | None = None,
) -> Document:
    """The `Document` a parsed record describes; ValueError naming what is missing or wrong. With `notes`, a
    bad date is left out and said there instead (see `record_metadata`)."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, found {_json_type(obj)}")
    doc_id = obj.get(id_field)
    if doc_id is None or (isinstance(doc_id, str) and not doc_id.strip()):
        raise ValueError(f"id missing (key {id_field!r})")
    # A number is not converted: 42, 42.0 and 4.2e1 would be three spellings of one id, or one id "42" beside
    # another; the source says what it means by writing the id as a string.
    if not isinstance(doc_id, str):
        raise ValueError(not_a_string("id", doc_id, id_field))
    if problem := id_problem(doc_id):
        raise ValueError(f"{problem} (key {id_field!r})")
    text_key = next((k for k in text_keys if obj.get(k) is not None), None)
    if text_key is None:
        raise ValueError(f"text missing (key {' / '.join(map(repr, text_keys))})")
    text = obj[text_key]
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, found {_json_type(text)} (key {text_key!r})")
    if not text.strip():
        raise ValueError(f"text is empty (key {text_key!r})")
    meta = record_metadata(obj, skip=(id_field, text_key), notes=notes)
    meta.setdefault("corpus", corpus or "default")
    if language and "language" not in meta:
        meta["language"] = language.strip().lower()
    return Document(id=doc_id.strip(), text=text, **meta)


def record_metadata(
    obj: Mapping[str, Any], *, skip: Collection[str] = (), notes: list[str] | None = None
) -> dict[str, Any]:
    """The `Document` keywords besides id and text (corpus, title, date, language, source, fields, ocr_quality).

    Shared with the text-folder sidecars, so a key means the same in every format. Only keys with a value come
    back (null and "" count as absent), so callers can layer defaults under them; unknown keys go into `source`.
    Raises ValueError naming the key at fault; with `notes`, a date that is not a date is left out and said in
    `notes` instead: it costs the record its date, not the record.
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
                if notes is None:
                    raise ValueError(f"bad date: {e}") from None
                notes.append(f"bad date: {e}; kept undated")
                continue
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


def not_a_string(what: str, value: Any, key: str) -> str:
    """The reason a record is skipped whose `key` should hold a string naming `what` (an id) and holds `value`."""
    return f"{what} must be a string, found {_json_type(value)} {_shown(value)} (key {key!r})"


def _shown(value: Any) -> str:
    """A JSON value as written, cut short, for an error message."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)
