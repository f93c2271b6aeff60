"""The pieces every view of a trail is built from: text that comes from a run, made safe for a terminal.

Everything that comes from a document, a model or a user (questions, reasons, quotes, queries, responses) is
data, never markup: it only ever goes into `rich.text.Text` objects, appended as plain text, which rich parses
neither for markup nor for emoji codes, so a document holding "[bold]", "[/]" or ":warning:" renders as those
characters. (Escaping it with `rich.markup.escape` as well would show the backslashes: a `Text` is literal.)
No string built here is ever parsed as markup. `data` is the door data comes through (one line, controls shown
as escapes by `tracerag.text`), and `text` passes every piece through `safe_block` as well, so that a field of a
hand-edited trail that did not come through `data` still cannot reach the terminal raw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

from tracerag.model import Document
from tracerag.text import safe_block, safe_line

QUOTE_CHARS = 160

Part = str | tuple[str, str]


def data(value: Any) -> str:
    """Untrusted text on one line, controls and invisible format characters shown as escapes; to be appended to
    a `Text` (never interpolated into a markup string)."""
    return safe_line(value)


def text(*parts: Part) -> Text:
    """A Text from literal pieces, optionally styled: nothing in them is read as markup or emoji codes, and no
    control character in them reaches the terminal (newlines placed by this module stay)."""
    out = Text()
    for part in parts:
        if isinstance(part, tuple):
            out.append(safe_block(part[0]), style=part[1])
        else:
            out.append(safe_block(part))
    return out


def clip(value: Any, limit: int) -> str:
    """One line, whitespace collapsed, cut with an ellipsis."""
    flat = " ".join(str(value).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def compact_json(value: Any, limit: int = 160) -> str:
    return clip(json.dumps(value, ensure_ascii=False, default=str, sort_keys=True), limit)


def chunk_label(doc_id: str, chunk_id: str | None) -> str:
    if not chunk_id:
        return doc_id
    return chunk_id if chunk_id.startswith(doc_id) else f"{doc_id} ({chunk_id})"


def quote(documents: Mapping[str, Document] | None, doc_id: str, span: Sequence[int] | None) -> str | None:
    """The quoted span of a document at hand, clipped; None when the document or the span is not there."""
    if not documents or span is None or doc_id not in documents:
        return None
    body = documents[doc_id].text
    start, end = span
    if not 0 <= start <= end <= len(body):
        return None
    return clip(body[start:end], QUOTE_CHARS)
