"""A request written in another language than the directory's: which language, and the request in the
directory's words.

People write to a directory in their own language ("necesito comida gratis en lakeside"). The rule parser knows
the directory's language only (its word list, `catalog.words`); a gloss per language pair
(`catalog/words/gloss-{from}-{to}.toml`) says each word or phrase the way a person would say it in the
directory's language, so that the same parser, the same conditions, the same urgency words and the same places
apply. Words the gloss does not list (names, places, numbers, a street) are kept as written, and so is every
place the catalog holds, even when its words are also the other language's words ("El Lago", "Los Pinos").
The gloss is language knowledge, not code; which languages a catalog understands is its profile's
`request_languages`. The reply's fixed sentences follow the request's language (`catalog.sentences`); the
records' text is quoted as written.
"""

from __future__ import annotations

import functools
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources

from pydantic import BaseModel, ConfigDict, ValidationError

from tracerag.errors import ConfigError
from tracerag.text import fold_key

__all__ = ["Gloss", "RequestLanguage", "as_said", "available_glosses", "understand"]

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_NUMBER = "#"  # a gloss key's stand-in for one number ("tengo # anos" → "i am # years old")
MIN_MARKERS = 1  # a request is taken for the other language when it has at least this many of its marker words …
# … and more of them than words of the directory's own language (its word list's ordinary words).


class _GlossFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    language: str
    target: str
    markers: str = ""
    phrases: dict[str, str]


@dataclass(frozen=True)
class Gloss:
    """One language pair's phrases, folded, longest first when applied."""

    language: str  # the requests' language ("es")
    target: str  # the directory's language ("en")
    source: str  # the file it was read from
    markers: frozenset[str]
    phrases: Mapping[tuple[str, ...], str]
    longest: int

    @classmethod
    def load(cls, language: str, target: str) -> Gloss | None:
        """The packaged gloss from `language` into `target`, or None when there is none."""
        return _load(language, target)

    def vocabulary(self) -> frozenset[str]:
        return frozenset(w for key in self.phrases for w in key if w != _NUMBER) | self.markers


def available_glosses(target: str) -> list[str]:
    """The languages with a packaged gloss into `target`, sorted."""
    folder = resources.files("tracerag.catalog") / "words"
    found = []
    for entry in folder.iterdir():
        m = re.fullmatch(r"gloss-([a-z]{2,3})-([a-z]{2,3})\.toml", entry.name)
        if m and m.group(2) == target:
            found.append(m.group(1))
    return sorted(found)


@functools.lru_cache(maxsize=16)
def _load(language: str, target: str) -> Gloss | None:
    name = f"gloss-{language}-{target}.toml"
    resource = resources.files("tracerag.catalog") / "words" / name
    if not resource.is_file():
        return None
    where = f"tracerag/catalog/words/{name}"
    try:
        data = _GlossFile(**tomllib.loads(resource.read_text(encoding="utf-8")))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not TOML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{where}: invalid gloss: {problems}") from None
    if (data.language, data.target) != (language, target):
        raise ConfigError(f"{where}: language/target {data.language!r}/{data.target!r}, expected the file's name")
    phrases: dict[tuple[str, ...], str] = {}
    for key, value in data.phrases.items():
        folded = tuple(_NUMBER if part == _NUMBER else fold_key(part) for part in key.split())
        if not folded or any(not p for p in folded):
            raise ConfigError(f"{where}: phrases: {key!r} is not a phrase of words")
        phrases[folded] = value
    return Gloss(
        language=data.language,
        target=data.target,
        source=where,
        markers=frozenset(fold_key(w) for w in data.markers.split()),
        phrases=phrases,
        longest=max((len(k) for k in phrases), default=1),
    )


@dataclass(frozen=True)
class RequestLanguage:
    """What the assistant made of a request's language: `text` is what the parser reads."""

    language: str  # the request's language
    text: str  # the request in the directory's language (the request itself when it is in it)
    glossed: bool  # whether `text` was glossed from another language
    markers: tuple[str, ...] = ()  # the words that said which language it is (for the trail)
    evident: bool = True  # whether its words said so (a place name alone says no language)
    said: tuple[tuple[str, str], ...] = ()  # (the directory's words, the request's words they gloss)

    def to_dict(self) -> dict[str, object]:
        return {"language": self.language, "text": self.text, "glossed": self.glossed, "markers": list(self.markers)}


def as_said(text: str, said: Iterable[tuple[str, str]]) -> str:
    """`text` (the directory's words, a topic) with each word a gloss gave back in the request's own words
    ("food pantry" → "despensa de comida"); words no gloss gave stay as they are."""
    back: dict[str, str] = {}
    for value, original in said:
        for word in fold_key(value).split():
            back.setdefault(word, original)
    out: list[str] = []
    for word in text.split():
        original = back.get(fold_key(word), word)
        if not out or out[-1] != original:
            out.append(original)
    return " ".join(out)


def understand(
    request: str,
    directory_language: str,
    languages: Iterable[str],
    own_words: frozenset[str],
    keep: Iterable[str] = (),
) -> RequestLanguage:
    """The request's language among `languages` (those with a gloss into the directory's) and the request in
    the directory's words. `own_words` are the directory language's ordinary words (its word list), against
    which the other language's marker words are counted (a word of both counts for neither); `keep` are the
    catalog's place names (folded), never glossed."""
    tokens = [fold_key(m.group()) for m in _WORD.finditer(request)]
    own_evidence = any(t in own_words for t in tokens)
    best: tuple[int, Gloss, tuple[str, ...]] | None = None
    for language in languages:
        if language == directory_language:
            continue
        gloss = Gloss.load(language, directory_language)
        if gloss is None:
            continue
        hits = tuple(t for t in tokens if t in gloss.markers)
        shared = gloss.vocabulary()  # "me", "a", "no": words of both languages say neither
        own = sum(1 for t in tokens if t in own_words and t not in shared)
        if len(hits) >= MIN_MARKERS and len(hits) > own and (best is None or len(hits) > best[0]):
            best = (len(hits), gloss, hits)
    if best is None:
        return RequestLanguage(directory_language, request, False, evident=own_evidence)
    _, gloss, hits = best
    said: list[tuple[str, str]] = []
    text = apply_gloss(request, gloss, keep, said)
    return RequestLanguage(gloss.language, text, True, hits, True, tuple(said))


def apply_gloss(request: str, gloss: Gloss, keep: Iterable[str] = (), said: list[tuple[str, str]] | None = None) -> str:
    """The request with each listed phrase (longest first) said in the gloss's target language; what is not
    listed, and every phrase of `keep` (folded place names), stays as written, punctuation included. `said`, when
    given, receives each (value, the request's words) pair, so a reply can give a topic back as it was said."""
    words = list(_WORD.finditer(request))
    folded = [fold_key(m.group()) for m in words]
    kept = {tuple(k.split()) for k in keep if k}
    kept_longest = max((len(k) for k in kept), default=0)
    out: list[str] = []
    cursor = 0
    i = 0
    while i < len(words):
        size = _kept_at(folded, i, kept, kept_longest)
        if size:
            i += size
            continue  # copied as written with the text around it
        size, value = _phrase_at(folded, i, gloss)
        if not size:
            i += 1
            continue
        start, end = words[i].start(), words[i + size - 1].end()
        out.append(request[cursor:start])
        out.append(value)
        if said is not None and value:
            said.append((value, request[start:end]))
        cursor = end
        i += size
    out.append(request[cursor:])
    return " ".join("".join(out).split())


def _kept_at(folded: list[str], i: int, kept: set[tuple[str, ...]], longest: int) -> int:
    for size in range(min(longest, len(folded) - i), 0, -1):
        if tuple(folded[i : i + size]) in kept:
            return size
    return 0


def _phrase_at(folded: list[str], i: int, gloss: Gloss) -> tuple[int, str]:
    """The longest phrase of the gloss starting at word `i` (a number where the key has `#`), and its value."""
    for size in range(min(gloss.longest, len(folded) - i), 0, -1):
        part = folded[i : i + size]
        numbers = [w for w in part if w.isdigit()]
        key = tuple(_NUMBER if w.isdigit() else w for w in part)
        if key in gloss.phrases:
            value = gloss.phrases[key]
            for n in numbers:  # the numbers back, in order
                value = value.replace(_NUMBER, n, 1)
            return size, value
    return 0, ""
