"""Text for the index: OCR line-end hyphens joined, NFKC, mojibake repair, an optional spelling map. The original
text is never changed: chunk offsets and citations point into it as OCR'd."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

_WORD = re.compile(r"\w+", re.UNICODE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LETTER = r"[^\W\d_]"
# "¬" is only ever a line-end hyphenation mark in OCR output: it joins, whatever follows. A soft hyphen (U+00AD)
# only marks where a word may break. Both go, with the line break and indentation after them.
_ALWAYS_JOINS = re.compile(rf"(?<={_LETTER})[¬\u00ad][ \t]*(?:(?:\r\n|\r|\n)[ \t]*)?(?={_LETTER})")
# A hyphen or U+2010 at the very end of a line (LF, CRLF or CR), between a letter and a lowercase letter:
# "l'opi-\nnion". Not a hyphen with a space before or after it on its line ("anti- and pro-"), nor one before a
# capital ("Saint-\nMartin" may be a compound) or a digit.
_LINE_END_HYPHEN = re.compile(rf"(?<={_LETTER})[-\u2010](?:\r\n|\r|\n)[ \t]*(?={_LETTER})")


def join_hyphenation(text: str) -> str:
    """`text` with OCR line-end hyphenation undone: `l'opi-\\nnion` → `l'opinion`, `par¬\\nlementaire` →
    `parlementaire`; `anti- and pro-` and `Saint-\\nMartin` stay as they are."""
    if "¬" in text or "\u00ad" in text:
        text = _ALWAYS_JOINS.sub("", text)
    if "\n" in text or "\r" in text:
        text = _LINE_END_HYPHEN.sub(lambda m: "" if text[m.end()].islower() else m.group(0), text)
    return text


def hyphenation_forms(text: str, spans: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    """The index forms a reader knows better than `join_hyphenation`: {hyphenated text as OCR'd: whole word}.

    `spans` are a document's `source["hyphenated"]` (ALTO's SUBS_CONTENT: `{"start", "end", "word"}` over the
    document text). Only the words the generic join would get wrong are kept (a compound's own hyphen,
    `porte-\\nmanteau` → `porte-manteau`; a capitalised second part); a hyphenated text that two spans read as
    different words is left to the generic join.
    """
    forms: dict[str, str] = {}
    clashes: set[str] = set()
    for span in spans or ():
        try:
            surface = text[int(span["start"]) : int(span["end"])]
            word = str(span["word"])
        except (KeyError, TypeError, ValueError):
            continue  # a span written by hand or by another tool: the generic join still applies
        if not surface or not word.strip() or join_hyphenation(surface) == word:
            continue
        if forms.get(surface, word) != word:
            clashes.add(surface)
        forms[surface] = word
    for surface in clashes:
        del forms[surface]
    return forms


def normalise(text: str, spelling: Mapping[str, str] | None = None, forms: Mapping[str, str] | None = None) -> str:
    """Index form of `text`. Length may change, so chunk offsets are always taken on the original text.

    Line-end hyphenation is undone first (`forms` from `hyphenation_forms`, then `join_hyphenation`), so that
    `opinion` finds `l'opi-\\nnion`. ftfy repairs mojibake ("Ã©" → "é") and NFKC folds ligatures and
    compatibility forms ("ﬁ" → "fi", and long "ſ" → "s": NFKC folds it too). The spelling map replaces whole
    words, case-insensitively, with the user's modern forms (e.g. "françois" → "français").
    """
    import ftfy  # here (~1 µs a call once loaded): a collection opened to search imports this module, not ftfy
    from ftfy.badness import is_bad

    for surface, word in (forms or {}).items():
        if surface in text:
            text = text.replace(surface, word)
    text = join_hyphenation(text)
    # ftfy's full pass costs ~0.5 ms a chunk; its own mojibake detector decides when it is needed (same
    # output on all of HIPE-2022, twice as fast). HTML entities ("&amp;") also need the full pass.
    if "&" in text or is_bad(text):
        text = ftfy.fix_text(text, normalization="NFKC", uncurl_quotes=False, fix_line_breaks=False)
    text = _CONTROL.sub("", unicodedata.normalize("NFKC", text))
    if spelling:
        lowered = {k.lower(): v for k, v in spelling.items()}
        text = _WORD.sub(lambda m: lowered.get(m.group(0).lower(), m.group(0)), text)
    return text
