"""The verdict stage: chunks put before the model, one verdict each, every verdict checked against the text.

One stage does what review and re-evaluation both need, so that they cannot drift apart (the researcher's criteria
judge, `research/judge.py`, judges one candidate per call and so is not this stage): each candidate chunk is shown
under a label (D1, D2… / H1, H2…) as fenced JSON (`prompts.fence`), the model answers once, and for each candidate

- the first verdict given for its label counts; none is a `hold`, with the failure recorded (the model's error,
  or "gave no verdict"): nothing becomes a verdict by default;
- its quote is located in the chunk (`tracerag.text.locate_quote`), so the evidence is an exact character span of
  the document;
- an `accept` that quotes nothing found in the document, or quotes a whole excerpt, is held instead (`verify_accept`)
  with the reason in the trail;
- the verdict goes into the ledger and the trail.

`Review` (a batch of the loop's queue, against the original question, with the sub-question and its memory) and
`Reevaluation` (a sub-question's held chunks, with the accepted sources as context) are the stage with their own
prompt and event.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel

from tracerag.agent import prompts
from tracerag.agent.context import RunContext
from tracerag.agent.schemas import ReevalAnswer, ReviewAnswer
from tracerag.agent.state import Judgement
from tracerag.llm import Message
from tracerag.model import Document, Verdict
from tracerag.text import locate_quote
from tracerag.trail.events import LLMPurpose, ReevalEvent, TrailEvent, VerdictEvent

MAX_QUOTE_CHARS = 300  # longer is not a passage quoted as evidence but an excerpt copied back
NO_VERDICT = "the model gave no verdict for this document"
UNANSWERED_REASON = "no usable verdict: held"


@dataclass(frozen=True)
class Candidate:
    """A chunk to judge: where it is, its text, what the model is shown of it besides its label, and the verdict
    it stands under now (re-evaluation: its hold, whose reason stands when the model says nothing new)."""

    doc_id: str
    chunk_id: str
    text: str  # the chunk's original text
    start: int  # its offset in the document's text
    shown: Mapping[str, Any]
    standing: Judgement | None = None


@dataclass(frozen=True)
class ChunkVerdict:
    """A candidate's verdict as it stands after the checks: `failure` says why the model's verdict could not stand
    (an accept without evidence) or why there was none (the chunk is then held)."""

    doc_id: str
    chunk_id: str
    verdict: Verdict
    reason: str
    span: tuple[int, int] | None
    failure: str | None


@dataclass(frozen=True)
class VerdictBatch:
    verdicts: list[ChunkVerdict]
    answer: BaseModel | None  # the parsed answer, None when unusable (the review's memory update is in it)


class _GivenVerdict(Protocol):
    id: str
    verdict: str
    reason: str
    quote: str


def verify_accept(verdict: str, quote: str, span: tuple[int, int] | None) -> str | None:
    """Why an `accept` cannot stand, or None. An accepted source must quote its evidence: a short passage found
    in the document. A quote the model did not copy, or one that is the whole excerpt, is no evidence, and the
    chunk is held instead (re-evaluation gets another look) with the reason in the trail."""
    if verdict != Verdict.ACCEPT:
        return None
    if span is None:
        return "accept without a quote found in the document: held"
    if len(quote) > MAX_QUOTE_CHARS:
        return f"accept quoting {len(quote)} characters, not a passage: held"
    return None


def excerpt(text: str, limit: int) -> str:
    """A chunk as the model is shown it: whitespace runs as one space, cut at `limit` characters."""
    return " ".join(text.split())[:limit]


class VerdictStage:
    """Judge candidates in one model call; every candidate gets a checked verdict, recorded and emitted."""

    purpose: ClassVar[LLMPurpose]
    answer: ClassVar[type[BaseModel]]  # an answer with `verdicts`: id, verdict, reason, quote
    label: ClassVar[str]  # candidates are shown as label + 1-based position

    def __init__(self, ctx: RunContext, sq: int):
        self.ctx = ctx
        self.sq = sq

    def run(self, candidates: Sequence[Candidate]) -> VerdictBatch:
        labelled = {f"{self.label}{i}": c for i, c in enumerate(candidates, start=1)}
        shown = [{"id": label, **c.shown} for label, c in labelled.items()]
        completion = self.ctx.call(self.purpose, self.messages(shown), self.answer, sq=self.sq)
        given: dict[str, _GivenVerdict] = {}
        for v in getattr(completion.parsed, "verdicts", []):
            given.setdefault(v.id.strip(), v)
        verdicts = []
        for label, candidate in labelled.items():
            v = given.get(label)
            if v is None:
                verdict = self._unanswered(candidate, completion.error or NO_VERDICT)
            else:
                verdict = self._checked(candidate, v)
            self.ctx.ledger.record(
                Judgement(
                    verdict.doc_id,
                    verdict.chunk_id,
                    verdict.verdict,
                    verdict.reason,
                    self.sq,
                    verdict.span,
                    self.promotes(verdict),
                )
            )
            self.ctx.trail.emit(self.event(verdict))
            verdicts.append(verdict)
        return VerdictBatch(verdicts, completion.parsed)

    # -- what each use of the stage says for itself -------------------------------------------------------------

    def messages(self, shown: list[dict[str, Any]]) -> list[Message]:
        raise NotImplementedError

    def event(self, verdict: ChunkVerdict) -> TrailEvent:
        raise NotImplementedError

    def promotes(self, verdict: ChunkVerdict) -> bool:
        """Whether this verdict promotes a held chunk (re-evaluation's accepts do)."""
        return False

    # -- the checks ---------------------------------------------------------------------------------------------

    def _reason(self, reason: str) -> str:
        return " ".join(reason.split())[: self.ctx.settings.reason_chars]

    def _unanswered(self, candidate: Candidate, failure: str) -> ChunkVerdict:
        reason = candidate.standing.reason if candidate.standing is not None else UNANSWERED_REASON
        return ChunkVerdict(candidate.doc_id, candidate.chunk_id, Verdict.HOLD, self._reason(reason), None, failure)

    def _checked(self, candidate: Candidate, given: _GivenVerdict) -> ChunkVerdict:
        span = locate_quote(given.quote, candidate.text, candidate.start) if given.quote else None
        refused = verify_accept(given.verdict, given.quote, span)
        verdict = Verdict.HOLD if refused else Verdict(given.verdict)
        return ChunkVerdict(candidate.doc_id, candidate.chunk_id, verdict, self._reason(given.reason), span, refused)


class Review(VerdictStage):
    """A batch of the loop's queue judged against the ORIGINAL question, with the sub-question and its memory."""

    purpose = LLMPurpose.REVIEW
    answer = ReviewAnswer
    label = "D"

    def __init__(self, ctx: RunContext, sq: int, step: int, sub_question: str, memory: str):
        super().__init__(ctx, sq)
        self.step = step
        self.sub_question = sub_question
        self.memory = memory

    def messages(self, shown: list[dict[str, Any]]) -> list[Message]:
        return prompts.review(self.ctx.question, self.sub_question, self.memory, shown)

    def event(self, verdict: ChunkVerdict) -> TrailEvent:
        return VerdictEvent(
            sq=self.sq,
            step=self.step,
            doc_id=verdict.doc_id,
            chunk_id=verdict.chunk_id,
            verdict=verdict.verdict,
            reason=verdict.reason,
            span=verdict.span,
            failure=verdict.failure,
        )

    @staticmethod
    def candidates(ctx: RunContext, chunks: Sequence[tuple[str, str]]) -> list[Candidate]:
        """(doc_id, chunk_id) pairs as review candidates: the excerpt with its document's title, date, corpus."""
        docs = ctx.documents([d for d, _ in chunks])
        out = []
        for doc_id, chunk_id in chunks:
            text, start = ctx.chunk_text(chunk_id)
            shown = _shown(docs.get(doc_id), text, ctx.settings.excerpt_chars)
            out.append(Candidate(doc_id, chunk_id, text, start, shown))
        return out


class Reevaluation(VerdictStage):
    """A sub-question's held chunks judged once more, with the accepted sources and their reasons as context."""

    purpose = LLMPurpose.REEVAL
    answer = ReevalAnswer
    label = "H"

    def __init__(self, ctx: RunContext, sq: int, accepted: Sequence[str]):
        super().__init__(ctx, sq)
        self.accepted = list(accepted)

    def messages(self, shown: list[dict[str, Any]]) -> list[Message]:
        return prompts.reevaluate(self.ctx.question, self.accepted, shown)

    def event(self, verdict: ChunkVerdict) -> TrailEvent:
        return ReevalEvent(
            sq=self.sq,
            doc_id=verdict.doc_id,
            chunk_id=verdict.chunk_id,
            verdict=verdict.verdict,
            reason=verdict.reason,
            promoted_from_hold=self.promotes(verdict),
            span=verdict.span,
            failure=verdict.failure,
        )

    def promotes(self, verdict: ChunkVerdict) -> bool:
        return verdict.verdict is Verdict.ACCEPT

    @staticmethod
    def candidates(ctx: RunContext, held: Sequence[Judgement]) -> list[Candidate]:
        """Held judgements as candidates: the excerpt, why it was held, its document's date."""
        docs = ctx.documents([j.doc_id for j in held])
        out = []
        for j in held:
            text, start = ctx.chunk_text(j.chunk_id)
            shown: dict[str, Any] = {"held_because": j.reason, "text": excerpt(text, ctx.settings.excerpt_chars)}
            doc = docs.get(j.doc_id)
            if doc is not None and doc.date:
                shown["date"] = doc.date
            out.append(Candidate(j.doc_id, j.chunk_id, text, start, shown, standing=j))
        return out


def reevaluate(ctx: RunContext, sq: int) -> int:
    """Held chunks of sub-question `sq` judged again with the accepted documents and their reasons as context.
    Returns how many were promoted to accept. A missing or unusable answer leaves a chunk held, recorded."""
    held = ctx.ledger.held(sq)
    if not held:
        return 0
    stage = Reevaluation(ctx, sq, accepted_context(ctx))
    batch = stage.run(Reevaluation.candidates(ctx, held))
    return sum(stage.promotes(v) for v in batch.verdicts)


def accepted_context(ctx: RunContext) -> list[str]:
    """Every accepted document with the reason of the first sub-question that accepted it: `doc: reason`."""
    accepted_by = ctx.ledger.accepted_by
    return [f"{d}: {accepted_by[d][min(accepted_by[d])].reason}" for d in ctx.ledger.accepted()]


def _shown(doc: Document | None, text: str, limit: int) -> dict[str, Any]:
    item: dict[str, Any] = {}
    if doc is not None:
        if doc.title:
            item["title"] = doc.title
        if doc.date:
            item["date"] = doc.date
        item["corpus"] = doc.corpus
    item["text"] = excerpt(text, limit)
    return item
