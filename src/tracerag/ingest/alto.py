"""ALTO XML reader: one `Document` per file (a page) or per TextBlock, with block and line offsets kept.

Any ALTO namespace works (v2, v3, v4 or none): elements are matched in the root's own namespace. Text is
rebuilt from String@CONTENT: words of a line are joined by one space (SP, or nothing between two Strings, which
some OCR engines write), a HYP keeps its hyphen as OCR'd and sticks to its word, lines end with "\\n" and blocks
with "\\n\\n" (no trailing separator). Some OCR engines write the hyphen twice, at the end of the String's CONTENT
and again as the HYP: it was printed once, so it is kept once (`l'opi-` + line break + `nion`).
`source["blocks"]` and `source["lines"]` give each block's and line's ALTO ID with its character span in `text`,
so a chunk can be traced back to the page image; `source["hyphenated"]` gives each word hyphenated across lines
(String SUBS_TYPE HypPart1 + HypPart2) with its span and its SUBS_CONTENT, the whole word the index reads there.
Where Strings carry coordinates (HPOS, VPOS, WIDTH, HEIGHT), `source["pages"]` gives each Page (ID, number, size,
MeasurementUnit) and `source["string_boxes"]` each String's box by its character span; the store keeps the boxes
in a table of their own (`ingest/alto_regions.py`), so that a cited span knows its page region.

Options: `unit` ("page" or "block"), and `corpus` (default: the file's folder name), `date`, `language`, which
apply to every document. Ids are the file path relative to the folder read, without suffix (the file stem for
flat folders), so that same-named pages of different issues do not collide; blocks add `:{block id}`.

Encoding: an XML file says its own (the declaration, else UTF-8), and lxml reads it. A file whose bytes do not
match what it declares (Latin-1 bytes under `encoding="UTF-8"` or none, UTF-8 under `ISO-8859-1`) is decoded
as `ingest.encoding` chooses and parsed again, with a warning: the page is kept. `encoding` (the `--encoding`
option) overrides every declaration. Broken XML (truncated, not well-formed) is an error: a page recovered in
part would be cited as if it were whole.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lxml import etree

from tracerag.dates import normalise_date
from tracerag.errors import ConfigError, RecordError
from tracerag.ingest import Item, ReadPart, RecordWarning, iter_files
from tracerag.ingest.alto_regions import BOXES, PAGES, box_of, page_info
from tracerag.ingest.encoding import SAMPLE_BYTES, UTF8, Encoding, asked_encoding, choose, decode, replaced_note
from tracerag.model import Document

_UNITS = ("page", "block")
# No entity expansion or network access: ALTO files come from anywhere.
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)
_DECLARED = re.compile(rb"^(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._:-]+)[\"']")
_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
# Characters XML 1.0 does not allow anywhere, even escaped; OCR output holds some (form feeds, NULs).
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# What a String's CONTENT may end with when the engine also writes the HYP: the hyphen printed at the line end.
_HYPHENS = ("-", "¬", "\u00ad", "\u2010", "\u2011", "\u2e17", "=")
_XML_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_MULTI_BYTE = ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be")

Span = dict[str, Any]  # {"id", "start", "end"}
Part = tuple[str, int, int, str]  # (SUBS_TYPE, start, end, SUBS_CONTENT) of one half of a hyphenated word
Box = list[float]  # [start, end, page, x, y, w, h]: a String's span in the text, its Page's index and its box


def read(
    path: Path,
    *,
    unit: str = "page",
    corpus: str | None = None,
    date: str | None = None,
    language: str | None = None,
    encoding: str | None = None,
    part: ReadPart | None = None,
    **_: Any,
) -> Iterator[Item]:
    """Stream the pages (or text blocks) of one ALTO file or of every `.xml` under a folder (`part`: of some)."""
    if unit not in _UNITS:
        raise ConfigError(f"ALTO unit must be one of {', '.join(_UNITS)}, not {unit!r}")
    asked = asked_encoding(encoding)
    try:
        date = normalise_date(date)
    except ValueError as exc:
        raise ConfigError(f"ALTO date option: {exc}") from None
    root = Path(path)
    for f in part.files if part is not None else walk(root):
        rel = f.name if root.is_file() else f.relative_to(root).as_posix()
        meta = {"corpus": corpus or f.parent.name or "default", "date": date, "language": language}
        yield from _read_file(f, rel, unit, meta, asked)


def walk(path: Path, **_: Any) -> Iterator[Path]:
    """The files `read` reads under `path`, in its order."""
    return iter_files(Path(path), (".xml",))


def _read_file(f: Path, rel: str, unit: str, meta: dict[str, Any], asked: Encoding | None) -> Iterator[Item]:
    try:
        raw = f.read_bytes()
    except OSError as exc:
        yield RecordError(f"cannot read: {exc.strerror or exc}", file=str(f))
        return
    try:
        tree, warning = _parse(raw, asked)
    except etree.XMLSyntaxError as exc:
        yield RecordError(f"broken XML: {exc.msg}", file=str(f), line=exc.lineno)
        return
    except ValueError as exc:  # lxml's own refusals of a decoded text (e.g. characters XML does not allow)
        yield RecordError(f"broken XML: {exc}", file=str(f))
        return
    qname = etree.QName(tree)
    if qname.localname.lower() != "alto":
        yield RecordError(f"not an ALTO file (root element <{qname.localname}>)", file=str(f), line=1)
        return
    ns = f"{{{qname.namespace}}}" if qname.namespace else ""
    stem = Path(rel).with_suffix("").as_posix()
    page = next(tree.iter(f"{ns}Page"), None)
    page_id = (page.get("ID") if page is not None else None) or Path(rel).stem

    pages = list(tree.iter(f"{ns}Page"))
    # each TextBlock's boxes carry the index of the Page it is on
    page_of: dict[etree._Element | None, int] = {p: i for i, p in enumerate(pages)}
    blocks = [
        b
        for b in (
            _block(el, ns, n, page_of.get(next(el.iterancestors(f"{ns}Page"), None), 0))
            for n, el in enumerate(tree.iter(f"{ns}TextBlock"), 1)
        )
        if b
    ]
    if not blocks:
        yield RecordError("no text (no String with CONTENT)", file=str(f))
        return
    if warning is not None:
        yield RecordWarning(warning[0], file=str(f), line=warning[1], record=stem)
    base = {"file": rel, "page_id": page_id}
    measured = page_info(tree, ns, pages)
    if unit == "block":
        for block_id, text, lines, hyphenated, boxes in blocks:
            source: dict[str, Any] = {
                **base,
                "block_id": block_id,
                "blocks": [{"id": block_id, "start": 0, "end": len(text)}],
                "lines": lines,
            }
            if hyphenated:
                source["hyphenated"] = hyphenated
            if boxes:
                source[PAGES], source[BOXES] = measured, boxes
            yield Document(id=f"{stem}:{block_id}", text=text, source=source, **meta)
        return
    parts: list[str] = []
    block_spans: list[Span] = []
    line_spans: list[Span] = []
    hyphen_spans: list[Span] = []
    all_boxes: list[Box] = []
    pos = 0
    for block_id, text, lines, hyphenated, boxes in blocks:
        if parts:
            parts.append("\n\n")
            pos += 2
        parts.append(text)
        block_spans.append({"id": block_id, "start": pos, "end": pos + len(text)})
        line_spans.extend({**ln, "start": ln["start"] + pos, "end": ln["end"] + pos} for ln in lines)
        hyphen_spans.extend({**h, "start": h["start"] + pos, "end": h["end"] + pos} for h in hyphenated)
        all_boxes.extend([b[0] + pos, b[1] + pos, *b[2:]] for b in boxes)
        pos += len(text)
    source = {**base, "blocks": block_spans, "lines": line_spans}
    if hyphen_spans:
        source["hyphenated"] = hyphen_spans
    if all_boxes:
        source[PAGES], source[BOXES] = measured, all_boxes
    yield Document(id=stem, text="".join(parts), source=source, **meta)


def _parse(raw: bytes, asked: Encoding | None) -> tuple[etree._Element, tuple[str, int] | None]:
    """The parsed file, and a warning (message, line) when it could be parsed only after decoding it otherwise
    than it declares or removing characters XML forbids. Raises XMLSyntaxError when the XML itself is broken."""
    declared = _declared(raw)
    notes: list[str] = []
    error: etree.XMLSyntaxError | None = None
    if asked is not None:
        enc = asked
    else:
        try:
            tree = etree.fromstring(raw, _PARSER)
        except etree.XMLSyntaxError as exc:
            error = exc
            own = _own_encoding(raw, declared)
            if own is not None:
                enc = own  # the bytes are what they say: what lxml refused may be characters XML forbids
            else:
                enc = choose(raw[:SAMPLE_BYTES], whole=len(raw) <= SAMPLE_BYTES)
                if enc.how != "mostly utf-8":  # else the count of replaced bytes says it all
                    said = f"declared {declared}" if declared else "no encoding declared (so UTF-8)"
                    notes.append(f"{said} but the bytes are not: decoded as {enc.describe()}")
        else:
            if not _utf8_under_single_byte(raw, declared):
                return tree, None
            enc = UTF8
            notes.append(f"declared {declared} but the bytes are UTF-8: decoded as UTF-8")
    text, replaced, first = decode(raw, enc)
    line = text.count("\n", 0, first) + 1 if replaced else 1
    text, forbidden = _FORBIDDEN.subn("", text)
    try:
        tree = etree.fromstring(_DECLARATION.sub("", text.lstrip("\ufeff"), count=1), _PARSER)
    except etree.XMLSyntaxError:
        if error is not None:
            raise error from None  # report what is wrong with the file as it is
        raise
    if replaced:
        notes.append(replaced_note(replaced, enc))
    if forbidden:
        notes.append(f"{forbidden} control character{'s' if forbidden > 1 else ''} that XML does not allow removed")
    if not notes:
        return tree, None
    if enc.guessed and not replaced:
        notes.append("pass --encoding to choose another")
    return tree, ("; ".join(notes), line)


def _declared(raw: bytes) -> str | None:
    m = _DECLARED.match(raw[:200])
    return m.group(1).decode("ascii") if m else None


def _codec(name: str | None) -> str | None:
    try:
        return codecs.lookup(name or "utf-8").name
    except LookupError:
        return None


def _own_encoding(raw: bytes, declared: str | None) -> Encoding | None:
    """The encoding the file states (a byte-order mark, its declaration, else UTF-8), if its bytes decode in it."""
    for bom, codec in _XML_BOMS:
        if raw.startswith(bom):
            return Encoding(codec, "byte-order mark")
    stated = _codec(declared)
    if stated is None:
        return None
    try:
        raw.decode(stated)
    except UnicodeDecodeError:
        return None
    return Encoding(stated, "declared")


def _utf8_under_single_byte(raw: bytes, declared: str | None) -> bool:
    """UTF-8 bytes under a single-byte declaration (`ISO-8859-1`) parse without error, as mojibake: catch them."""
    codec = _codec(declared)
    if declared is None or codec is None or codec in _MULTI_BYTE or raw.isascii():
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _block(el: etree._Element, ns: str, n: int, page: int) -> tuple[str, str, list[Span], list[Span], list[Box]] | None:
    """(block id, block text, line spans, hyphenated-word spans, String boxes on Page number `page`; all relative
    to the block text), or None for a block without words."""
    block_id = el.get("ID") or f"block{n}"
    texts: list[str] = []
    spans: list[Span] = []
    hyphenated: list[Span] = []
    boxes: list[Box] = []
    pending: Part | None = None  # a HypPart1 waiting for its second half on the next line
    pos = 0
    for m, line in enumerate(el.iter(f"{ns}TextLine"), 1):
        text, parts, line_boxes = _line_text(line, ns)
        if not text:
            continue
        if texts:
            pos += 1  # the "\n" before this line
        spans.append({"id": line.get("ID") or f"{block_id}.line{m}", "start": pos, "end": pos + len(text)})
        for kind, start, end, word in parts:
            if kind == "HypPart2" and pending is not None and start == 0 and word in ("", pending[3]):
                hyphenated.append({"start": pending[1], "end": pos + end, "word": pending[3]})
            pending = (kind, pos + start, pos + end, word) if kind == "HypPart1" and word else None
        boxes.extend([start + pos, end + pos, page, *box] for start, end, box in line_boxes)
        texts.append(text)
        pos += len(text)
    return (block_id, "\n".join(texts), spans, hyphenated, boxes) if texts else None


def _line_text(line: etree._Element, ns: str) -> tuple[str, list[Part], list[tuple[int, int, list[float]]]]:
    """The line's text, the halves of hyphenated words in it, and the box of each String (and HYP) that has
    coordinates (spans relative to the line)."""
    out: list[str] = []
    parts: list[Part] = []
    boxes: list[tuple[int, int, list[float]]] = []
    length = 0
    space = False  # an SP was seen since the last word
    for child in line:
        tag = child.tag
        if tag == f"{ns}SP":
            space = True
        elif tag == f"{ns}String":
            content = child.get("CONTENT") or ""
            if content:
                if out:
                    out.append(" ")
                    length += 1
                kind = child.get("SUBS_TYPE") or ""
                if kind in ("HypPart1", "HypPart2"):
                    parts.append((kind, length, length + len(content), child.get("SUBS_CONTENT") or ""))
                else:
                    parts.append(("", length, length + len(content), ""))
                if (box := box_of(child)) is not None:
                    boxes.append((length, length + len(content), box))
                out.append(content)
                length += len(content)
                space = False
        elif tag == f"{ns}HYP":
            if out and out[-1].endswith(_HYPHENS):
                continue  # the String already holds the hyphen it marks: it was printed once
            hyphen = child.get("CONTENT") or "-"
            if out and space:
                out.append(" ")
                length += 1
            out.append(hyphen)
            length += len(hyphen)
            if (box := box_of(child)) is not None:
                boxes.append((length - len(hyphen), length, box))
            if parts and parts[-1][0] == "HypPart1":
                kind, start, _, word = parts[-1]
                parts[-1] = (kind, start, length, word)
            space = False
    return "".join(out), parts, boxes
