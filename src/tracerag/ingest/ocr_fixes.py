"""Conservative OCR repairs for the index text: only where the reading is certain, each counted.

What counts as certain here is Unicode's own knowledge of Latin typography, not any language's words:
- `glyph`: a typographic variant of one letter written as its plain letter: long s `ſ` → `s`, r rotunda `ꝛ` → `r`,
  and the ligatures `ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ` (NFKC in `normalise` also folds these; they are counted here);
- `superscript_e`: `aͤ oͤ uͤ` (U+0364, a small e written above the vowel: the form the diaeresis grew from, as
  Unicode's annotation of U+0364 says) → `ä ö ü`, so that a page typeset one way is found by a query typed the
  other (HIPE-OCRepair's dta19 transcriptions keep U+0364 where noisier OCR reads `ü`);
- `detached_mark`: a combining accent separated from its letter by a space (`e ́` → `é`): a combining mark after a
  space accents nothing, so it can only belong to the letter before;
- `hyphen_mark`: `⸗` (U+2E17, the double oblique hyphen of blackletter type) at a line end between letters, joined
  as `normalise` joins `-` and `¬`.

Mojibake is `ftfy`'s, already repaired in `normalise`; `mojibake` counts the documents it changes, so that the
repair shows. The stored text is never changed: citations stay exact to the source (see `tracerag.ingest.normalise`).
Queries go through `fix` too (where the collection was built with the fixes), so both sides meet in one form.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

KINDS = ("glyph", "detached_mark", "superscript_e", "hyphen_mark", "mojibake")
_GLYPHS = {"ſ": "s", "ꝛ": "r", "ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"}
_GLYPH = re.compile("[" + "".join(_GLYPHS) + "]")
_SUPERSCRIPT_E = re.compile("([aouAOU])\u0364")
# A letter, spaces or tabs (never a line break: a mark at a line start may be a new line's stray speck), then one
# or more combining marks that no letter carries.
_DETACHED = re.compile(r"([^\W\d_])[ \t]+([\u0300-\u036f]+)")
_HYPHEN_MARK = re.compile(r"(?<=[^\W\d_])\u2e17[ \t]*(?:\r\n|\r|\n)[ \t]*(?=[^\W\d_])")


def fix(text: str) -> tuple[str, Counter[str]]:
    """`text` with the certain repairs made, and how many of each kind (kinds with no repair are absent)."""
    counts: Counter[str] = Counter()
    if _GLYPH.search(text):
        text, n = _GLYPH.subn(lambda m: _GLYPHS[m.group(0)], text)
        counts["glyph"] += n
    if any("\u0300" <= c <= "\u036f" for c in text):
        text, n = _DETACHED.subn(lambda m: unicodedata.normalize("NFC", m.group(1) + m.group(2)), text)
        counts["detached_mark"] += n
    if "\u0364" in text:
        text, n = _SUPERSCRIPT_E.subn(lambda m: unicodedata.normalize("NFC", m.group(1) + "\u0308"), text)
        counts["superscript_e"] += n
    if "\u2e17" in text:
        text, n = _HYPHEN_MARK.subn("", text)
        counts["hyphen_mark"] += n
    return text, +counts


def count(text: str) -> Counter[str]:
    """The repairs `fix` makes in a whole document, and whether `normalise`'s mojibake repair changes it."""
    import ftfy  # here: ftfy loads in ~0.05 s, which an ingest pays once and a search not at all
    from ftfy.badness import is_bad

    counts = fix(text)[1]
    if is_bad(text) and ftfy.fix_text(text, uncurl_quotes=False, fix_line_breaks=False) != text:
        counts["mojibake"] += 1
    return counts
