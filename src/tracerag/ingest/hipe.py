"""HIPE-2022 TSV reader: one `Document` per `hipe2022:document_id`, the raw OCR text rebuilt from the tokens.

The files are token-per-line TSV with a `TOKEN\\t...` header row and `# key = value` document headers. The text
is rebuilt exactly: after each token comes "\\n" (MISC has `EndOfLine`), "" (`NoSpaceAfter`) or " ", and the
document's last separator is dropped. A line with a tab is always a token row, even when the token itself starts
with "#" (`###pol=München`). Named-entity mentions (NE-COARSE-LIT, B-/I- tags) are kept as character spans with
their NEL-LIT Wikidata id in `source["entities"]`, for the entity channel and the evaluation queries.

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
present but malformed, a document with no tokens or no id, and a line that is not UTF-8 (the document holding
it) come out as `RecordError`s, and reading goes on. Reading streams: only the current document is held.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracerag.errors import RecordError
from tracerag.ingest import iter_files
from tracerag.ingest.dates import normalise_date
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
            raise ValueError("first line is not a TOKEN header row")

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

    def add_token(self, token: str, misc: str, tag: str, nel: str) -> None:
        if self.tokens:
            self.parts.append(self.pending)
            self.length += len(self.pending)
        start = self.length
        self.parts.append(token)
        self.length += len(token)
        self.tokens += 1
        flags = misc.split("|")
        self.pending = "\n" if "EndOfLine" in flags else "" if "NoSpaceAfter" in flags else " "
        self._track_entity(tag, nel, start, self.length)

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


def read(path: Path, **options: Any) -> Iterator[Document | RecordError]:
    """Stream the documents of one HIPE TSV file or of every `.tsv` under a folder."""
    for f in iter_files(Path(path), (".tsv",)):
        yield from _read_file(f)


def _read_file(f: Path) -> Iterator[Document | RecordError]:
    columns: _Columns | None = None
    doc: _Doc | None = None
    broken = False  # the current document holds an undecodable line: reported once, then dropped
    with f.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as exc:
                name = f" in document {doc.id}" if doc is not None and doc.id else ""
                yield RecordError(
                    f"not UTF-8 ({exc.reason} at byte {exc.start}){name}; document skipped",
                    file=str(f),
                    line=lineno,
                )
                broken = True
                continue
            if lineno == 1:
                line = line.lstrip("\ufeff")
            if not line.strip():
                continue
            if columns is None:
                try:
                    columns = _Columns.from_header(line)
                except ValueError as exc:
                    yield RecordError(f"{exc}; file skipped", file=str(f), line=lineno)
                    return
                continue
            if "\t" in line:
                if doc is None:
                    doc = _Doc(first_line=lineno)
                cells = line.split("\t")
                doc.add_token(
                    cells[columns.token],
                    _cell(cells, columns.misc, ""),
                    _cell(cells, columns.ne, "O"),
                    _cell(cells, columns.nel, "_"),
                )
                continue
            if not line.startswith("#") or "=" not in line:
                continue  # a bare comment: nothing to keep
            key, value = (s.strip() for s in line[1:].split("=", 1))
            if key == "hipe2022:document_id":
                if doc is not None and (doc.id is not None or doc.tokens):
                    if not broken:
                        yield _finish(doc, f)
                    doc, broken = None, False
                if doc is None:
                    doc = _Doc(first_line=lineno)
                doc.id = value or None
            elif doc is None:
                doc = _Doc(first_line=lineno)
            doc.headers[key] = (value, lineno)
    if doc is not None and not broken:
        yield _finish(doc, f)


def _cell(cells: list[str], index: int | None, default: str) -> str:
    if index is None or index >= len(cells):
        return default
    return cells[index]


def _finish(doc: _Doc, f: Path) -> Document | RecordError:
    if doc.id is None:
        return RecordError("document without hipe2022:document_id", file=str(f), line=doc.first_line)
    if not doc.tokens:
        return RecordError(f"document {doc.id} has no tokens", file=str(f), line=doc.first_line, record=doc.id)
    raw_date, date_line = doc.headers.get("hipe2022:date", (None, doc.first_line))
    if raw_date is not None and raw_date.strip() in _UNKNOWN_DATES:
        raw_date = None
    try:
        date = normalise_date(raw_date)
    except ValueError as exc:
        return RecordError(f"document {doc.id}: {exc}", file=str(f), line=date_line, record=doc.id)
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

    ocr_quality = None
    if "topres19th:ocr_quality_mean" in doc.headers:
        try:
            ocr_quality = float(doc.headers["topres19th:ocr_quality_mean"][0])
        except ValueError:
            ocr_quality = None
    return Document(
        id=doc.id,
        text="".join(doc.parts),
        corpus=corpus,
        title=None,
        date=date,
        language=doc.headers.get("hipe2022:language", ("", 0))[0] or None,
        source=source,
        ocr_quality=ocr_quality,
    )
