"""How clean a document's OCR looks, from its text alone: the share of its words a lexicon of its language knows,
and the share of its tokens that look like OCR garbage, combined into one score from 0 to 1 with both parts kept.

The lexicon is `wordfreq`'s word list for the document's language (data, not code: no language is named here);
a language it has no list for gets no score, and says so, rather than a score built on nothing. The garbage rules
are the language-free ones of Taghva et al. 2001 ("Automatic removal of garbage strings in OCR text"): a long
run of one character, punctuation or symbols inside a word, a digit among letters, an upper-case letter inside a
lower-case word, a token over 40 characters.

The score is `lexicon_share * (1 - garbage_rate)`: a text is as good as the words a reader would recognise, and
garbage tokens count against it even where the lexicon is silent about them (numbers, symbols). Measured against
the character error rate on HIPE-OCRepair-2026 (benchmarks/ocr_fixes.py).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass
from functools import cache, lru_cache
from importlib.metadata import version
from typing import Any

# wordfreq's biggest lists (words down to once per 100 million), where a language has one; every word in it counts
# as known. Keeping only the words seen at least once per 10 million (Zipf 2), so that the typos at the bottom of
# web text would not make garbage look known, did not pay: Spearman ρ with CER -0.486 against -0.494 on
# HIPE-OCRepair-2026 (before the repairs were read).
WORDLIST = "large"
MIN_WORDS = 5  # fewer words than this say nothing about a text: no score
_TOKEN = re.compile(r"\S+")
_WORD = re.compile(r"[^\W\d_]+(?:[\u0300-\u036f][^\W\d_]*)*")  # letters, combining marks kept inside
_EDGE = "\"'«»„“”‘’‚()[]{}<>.,;:!?—–-¬*"  # punctuation that may stand at either end of a word
_INNER_OK = set("'’-‐⸗.,/:&")  # allowed inside a token: elisions, compounds, abbreviations, numbers, dates
_REPEAT = re.compile(r"([^\W\d_])\1{3,}")  # the same letter four times in a row ("Schifffahrt" has three)


@dataclass(frozen=True)
class OcrQuality:
    """One document's estimate. `score` is None when there is no lexicon for its language or too few words;
    `note` says why."""

    score: float | None
    lexicon_share: float | None
    garbage_rate: float
    words: int
    tokens: int
    language: str | None
    lexicon: str | None  # "wordfreq 3.1.1 large:fr": which list decided, so that a score can be reproduced
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@cache
def lexicon_name(language: str) -> str | None:
    """The word list used for `language`, or None when wordfreq has none."""
    lists = _lists(language)
    return None if lists is None else f"wordfreq {version('wordfreq')} {lists}:{language}"


@cache
def _lists(language: str) -> str | None:
    import wordfreq  # here, not at the top: it loads in ~0.1 s, and a search (which reads stored scores) needs none

    available = wordfreq.available_languages(WORDLIST)
    if language in available:
        return WORDLIST
    return "best" if language in wordfreq.available_languages("best") else None


@cache
def _lexicon(language: str) -> frozenset[str]:
    lists = _lists(language)
    if lists is None:
        return frozenset()
    import wordfreq

    words = frozenset(wordfreq.get_frequency_dict(language, wordlist=lists))
    # wordfreq keeps its own copies (the dict and the list behind it) cached; the set is the one this module needs,
    # and an ingest holds it for the whole run.
    wordfreq.get_frequency_dict.cache_clear()
    wordfreq.get_frequency_list.cache_clear()
    return words


def is_garbage(token: str) -> bool:
    """Whether a whitespace-delimited token looks like OCR garbage, by rules that hold in any alphabetic script."""
    core = token.strip(_EDGE)
    if not core:
        return False  # punctuation alone ("—", "«") is typesetting, not a misread word
    if len(core) > 40:
        return True
    if any(unicodedata.category(c) == "So" for c in core):
        return True  # ■ ♦ ► ©: page furniture and specks read as glyphs
    if not any(c.isalnum() for c in core):
        return sum(1 for c in core if not c.isspace()) > 2  # ".,;'" runs; a lone "&" or "§" is fine
    if _REPEAT.search(core):
        return True
    inner = core[1:-1]
    if any(not (c.isalnum() or c in _INNER_OK or unicodedata.category(c).startswith("M")) for c in inner):
        return True
    letters = [c for c in core if c.isalpha()]
    if letters and any(c.isdigit() for c in core):
        first_letter = next(i for i, c in enumerate(core) if c.isalpha())
        if any(c.isdigit() for c in core[first_letter:]):
            return True  # "l0ndon", "tl1e"; "19th", "1er", "2º" (digits, then letters) are numbers
    # "hoUse", "tHe"
    return len(letters) > 2 and letters[0].islower() and letters[-1].islower() and any(c.isupper() for c in letters)


# A token that is letters only, Latin-1 ones (most tokens of the languages the archives hold), can break only the
# length, repeat and inner-capital rules: tested for those alone, the same answer as `is_garbage` at a tenth of
# its cost.
_LATIN_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ]+")


def _garbage(core: str, token: str) -> bool:
    if _LATIN_WORD.fullmatch(core):
        if len(core) > 40 or _REPEAT.search(core):
            return True
        return len(core) > 2 and core[0].islower() and core[-1].islower() and not core.islower()
    return is_garbage(token)


@lru_cache(maxsize=1 << 16)
def _reading(token: str, language: str) -> tuple[bool, int, int]:
    """What one token counts for in `language`: (garbage?, its words, how many of them the lexicon knows).
    Cached, and asked once per distinct token of a text: tokens repeat (Zipf), and the rules read each character
    several times; uncached, the estimate was three quarters of a lexical ingest's time."""
    if _garbage(token.strip(_EDGE), token):
        return True, 0, 0
    words = [w.lower() for w in _WORD.findall(token)]
    lexicon = _lexicon(language) if language and _lists(language) else frozenset()
    known = sum(1 for w in words if w in lexicon or unicodedata.normalize("NFC", w) in lexicon)
    return False, len(words), known


def estimate(text: str, language: str | None) -> OcrQuality:
    """The estimate for `text` in `language` (ISO 639-1, as documents carry it). Pass the index form of the text
    (hyphenation joined, NFKC) so that a word split at a line end is one word."""
    garbage = counted = words = known = 0
    for token, n in Counter(_TOKEN.findall(text)).items():
        if not token.strip(_EDGE):
            continue
        counted += n
        bad, w, k = _reading(token, language or "")
        garbage += n * bad
        words += n * w
        known += n * k
    garbage_rate = garbage / counted if counted else 0.0
    if not language:
        return OcrQuality(None, None, garbage_rate, words, counted, None, None, "no language")
    name = lexicon_name(language)
    if name is None:
        return OcrQuality(None, None, garbage_rate, words, counted, language, None, "no lexicon")
    all_words = words + garbage  # a garbage token is a word the lexicon would not know
    if all_words < MIN_WORDS:
        return OcrQuality(None, None, garbage_rate, words, counted, language, name, "too few words")
    share = known / all_words
    score = share * (1.0 - garbage_rate)
    return OcrQuality(round(score, 4), round(share, 4), round(garbage_rate, 4), words, counted, language, name)
