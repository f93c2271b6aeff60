"""The check pass of a cited draft: each citation's span located in its source, then judged to support its sentence.

Every citation gets a `CitationCheck`, and a failed one is flagged beside its sentence, never removed:

1. The citation must name one of the draft's sources (a source outside them is flagged whatever it says).
2. Its quote must be located in that source's text (`tracerag.text.locate_quote`, the locator every layer uses),
   at the span the draft records.
3. Then support: with a model, one call per citation (the sentence, the quote and the chunk around it; reasoning
   first, then true/false; an unusable answer leaves support unknown, flagged). Without a model, a lexical check:
   a quotation's quoted words must be in the span; a paraphrase or inference must share at least
   `LEXICAL_SUPPORT` of its content words (folded, stemmed) with the source's sentences the span lies in. It
   catches a citation pointing at an unrelated passage; it cannot tell a faithful paraphrase from a wrong one that
   reuses the words, and says which method judged.

A draft none of whose citations is both located and supported is then **withdrawn** (`withdraw`): it answers
nothing, saying why, and the draft stays in the trail as written, for the reader to see what was not given.
The local 1.5B model drafts an answer to questions no source answers ("La Joconde est peinte par Cézanne", citing a
paragraph on Cézanne), and its own check of the citation finds it unsupported; a draft whose every citation fails
is no cited answer. One supported citation keeps the draft, its failed ones flagged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tracerag.errors import LLMCallFailed
from tracerag.llm import StructuredLLM
from tracerag.research import prompts
from tracerag.research.answer import Draft, prose_sentences
from tracerag.research.evidence import content_stems
from tracerag.research.sources import SourceChunk
from tracerag.text import locate_quote
from tracerag.trail import Trail
from tracerag.trail.events import (
    CitationCheckEvent,
    DraftCitation,
    LLMCallEvent,
    LLMPurpose,
    SentenceKind,
    WithdrawalEvent,
)

LEXICAL_SUPPORT = 0.5  # sharing under half of its content words with the cited sentences: not their paraphrase
CONTEXT_CHARS = 600  # of the source around the span, shown to the checking model


class SupportAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reasoning: str = Field(description="Why, briefly.")
    supported: bool = Field(description="Whether the passage supports the sentence.")


@dataclass(frozen=True)
class CitationCheck:
    sentence: int  # index of the sentence in the draft
    citation: int  # index of the citation in its sentence
    label: str
    doc_id: str | None
    span: tuple[int, int] | None
    located: bool
    supported: bool | None  # None: could not be judged
    method: Literal["model", "lexical"]
    reason: str

    @property
    def flagged(self) -> bool:
        return not self.located or self.supported is not True


def check(draft: Draft, llm: StructuredLLM | None, trail: Trail) -> list[CitationCheck]:
    """Every citation of `draft` checked and emitted; an uncited sentence is flagged as one failed check."""
    by_label = draft.labels
    allowed = {s.doc_id for s in draft.sources}
    out = []
    for i, sentence in enumerate(draft.sentences):
        if not sentence.citations:
            out.append(
                CitationCheck(i, -1, "", None, None, False, None, "lexical" if llm is None else "model", "no citation")
            )
        for j, citation in enumerate(sentence.citations):
            source = by_label.get(citation.label)
            if source is None or citation.doc_id not in allowed or source.doc_id != citation.doc_id:
                result = _failed(i, j, citation, llm, f"{citation.label or '?'} is not one of the draft's sources")
            else:
                result = _checked(i, j, sentence.text, sentence.kind, citation, source, llm, trail)
            out.append(result)
    for result in out:
        trail.emit(
            CitationCheckEvent(
                sentence=result.sentence,
                doc_id=result.doc_id,
                span=result.span,
                located=result.located,
                supported=result.supported,
                method=result.method,
                reason=result.reason,
            )
        )
    return out


def withdraw(draft: Draft, checks: Sequence[CitationCheck], trail: Trail) -> str | None:
    """Why `draft` is withdrawn (emitted as a `WithdrawalEvent`), or None when it abstained or one of its citations
    holds up (located and supported)."""
    if draft.abstained or not draft.sentences or any(c.located and c.supported is True for c in checks):
        return None
    cited = [c for c in checks if c.citation >= 0]
    counts = (
        (sum(not c.located for c in cited), "not found in the source"),
        (sum(c.located and c.supported is False for c in cited), "unsupported"),
        (sum(c.located and c.supported is None for c in cited), "not judged"),
        (len(checks) - len(cited), "uncited sentences"),
    )
    found = ", ".join(f"{n} {what}" for n, what in counts if n)
    total = f"{len(cited)} citation" + ("" if len(cited) == 1 else "s")
    reason = f"none of the draft's {total} holds up under the check ({found})"
    trail.emit(WithdrawalEvent(reason=reason, sentences=len(draft.sentences)))
    return reason


def _failed(i: int, j: int, citation: DraftCitation, llm: StructuredLLM | None, reason: str) -> CitationCheck:
    method: Literal["model", "lexical"] = "lexical" if llm is None else "model"
    return CitationCheck(i, j, citation.label, citation.doc_id, citation.span, False, None, method, reason)


def _checked(
    i: int,
    j: int,
    text: str,
    kind: SentenceKind,
    citation: DraftCitation,
    source: SourceChunk,
    llm: StructuredLLM | None,
    trail: Trail,
) -> CitationCheck:
    span = locate_quote(citation.quote, source.text, source.start)
    if span is None or (citation.span is not None and tuple(citation.span) != span):
        return _failed(i, j, citation, llm, f"the quote is not in {source.doc_id}'s text at the cited place")
    passage = source.text[span[0] - source.start : span[1] - source.start]
    if llm is None:
        supported, reason = lexical_support(text, kind, passage, enclosing(source, span), source.language)
        return CitationCheck(i, j, citation.label, source.doc_id, span, True, supported, "lexical", reason)
    lo = max(0, span[0] - source.start - CONTEXT_CHARS // 2)
    context = source.text[lo : span[1] - source.start + CONTEXT_CHARS // 2]
    messages = prompts.support(text, passage, context)
    try:
        completion = llm.complete(messages, SupportAnswer)
    except LLMCallFailed as failed:
        trail.emit(LLMCallEvent.of(failed.completion, messages, LLMPurpose.CITE_CHECK))
        why = failed.completion.error or str(failed)
        return CitationCheck(i, j, citation.label, source.doc_id, span, True, None, "model", why)
    trail.emit(LLMCallEvent.of(completion, messages, LLMPurpose.CITE_CHECK))
    answer = completion.parsed
    if answer is None:
        why = completion.error or "no usable answer"
        return CitationCheck(i, j, citation.label, source.doc_id, span, True, None, "model", why)
    reason = " ".join(answer.reasoning.split())[:300]
    return CitationCheck(i, j, citation.label, source.doc_id, span, True, answer.supported, "model", reason)


_QUOTED = re.compile(r"[\"“«„‚‘]\s*(.+?)\s*[\"”»“’]")


def enclosing(source: SourceChunk, span: tuple[int, int]) -> str:
    """The source's sentences that the span lies in: what a short quote says is read in its sentence."""
    lo, hi = span[0] - source.start, span[1] - source.start
    pieces = [(a, b) for a, b in prose_sentences(source.text) if a < hi and b > lo]
    return source.text[min(a for a, _ in pieces) : max(b for _, b in pieces)] if pieces else source.text[lo:hi]


def lexical_support(sentence: str, kind: SentenceKind, passage: str, around: str, language: str) -> tuple[bool, str]:
    """Support judged on words alone: a quotation's quoted words must be in the cited passage; any sentence must
    share enough of its content words with the sentences around it (`around`)."""
    if kind is SentenceKind.QUOTATION:
        quoted = [q for q in _QUOTED.findall(sentence) if len(q) >= 3] or [sentence]
        missing = [q for q in quoted if locate_quote(q, passage) is None]
        if missing and not (quoted == [sentence] and _shares(sentence, passage, language) == 1.0):
            return False, f"quoted words not in the cited span: {missing[0][:80]!r}"
    share = _shares(sentence, around, language)
    if share < LEXICAL_SUPPORT:
        return False, f"shares {share:.0%} of its content words with the cited span (needs {LEXICAL_SUPPORT:.0%})"
    return True, f"shares {share:.0%} of its content words with the cited span"


def _shares(sentence: str, passage: str, language: str) -> float:
    words = content_stems(sentence, language or "en")
    if not words:
        return 0.0
    return len(words & content_stems(passage, language or "en")) / len(words)


def flagged(checks: Sequence[CitationCheck]) -> list[CitationCheck]:
    return [c for c in checks if c.flagged]
