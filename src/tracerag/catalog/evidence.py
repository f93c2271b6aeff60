"""A verdict on one condition for one record, with the span of the record's text that decides it.

A verdict is three-valued. `passed=True`: the text says the record meets the condition; `False`: the text says
it does not; `None`: the text says nothing (or nothing the checker can read). `None` is *unknown*, never a pass:
a "no ID required" request is met only by a text that says ID is not needed, a text that never mentions ID is
unknown. The assistant ranks records that pass above unknown ones, says which conditions are not stated, and
drops records that fail (`overall` combines several verdicts that way).

`span` is a character span in `record.text()` and `quote == record.text()[span[0]:span[1]]` always holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from tracerag.catalog.model import Semantic, ServiceRecord

__all__ = ["QUOTE_MAX", "Evidence", "Method", "field_spans", "overall", "quote_span"]

Method = Literal["rules", "llm"]
QUOTE_MAX = 280  # characters of a long sentence kept around the match


@dataclass(frozen=True, slots=True)
class Evidence:
    passed: bool | None  # None: the text says nothing (unknown, not a pass)
    reason: str
    span: tuple[int, int] | None = None  # in record.text()
    quote: str = ""  # record.text()[span[0]:span[1]] ("" when there is no span)
    method: Method = "rules"
    semantic: Semantic | None = None  # the condition checked


def overall(evidence: Iterable[Evidence]) -> bool | None:
    """Several verdicts as one: False if any fails, True if all pass (or there are none), else None (unknown)."""
    verdicts = [e.passed for e in evidence]
    if any(v is False for v in verdicts):
        return False
    return True if all(v is True for v in verdicts) else None


def field_spans(record: ServiceRecord, text: str) -> list[tuple[str, int, int]]:
    """Where each free-text field lies in `record.text()` (the same parts, in the same order)."""
    out, pos = [], 0
    for name in ("name", "description", "eligibility", "application_process", "fees"):
        value = getattr(record, name)
        if not value:
            continue
        at = text.find(value, pos)
        if at < 0:
            continue
        out.append((name, at, at + len(value)))
        pos = at + len(value)
    return out


def quote_span(text: str, sentence: tuple[int, int], match: tuple[int, int]) -> tuple[int, int]:
    """The sentence, or a window of it around the match when the sentence is long, on word boundaries."""
    start, end = sentence
    if end - start <= QUOTE_MAX:
        return start, end
    half = max(0, (QUOTE_MAX - (match[1] - match[0])) // 2)
    lo, hi = max(start, match[0] - half), min(end, match[1] + half)
    while lo > start and not text[lo - 1].isspace():
        lo += 1
        if lo >= match[0]:
            lo = match[0]
            break
    while hi < end and not text[hi].isspace():
        hi -= 1
        if hi <= match[1]:
            hi = match[1]
            break
    return lo, hi
