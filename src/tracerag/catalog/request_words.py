"""A request's words with their offsets, and which of them a matcher has already consumed.

Each matcher of `catalog.matchers` takes the words it recognises, so a word feeds one constraint only (the
"Ridge" of "Ridge-Valley County" is a county, not a city; the "60" of "over 60" is an age, not a time). What no
matcher took is the request's topic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tracerag.text import fold_key

__all__ = ["RequestWords", "Token", "said_together"]

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_CONNECTOR = re.compile(r"[\s,/&]*(?:\b(?:or|and|in|on)\b[\s,/&]*)*", re.I)


@dataclass(slots=True)
class Token:
    norm: str  # fold_key of the word
    raw: str
    start: int
    end: int


class RequestWords:
    """The request's words; `used` marks those a matcher consumed, `clause` those inside a relative clause."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = [Token(fold_key(m.group()), m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
        self.used = [False] * len(self.tokens)
        self.clause = [False] * len(self.tokens)

    def indices(self, start: int, end: int) -> list[int]:
        return [i for i, t in enumerate(self.tokens) if t.start < end and t.end > start]

    def free(self, start: int, end: int) -> bool:
        ids = self.indices(start, end)
        return bool(ids) and not any(self.used[i] for i in ids)

    def take(self, start: int, end: int) -> str:
        for i in self.indices(start, end):
            self.used[i] = True
        return self.text[start:end].strip()

    def take_tokens(self, i: int, j: int) -> str:
        for k in range(i, j):
            self.used[k] = True
        return self.text[self.tokens[i].start : self.tokens[j - 1].end]

    def prev_norm(self, i: int) -> str:
        return self.tokens[i - 1].norm if i > 0 else ""

    def matches(self, pattern: re.Pattern[str]) -> Iterable[re.Match[str]]:
        """Matches of `pattern` over words not consumed yet (the caller consumes what it keeps)."""
        for m in pattern.finditer(self.text):
            if m.end() > m.start() and self.free(m.start(), m.end()):
                yield m


def said_together(words: RequestWords, spans: Sequence[tuple[int, int]]) -> str:
    """The words as written: one stretch when only "or", "and" or commas separate the matches."""
    if not spans:
        return ""
    ordered = sorted(spans)
    groups = [[ordered[0]]]
    for span in ordered[1:]:
        gap = words.text[groups[-1][-1][1] : span[0]]
        if _CONNECTOR.fullmatch(gap):
            groups[-1].append(span)
        else:
            groups.append([span])
    return "; ".join(words.text[g[0][0] : g[-1][1]].strip() for g in groups)
