"""A cited draft from accepted sources only, or an explicit abstention; labelled an interpretive draft to check.

The drafter is shown the accepted sources (the researcher's selection, or what the agent accepted) under labels
S1, S2… and nothing else. Its answer (`DraftAnswer`) is a list of sentences, each of a kind (quotation,
paraphrase, inference: shown apart, so that a reader sees what is the source's and what is the drafter's) with
citations (a label and a quote copied from that source). Every quote is located in its source's text with
`tracerag.text.locate_quote`, so a citation is a document id and exact character offsets; a label outside the
sources, or a quote not found, stays in the draft as an unlocated citation for the check to flag: nothing is
hidden. The model may abstain, saying what is missing; with no sources there is nothing to draft from and the
drafter abstains without a call.

Without a model the draft is extractive: per source, the sentence sharing most of the question's words, quoted
(kind quotation); when no source sentence shares enough of them, it abstains. It is in the sources' words, not
written in the question's language, and says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tracerag.errors import LLMCallFailed
from tracerag.ingest.language import LanguageDetector
from tracerag.llm import StructuredLLM
from tracerag.research import prompts
from tracerag.research.evidence import content_stems, evidence, why
from tracerag.research.sources import SourceChunk
from tracerag.text import locate_quote, sentence_spans
from tracerag.trail import Trail
from tracerag.trail.events import (
    DraftCitation,
    DraftEvent,
    DraftSentence,
    EvidenceCheck,
    LLMCallEvent,
    LLMPurpose,
    SentenceKind,
)

DRAFT_LABEL = "Interpretive draft: check every citation against its source before relying on it."
EXCERPT_CHARS = 2000  # of each source, shown to the drafter
EXTRACTIVE_SHARE = 0.5  # the extractive draft quotes a sentence holding at least half of the question's words


class CitedQuote(BaseModel):
    model_config = ConfigDict(extra="ignore")

    source: str = Field(description="The id of the cited source: S1, S2...")
    quote: str = Field(description="Words copied exactly from that source's text.")


class DraftSentenceAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str
    kind: Literal["quotation", "paraphrase", "inference"]
    citations: list[CitedQuote] = Field(description="At least one: each source id with a quote from it.")


class DraftAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    abstain: bool = Field(description="True when the sources do not answer the question.")
    abstention: str = Field(default="", description="When abstaining: what the sources lack.")
    sentences: list[DraftSentenceAnswer] = Field(default_factory=list)


@dataclass(frozen=True)
class Draft:
    question: str
    language: str
    sources: list[SourceChunk]
    abstained: bool
    abstention: str
    sentences: list[DraftSentence]
    method: Literal["model", "extractive", "none"]
    failure: str | None = None
    label: str = DRAFT_LABEL
    labels: dict[str, SourceChunk] = field(default_factory=dict)  # S1 → its source, as the drafter saw them
    evidence: EvidenceCheck | None = None  # what the check before a model's draft found (research/evidence.py)


def question_language(question: str, sources: Sequence[SourceChunk]) -> str:
    """The question's language as the detector reads it; a question too short to tell is taken to be in the
    language most of its sources are in (the researcher writes to the collection)."""
    found = LanguageDetector().detect(question) if len(question.split()) >= 4 else None
    if found:
        return found
    languages = [s.language for s in sources if s.language]
    return max(set(languages), key=languages.count) if languages else "en"


def labelled(sources: Sequence[SourceChunk]) -> dict[str, SourceChunk]:
    return {f"S{i}": s for i, s in enumerate(sources, start=1)}


def draft(
    question: str,
    sources: Sequence[SourceChunk],
    llm: StructuredLLM | None,
    trail: Trail,
    *,
    evidence_share: float | None,
    language: str | None = None,
) -> Draft:
    """A cited draft of `question` from `sources` only, emitted as a `DraftEvent` (its model call before it).
    Before a model is called, some source must hold `evidence_share` of the question's words (research/evidence.py),
    else the draft abstains, saying which words they lack; None: no check (sources a person accepted)."""
    sources = list(sources)
    language = language or question_language(question, sources)
    labels = labelled(sources)
    if not sources:
        result = Draft(question, language, sources, True, "no accepted sources to draft from", [], "none")
    elif llm is None:
        result = _extractive(question, language, labels)
    elif evidence_share is None:
        result = _written(question, language, labels, llm, trail)
    else:
        found = evidence(question, language, sources, share=evidence_share, shown=EXCERPT_CHARS)
        if found.passed:
            result = _written(question, language, labels, llm, trail)
        else:
            result = Draft(question, language, sources, True, why(found), [], "model", labels=labels)
        result = replace(result, evidence=found)
    trail.emit(
        DraftEvent(
            question=question,
            language=language,
            sources=[(s.doc_id, s.chunk_id) for s in sources],
            abstained=result.abstained,
            abstention=result.abstention,
            sentences=result.sentences,
            failure=result.failure,
            evidence=result.evidence,
        )
    )
    return result


def _written(question: str, language: str, labels: dict[str, SourceChunk], llm: StructuredLLM, trail: Trail) -> Draft:
    shown = []
    for label, s in labels.items():
        item = {"id": label, "text": s.text[:EXCERPT_CHARS]}
        if s.title:
            item["title"] = s.title
        if s.date:
            item["date"] = s.date
        shown.append(item)
    messages = prompts.draft(question, language, shown)
    sources = list(labels.values())
    try:
        completion = llm.complete(messages, DraftAnswer)
    except LLMCallFailed as failed:
        trail.emit(LLMCallEvent.of(failed.completion, messages, LLMPurpose.DRAFT))
        why = failed.completion.error or str(failed)
        return Draft(question, language, sources, True, "the model gave no draft", [], "model", why, labels=labels)
    trail.emit(LLMCallEvent.of(completion, messages, LLMPurpose.DRAFT))
    answer = completion.parsed
    if answer is None:  # an unusable answer is an abstention with its failure, never a made-up draft
        return Draft(
            question, language, sources, True, "the model gave no usable draft", [], "model", completion.error,
            labels=labels,
        )  # fmt: skip
    sentences = [
        DraftSentence(
            text=" ".join(s.text.split()),
            kind=SentenceKind(s.kind),
            citations=[cite(c.source, c.quote, labels) for c in s.citations],
        )
        for s in answer.sentences
        if s.text.strip()
    ]
    abstained = answer.abstain or not sentences
    abstention = answer.abstention.strip() or ("the model wrote no sentence" if not sentences else "")
    if abstained:  # an abstention carries no claims; any sentences it came with are dropped, and the fact recorded
        n = len(sentences)
        said = f"{n} sentence" if n == 1 else f"{n} sentences"
        failure = f"the model abstained yet wrote {said}: dropped, since an abstention makes no claims" if n else None
        return Draft(question, language, sources, True, abstention, [], "model", failure, labels=labels)
    return Draft(question, language, sources, False, "", sentences, "model", labels=labels)


def cite(label: str, quote: str, labels: dict[str, SourceChunk]) -> DraftCitation:
    """A citation as the drafter gave it, located: the quote's span in its source's document, or None when the
    label names no source or the quote is not in that source's text."""
    label = label.strip()
    source = labels.get(label)
    if source is None:
        return DraftCitation(doc_id=None, label=label, quote=quote, span=None)
    span = locate_quote(quote, source.text, source.start)
    return DraftCitation(doc_id=source.doc_id, label=label, quote=quote, span=span)


_LINE_BREAK = re.compile(r"(?<!\n)\n(?!\n)")
_LOWER_START = re.compile(r"([.!?]\s+)(\w)")


def prose_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans of OCR'd text, whose line breaks are the page's, not the sentences': a single line break
    is read as a space (same length, so the offsets stay exact), a blank line still ends a sentence. A text with
    no capital letter at all (an abstract set in lower case) has none to start its sentences: there, the letter
    after a full stop is read as one (same length again), else its sentences run together into whole chunks."""
    read = _LINE_BREAK.sub(" ", text)
    if not any(ch.isupper() for ch in read):
        read = _LOWER_START.sub(lambda m: m.group(1) + _capital(m.group(2)), read)
    return sentence_spans(read)


def _capital(letter: str) -> str:
    """The letter's capital where it is one character ("ß" gives "SS": kept as it is, so that offsets hold)."""
    upper = letter.upper()
    return upper if len(upper) == 1 else letter


def _extractive(question: str, language: str, labels: dict[str, SourceChunk]) -> Draft:
    wanted = content_stems(question, language)
    need = max(1, math.ceil(EXTRACTIVE_SHARE * len(wanted)))
    sentences = []
    for label, source in labels.items():
        lang = source.language or language
        best: tuple[int, tuple[int, int]] | None = None
        for start, end in prose_sentences(source.text):
            shared = len(wanted & content_stems(source.text[start:end], lang))
            if shared >= need and (best is None or shared > best[0]):
                best = (shared, (start, end))
        if best is None:
            continue
        start, end = best[1]
        quote = source.text[start:end]
        span = (source.start + start, source.start + end)
        citation = DraftCitation(doc_id=source.doc_id, label=label, quote=quote, span=span)
        sentences.append(DraftSentence(text=" ".join(quote.split()), kind=SentenceKind.QUOTATION, citations=[citation]))
    sources = list(labels.values())
    if not sentences:
        why = "no source has a sentence holding enough of the question's words (extractive, no model)"
        return Draft(question, language, sources, True, why, [], "extractive", labels=labels)
    return Draft(question, language, sources, False, "", sentences, "extractive", labels=labels)
