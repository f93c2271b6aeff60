"""A draft sentence's support verdict, from its citation checks: the one definition `tracerag answer --explain`
and the web app's draft both show, so the same run reads the same in a terminal and in a browser.

Each citation check (research/citecheck.py) ends in one outcome: it **supports** the sentence (located, and the
model or the lexical check said so), it **does not support** it (not one of the draft's sources, its quote not
found at the cited place, or judged not to support it), or it is **not checked** (located, but no verdict: the
model's answer was unusable). A sentence's verdict is then:

- `supported`: every citation supports it;
- `partly supported`: some do, not all;
- `unsupported`: none does and at least one does not (a sentence without a citation is unsupported);
- `not checked`: no citation has a verdict either way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from tracerag.research.citecheck import CitationCheck
from tracerag.trail.events import CitationCheckEvent, DraftCitation, DraftEvent, DraftSentence, Event


class Verdict(StrEnum):
    SUPPORTED = "supported"
    PARTLY = "partly supported"
    UNSUPPORTED = "unsupported"
    NOT_CHECKED = "not checked"


class Outcome(StrEnum):
    SUPPORTS = "supports"
    DOES_NOT = "does not support"
    NOT_CHECKED = "not checked"


VERDICT_MEANING = {
    Verdict.SUPPORTED: "every citation supports the sentence",
    Verdict.PARTLY: "some citations support it, not all",
    Verdict.UNSUPPORTED: "no citation supports it",
    Verdict.NOT_CHECKED: "no citation could be judged",
}


@dataclass(frozen=True)
class CitationSupport:
    label: str
    doc_id: str | None
    span: tuple[int, int] | None
    quote: str
    outcome: Outcome
    method: str  # model or lexical
    reason: str


@dataclass(frozen=True)
class SentenceSupport:
    index: int
    text: str
    kind: str
    citations: list[CitationSupport]
    verdict: Verdict
    reason: str  # why the verdict, in one line: how many citations support it, or that none is given


def outcome(check: CitationCheck | None) -> Outcome:
    if check is None or (check.located and check.supported is None):
        return Outcome.NOT_CHECKED
    return Outcome.SUPPORTS if check.located and check.supported else Outcome.DOES_NOT


def sentence_support(sentences: Sequence[DraftSentence], checks: Sequence[CitationCheck]) -> list[SentenceSupport]:
    """Each sentence of a draft with its citations' outcomes and its verdict (see the module docstring)."""
    by_place = {(c.sentence, c.citation): c for c in checks}
    out = []
    for i, sentence in enumerate(sentences):
        cited = []
        for j, citation in enumerate(sentence.citations):
            found = by_place.get((i, j))
            cited.append(
                CitationSupport(
                    label=citation.label,
                    doc_id=citation.doc_id,
                    span=citation.span,
                    quote=citation.quote,
                    outcome=outcome(found),
                    method=found.method if found else "",
                    reason=found.reason if found else "no check recorded",
                )
            )
        verdict, reason = _verdict([c.outcome for c in cited])
        out.append(SentenceSupport(i, sentence.text, str(sentence.kind), cited, verdict, reason))
    return out


def _verdict(outcomes: list[Outcome]) -> tuple[Verdict, str]:
    if not outcomes:
        return Verdict.UNSUPPORTED, "no citation"
    n, supports = len(outcomes), outcomes.count(Outcome.SUPPORTS)
    of = f"{supports} of {n} citations support it"
    if supports == n:
        return Verdict.SUPPORTED, "its citation supports it" if n == 1 else f"all {n} citations support it"
    if supports:
        return Verdict.PARTLY, of
    if Outcome.DOES_NOT in outcomes:
        return Verdict.UNSUPPORTED, "its citation does not support it" if n == 1 else of
    return Verdict.NOT_CHECKED, "no verdict on its citation" if n == 1 else f"no verdict on its {n} citations"


def totals(supports: Sequence[SentenceSupport]) -> dict[Verdict, int]:
    """How many sentences got each verdict, every verdict named (0 where none did)."""
    counted = Counter(s.verdict for s in supports)
    return {v: counted.get(v, 0) for v in Verdict}


def from_events(events: Sequence[Event]) -> list[SentenceSupport]:
    """The verdicts of a recorded answer run (its `draft` event and `cite_check` events, in the order
    `citecheck.check` emits them: per sentence, its citations in order, or one failed check for a sentence
    without citation)."""
    drafted = [e for e in events if isinstance(e, DraftEvent)]
    if not drafted:
        return []
    sentences = drafted[-1].sentences
    checks: list[CitationCheck] = []
    seen: Counter[int] = Counter()
    for e in events:
        if not isinstance(e, CitationCheckEvent) or e.sentence >= len(sentences):
            continue
        cited: list[DraftCitation] = sentences[e.sentence].citations
        j = seen[e.sentence] if cited else -1
        seen[e.sentence] += 1
        label = cited[j].label if 0 <= j < len(cited) else ""
        checks.append(CitationCheck(e.sentence, j, label, e.doc_id, e.span, e.located, e.supported, e.method, e.reason))
    return sentence_support(sentences, checks)
