"""CSV reader: one document per row, columns mapped to `Document` fields by options.

Options (column names as written in the header, surrounding spaces ignored):

- `id_column` ("id") and `text_column` ("text"): required in the header; every row needs both.
- `title_column`, `date_column`, `corpus_column`, `language_column`: optional columns (None: not read). Dates
  are partial ISO (`1887`, `1887-5` → `1887-05`, `1887-05-17`); languages are lower-cased.
- `field_columns`: the columns copied into `Document.fields` (None: every column not mapped above; []: none).
  Values are stripped; empty cells are left out.
- `corpus`, `language`: constants for rows without a value (or when there is no such column).
- `delimiter` (","): e.g. ";" or "\\t" (a tab also makes a folder's `.tsv` files count).

A row that cannot be read (missing id or text, bad date, wrong column count, bytes that are not UTF-8) is yielded
as a `RecordError` with the file and the physical line where the row starts, and reading goes on. A mapped
column missing from the header is one `RecordError` for the file, naming it and the columns there are.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tracerag.errors import RecordError
from tracerag.ingest import iter_files
from tracerag.ingest.dates import normalise_date
from tracerag.model import Document

_SNIPPET = 200
# Undecodable bytes come through `surrogateescape` as U+DC80..U+DCFF; valid UTF-8 never decodes to these.
_ESCAPED = re.compile("[\udc80-\udcff]")
# Full OCR pages exceed csv's default 128 KiB field limit; 2**31 - 1 fits a C long everywhere.
_FIELD_LIMIT = 2**31 - 1


@dataclass(frozen=True, slots=True)
class _Columns:
    """Header positions of the mapped columns, resolved once per file."""

    id: int
    text: int
    title: int | None
    date: int | None
    corpus: int | None
    language: int | None
    fields: tuple[tuple[str, int], ...]


def read(
    path: Path,
    *,
    id_column: str = "id",
    text_column: str = "text",
    title_column: str | None = None,
    date_column: str | None = None,
    corpus_column: str | None = None,
    language_column: str | None = None,
    delimiter: str = ",",
    field_columns: list[str] | None = None,
    corpus: str | None = None,
    language: str | None = None,
) -> Iterator[Document | RecordError]:
    """Stream the rows of the CSV files under `path` as documents (options: see the module docstring)."""
    mapped = {
        "id": id_column,
        "text": text_column,
        "title": title_column,
        "date": date_column,
        "corpus": corpus_column,
        "language": language_column,
    }
    suffixes = (".csv", ".tsv") if delimiter == "\t" else (".csv",)
    for f in iter_files(Path(path), suffixes):
        rows = iter_rows(f, delimiter)
        header = next(rows, None)
        if header is None:
            yield RecordError("empty file (no header)", file=str(f))
            continue
        if isinstance(header, RecordError):
            yield header
            continue
        header_line, names = header
        cols = _resolve(names, mapped, field_columns, file=str(f), line=header_line)
        if isinstance(cols, RecordError):
            yield cols
            continue
        for item in rows_of_width(rows, len(names), f, delimiter):
            if isinstance(item, RecordError):
                yield item
                continue
            line, row = item
            try:
                doc = _document(row, cols, mapped, corpus, language)
            except ValueError as e:
                yield RecordError(str(e), file=str(f), line=line, record=delimiter.join(row)[:_SNIPPET])
                continue
            yield doc


def rows_of_width(
    rows: Iterator[tuple[int, list[str]] | RecordError], width: int, f: Path, delimiter: str = ","
) -> Iterator[tuple[int, list[str]] | RecordError]:
    """The rows under a header of `width` columns; a row of another width is a RecordError naming its line."""
    for item in rows:
        if not isinstance(item, RecordError) and len(item[1]) != width:
            line, row = item
            item = RecordError(
                f"expected {width} columns, found {len(row)}",
                file=str(f),
                line=line,
                record=delimiter.join(row)[:_SNIPPET],
            )
        yield item


def iter_rows(f: Path, delimiter: str = ",") -> Iterator[tuple[int, list[str]] | RecordError]:
    """(first physical line, cells) for every non-blank row, header included; a row that is not UTF-8 or not
    valid CSV comes as a `RecordError`. Shared with the text-folder reader's `metadata.csv`."""
    csv.field_size_limit(max(csv.field_size_limit(), _FIELD_LIMIT))
    name = str(f)
    # surrogateescape keeps reading past bad bytes and leaves a mark to find them by, row by row.
    with Path(f).open(encoding="utf-8-sig", errors="surrogateescape", newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                yield RecordError(f"bad CSV: {e}", file=name, line=start)
                if reader.line_num < start:  # nothing consumed: the reader cannot get past it
                    return
                continue
            if not row:
                continue
            bad = next(((i, m) for i, cell in enumerate(row) if (m := _ESCAPED.search(cell))), None)
            if bad is not None:
                i, m = bad
                byte = ord(m.group(0)) - 0xDC00
                yield RecordError(
                    f"not UTF-8 (byte {byte:#04x} in column {i + 1})",
                    file=name,
                    line=start,
                    record=_shown(delimiter.join(row)),
                )
                continue
            yield start, row


def _resolve(
    names: list[str], mapped: dict[str, str | None], field_columns: list[str] | None, *, file: str, line: int
) -> _Columns | RecordError:
    index: dict[str, int] = {}
    for i, n in enumerate(names):
        index.setdefault(n.strip(), i)
    wanted = [c for c in mapped.values() if c] + list(field_columns or [])
    missing = list(dict.fromkeys(c for c in wanted if c.strip() not in index))
    if missing:
        return RecordError(
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}; "
            f"the header has: {', '.join(map(repr, index))}",
            file=file,
            line=line,
        )
    if field_columns is None:
        taken = {c.strip() for c in mapped.values() if c}
        field_columns = [n for n in index if n not in taken]

    def pos(key: str) -> int | None:
        c = mapped[key]
        return index[c.strip()] if c else None

    return _Columns(
        id=index[str(mapped["id"]).strip()],
        text=index[str(mapped["text"]).strip()],
        title=pos("title"),
        date=pos("date"),
        corpus=pos("corpus"),
        language=pos("language"),
        fields=tuple((c.strip(), index[c.strip()]) for c in dict.fromkeys(field_columns)),
    )


def _document(
    row: list[str], cols: _Columns, mapped: dict[str, str | None], corpus: str | None, language: str | None
) -> Document:
    doc_id = row[cols.id].strip()
    if not doc_id:
        raise ValueError(f"id missing (column {mapped['id']!r})")
    text = row[cols.text]
    if not text.strip():
        raise ValueError(f"text missing (column {mapped['text']!r})")
    date = None
    if cols.date is not None:
        try:
            date = normalise_date(row[cols.date])
        except ValueError as e:
            raise ValueError(f"bad date: {e}") from None
    lang = _cell(row, cols.language) or language
    return Document(
        id=doc_id,
        text=text,
        corpus=_cell(row, cols.corpus) or corpus or "default",
        title=_cell(row, cols.title),
        date=date,
        language=lang.strip().lower() if lang else None,
        fields={name: v for name, i in cols.fields if (v := row[i].strip())},
    )


def _cell(row: list[str], i: int | None) -> str | None:
    return (row[i].strip() or None) if i is not None else None


def _shown(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")[:_SNIPPET]
