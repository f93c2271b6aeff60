"""The criteria judge and the cited draft over HTTP, on the library functions `tracerag judge` and `tracerag
answer` call (research/judge.py, research/answer_run.py).

- `POST /api/collections/{name}/judge` starts a job (a real model takes seconds to minutes a candidate): one
  progress event per candidate judged (score, or the failure), and as result every judgment and the judge run's id.
  A failure stays a failure: no score, its reason, never a default.
- `POST /api/collections/{name}/answer` drafts from the ACCEPTED sources only (a selection's, or what the agent
  accepted in a run) and checks every citation; with no model configured the draft is extractive and checked
  lexically, as the CLI does. It answers when the draft and its check are done.

Everything that can be refused is refused before a job starts (no model, criteria that do not parse, an unknown
run), so a request that cannot run is a 4xx, not a failed job.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from tracerag.collection import Collection
from tracerag.errors import ConfigError
from tracerag.options import JudgeOptions
from tracerag.research.answer_run import answer_run, answer_sources
from tracerag.research.criteria import from_text, parse_toml
from tracerag.research.diagnostics import retrieval_vs_judge
from tracerag.research.judge import JudgeCache, Judgment, judge_run, judge_sources
from tracerag.research.sources import run_question
from tracerag.research.support import sentence_support, totals
from tracerag.server.api.selections import board_of, document_url, run_events, selections
from tracerag.server.deps import CollectionName, State
from tracerag.server.jobs import Job
from tracerag.server.schemas import ERRORS, JobInfo
from tracerag.server.state import ServerState
from tracerag.trail.events import Event, JudgmentEvent

router = APIRouter(tags=["research"], responses=ERRORS)

# -- judge ---------------------------------------------------------------------------------------------------------


class JudgeIn(JudgeOptions):
    """What to judge and against which criteria (the options of `tracerag judge`; the criteria as text)."""


class JudgmentOut(BaseModel):
    rank: int | None
    doc_id: str
    chunk_id: str
    score: int | None = Field(description="0-10; None when the judgment failed.")
    reasoning: str
    failure: str | None = Field(description="Why there is no score (an unusable answer, no answer).")
    cached: bool = Field(description="Answered from the cache: no model call.")
    model: str


class JudgeResult(BaseModel):
    """A judge job's result."""

    run_id: str = Field(description="The judge run (its trail; review it with its candidates).")
    question: str
    source: str = Field(description="The run judged, or selection:QUESTION.")
    model: str
    calls: int = Field(description="Model calls made (cache hits make none).")
    judgments: list[JudgmentOut]
    failures: int
    skipped: list[str] = Field(description="Documents the run names that the collection no longer holds.")
    spearman: float | None = Field(description="Spearman rho, retrieval rank vs judge score (None: too few).")
    pairs: int = Field(description="Scored candidates the correlation is over.")


def _judgment(j: Judgment) -> JudgmentOut:
    return JudgmentOut(
        rank=j.rank, doc_id=j.doc_id, chunk_id=j.chunk_id, score=j.score, reasoning=j.reasoning, failure=j.failure,
        cached=j.cached, model=j.model,
    )  # fmt: skip


def _question_of(state: ServerState, name: str, selection: str) -> str:
    """The question a selection id (or question, or its beginning) names."""
    with selections(state, name) as store:
        return board_of(state, name, store, selection, None, None).question


@router.post(
    "/collections/{name}/judge",
    summary="Score a run's candidates against criteria",
    response_model=JobInfo,
    status_code=202,
)
def judge(name: CollectionName, body: JudgeIn, state: State) -> JobInfo:
    """Score each candidate 0-10 against the criteria, one model call each (cached by criteria, chunk and model),
    as a job of kind `judge`: a `judged` event per candidate (done, total, score or failure, per minute), then the
    result (`JudgeResult`)."""
    if (body.from_run is None) == (body.selection is None):
        raise ConfigError("give one of from_run or selection")
    toml = body.criteria_format == "toml"
    criteria = parse_toml(body.criteria, "criteria") if toml else from_text(body.criteria, "criteria")
    model = state.model()
    if model is None:
        raise ConfigError("the judge needs a model: start the server with --llm (openai:MODEL, local or replay:DIR)")
    run: tuple[str, list[Event]] | None = None
    if body.from_run is not None:
        run = (body.from_run, run_events(state, name, body.from_run))
    question = _question_of(state, name, body.selection) if body.selection is not None else None
    with state.reading(name) as col:
        found = judge_sources(col, state.settings, run=run, selection=question, k=body.k)
        cache = None if body.no_cache else JudgeCache.for_collection(col, state.settings)
        # what the job needs of the collection: its folder and trails folder (judge_run reads no store)
        col_path, settings = col.path, state.settings

    def work(job: Job) -> dict[str, Any]:
        judged: list[JudgmentEvent] = []

        def listen(event: Any) -> None:
            if isinstance(event, JudgmentEvent):
                judged.append(event)

        def progress(done: int, total: int, seconds: float) -> None:
            last = judged[-1] if judged else None
            job.emit(
                "judged", done=done, total=total, per_minute=round(done / seconds * 60, 2) if seconds else None,
                doc_id=last.doc_id if last else None, score=last.score if last else None,
                failure=last.failure if last else None, cached=last.cached if last else None,
            )  # fmt: skip

        job.emit("started", total=len(found.candidates), model=model.model, skipped=found.missing)
        with Collection.open(col_path, settings, mode="read", notify=lambda _m: None) as own:
            done = judge_run(
                own, settings, model, criteria, found.candidates, question=criteria.question or found.question,
                source_run=found.source, cache=cache, listeners=[listen], progress=progress,
            )  # fmt: skip
        correlation = retrieval_vs_judge(done.judgments)
        return JudgeResult(
            run_id=done.run_id, question=criteria.question or found.question, source=found.source, model=model.model,
            calls=done.calls, judgments=[_judgment(j) for j in done.judgments], failures=len(done.failures),
            skipped=found.missing, spearman=correlation.rho, pairs=correlation.n,
        ).model_dump(mode="json")  # fmt: skip

    return JobInfo(**state.jobs.start("judge", work, collection=name).summary())


# -- answer --------------------------------------------------------------------------------------------------------


class AnswerIn(BaseModel):
    selection: str | None = Field(
        None, max_length=1000, description="A selection (id or question): draft from its accepted sources."
    )
    from_run: str | None = Field(None, max_length=200, description="Or an ask run: draft from what the agent accepted.")
    question: str | None = Field(
        None, max_length=2000, description="The question the draft answers (default: the selection's or run's)."
    )
    language: str | None = Field(None, max_length=20, description="The draft's language (default: the question's).")


class CheckOut(BaseModel):
    located: bool = Field(description="The quote was found in its source at the recorded span.")
    supported: bool | None = Field(description="Whether the span supports the sentence (None: could not judge).")
    method: str = Field(description="model or lexical.")
    reason: str = Field(description="Why the citation is (not) supported, in the checker's words.")
    flagged: bool = Field(description="The check could not confirm the citation: read it against its source.")
    outcome: str = Field(
        description="supports, does not support (not a source of the draft, not found at the cited place, or "
        "judged not to) or not checked (located, but no verdict): research/support.py, as `tracerag answer --explain`."
    )


class CitationOut(BaseModel):
    label: str = Field(description="S1, S2...: the source as the drafter saw it.")
    doc_id: str | None = Field(description="The cited document (None: the label named no accepted source).")
    quote: str = Field(description="The cited words, as the drafter quoted them.")
    span: tuple[int, int] | None = Field(description="The quote's character span in the document, if located.")
    document_url: str | None = Field(description="The document view with the span highlighted.")
    check: CheckOut | None = Field(description="The citation check (None: not checked).")


class SentenceOut(BaseModel):
    text: str = Field(description="The sentence.")
    kind: str = Field(description="quotation, paraphrase or inference.")
    citations: list[CitationOut] = Field(description="The sources it cites.")
    flags: list[str] = Field(description="Sentence-level check failures (a sentence without a citation).")
    verdict: str = Field(
        description="Its support: supported (every citation supports it), partly supported (some do, not all), "
        "unsupported (none does, or no citation) or not checked (no citation could be judged); the verdict "
        "`tracerag answer --explain` prints, from the same function (research/support.py)."
    )
    verdict_reason: str = Field(description="Why the verdict: how many of its citations support it.")


class SourceOut(BaseModel):
    label: str = Field(description="S1, S2...: how the draft cites it.")
    doc_id: str = Field(description="The document's id in the collection.")
    chunk_id: str = Field(description="The accepted chunk.")
    title: str = Field(description="The document's title, else its first words, else its id (`title_source`).")
    title_source: str = Field(description="document, text or doc_id.")
    date: str = Field(description="The document's date (ISO 8601, may be partial); '' when undated.")
    language: str = Field(description="The document's language (ISO 639-1), '' when unknown.")
    document_url: str = Field(description="The document view, the accepted span highlighted.")


class AnswerOut(BaseModel):
    run_id: str = Field(description="The answer run (its trail).")
    label: str = Field(description="What the draft is: an interpretive draft to check.")
    question: str = Field(description="The question the draft answers.")
    language: str = Field(description="The draft's language (ISO 639-1).")
    method: str = Field(description="model, extractive (no model) or none (no sources).")
    abstained: bool = Field(description="True when the drafter declined: the sources do not answer the question.")
    abstention: str = Field(description="When abstaining: what the sources lack.")
    failure: str | None = Field(description="Why no draft was written (the model failed), if none was.")
    withdrawn: str | None = Field(
        None,
        description="Why the draft answers nothing though written: none of its citations held up under the check. "
        "Its sentences are still given, flagged, for the record.",
    )
    sources: list[SourceOut] = Field(description="The accepted sources the draft could cite, labelled S1, S2...")
    sentences: list[SentenceOut] = Field(description="The draft, sentence by sentence, with its citations.")
    flagged: int = Field(description="Citations the check flagged.")
    verdicts: dict[str, int] = Field(
        description="Sentences per verdict (supported, partly supported, unsupported, not checked), every one named."
    )
    missing: list[str] = Field(description="Accepted sources the collection no longer holds (left out).")


@router.post(
    "/collections/{name}/answer", summary="Write a cited draft from accepted sources", response_model=AnswerOut
)
def answer(name: CollectionName, body: AnswerIn, state: State) -> AnswerOut:
    """A cited draft from the accepted sources only, every citation checked, or the explicit abstention."""
    if (body.selection is None) == (body.from_run is None):
        raise ConfigError("give one of selection or from_run")
    model = state.model()
    selection = _question_of(state, name, body.selection) if body.selection is not None else None
    run = (body.from_run, run_events(state, name, body.from_run)) if body.from_run is not None else None
    question = (body.question or "").strip() or selection or (run_question(run[1]) if run else "")
    if not question:
        raise ConfigError("question: the question the draft answers is required (the run has none)")
    with state.reading(name) as col:
        sources = answer_sources(col, state.settings, selection=selection, run=run)
        done = answer_run(col, question, sources, model, language=body.language)
    result = done.draft
    checks = {(c.sentence, c.citation): c for c in done.checks}
    supports = sentence_support(result.sentences, done.checks)
    sentences = []
    for i, (sentence, support) in enumerate(zip(result.sentences, supports, strict=True)):
        citations = []
        for n, c in enumerate(sentence.citations):
            ck = checks.get((i, n))
            citations.append(
                CitationOut(
                    label=c.label,
                    doc_id=c.doc_id,
                    quote=c.quote,
                    span=c.span,
                    document_url=document_url(name, c.doc_id, c.span) if c.doc_id else None,
                    check=CheckOut(
                        located=ck.located,
                        supported=ck.supported,
                        method=ck.method,
                        reason=ck.reason,
                        flagged=ck.flagged,
                        outcome=support.citations[n].outcome,
                    )
                    if ck
                    else None,
                )  # fmt: skip
            )
        flags = [c.reason for c in done.checks if c.sentence == i and c.citation == -1]
        sentences.append(
            SentenceOut(
                text=sentence.text,
                kind=str(sentence.kind),
                citations=citations,
                flags=flags,
                verdict=support.verdict,
                verdict_reason=support.reason,
            )  # fmt: skip
        )
    return AnswerOut(
        run_id=done.run_id, label=result.label, question=question, language=result.language, method=result.method,
        abstained=result.abstained, abstention=result.abstention, failure=result.failure, withdrawn=done.withdrawn,
        sources=[
            SourceOut(label=label, doc_id=s.doc_id, chunk_id=s.chunk_id, title=s.shown_title or s.title,
                      title_source=s.title_source or "document", date=s.date, language=s.language,
                      document_url=document_url(name, s.doc_id, (s.start, s.end)))
            for label, s in result.labels.items()
        ],
        sentences=sentences, flagged=len(done.flagged), missing=done.missing,
        verdicts={str(v): n for v, n in totals(supports).items()},
    )  # fmt: skip
