"""What directory exports get wrong in their cells, repaired the same way for every reader (HSDS, 211 exports,
mapped CSV/JSONL): text, language cells, place spellings, compound taxonomy codes, glued lines, bare hours.

Each function is a pure function of the cell; none knows a place, a country or a directory.

- `clean_text`: literal "\\n" made newlines, cp437 punctuation mojibake repaired ("GÇÖ" → ’), HTML removed (a
  `<br />` or `<p>` becomes a line break, other tags vanish, `&amp;` / `&nbsp;` / `&#39;` become characters), the
  "###MON###"-like service-area tags of HSDS exports removed. Document text is data: no markup reaches the store,
  the index or a quoted piece of evidence.
- `clean_languages`: language names from free-text cells ("Spanish (limited)", "Chinese (Cantonese, Mandarin)"),
  by the catalog word list's language names, spellings and remark words (`catalog/words/*.toml`).
- `place_key` / `canonical_forms`: one spelling per place ("RIVERTON", "Riverton"; "Lakeview NP", "Lakeview, N.P."):
  `fold_key`, with runs of single letters joined (initials "N.P.", "N P" and "NP" are one key). What no rule can
  merge safely ("Metro Lakeview") is the mapping's `aliases` table.
- `split_terms`: AIRS/211 LA taxonomy codes as exports write them: "; " between terms, " * " between the terms
  of one linked (compound) term ("BD-1800.2000 * YB-8000": a service for a target population), each part a term.
- `unglue`: the line breaks some exports drop inside a cell ("9AM-6PMSaturday, 9AM-4PM", "SpanishTagalog").
- `bare_hours_12h`: hour ranges written without am/pm in an hours field ("Monday-Friday, 9-5") made explicit.
"""

from __future__ import annotations

import html
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from functools import lru_cache

from tracerag.catalog.schedule import DAY, afternoon_hour, infer_range, weekday_index
from tracerag.catalog.words import WordList
from tracerag.text import fold_key

# ----------------------------------------------------------------------------------------------------- text

_MOJIBAKE = re.compile("G\u00c7(.)")  # "ΓÇ" + one more cp437 character: U+2000..U+203F read as cp437
_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\ufeff]")
_MARKER = re.compile(r"[ \t]*#{2,}[A-Z]{0,4}#*")  # "###MON###", "###COL###": service-area tags of the export
# A tag: "<br />", "<p class=msonormal>", "</p>", "<!-- … -->". "<5 years" or "a < b" are not tags (no name).
_TAG = re.compile(r"<!--.*?-->|<\s*(/?)\s*([a-zA-Z][a-zA-Z0-9]*)\b(?:[^<>\"']|\"[^\"]*\"|'[^']*')*>", re.DOTALL)
_BREAKS = frozenset(["br", "p", "div", "li", "ul", "ol", "tr", "table", "blockquote", "pre", "hr", "dd", "dt"])
_HEADING = re.compile(r"h[1-6]")
# An entity with its semicolon, or one of the few that browsers also read without it ("&amp", "&nbsp").
_ENTITY = re.compile(r"&(?:#\d{1,7};|#[xX][0-9a-fA-F]{1,6};|[a-zA-Z][a-zA-Z0-9]{1,31};|(?:amp|nbsp|lt|gt|quot)\b)")


def _repair(m: re.Match[str]) -> str:
    try:
        return bytes([0xE2, 0x80, m.group(1).encode("cp437")[0]]).decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return m.group(0)


def _tag(m: re.Match[str]) -> str:
    """A line break for a break or the start of a block ("<br />", "<p>", "<li>"); nothing for other tags and
    for closing ones, so that "</li><li>" breaks a line once."""
    name = (m.group(2) or "").casefold()
    opening = not m.group(1)
    return "\n" if (name == "br" or opening) and (name in _BREAKS or _HEADING.fullmatch(name)) else ""


def strip_html(text: str) -> str:
    """`text` without HTML tags and with its entities decoded; a break or the start of a block (`<br>`, `<p>`,
    `<li>`, ...) becomes a newline. Text without "<" or "&" is returned as it is."""
    if "<" in text:
        text = _TAG.sub(_tag, text)
    if "&" in text:
        text = _ENTITY.sub(lambda m: html.unescape(m.group(0)).replace("\u00a0", " "), text)
    return text


def clean_text(text: str | None) -> str:
    """A directory's text as meant (see the module docstring): literal "\\n" made newlines, mojibake punctuation
    repaired, HTML removed, the export's "###MON###"-like tags removed, lines right-trimmed."""
    if not text:
        return ""
    out = text.replace("\\r\\n", "\n").replace("\\n", "\n").replace("\\r", "\n").replace("\\t", " ")
    if "G\u00c7" in out:
        out = _MOJIBAKE.sub(_repair, out)
    out = strip_html(out)
    out = _MARKER.sub("", _ZERO_WIDTH.sub("", out))
    return "\n".join(line.rstrip() for line in out.strip().splitlines()).strip()


# ------------------------------------------------------------------------------------------------ languages

_PAREN = re.compile(r"\(([^()]*)\)?")


_LANGUAGE_SPLIT = re.compile(r"[\n,;/&]|\.\s|\.$|\band\b|\bor\b", re.IGNORECASE)
_SIGN = re.compile(r"\b(?:american\s+)?sign\s+language\b", re.IGNORECASE)


def clean_languages(values: Iterable[str], words: WordList | None = None) -> list[str]:
    """Language names from free-text cells, in order, without repeats: "Spanish (limited)" → Spanish,
    "English and Spanish" → English, Spanish, "Creole with translators as needed" → Creole, "Chinese (Cantonese,
    Mandarin)" → Chinese, Cantonese, Mandarin. Notes such as "other languages available upon request" or
    "Language line available" give nothing: a name counts when it (or its last word, "Haitian Creole") is a
    language name of the word list (`words`: the catalog's; the packaged default when None), or a sign language.
    A name ends at a word of the list's `remark` words. A parenthesis counts when it names languages only."""
    wl = words if words is not None else WordList.load()
    return list(dict.fromkeys(name for raw in values for name in _languages_in(raw, wl)))


@lru_cache(maxsize=1 << 14)
def _languages_in(raw: str, words: WordList) -> tuple[str, ...]:
    text = clean_text(raw)
    inner: list[str] = []

    def paren(m: re.Match[str]) -> str:
        segments = [s for s in _LANGUAGE_SPLIT.split(m.group(1)) if s.strip()]
        names = [_language(s, words) for s in segments]
        # "(Cantonese, Mandarin)": languages, each segment a name and nothing more; "(limited)" or "(Portuguese -
        # publications only)": a note, dropped
        if names and all(n and _whole(n, s, words) for n, s in zip(names, segments, strict=True)):
            inner.extend(names)
        return " "

    text = _PAREN.sub(paren, text)
    names = [n for segment in _LANGUAGE_SPLIT.split(text) for n in _listed(_language(segment, words), words) if n]
    return tuple(dict.fromkeys([*names, *inner]))


def _whole(name: str, segment: str, words: WordList) -> bool:
    bare = fold_key(segment)
    return fold_key(name) == bare or words.language_spellings.get(bare) == name


def _language(segment: str, wl: WordList) -> str:
    segment = segment.rsplit(":", 1)[-1].strip(" .-*'\"")
    if not segment:
        return ""
    alias = wl.language_spellings.get(fold_key(segment))
    if alias:
        return alias
    sign = _SIGN.search(segment)
    if sign:
        return " ".join(w.capitalize() for w in sign.group(0).split())
    words: list[str] = []
    for word in segment.split():
        bare = word.strip(".'\"")
        if not bare or not bare[0].isupper() or fold_key(bare) in wl.language_remark:
            break
        words.append(bare)
    if not words or len(words) > 3:
        return ""
    phrase = " ".join(words)
    alias = wl.language_spellings.get(fold_key(phrase))
    if alias:
        return alias
    folded = fold_key(phrase).split(" ")
    return phrase if folded[-1] in wl.language_names else ""


def _listed(name: str, wl: WordList) -> list[str]:
    """A phrase of language names without separators ("Chinese Spanish") is that many languages; a compound name
    ("Haitian Creole") stays one."""
    folded = fold_key(name).split(" ")
    if (
        len(folded) > 1
        and " ".join(folded) not in wl.compound_languages
        and all(w in wl.language_names for w in folded)
    ):
        return name.split()
    return [name]


# --------------------------------------------------------------------------------------------------- places

_INITIALS = re.compile(r"\b(?:[a-z] )+[a-z]\b")


def place_key(value: str) -> str:
    """The key under which two spellings of a place are one: `fold_key` ("Port-Riverton" = "Port Riverton",
    "RIVERTON" = "Riverton"), with runs of single letters joined, so initials compare whole ("Lakeview, N.P." =
    "Lakeview NP")."""
    return _INITIALS.sub(lambda m: m.group(0).replace(" ", ""), fold_key(value))


def canonical_forms(values: Iterable[str]) -> dict[str, str]:
    """place_key → the most common written form (ties: a mixed-case form, then the first seen)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    first: dict[str, int] = {}
    for i, value in enumerate(values):
        v = " ".join(value.split())
        if v:
            counts[place_key(v)][v] += 1
            first.setdefault(v, i)
    return {key: _most_common(forms, first) for key, forms in counts.items() if key}


def _most_common(forms: Counter[str], first: dict[str, int]) -> str:
    return min(forms, key=lambda v: (-forms[v], v.isupper() or v.islower(), first[v]))


def canonical(value: str, forms: dict[str, str]) -> str:
    v = " ".join(value.split())
    return forms.get(place_key(v), v) if v else ""


# ------------------------------------------------------------------------------------------------- taxonomy

_TERM_LIST = re.compile(r"\s*[;\n]\s*")
_LINKED = re.compile(r"\s*\*\s*")


def split_terms(cell: str) -> list[list[str]]:
    """The terms of a taxonomy cell, each as the list of its linked parts: "BD-1800.2000 * YB-8000; LH-2600" →
    [["BD-1800.2000", "YB-8000"], ["LH-2600"]]. AIRS/211 LA notation: terms are separated by ";", and the parts of
    a linked term (two or more terms used together, such as a service for a target population) by "*"; each part
    is a term of the taxonomy. Empty parts (";;", a trailing ";") are dropped."""
    out = []
    for term in _TERM_LIST.split(cell.strip()):
        parts = [p for p in _LINKED.split(term.strip()) if p]
        if parts:
            out.append(parts)
    return out


def term_parts(cell: str) -> list[str]:
    """Every term a taxonomy cell names, linked parts included, in order, without repeats."""
    return list(dict.fromkeys(p for term in split_terms(cell) for p in term))


# ------------------------------------------------------------------------------------------- glued and hours

_GLUE = re.compile(r"(?<=[a-z0-9)\]])(?=[A-Z][a-z]{2,})|(?<=\d[AaPp][Mm])(?=[A-Z][a-z])")


def unglue(cell: str, *, weekdays_only: bool = False) -> str:
    """Line breaks a cell lost put back: "9AM-6PMSaturday, 9AM-4PM" → "9AM-6PM\\nSaturday, 9AM-4PM",
    "SpanishTagalog" → "Spanish\\nTagalog". A break goes where a lowercase letter, a digit, a closing bracket or an
    "AM"/"PM" is followed at once by a capitalised word. With `weekdays_only`, only before a weekday name (an hours
    cell, where "McDonald" must stay whole)."""

    def brk(m: re.Match[str]) -> str:
        if weekdays_only:
            word = re.match(r"[A-Za-z]+", cell[m.end() :])
            if word is None or weekday_index(word.group(0)) is None:
                return ""
        return "\n"

    return _GLUE.sub(brk, cell)


_BARE_RANGE = re.compile(
    r"(?<![\d:/.$])(?P<h1>\d{1,2})(?::(?P<m1>\d{2}))?\s*(?:-+|–|\bto\b)\s*(?P<h2>\d{1,2})(?::(?P<m2>\d{2}))?"
    r"(?![\d:/%]|\s*(?:[ap]\.?m\b|[ap]\b|noon|midnight))",
    re.IGNORECASE,
)
# A dated text ("2/4/2008 to 4/15/2008", "December 22, 2009"): a season or a one-off, not weekly hours.
_DATED = re.compile(r"\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b(?:19|20)\d\d\b")


def is_dated(text: str) -> bool:
    """Whether an hours text carries a calendar date (a season, a one-off event)."""
    return bool(_DATED.search(text))


def bare_hours_12h(text: str) -> str:
    """Hour ranges of an hours field written on the 12-hour clock without am/pm made explicit: "9-5" → "9am-5pm",
    "8:30-4:30" → "8:30am-4:30pm", "9-12, 1-5" → "9am-12pm, 1pm-5pm", "10-2" → "10am-2pm", "1:50-6" →
    "1:50pm-6pm". The rules are the schedule's: the opening hour by `schedule.afternoon_hour` (7 to 11 morning, 12
    and 1 to 6 afternoon), the close by `schedule.infer_range` (later the same day). A range with am/pm, a 24-hour
    time (0, 13-23) or a date beside it is left as written. Only for a field that holds hours alone: elsewhere
    "6-13" is an age group."""

    def fix(m: re.Match[str]) -> str:
        h1, h2 = int(m["h1"]), int(m["h2"])
        if not (1 <= h1 <= 12 and 1 <= h2 <= 12):
            return m.group(0)
        pm1 = afternoon_hour(h1)
        opens = (h1 % 12 + (12 if pm1 else 0)) * 60 + int(m["m1"] or 0)
        found = infer_range((opens, True), ((h2 % 12) * 60 + int(m["m2"] or 0), False))
        if found is None or not found[0] < found[1] < DAY:
            return m.group(0)  # "6-2": not a range of one day's hours
        m1 = f":{m['m1']}" if m["m1"] else ""
        m2 = f":{m['m2']}" if m["m2"] else ""
        return f"{h1}{m1}{'pm' if pm1 else 'am'}-{h2}{m2}{'am' if found[1] < 12 * 60 else 'pm'}"

    return _BARE_RANGE.sub(fix, text)
