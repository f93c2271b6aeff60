"""HIPE-2022 TSV reader: one `Document` per `hipe2022:document_id`, the raw OCR text rebuilt from the tokens.

The files are token-per-line TSV with a `TOKEN\\t...` header row and `# key = value` document headers. The text
is rebuilt exactly: after each token comes "\\n" (MISC has `EndOfLine`), "" (`NoSpaceAfter`) or " ", and the
document's last separator is dropped. A line with a tab is always a token row, even when the token itself starts
with "#" (`###pol=München`). Named-entity mentions (NE-COARSE-LIT, B-/I- tags) are kept as character spans with
their NEL-LIT Wikidata id in `source["entities"]`, for the entity channel and the evaluation queries.
`source["line_offsets"]` maps text offsets to file lines (the line a result's snippet starts on:
`retrieval/explain.line_at`): [offset, line] of the first token and of each token whose line is not the
previous entry's plus the runs of whitespace since it; every other token start after whitespace is counted from it.

`corpus` is the newspaper inside its dataset: `{dataset}/{publication title}` lowercased, with runs of
characters other than letters, digits, "_" and "-" in the title turned into "-", or the dataset alone without a
title. A corpus filter may name the dataset ("letemps") or the newspaper ("letemps/gdl"). With HIPE-2022 v2.1
this gives: letemps/gdl, letemps/jdg; hipe2020/exp, /gdl, /imp, /nzz, /luxwort, /tageblatt and the Chronicling
America ids hipe2020/sn82014385 ... hipe2020/sn92063852; newseye/antiqua, newseye/fraktur (fi/sv: the
typeface, not a title), newseye/aze, /ibn, /krz, /nfp (de), newseye/ce-soir, /l_oeuvre, /la_fronde, /la_presse,
/le_matin, /marianne, /marie-claire, /paris-soir, /regards (fr); sonar/berlinerboersenzeitung, ...;
topres19th/dorset-county-chronicle-etc, topres19th/the-poole-and-south-western-herald-etc, ... The raw title
stays in `source["publication"]`.

Some newseye documents state that their date is unknown (`NA`, `--`): they are kept, undated. A date that is
present but malformed (`1887-13`) is dropped: the document is kept, undated, with a `RecordWarning`. The files
are UTF-8 (the `encoding` option, `--encoding`, names another): a byte that is not is replaced by U+FFFD and
counted, and the document holding it is kept with a `RecordWarning` giving the count and its first line. A
document with no tokens or no id, and a file without a TOKEN header, come out as `RecordError`s, and reading
goes on. Reading streams: only the current document is held.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracerag.dates import normalise_date
from tracerag.errors import RecordError
from tracerag.ingest import Item, ReadPart, RecordWarning, iter_files
from tracerag.ingest.encoding import UTF8, Encoding, Lines, asked_encoding, bom_free, replace_marks, replaced_note
from tracerag.model import Document

_SPLIT_IN_NAME = re.compile(r"-(train|dev2?|test)-[a-z]{2}\.tsv$", re.I)
_NOT_SLUG = re.compile(r"[^\w-]+")
# Headers that become Document fields or named source keys rather than short-key extras.
_UNKNOWN_DATES = {"", "NA", "N/A", "--", "-", "_", "?", "unknown"}  # stated unknown: undated, not malformed
_CONSUMED = {"document_id", "date", "language", "dataset", "split", "publication_title"}


@dataclass(frozen=True)
class _Columns:
    token: int
    ne: int | None
    nel: int | None
    misc: int

    @classmethod
    def from_header(cls, line: str) -> _Columns:
        names = line.split("\t")
        if "TOKEN" not in names:
            # A `.tsv` is taken for HIPE by its suffix: say how a plain table of one document per row is read.
            raise ValueError(
                "first line is not a TOKEN header row (not HIPE: a table of one document per row is read with "
                "--format csv --delimiter '\\t')"
            )

        def pos(name: str) -> int | None:
            return names.index(name) if name in names else None

        return cls(names.index("TOKEN"), pos("NE-COARSE-LIT"), pos("NEL-LIT"), len(names) - 1)


@dataclass
class _Doc:
    """What is known of the document being read: headers, text pieces, entity spans."""

    first_line: int
    id: str | None = None
    headers: dict[str, tuple[str, int]] = field(default_factory=dict)  # full key -> (value, line)
    parts: list[str] = field(default_factory=list)
    length: int = 0
    pending: str = ""  # separator owed after the last token; dropped at the end
    tokens: int = 0
    entities: list[dict[str, Any]] = field(default_factory=list)
    open_entity: dict[str, Any] | None = None
    # [text offset, file line] of each token whose line is not the last entry's line plus the runs of whitespace
    # since it (a token glued to the one before, a comment line between): the file line of any token start after
    # whitespace follows from it (`retrieval/explain.line_at`); a few entries, not one per token
    line_offsets: list[list[int]] = field(default_factory=list)
    _runs: int = 0  # runs of whitespace in the text since the last entry
    _in_space: bool = False  # whether the text so far ends in whitespace
    replaced: int = 0  # bytes that could not be decoded, replaced by U+FFFD
    first_replaced: int | None = None  # the line of the first

    def add_token(self, token: str, misc: str, tag: str, nel: str, lineno: int) -> None:
        if self.tokens:
            self.parts.append(self.pending)
            self.length += len(self.pending)
            self._count_runs(self.pending)
        start = self.length
        if not self.line_offsets or self.line_offsets[-1][1] + self._runs != lineno:
            self.line_offsets.append([start, lineno])
            self._runs = 0
        self._count_runs(token)
        self.parts.append(token)
        self.length += len(token)
        self.tokens += 1
        flags = misc.split("|")
        self.pending = "\n" if "EndOfLine" in flags else "" if "NoSpaceAfter" in flags else " "
        self._track_entity(tag, nel, start, self.length)

    def _count_runs(self, piece: str) -> None:
        if piece and not any(ch.isspace() for ch in piece):
            self._in_space = False
            return
        for ch in piece:
            space = ch.isspace()
            self._runs += space and not self._in_space
            self._in_space = space

    def _track_entity(self, tag: str, nel: str, start: int, end: int) -> None:
        kind = tag[2:] if tag[:2] in ("B-", "I-") else None
        ent = self.open_entity
        if kind is not None and tag.startswith("I-") and ent is not None and ent["type"] == kind:
            ent["end"] = end
            if ent["_nel"] == "_":
                ent["_nel"] = nel
            return
        self._close_entity()
        if kind is not None:  # B-, or a stray I- that starts a mention of its own
            self.open_entity = {"start": start, "end": end, "type": kind, "_nel": nel}

    def _close_entity(self) -> None:
        ent = self.open_entity
        if ent is not None:
            nel = ent.pop("_nel")
            ent["wikidata"] = nel if nel.startswith("Q") else None
            self.entities.append(ent)
            self.open_entity = None

    def header(self, short: str) -> str | None:
        for key, (value, _) in self.headers.items():
            if key.rsplit(":", 1)[-1] == short:
                return value
        return None


def walk(path: Path, **_: Any) -> Iterator[Path]:
    """The files `read` reads under `path`, in its order."""
    return iter_files(Path(path), (".tsv",))


def read(path: Path, *, encoding: str | None = None, part: ReadPart | None = None, **options: Any) -> Iterator[Item]:
    """Stream the documents of one HIPE TSV file or of every `.tsv` under a folder (`part`: of some of them)."""
    enc = asked_encoding(encoding) or UTF8
    for f in part.files if part is not None else walk(path):
        yield from _read_file(f, enc)


def _read_file(f: Path, enc: Encoding) -> Iterator[Item]:
    columns: _Columns | None = None
    doc: _Doc | None = None
    try:
        # Rows end at \n, \r\n or a lone \r; undecodable bytes are replaced and counted, not fatal.
        lines = Lines(f, bom_free(enc))
        for lineno, line in enumerate(lines, 1):
            line = line.rstrip("\r\n")
            replaced = 0
            if lines.marking:
                line, replaced, _ = replace_marks(line)
            header_row = columns is None
            if not line.strip():
                pass
            elif columns is None:
                try:
                    columns = _Columns.from_header(line)
                except ValueError as exc:
                    yield RecordError(f"{exc}; file skipped", file=str(f), line=lineno)
                    return
            elif "\t" in line:
                if doc is None:
                    doc = _Doc(first_line=lineno)
                cells = line.split("\t")
                doc.add_token(
                    cells[columns.token] if columns.token < len(cells) else "",
                    _cell(cells, columns.misc, ""),
                    _cell(cells, columns.ne, "O"),
                    _cell(cells, columns.nel, "_"),
                    lineno,
                )
            elif line.startswith("#") and "=" in line:  # else a bare comment: nothing to keep
                key, value = (s.strip() for s in line[1:].split("=", 1))
                if key == "hipe2022:document_id":
                    if doc is not None and (doc.id is not None or doc.tokens):
                        yield from _finish(doc, f, enc)
                        doc = None
                    if doc is None:
                        doc = _Doc(first_line=lineno)
                    doc.id = value or None
                elif doc is None:
                    doc = _Doc(first_line=lineno)
                doc.headers[key] = (value, lineno)
            if replaced:  # counted for the document the line belongs to, else said for the file
                if doc is None or header_row:
                    yield RecordWarning(replaced_note(replaced, enc), file=str(f), line=lineno)
                else:
                    doc.replaced += replaced
                    doc.first_replaced = doc.first_replaced or lineno
    except OSError as exc:
        yield RecordError(f"cannot read: {exc.strerror or exc}", file=str(f))
        return
    if columns is None:
        yield RecordError("empty file (no TOKEN header row)", file=str(f))
    elif doc is not None:
        yield from _finish(doc, f, enc)


def _cell(cells: list[str], index: int | None, default: str) -> str:
    if index is None or index >= len(cells):
        return default
    return cells[index]


def _finish(doc: _Doc, f: Path, enc: Encoding) -> Iterator[Item]:
    if doc.id is None:
        yield RecordError("document without hipe2022:document_id", file=str(f), line=doc.first_line)
        return
    if not doc.tokens:
        yield RecordError(f"document {doc.id} has no tokens", file=str(f), line=doc.first_line, record=doc.id)
        return
    if doc.replaced:
        note = f"document {doc.id}: {replaced_note(doc.replaced, enc)}"
        yield RecordWarning(note, file=str(f), line=doc.first_replaced, record=doc.id)
    raw_date, date_line = doc.headers.get("hipe2022:date", (None, doc.first_line))
    if raw_date is not None and raw_date.strip() in _UNKNOWN_DATES:
        raw_date = None
    try:
        date = normalise_date(raw_date)
    except ValueError as exc:
        date = None
        yield RecordWarning(f"document {doc.id}: {exc}; kept undated", file=str(f), line=date_line, record=doc.id)
    doc._close_entity()

    dataset = doc.headers.get("hipe2022:dataset", ("", 0))[0] or None
    title = doc.header("publication_title")
    corpus = dataset or "hipe2022"
    if title:
        corpus = f"{corpus}/" + _NOT_SLUG.sub("-", title.lower()).strip("-")
    split = doc.headers.get("hipe2022:split", ("", 0))[0] or None
    if split is None:
        m = _SPLIT_IN_NAME.search(f.name)
        split = m.group(1).lower() if m else None

    source: dict[str, Any] = {
        "file": f.name,
        "line": doc.first_line,
        "dataset": dataset,
        "publication": title,
        "split": split,
    }
    for key, (value, _) in doc.headers.items():
        short = key.rsplit(":", 1)[-1]
        if short in _CONSUMED:
            continue
        source[key if short in source else short] = value
    source["entities"] = doc.entities
    source["line_offsets"] = doc.line_offsets

    ocr_quality = None
    if "topres19th:ocr_quality_mean" in doc.headers:
        try:
            ocr_quality = float(doc.headers["topres19th:ocr_quality_mean"][0])
        except ValueError:
            ocr_quality = None
    yield Document(
        id=doc.id,
        text="".join(doc.parts),
        corpus=corpus,
        title=None,
        date=date,
        language=doc.headers.get("hipe2022:language", ("", 0))[0] or None,
        source=source,
        ocr_quality=ocr_quality,
    )
