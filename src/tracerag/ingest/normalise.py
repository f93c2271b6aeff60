"""Text for the index: NFKC, mojibake repair, an optional spelling map. The original text is never changed."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

import ftfy
from ftfy.badness import is_bad

_WORD = re.compile(r"\w+", re.UNICODE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def normalise(text: str, spelling: Mapping[str, str] | None = None) -> str:
    """Index form of `text`. Length may change, so chunk offsets are always taken on the original text.

    ftfy repairs mojibake ("Ã©" → "é") and NFKC folds ligatures and compatibility forms ("ﬁ" → "fi", "ſ" stays
    for the spelling map to decide). The spelling map replaces whole words, case-insensitively, with the
    user's modern forms (e.g. "françois" → "français").
    """
    # ftfy's full pass costs ~0.5 ms a chunk; its own mojibake detector decides when it is needed (same
    # output on all of HIPE-2022, twice as fast). HTML entities ("&amp;") also need the full pass.
    if "&" in text or is_bad(text):
        text = ftfy.fix_text(text, normalization="NFKC", uncurl_quotes=False, fix_line_breaks=False)
    text = _CONTROL.sub("", unicodedata.normalize("NFKC", text))
    if spelling:
        lowered = {k.lower(): v for k, v in spelling.items()}
        text = _WORD.sub(lambda m: lowered.get(m.group(0).lower(), m.group(0)), text)
    return text
