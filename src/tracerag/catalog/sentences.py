"""The fixed sentences of the catalog assistant's replies, in the language of the request.

A reply's own sentences ("Which city or postal code should I look in for food?", "Phone:", "That is all …") are
language data, one file per language (`catalog/words/replies-{lang}.toml`): templates with named fields, the
English file complete, another language's file translating what it can; a key it lacks is said in English. The
records' own text (names, eligibility, hours as written, quoted evidence) is never translated: it is quoted as the
directory wrote it. The assistant says which language a turn speaks (`speaking`); the reply functions ask for
their sentences with `say`, so they need no language argument threaded through every call.
"""

from __future__ import annotations

import contextvars
import functools
import string
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources

from pydantic import BaseModel, ConfigDict, ValidationError

from tracerag.errors import ConfigError

__all__ = ["Sentences", "say", "speaking"]

DEFAULT = "en"  # the complete file: every key the code asks for is there


class _SentenceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    language: str
    sentences: dict[str, str]


@dataclass(frozen=True)
class Sentences:
    """One language's templates, with the default language's behind them."""

    language: str
    templates: Mapping[str, str]
    fallback: Mapping[str, str]

    @classmethod
    def load(cls, language: str) -> Sentences:
        """The packaged sentences of `language` (English alone when there is no file for it)."""
        return _load(language)

    def has(self, key: str) -> bool:
        return key in self.templates

    def __call__(self, key: str, **fields: object) -> str:
        template = self.templates.get(key) or self.fallback.get(key)
        if template is None:
            raise KeyError(f"no sentence {key!r} in tracerag/catalog/words/replies-{DEFAULT}.toml")
        return template.format(**fields)


def _read(language: str) -> dict[str, str] | None:
    name = f"replies-{language}.toml"
    resource = resources.files("tracerag.catalog") / "words" / name
    if not resource.is_file():
        return None
    where = f"tracerag/catalog/words/{name}"
    try:
        data = _SentenceFile(**tomllib.loads(resource.read_text(encoding="utf-8")))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not TOML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{where}: invalid sentence file: {problems}") from None
    if data.language != language:
        raise ConfigError(f"{where}: language = {data.language!r}, expected {language!r} (the file's name)")
    for key, template in data.sentences.items():
        try:
            list(string.Formatter().parse(template))
        except ValueError as exc:
            raise ConfigError(f"{where}: sentences.{key}: not a template ({exc}): {template!r}") from None
    return data.sentences


@functools.lru_cache(maxsize=8)
def _load(language: str) -> Sentences:
    default = _read(DEFAULT)
    if default is None:
        raise ConfigError(f"tracerag/catalog/words/replies-{DEFAULT}.toml is missing from the package")
    own = _read(language) if language != DEFAULT else default
    return Sentences(language if own is not None else DEFAULT, own or default, default)


_CURRENT: contextvars.ContextVar[Sentences | None] = contextvars.ContextVar("catalog_sentences", default=None)


@contextmanager
def speaking(language: str) -> Iterator[Sentences]:
    """Within the block, `say` speaks `language` (where its file has the sentence)."""
    token = _CURRENT.set(Sentences.load(language))
    try:
        yield Sentences.load(language)
    finally:
        _CURRENT.reset(token)


def say(key: str, **fields: object) -> str:
    """The sentence `key` with its fields, in the language being spoken (English outside `speaking`)."""
    return (_CURRENT.get() or Sentences.load(DEFAULT))(key, **fields)
