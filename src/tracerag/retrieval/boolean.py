"""Boolean filters over any search: `AND`, `OR`, `NOT`, parentheses, "quoted phrases", `field:value`, and a
word ending in `*` for a prefix.

Exactness comes from where the expression is evaluated: over every document of the store, each document's whole
text and metadata, never over what a search happened to retrieve. The documents that satisfy it become the
search's allow-list, so the engine ranks only them and a matching document the query ranks within k is never
lost to a post-filter that came too late (`tests/retrieval/test_boolean.py` checks both directions on HIPE).

Words and phrases are compared in the one key form every layer uses (`text.fold_key`: case, accents and
punctuation folded), on word boundaries: `greve` matches "Grève", not "grèves" (`grev*` matches both). Operators
are upper case, so a lower-case "or" is a word; adjacent terms are joined by AND. Parse errors name the
character position.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracerag.dates import parse_partial_date
from tracerag.errors import TraceError
from tracerag.model import Document, Filter
from tracerag.text import fold_key

if TYPE_CHECKING:
    from tracerag.store import DocumentStore

# Keys that name a document's own metadata; any other key is looked up in its structured `fields`.
METADATA_KEYS = ("corpus", "language", "date", "id", "title")


class FilterSyntaxError(TraceError):
    """A boolean filter expression that cannot be parsed; the message names the character position."""

    def __init__(self, expression: str, position: int, problem: str):
        self.expression = expression
        self.position = position
        pointer = " " * position + "^"
        super().__init__(f"filter: at character {position + 1}: {problem}\n  {expression}\n  {pointer}")


# -- the expression -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """A word (`prefix`: it ended in `*`) or a quoted phrase, in folded form, matched on word boundaries."""

    words: tuple[str, ...]
    prefix: bool = False

    def matches(self, doc: DocumentView) -> bool:
        if self.prefix:
            stem = self.words[0]
            return any(w.startswith(stem) for w in doc.words)
        if len(self.words) == 1:
            return self.words[0] in doc.words
        return f" {' '.join(self.words)} " in doc.padded

    def __str__(self) -> str:
        return '"' + " ".join(self.words) + '"' if len(self.words) > 1 else self.words[0] + ("*" if self.prefix else "")


@dataclass(frozen=True)
class FieldTerm:
    """`key:value`: corpus (the corpus or one below it), language, date (a partial date or `FROM..TO`, matched
    when the document's date range overlaps it), id, title (words of the title), or a structured field (its
    value in folded form)."""

    key: str
    value: str

    def matches(self, doc: DocumentView) -> bool:
        d = doc.document
        if self.key == "corpus":
            return d.corpus == self.value or d.corpus.startswith(self.value + "/")
        if self.key == "language":
            return (d.language or "").casefold() == self.value.casefold()
        if self.key == "id":
            return d.id == self.value
        if self.key == "date":
            return _dates_overlap(d.date, self.value)
        if self.key == "title":
            title = f" {fold_key(d.title or '')} "
            return f" {fold_key(self.value)} " in title
        value = d.fields.get(self.key)
        if value is None:
            return False
        values = value if isinstance(value, list) else [value]
        wanted = fold_key(self.value)
        return any(fold_key(str(v)) == wanted for v in values)

    def __str__(self) -> str:
        return f"{self.key}:{self.value}"


@dataclass(frozen=True)
class Not:
    inner: Expr

    def matches(self, doc: DocumentView) -> bool:
        return not self.inner.matches(doc)

    def __str__(self) -> str:
        return f"NOT {self.inner}"


@dataclass(frozen=True)
class And:
    parts: tuple[Expr, ...]

    def matches(self, doc: DocumentView) -> bool:
        return all(p.matches(doc) for p in self.parts)

    def __str__(self) -> str:
        return "(" + " AND ".join(map(str, self.parts)) + ")"


@dataclass(frozen=True)
class Or:
    parts: tuple[Expr, ...]

    def matches(self, doc: DocumentView) -> bool:
        return any(p.matches(doc) for p in self.parts)

    def __str__(self) -> str:
        return "(" + " OR ".join(map(str, self.parts)) + ")"


Expr = Term | FieldTerm | Not | And | Or


class DocumentView:
    """A document's text folded once, for every term of an expression to test against."""

    def __init__(self, document: Document):
        self.document = document
        folded = fold_key(document.text)
        self.padded = f" {folded} "
        self.words = frozenset(folded.split())


def _dates_overlap(date: str | None, value: str) -> bool:
    if not date:
        return False
    low, _, high = value.partition("..")
    start = parse_partial_date(low).start if low else "0000"
    end = parse_partial_date(high or low).end if (high or low) else "9999"
    doc = parse_partial_date(date)
    return doc.start <= end and doc.end >= start


# -- the parser ---------------------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?:
      (?P<lparen>\() | (?P<rparen>\)) |
      (?P<field>[A-Za-z_][\w.-]*):(?:"(?P<fphrase>[^"]*)"|(?P<fvalue>[^\s()"]*)) |
      "(?P<phrase>[^"]*)" |
      (?P<open>") |
      (?P<word>[^\s()"]+)
    )""",
    re.VERBOSE,
)
_OPERATORS = ("AND", "OR", "NOT")


@dataclass(frozen=True)
class _Token:
    kind: str  # lparen, rparen, field, phrase, word, op
    text: str
    position: int
    value: str = ""


def _tokens(expression: str) -> list[_Token]:
    out: list[_Token] = []
    pos = 0
    while True:
        while pos < len(expression) and expression[pos].isspace():
            pos += 1
        if pos >= len(expression):
            return out
        found = _TOKEN.match(expression, pos)
        assert found is not None  # every non-space character starts some token
        if found.group("open") is not None:
            raise FilterSyntaxError(expression, pos, 'a quote " that is never closed')
        if found.group("field") is not None:
            value = found.group("fphrase") if found.group("fphrase") is not None else found.group("fvalue")
            out.append(_Token("field", found.group("field"), pos, value))
        elif found.group("word") is not None:
            word = found.group("word")
            out.append(_Token("op" if word in _OPERATORS else "word", word, pos))
        elif found.group("phrase") is not None:
            out.append(_Token("phrase", found.group("phrase"), pos))
        else:
            out.append(_Token("lparen" if found.group("lparen") else "rparen", found.group(0), pos))
        pos = found.end()


class _Parser:
    def __init__(self, expression: str):
        self.expression = expression
        self.tokens = _tokens(expression)
        self.i = 0

    def error(self, problem: str, token: _Token | None = None) -> FilterSyntaxError:
        at = token.position if token is not None else len(self.expression)
        return FilterSyntaxError(self.expression, at, problem)

    def peek(self) -> _Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def parse(self) -> Expr:
        if not self.tokens:
            raise self.error("an empty expression")
        expr = self.or_()
        extra = self.peek()
        if extra is not None:
            raise self.error(f"unexpected {extra.text or ')'!r}", extra)
        return expr

    def or_(self) -> Expr:
        parts = [self.and_()]
        while (t := self.peek()) is not None and t.kind == "op" and t.text == "OR":
            self.i += 1
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def and_(self) -> Expr:
        parts = [self.not_()]
        while (t := self.peek()) is not None and not (t.kind == "rparen" or (t.kind == "op" and t.text == "OR")):
            if t.kind == "op" and t.text == "AND":
                self.i += 1
            parts.append(self.not_())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def not_(self) -> Expr:
        t = self.peek()
        if t is not None and t.kind == "op" and t.text == "NOT":
            self.i += 1
            return Not(self.not_())
        return self.atom()

    def atom(self) -> Expr:
        t = self.peek()
        if t is None:
            raise self.error("the expression ends where a word, phrase or ( was expected")
        self.i += 1
        if t.kind == "op":
            raise self.error(f"{t.text} where a word, phrase or ( was expected", t)
        if t.kind == "rparen":
            raise self.error("')' without a matching '('", t)
        if t.kind == "lparen":
            inner = self.or_()
            close = self.peek()
            if close is None or close.kind != "rparen":
                raise self.error("'(' is never closed", t)
            self.i += 1
            return inner
        if t.kind == "field":
            return self.field(t)
        prefix = t.kind == "word" and t.text.endswith("*")
        words = tuple(fold_key(t.text.rstrip("*") if prefix else t.text).split())
        if not words:
            raise self.error(f"{t.text!r} holds no letter or digit to match", t)
        if prefix and len(words) > 1:
            raise self.error(f"{t.text!r}: a prefix is one word", t)
        return Term(words, prefix)

    def field(self, t: _Token) -> Expr:
        key, value = t.text, t.value
        if not value.strip():
            raise self.error(f"{key}: has no value", t)
        if key == "date":
            low, _, high = value.partition("..")
            try:
                for part in (low, high):
                    if part:
                        parse_partial_date(part)
            except ValueError as exc:
                raise self.error(f"date:{value}: {exc}", t) from None
            if not low and not high:
                raise self.error("date:..: name a date on at least one side", t)
        return FieldTerm(key, value)


def parse(expression: str) -> Expr:
    """The expression as a tree; FilterSyntaxError naming the character position when it is malformed."""
    return _Parser(expression).parse()


def field_keys(expr: Expr) -> Iterator[str]:
    """Every `key` of a `key:value` in the expression."""
    if isinstance(expr, FieldTerm):
        yield expr.key
    elif isinstance(expr, Not):
        yield from field_keys(expr.inner)
    elif isinstance(expr, And | Or):
        for part in expr.parts:
            yield from field_keys(part)


def matches(expr: Expr, document: Document) -> bool:
    """Whether one document satisfies the expression (its whole text and metadata)."""
    return expr.matches(DocumentView(document))


def matching_ids(expr: Expr, documents: Iterable[Document]) -> list[str]:
    """The ids of the documents that satisfy the expression, in the order given."""
    return [d.id for d in documents if matches(expr, d)]


def check_keys(expr: Expr, store: DocumentStore) -> None:
    """A `key:value` whose key is neither metadata nor a field any document has would silently match nothing:
    a TraceError naming it and the keys there are."""
    known = set(store.metadata_keys("fields"))
    unknown = [k for k in dict.fromkeys(field_keys(expr)) if k not in METADATA_KEYS and k not in known]
    if unknown:
        keys = ", ".join([*METADATA_KEYS, *sorted(known)])
        raise TraceError(f"filter: no document has the field {', '.join(map(repr, unknown))}; the keys are: {keys}")


def allow_list(expr: Expr, store: DocumentStore, base: Filter) -> Filter:
    """`base` narrowed to the documents that satisfy the expression (intersected with its own allow-list). One
    pass over the store: exact, and linear in the collection's text (all of HIPE-2022, 1,293 documents and 5.3M
    characters, in 1.1 s on 2 busy cores: ~5M characters/s)."""
    check_keys(expr, store)
    allowed: Sequence[str] = matching_ids(expr, store.iter_documents())
    if base.doc_ids:
        wanted = set(base.doc_ids)
        allowed = [d for d in allowed if d in wanted]
    return base.narrowed(doc_ids=tuple(allowed))
