"""Paging within a conversation: "show me more" gives the next services, never one already shown.

A request made only of paging words ("show me more", "any others?", "next", the word list's `records.more` and
`records.more_words`) keeps the conversation's constraints as they are and asks for the next k services that
meet them. What has been shown is remembered per set of constraints (`ShownLog`): a turn with the same
constraints, whether a paging request or the same request again, skips every service shown for them (each skip
in the trail) and, when none is left, says that is all and how many were shown, never the same list again. A new
topic or place is a new set of constraints and starts a fresh list; coming back to an earlier one goes on where
it stopped.

When every service of the asked kinds has been shown, a paging request goes on with the related kinds
(`related_kinds`): the taxonomy's other terms whose names hold every word the kind was asked with ("counseling" →
"Spouse/Intimate Partner Abuse Counseling", "Alcohol Use Disorder Counseling"), as people asking "any others?" mean
more of the same need, not more of the same code. The reply says the exact matches are all shown; the related
services have a list of their own, seeded with those shown, so nothing is repeated; then it says that is all.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tracerag.catalog.gazetteer import GazetteerIndex
from tracerag.catalog.model import ConstraintKind, Constraints, Structural
from tracerag.catalog.sentences import say
from tracerag.catalog.words import RecordWords
from tracerag.text import fold_key

__all__ = [
    "ALREADY_SHOWN",
    "ShownLog",
    "constraints_key",
    "is_more_request",
    "related_kinds",
    "related_sentence",
    "that_is_all",
]

ALREADY_SHOWN = "already shown in this conversation for the same request"  # the trail's reason for a skip


def is_more_request(text: str, words: RecordWords) -> bool:
    """Whether a request only asks for more of the same ("show me more", "any others?", "Next")."""
    tokens = fold_key(text).split()
    return (
        bool(tokens)
        and any(t in words.more for t in tokens)
        and all(t in words.more or t in words.more_words for t in tokens)
    )


def constraints_key(c: Constraints) -> tuple:
    """What makes two turns the same request: every constraint's values, the conditions and the topic (folded)."""
    structural = tuple(sorted((str(s.kind), tuple(sorted(s.values))) for s in c.structural))
    semantic = tuple(sorted((fold_key(s.text), s.negated) for s in c.semantic))
    return structural, semantic, fold_key(c.topic)


@dataclass
class ShownLog:
    """The record ids shown so far in a conversation, in order, per set of constraints."""

    shown: dict[tuple, list[str]] = field(default_factory=dict)

    def of(self, c: Constraints) -> list[str]:
        return list(self.shown.get(constraints_key(c), []))

    def add(self, c: Constraints, ids: list[str]) -> None:
        seen = self.shown.setdefault(constraints_key(c), [])
        seen.extend(i for i in ids if i not in seen)

    def clear(self) -> None:
        self.shown.clear()


def that_is_all(shown: int, summary: str) -> str:
    """The reply when every service matching the request has been shown."""
    return say("that_is_all", summary=summary.strip() or say("your_request"), shown=shown)


def related_kinds(c: Constraints, idx: GazetteerIndex) -> Constraints | None:
    """`c` with its service types replaced by the related ones: the taxonomy's terms (target populations left
    out, as in `GazetteerIndex`) whose names hold every taxonomy word of what was asked, not already covered by an
    asked type (a type's filter covers the terms under it). None when `c` has no service type, or there are
    none: then the exact matches were all there is."""
    kinds = c.of(ConstraintKind.SERVICE_TYPE)
    if kinds is None:
        return None
    w = idx.words
    said = [t for t in fold_key(kinds.said).split() if t not in w.filler and t not in w.term_filler]
    asked = {w.lemma(t) for t in said} & idx.service_words
    if not asked:
        return None
    related = tuple(
        term_id
        for term_id, lemmas in idx.terms
        if asked <= lemmas and not any(term_id == v or term_id.startswith(f"{v}.") for v in kinds.values)
    )
    if not related:
        return None
    wider = Structural(ConstraintKind.SERVICE_TYPE, related, said=kinds.said)
    return replace(c, structural=[wider if s is kinds else s for s in c.structural])


def related_sentence(shown: int, summary: str) -> str:
    """What a page of related services says first (`related_kinds`)."""
    return say("related_kinds", summary=summary.strip() or say("your_request"), shown=shown)
