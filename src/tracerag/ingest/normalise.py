"""Text for the index: NFKC, mojibake repair, an optional spelling map. The original text is never changed."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

import ftfy

_WORD = re.compile(r"\w+", re.UNICODE)


def normalise(text: str, spelling: Mapping[str, str] | None = None) -> str:
    """Index form of `text`. Length may change, so chunk offsets are always taken on the original text.

    ftfy repairs mojibake ("Ã©" → "é") and NFKC folds ligatures and compatibility forms ("ﬁ" → "fi", "ſ" stays
    for the spelling map to decide). The spelling map replaces whole words, case-insensitively, with the
    user's modern forms (e.g. "françois" → "français").
    """
    text = ftfy.fix_text(text, normalization="NFKC", uncurl_quotes=False, fix_line_breaks=False)
    text = unicodedata.normalize("NFKC", text)
    if spelling:
        lowered = {k.lower(): v for k, v in spelling.items()}
        text = _WORD.sub(lambda m: lowered.get(m.group(0).lower(), m.group(0)), text)
    return text
