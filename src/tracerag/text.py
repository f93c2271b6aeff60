"""Shared text utilities: showing untrusted text safely (a terminal, a spreadsheet, a JSON reader), and one
implementation each of folding a key, locating a quote, fencing data for a prompt, splitting sentences and
stemming a word.

Document text, ids, titles, corpus names, model output and catalog fields are data. Shown in a terminal, a
control character in them is an instruction to the terminal (`\\x1b[2J` clears the screen, `\\x1b]0;…\\x07` sets
the window title, U+009B is a one-character CSI), and a bidi override or an invisible format character changes
what the reader sees without being seen itself. So every terminal rendering goes through `safe_line` (one line:
a table cell, a title) or `safe_block` (a paragraph), which keep the text as it is except for those characters,
and those are shown as the escape a programmer would type: `\\x1b`, `\\x9b`, `\\u202e`.
The web app's pages follow the same rule (the `shown` template filter is `safe_block`), each such text in an
element that isolates it (`dir="auto"` or `<bdi>`), so that a title cannot reverse the words around it either.

Why escapes and not control pictures (`␛`): one notation covers every class (Unicode has pictures for C0 and DEL
only, none for C1 or bidi controls), it is plain ASCII that every font and terminal shows, and it is what one
pastes into grep or Python to find the byte in the source. Why make visible rather than delete: the reader of an
accountable search should see that the document holds them. The cost: a document that literally contains the
four characters `\\x1b` looks the same as one holding ESC; `--json` tells them apart.

`csv_cell` neutralises spreadsheet formulas as OWASP recommends; `json_dumps` writes JSON whose strings decode to
the exact original text but carry no raw C1, format or separator character.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from typing import Any

import Stemmer

# C0 controls without \t and \n (handled per context), DEL, C1; lone surrogates (from undecodable bytes: they
# cannot even be encoded for output); and the invisible format characters (Unicode category Cf) that can spoof
# what is shown: the bidi marks, embeddings, overrides and isolates (U+061C, U+200E/F, U+202A-E, U+2066-9),
# zero-width space, word joiner and the invisible operators, the deprecated format controls (U+206A-F), the
# BOM, the Mongolian vowel separator, interlinear annotation marks, the Egyptian hieroglyph, shorthand and
# musical format controls, and the tag characters (invisible ASCII look-alikes). Left as they are, because text
# is written with them: ZWNJ/ZWJ (U+200C/D: Persian, Indic scripts, emoji), the soft hyphen (OCR line ends) and
# the prepended concatenation marks (U+0600-5, U+06DD, U+070F, U+0890-1, U+08E2, U+110BD, U+110CD), which have
# glyphs. tests/test_safe_output.py checks this set against Python's Unicode database.
_FORMAT = (
    "\u061c\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
# C0 without tab and newline, DEL, C1, lone surrogates: the control characters, tab and newline aside.
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff"
_HIDDEN = re.compile("[" + _CONTROLS + _FORMAT + "]")
# What a paragraph treats as a line break: CR LF, CR, VT, FF, the file/group/record separators, NEL, U+2028/9.
_LINE_BREAK = re.compile("\r\n|[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_WHITESPACE = re.compile(r"\s+")
# JSON already escapes C0; these are the rest of what a terminal or a JavaScript reader must not get raw.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff" + _FORMAT + "]")

# OWASP, "CSV Injection": no cell may begin with = + - @, tab, CR or LF (ASVS 1.2.10 adds NUL); such a cell
# gets a leading single quote, which spreadsheets read as "this is text" and do not show.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n", "\x00")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


# Every control character and lone surrogate, tab and newline included: what no identifier may hold.
_CONTROL = re.compile("[\t\n" + _CONTROLS + "]")


def hidden_ranges() -> list[tuple[int, int]]:
    """The code point ranges `safe_line` and `safe_block` show as escapes, for a reader in another language:
    the web pages' scripts escape what they set as text with the same set (`trace.shown` in static/app.js), so a
    page has one definition of a hidden character, this one."""
    spec, ranges, i = _CONTROLS + _FORMAT, [], 0
    while i < len(spec):
        if i + 2 < len(spec) and spec[i + 1] == "-":
            ranges.append((ord(spec[i]), ord(spec[i + 2])))
            i += 3
        else:
            ranges.append((ord(spec[i]), ord(spec[i])))
            i += 1
    return ranges


def first_control(value: str) -> tuple[int, str] | None:
    """(index, escape) of the first control character or lone surrogate in `value` (`(3, "\\x1b")`), or None.
    Ingest refuses an id that holds one: ids are typed, cited and matched, and bytes that did not decode (a
    binary file read as a table) are what puts ESC and NUL into them."""
    m = _CONTROL.search(value)
    return (m.start(), _escape(m)) if m else None


def safe_line(value: Any) -> str:
    """`value` fit for one line of a terminal (a table cell, a title, a snippet): whitespace runs, line breaks
    included, become one space, ends stripped; controls and invisible format characters shown as escapes."""
    text = value if isinstance(value, str) else str(value)
    return _HIDDEN.sub(_escape, _WHITESPACE.sub(" ", text).strip())


def safe_block(value: Any) -> str:
    """`value` fit for a paragraph of a terminal: every kind of line break becomes a newline and tabs stay;
    other controls and invisible format characters are shown as escapes."""
    text = value if isinstance(value, str) else str(value)
    return _HIDDEN.sub(_escape, _LINE_BREAK.sub("\n", text))


def csv_cell(value: Any) -> str:
    """A CSV cell that a spreadsheet shows as text: one beginning with a formula trigger gets a leading `'`.
    The csv module's quoting takes care of separators and quotes inside the value."""
    text = "" if value is None else value if isinstance(value, str) else str(value)
    return "'" + text if text.startswith(FORMULA_TRIGGERS) else text


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON has only \uXXXX: a character beyond the BMP is written as its surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_dumps(value: Any, **options: Any) -> str:
    """`json.dumps` with non-ASCII text kept readable, and with DEL, C1, U+2028/9, lone surrogates and the
    invisible format characters written as `\\uXXXX` escapes: `json.loads` gives back exactly the original text,
    and printing it sends nothing a terminal would act on. (Outside strings, JSON is ASCII: escaping is safe.)"""
    return _JSON_UNSAFE.sub(_json_escape, json.dumps(value, ensure_ascii=False, **options))


# -- keys, quotes, fences, sentences, stems: one implementation each, shared by the agent, the judge and the catalog

_APOSTROPHES = re.compile(r"['’‘`´ʼ]")
_NON_WORD = re.compile(r"[\W_]+")


def fold_key(text: str) -> str:
    """The key form under which names are compared: casefolded, accents stripped, apostrophes removed
    ("Women's" → "womens", "l'État" → "letat"), other punctuation a space ("Saint-Lô" → "saint lo"), spaces
    collapsed. Every gazetteer, word list and request is keyed the same way, so they always agree."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(_NON_WORD.sub(" ", _APOSTROPHES.sub("", plain)).split())


_QUOTE_MARKS = "\"'“”‘’«»„‹›"
_ELLIPSIS = re.compile(r"\.\.\.|…|\[\.\.\.\]|\[…\]")
# Between two words of a quote: any whitespace, or a line break a model wrote out as backslash-n.
_GAP = r"(?:\s|\\n)+"


def locate_quote(quote: str, text: str, offset: int = 0, *, min_chars: int = 3) -> tuple[int, int] | None:
    """The span of `quote` in `text` (shifted by `offset`), or None when the quote is not there.

    Exact first; then ignoring case and runs of whitespace; a quote elided with "..." / "…" / "[…]" is found
    piece by piece, in order, and spans from its first piece to its last. Quote marks around the quote are not
    part of it, unless the text has them there too: a quote copied exactly, marks and all (a sentence that opens
    with «), is located where it was copied from. A quote shorter than `min_chars` locates nothing: two letters
    are found almost anywhere. A quote that was not copied from the text gives None, so that no evidence span ever
    points at something else.
    """
    exact = quote.strip()
    at = text.find(exact) if len(exact) >= min_chars else -1
    if at >= 0:
        return offset + at, offset + at + len(exact)
    quote = exact.strip(_QUOTE_MARKS).strip()
    quote = _ELLIPSIS.sub(" … ", quote).strip(" …")
    if len(quote) < min_chars:
        return None
    at = text.find(quote)
    if at >= 0:
        return offset + at, offset + at + len(quote)
    start: int | None = None
    pos = 0
    for piece in (p.strip() for p in quote.replace("\\n", " ").split("…")):
        if not piece:
            continue
        pattern = _GAP.join(re.escape(w) for w in piece.split())
        found = re.compile(pattern, re.IGNORECASE).search(text, pos)
        if found is None:
            return None
        start = found.start() if start is None else start
        pos = found.end()
    return None if start is None else (offset + start, offset + pos)


def fence_json(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON whose text cannot pose as markup or close a prompt's data block: `<` is escaped.

    Every prompt that carries document or record text carries it this way, inside a fence the system prompt
    names as data (see agent/prompts.py and the catalog's prompts)."""
    return json.dumps(value, ensure_ascii=False, indent=indent).replace("<", "\\u003c")


_SENTENCE_BREAK = re.compile(r"\n+|\\n|\\r")
_SENTENCE_END = re.compile(r"[.!?](?=\s+[\"'(*\[]?[A-Z0-9])")
_LAST_WORD = re.compile(r"(?:\b[A-Za-z]{1,4}|\b[A-Z](?:\.[A-Z])*)$")


def sentence_spans(text: str, abbreviations: frozenset[str] = frozenset()) -> list[tuple[int, int]]:
    """Spans of the sentences and list items of `text`, trimmed of spaces and bullets: the sentences a reader is
    shown or quoted as evidence (a catalog record's conditions, a cited span).

    A line break (also written out as backslash-n, as exported directories often do) ends one; so does `.`, `!`
    or `?` before a capital or a digit, unless the word before it is one of `abbreviations` (lowercase, without
    the dot: a language's word list provides them, "st", "dr") or a single letter ("U.S.", "J. Smith").

    Not the chunker's rule (`tracerag.ingest.chunk`), on purpose: a chunk boundary only has to be a place where a
    chunk may end, in any language and without a word list, so it is looser (after `;`, `:`, `»` too, with no
    capital needed, no abbreviation kept whole) and streams; a sentence shown as evidence must not be cut at
    "Dr." or "U.S.". Both trim their spans with `trimmed_span`.
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for brk in [*_SENTENCE_BREAK.finditer(text), None]:
        end = brk.start() if brk else len(text)
        piece = pos
        for m in _SENTENCE_END.finditer(text, pos, end):
            word = _LAST_WORD.search(text, piece, m.start())
            if word and (word.group().lower() in abbreviations or len(word.group()) == 1):
                continue
            if span := trimmed_span(text, piece, m.end(), _BULLETS):
                spans.append(span)
            piece = m.end()
        if span := trimmed_span(text, piece, end, _BULLETS):
            spans.append(span)
        pos = brk.end() if brk else len(text)
    return spans


_BULLETS = "*-\u2022"


def trimmed_span(text: str, start: int, end: int, also: str = "") -> tuple[int, int] | None:
    """`(start, end)` narrowed past the spaces (and any of the characters `also`) at its start and the spaces at
    its end, or None when nothing is left: offsets into `text` stay exact, no string is copied."""
    while start < end and (text[start].isspace() or text[start] in also):
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if end > start else None


@functools.cache
def _stemmer(language: str) -> Stemmer.Stemmer | None:
    try:
        return Stemmer.Stemmer(_SNOWBALL.get(language, language))
    except KeyError:
        return None  # a language Snowball has no stemmer for: words are compared as they are


# ISO 639-1 → Snowball algorithm name (PyStemmer takes either for most; these are the ones it needs spelled out).
_SNOWBALL = {
    "en": "english", "fr": "french", "de": "german", "es": "spanish", "it": "italian", "pt": "portuguese",
    "nl": "dutch", "sv": "swedish", "fi": "finnish", "da": "danish", "no": "norwegian", "ru": "russian",
    "hu": "hungarian", "ro": "romanian", "tr": "turkish", "ca": "catalan", "eu": "basque", "el": "greek",
}  # fmt: skip


def stem(word: str, language: str) -> str:
    """The Snowball stem of a (folded, lowercase) word in `language` (ISO 639-1), the stemmer the text index
    uses; the word itself for a language without one."""
    stemmer = _stemmer(language)
    return stemmer.stemWord(word) if stemmer is not None else word


_WORDS = re.compile(r"\w+")


def kept_forms(query: str) -> list[str]:
    """The forms of a query that name what it is about, kept as written across languages (a translation keeps them,
    the evidence check looks for them in any language): words holding a digit, and words of two letters or
    more it capitalises other than its first (where some of its words are in lower case, so capitals mean
    something)."""
    words = _WORDS.findall(query)
    lettered = [w for w in words if w[0].isalpha()]
    capitals_mean = any(w[0].islower() for w in lettered)
    forms = [
        w
        for i, w in enumerate(words)
        if any(ch.isdigit() for ch in w) or (capitals_mean and i > 0 and len(w) > 1 and w[0].isupper())
    ]
    return list(dict.fromkeys(forms))


TITLE_WORDS = 12
TITLE_CHARS = 90
# enough of a document's opening to derive its title from without reading the rest (a text may be 200 MB)
TITLE_PREFIX_CHARS = 1000


def derived_title(text: str, words: int = TITLE_WORDS, chars: int = TITLE_CHARS) -> str:
    """A title from the first words of a text: whitespace collapsed, cut at a word, an ellipsis when cut."""
    tokens = text.split()
    title = " ".join(tokens[:words])
    cut = len(tokens) > words
    if len(title) > chars:
        title = title[:chars].rsplit(" ", 1)[0] if " " in title[:chars] else title[:chars]
        cut = True
    return title + "…" if cut and title else title


def document_title(title: str | None, text: str | None, doc_id: str) -> tuple[str, str]:
    """The title every page and export shows for a document, and where it came from: its own title ("document"),
    else its first words ("text"), else its id ("doc_id"). One function, so that a source reads the same in a
    search result, a review card, an answer and an export. `text` may be the opening only (`TITLE_PREFIX_CHARS`)."""
    if title and title.strip():
        return " ".join(title.split()), "document"
    derived = derived_title(text or "")
    if derived:
        return derived, "text"
    return doc_id, "doc_id"
