"""CSV reader: one document per row, columns mapped to `Document` fields by name or by options.

Options (column names as written in the header, surrounding spaces ignored):

- `id_column`, `text_column`: by default the column named `id` (else `doc_id`) and the one named `text`; one of
  each is required in the header, and every row needs both.
- `title_column`, `date_column`, `corpus_column`, `language_column`: by default (None) the column named `title`,
  `date`, `corpus`, `language` when the header has one: TRACE's own field names, so a table that uses them needs
  no mapping; "" reads none. An option naming a column always wins (the column named like the field is then an
  ordinary one). Dates are partial ISO (`1887`, `1887-5` → `1887-05`, `1887-05-17`); languages are lower-cased.
- `field_columns`: the columns copied into `Document.fields` (None: every column not mapped above; []: none).
  Values are stripped; empty cells are left out.
- `corpus`, `language`: constants for rows without a value (or when there is no such column).
- `delimiter` (","): e.g. ";" or "\\t" (a tab also makes a folder's `.tsv` files count).
- `on_columns`: called with each file's `ColumnChoice` (which column fills which field), so that the ingest can
  say what it used.

- `encoding`: the files' encoding (`--encoding`); by default UTF-8 when the file is, else what
  `ingest.encoding` detects from its first MiB, said in one `RecordWarning` for the file.

A file whose first MiB is binary data (mostly bytes that do not decode, or control characters) is refused
whole, with the message a text file gets (`encoding.binary_reason`). A row that cannot be read (missing id or
text, an id holding a control character, wrong column count) is yielded as a `RecordError` with the file
and the physical line where the row starts, and reading goes on. A row is kept, with a `RecordWarning` for its
line, when it has bytes its encoding cannot decode (each replaced by U+FFFD and counted) or a date that is not a
date (`1887-13`: the row is kept undated). A mapped column missing from the header is one `RecordError` for the
file, naming it and the columns there are.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracerag.dates import normalise_date
from tracerag.errors import RecordError
from tracerag.ingest import Item, ReadPart, RecordWarning, id_problem, iter_files
from tracerag.ingest.encoding import (
    Encoding,
    Lines,
    asked_encoding,
    choice_note,
    replace_marks,
    replaced_note,
    sniff,
)
from tracerag.model import Document

_SNIPPET = 200
# Undecodable bytes come through the error handler as U+DC00..U+DCFF; valid text never decodes to these.
_ESCAPED = re.compile("[\udc00-\udcff]")
# Full OCR pages exceed csv's default 128 KiB field limit; 2**31 - 1 fits a C long everywhere.
_FIELD_LIMIT = 2**31 - 1
# The columns read by name when no option names one: TRACE's own field names (`doc_id` is what a chunk, a hit and
# the trail call a document's id), in the order tried.
BY_NAME: dict[str, tuple[str, ...]] = {
    "id": ("id", "doc_id"),
    "text": ("text",),
    "title": ("title",),
    "date": ("date",),
    "corpus": ("corpus",),
    "language": ("language",),
}
_REQUIRED = ("id", "text")


@dataclass(frozen=True, slots=True)
class ColumnChoice:
    """Which column of a file fills which `Document` field, and which were found by name rather than by option:
    said by the ingest, so that a table mapped by its header is never mapped silently."""

    file: str
    mapped: tuple[tuple[str, str], ...]  # (field, column), in `BY_NAME` order; fields without a column left out
    by_name: tuple[str, ...]  # the fields whose column was found by its name
    fields: tuple[str, ...]  # the columns kept in `Document.fields`

    def describe(self) -> str:
        """`docs.csv: id, text, date from the columns of those names, title from 'headline'; other columns kept as
        fields: 'genre'`, on one line."""
        same = [key for key, column in self.mapped if key in self.by_name and column == key]
        parts = [f"{', '.join(same)} from the column{'s of those names' if len(same) > 1 else ' of that name'}"]
        parts = (parts if same else []) + [f"{key} from {column!r}" for key, column in self.mapped if key not in same]
        kept = ", ".join(map(repr, self.fields)) if self.fields else "none"
        return f"{self.file}: {', '.join(parts)}; other columns kept as fields: {kept}"


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


def walk(path: Path, *, delimiter: str = ",", **_: Any) -> Iterator[Path]:
    """The files `read` reads under `path`, in its order (tab-separated `.tsv` files too with `delimiter` a tab)."""
    return iter_files(Path(path), (".csv", ".tsv") if delimiter == "\t" else (".csv",))


def read(
    path: Path,
    *,
    id_column: str | None = None,
    text_column: str | None = None,
    title_column: str | None = None,
    date_column: str | None = None,
    corpus_column: str | None = None,
    language_column: str | None = None,
    delimiter: str = ",",
    field_columns: list[str] | None = None,
    corpus: str | None = None,
    language: str | None = None,
    encoding: str | None = None,
    on_columns: Callable[[ColumnChoice], None] | None = None,
    part: ReadPart | None = None,
) -> Iterator[Item]:
    """Stream the rows of the CSV files under `path` as documents (options: see the module docstring; `part`: of
    some of them)."""
    columns_asked = {
        "id": id_column,
        "text": text_column,
        "title": title_column,
        "date": date_column,
        "corpus": corpus_column,
        "language": language_column,
    }
    asked = asked_encoding(encoding)
    for f in part.files if part is not None else walk(path, delimiter=delimiter):
        rows = iter_rows(f, delimiter, encoding=asked, repair=True)
        header = None
        row_warning: RecordWarning | None = None  # said with the row it concerns, or not at all if the row is bad
        for item in rows:  # a warning about the file's encoding may come before its header
            if not isinstance(item, RecordWarning):
                header = item
                break
            if item.line is None:
                yield item
            else:
                row_warning = item
        if header is None:
            yield RecordError("empty file (no header)", file=str(f))
            continue
        if isinstance(header, RecordError):
            yield header
            continue
        header_line, names = header
        mapped, by_name = choose_columns(names, columns_asked)
        cols = _resolve(names, mapped, field_columns, file=str(f), line=header_line)
        if isinstance(cols, RecordError):
            # A required column looked for by name and not found: say the names tried and the option to use.
            hints = [
                f"the {key} is read from {' or '.join(map(repr, BY_NAME[key]))}, or the column --{key}-column names"
                for key in _REQUIRED
                if key not in by_name and not columns_asked[key]
            ]
            yield RecordError("; ".join([cols.reason, *hints]), file=str(f), line=header_line) if hints else cols
            continue
        if on_columns is not None:
            on_columns(
                ColumnChoice(
                    file=str(f),
                    mapped=tuple((key, column) for key, column in mapped.items() if column),
                    by_name=by_name,
                    fields=tuple(name for name, _ in cols.fields),
                )
            )
        for item in rows_of_width(rows, len(names), f, delimiter):
            if isinstance(item, RecordWarning):
                row_warning = item
                continue
            if isinstance(item, RecordError):
                row_warning = None
                yield item
                continue
            line, row = item
            notes = [row_warning.reason] if row_warning is not None and row_warning.line == line else []
            row_warning = None
            try:
                doc = _document(row, cols, mapped, corpus, language, notes)
            except ValueError as e:
                yield RecordError(str(e), file=str(f), line=line, record=delimiter.join(row)[:_SNIPPET])
                continue
            if notes:
                yield RecordWarning("; ".join(notes), file=str(f), line=line, record=doc.id)
            yield doc


def rows_of_width(
    rows: Iterator[tuple[int, list[str]] | RecordError | RecordWarning], width: int, f: Path, delimiter: str = ","
) -> Iterator[tuple[int, list[str]] | RecordError | RecordWarning]:
    """The rows under a header of `width` columns; a row of another width is a RecordError naming its line."""
    for item in rows:
        if isinstance(item, tuple) and len(item[1]) != width:
            line, row = item
            item = RecordError(
                f"expected {width} columns, found {len(row)}",
                file=str(f),
                line=line,
                record=delimiter.join(row)[:_SNIPPET],
            )
        yield item


def iter_rows(
    f: Path, delimiter: str = ",", *, encoding: Encoding | None = None, repair: bool = False
) -> Iterator[tuple[int, list[str]] | RecordError | RecordWarning]:
    """(first physical line, cells) for every non-blank row, header included; a row that is not valid CSV comes as
    a `RecordError`. Shared with the text-folder reader's `metadata.csv` and the catalog's readers.

    Without `repair` the file is UTF-8 and a row with bytes that are not is a `RecordError` (for callers that know
    no warnings). With `repair`, the encoding is `encoding`, else chosen from the first MiB (a guess is said in a
    `RecordWarning` without a line, first); a row's undecodable bytes are replaced by U+FFFD and a
    `RecordWarning` for its line comes just before it. A file whose first MiB is binary data (mostly bytes that
    do not decode, or control characters: `encoding.binary_reason`) is one `RecordError`, and no row.
    """
    csv.field_size_limit(max(csv.field_size_limit(), _FIELD_LIMIT))
    name = str(f)
    enc = sniff(f, encoding if repair else Encoding("utf-8-sig", "utf-8"))
    if isinstance(enc, RecordError):  # one error for the file, as for a text file, not a garbage row per line
        yield enc
        return
    if enc.codec == "utf-8":
        enc = Encoding("utf-8-sig", enc.how)  # a byte-order mark is not part of the header
    if enc.guessed:
        yield RecordWarning(choice_note(enc), file=name)
    skip: int | None = 0
    while skip is not None:  # parsing starts again after a quoted field that ran to the end of the file
        skip = yield from _parse(f, enc, delimiter, repair, skip)


def _parse(
    f: Path, enc: Encoding, delimiter: str, repair: bool, skip: int
) -> Generator[tuple[int, list[str]] | RecordError | RecordWarning, None, int | None]:
    """The rows after the first `skip` lines; returns the number of lines to skip when parsing must start again
    (after a bad quote that took the lines after it), else None."""
    name = str(f)
    # Undecodable bytes are marked, to be found row by row; rows end at \n, \r\n or a lone \r.
    lines = Lines(f, enc.codec, skip=skip)
    # Strict: a quote left open would otherwise run on silently, taking every later line into one field.
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    while True:
        start = skip + reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return None
        except OSError as e:
            yield RecordError(f"cannot read: {e.strerror or e}", file=name, line=start)
            return None
        except csv.Error as e:
            consumed = skip + reader.line_num - start + 1
            reason = "unclosed quote (the field runs to the end of the file)" if "end of data" in str(e) else e
            if consumed > 1:  # the bad quote took the lines after it: read them again, as rows of their own
                yield RecordError(f"bad CSV: {reason}; the lines after it are read again", file=name, line=start)
                return start
            yield RecordError(f"bad CSV: {reason}", file=name, line=start)
            if consumed < 1:  # nothing consumed: the reader cannot get past it
                return None
            continue
        if not row:
            continue
        bad = lines.marking and next(((i, m) for i, cell in enumerate(row) if (m := _ESCAPED.search(cell))), None)
        if bad and repair:
            fixed = [replace_marks(cell) for cell in row]
            yield RecordWarning(replaced_note(sum(k for _, k, _ in fixed), enc), file=name, line=start)
            yield start, [cell for cell, _, _ in fixed]
            continue
        if bad:
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


def choose_columns(names: list[str], asked: dict[str, str | None]) -> tuple[dict[str, str | None], tuple[str, ...]]:
    """The column of each field for a header of `names`: the one an option names, else the first of its
    `BY_NAME` names in the header (None: not read; "" asks for none); and which fields were found by name. A
    required field found by no name keeps its first name, so that the header check reports it missing."""
    present = {n.strip() for n in names}
    mapped: dict[str, str | None] = {}
    by_name: list[str] = []
    for key, names_of_key in BY_NAME.items():
        column = asked.get(key)
        if column is None or (column == "" and key in _REQUIRED):
            column = next((n for n in names_of_key if n in present), None)
            if column is not None:
                by_name.append(key)
            elif key in _REQUIRED:
                column = names_of_key[0]
        mapped[key] = column or None
    return mapped, tuple(by_name)


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
    row: list[str],
    cols: _Columns,
    mapped: dict[str, str | None],
    corpus: str | None,
    language: str | None,
    notes: list[str],
) -> Document:
    doc_id = row[cols.id].strip()
    if not doc_id:
        raise ValueError(f"id missing (column {mapped['id']!r})")
    if problem := id_problem(doc_id):
        raise ValueError(f"{problem} (column {mapped['id']!r})")
    text = row[cols.text]
    if not text.strip():
        raise ValueError(f"text missing (column {mapped['text']!r})")
    date = None
    if cols.date is not None:
        try:
            date = normalise_date(row[cols.date])
        except ValueError as e:
            notes.append(f"bad date: {e}; kept undated")
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
