"""ALTO XML reader: one `Document` per file (a page) or per TextBlock, with block and line offsets kept.

Any ALTO namespace works (v2, v3, v4 or none): elements are matched in the root's own namespace. Text is
rebuilt from String@CONTENT: words of a line are joined by one space (SP, or nothing between two Strings, which
some OCR engines write), a HYP keeps its hyphen as OCR'd and sticks to its word, lines end with "\\n" and blocks
with "\\n\\n" (no trailing separator). `source["blocks"]` and `source["lines"]` give each block's and line's ALTO
ID with its character span in `text`, so a chunk can be traced back to the page image.

Options: `unit` ("page" or "block"), and `corpus` (default: the file's folder name), `date`, `language`, which
apply to every document. Ids are the file path relative to the folder read, without suffix (the file stem for
flat folders), so that same-named pages of different issues do not collide; blocks add `:{block id}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lxml import etree

from tracerag.errors import ConfigError, RecordError
from tracerag.ingest import iter_files
from tracerag.ingest.dates import normalise_date
from tracerag.model import Document

_UNITS = ("page", "block")
# No entity expansion or network access: ALTO files come from anywhere.
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)

Span = dict[str, Any]  # {"id", "start", "end"}


def read(
    path: Path,
    *,
    unit: str = "page",
    corpus: str | None = None,
    date: str | None = None,
    language: str | None = None,
    **_: Any,
) -> Iterator[Document | RecordError]:
    """Stream the pages (or text blocks) of one ALTO file or of every `.xml` under a folder."""
    if unit not in _UNITS:
        raise ConfigError(f"ALTO unit must be one of {', '.join(_UNITS)}, not {unit!r}")
    try:
        date = normalise_date(date)
    except ValueError as exc:
        raise ConfigError(f"ALTO date option: {exc}") from None
    root = Path(path)
    for f in iter_files(root, (".xml",)):
        rel = f.name if root.is_file() else f.relative_to(root).as_posix()
        meta = {"corpus": corpus or f.parent.name or "default", "date": date, "language": language}
        yield from _read_file(f, rel, unit, meta)


def _read_file(f: Path, rel: str, unit: str, meta: dict[str, Any]) -> Iterator[Document | RecordError]:
    try:
        tree = etree.fromstring(f.read_bytes(), _PARSER)
    except etree.XMLSyntaxError as exc:
        yield RecordError(f"broken XML: {exc.msg}", file=str(f), line=exc.lineno)
        return
    except OSError as exc:
        yield RecordError(f"cannot read: {exc}", file=str(f))
        return
    qname = etree.QName(tree)
    if qname.localname.lower() != "alto":
        yield RecordError(f"not an ALTO file (root element <{qname.localname}>)", file=str(f), line=1)
        return
    ns = f"{{{qname.namespace}}}" if qname.namespace else ""
    stem = Path(rel).with_suffix("").as_posix()
    page = next(tree.iter(f"{ns}Page"), None)
    page_id = (page.get("ID") if page is not None else None) or Path(rel).stem

    blocks = [b for b in (_block(el, ns, n) for n, el in enumerate(tree.iter(f"{ns}TextBlock"), 1)) if b]
    if not blocks:
        yield RecordError("no text (no String with CONTENT)", file=str(f))
        return
    base = {"file": rel, "page_id": page_id}
    if unit == "block":
        for block_id, text, lines in blocks:
            source = {
                **base,
                "block_id": block_id,
                "blocks": [{"id": block_id, "start": 0, "end": len(text)}],
                "lines": lines,
            }
            yield Document(id=f"{stem}:{block_id}", text=text, source=source, **meta)
        return
    parts: list[str] = []
    block_spans: list[Span] = []
    line_spans: list[Span] = []
    pos = 0
    for block_id, text, lines in blocks:
        if parts:
            parts.append("\n\n")
            pos += 2
        parts.append(text)
        block_spans.append({"id": block_id, "start": pos, "end": pos + len(text)})
        line_spans.extend({**ln, "start": ln["start"] + pos, "end": ln["end"] + pos} for ln in lines)
        pos += len(text)
    yield Document(id=stem, text="".join(parts), source={**base, "blocks": block_spans, "lines": line_spans}, **meta)


def _block(el: etree._Element, ns: str, n: int) -> tuple[str, str, list[Span]] | None:
    """(block id, block text, line spans relative to the block text), or None for a block without words."""
    block_id = el.get("ID") or f"block{n}"
    texts: list[str] = []
    spans: list[Span] = []
    pos = 0
    for m, line in enumerate(el.iter(f"{ns}TextLine"), 1):
        text = _line_text(line, ns)
        if not text:
            continue
        if texts:
            pos += 1  # the "\n" before this line
        spans.append({"id": line.get("ID") or f"{block_id}.line{m}", "start": pos, "end": pos + len(text)})
        texts.append(text)
        pos += len(text)
    return (block_id, "\n".join(texts), spans) if texts else None


def _line_text(line: etree._Element, ns: str) -> str:
    out: list[str] = []
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
                out.append(content)
                space = False
        elif tag == f"{ns}HYP":
            if out and space:
                out.append(" ")
            out.append(child.get("CONTENT") or "-")
            space = False
    return "".join(out)
