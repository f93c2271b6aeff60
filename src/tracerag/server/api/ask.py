"""Ask: the agent run as a background job (POST /api/collections/{name}/ask → 202 and the job), its progress
streamed as the job's events, and an ask run's result read back from its trail by run id (so that a result
outlives the job registry and a restart).

The job opens its own read-only `Collection` in its own thread (SQLite connections belong to the thread that
made them; `state.reading` is the request threads'), runs `agent.Agent` exactly as `tracerag ask` does, and
hands a trail listener (`AskProgress`) the events, which it turns into progress. The result is built from the
trail the run wrote, by the same function as GET .../runs/{run_id}: what the job says is what the trail says."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, field_validator

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.llm import StructuredLLM
from tracerag.model import Document, SubQuestion
from tracerag.options import AskOptions
from tracerag.server.api.trails import documents_of, trail_events
from tracerag.server.deps import CollectionName, RunId, State
from tracerag.server.jobs import Job, JobWork
from tracerag.server.schemas import ERRORS, JobInfo
from tracerag.server.state import NotFoundError
from tracerag.trail import Event, TrailEvent, read_trail
from tracerag.trail.events import (
    BriefingEvent,
    LLMCallEvent,
    PlanEvent,
    ReevalEvent,
    ReplanEvent,
    RerankEvent,
    ResultEvent,
    RunEvent,
    SearchEvent,
    VerdictEvent,
)
from tracerag.trail.export import (
    collect_sources,
    named_documents,
    replanned,
    result_event,
    run_event,
    sub_questions,
)
from tracerag.trail.summary import summarise

router = APIRouter(tags=["ask"], responses=ERRORS)

NO_MODEL_NOTE = (
    "no language model configured: the agent does not run, the result is the hybrid warm start only (the model is "
    "the server's: restart `tracerag serve` with --llm)"
)
SERVE_WITH_A_MODEL = (
    "The model is the server's: restart `tracerag serve` with --llm openai:MODEL --base-url URL (key from "
    "OPENAI_API_KEY), --llm local, or --llm replay:DIR."
)


def advice(status: str, message: str, llm_config: dict[str, Any]) -> str:
    """What the user can do about how a run ended, in the web app's terms (the run's own message says it in the
    CLI's: `--llm` is an option of `tracerag serve` here, and an unreachable model is a server to start)."""
    if status == "no_llm":
        return SERVE_WITH_A_MODEL
    if status == "failed" and message.startswith(("LLMCallFailed", "LLMError")):
        url = llm_config.get("base_url")
        at = f" at {url}" if isinstance(url, str) and url else ""
        return f"Start the model server{at}, or restart `tracerag serve` with --llm/--base-url naming one that runs."
    return ""


class AskRequest(AskOptions):
    model_config = ConfigDict(extra="forbid")

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a question is required (it is blank)")
        return value.strip()


class AskSource(BaseModel):
    """One ranked source of an ask run: the document, the agent's verdict on it, its reasons and its quote."""

    rank: int = Field(description="Its place in the ranking, from 1.")
    doc_id: str = Field(description="The document's id in the collection.")
    chunk_id: str | None = Field(description="The chunk whose verdict placed it (None: none judged).")
    title: str = Field(description="The document's title, else its first words, else its id (`title_source`).")
    title_source: str = Field(description="document, text or doc_id.")
    date: str | None = Field(
        description="The document's date (ISO 8601, may be partial: 1848, 1848-03); None when undated."
    )
    corpus: str | None = Field(description="The sub-corpus the document belongs to.")
    language: str | None = Field(description="The document's language (ISO 639-1); None when unknown.")
    publication: str | None = Field(description="The publication the document appeared in, if the data names it.")
    url: str | None = Field(description="The document's source link as the data gives it (not checked).")
    verdict: Literal["accept", "hold", "reject"] | None = Field(
        description="The document's standing at the end of the run: accepted by a sub-question, held, or every "
        "judged chunk rejected; None for a source the agent never judged (filled in from the warm start)."
    )
    origin: str = Field(description="agent (accepted by the agent) or warm_start (filled in from the fused searches).")
    promoted_from_hold: bool = Field(description="True when it was held and accepted on re-evaluation.")
    score: float = Field(description="Its score in the ranking (the fused score for a filled-in source).")
    accepted_by: list[int] = Field(description="The sub-questions (0-based) that accepted it.")
    sub_questions: list[str] = Field(description="Those sub-questions' text, in the same order.")
    reasons: list[str] = Field(description="The agent's reasons, one per accepting sub-question.")
    span: tuple[int, int] | None = Field(description="The quoted evidence's character span in the document.")
    quote: str = Field(description="The evidence: the document's text in `span` (empty without one).")
    in_collection: bool = Field(description="False when the collection no longer holds the document.")
    flags: list[str] = Field(description="What is wrong with this source's record (a span outside the text, ...).")


class VerdictCounts(BaseModel):
    accepted: int = Field(description="Documents some sub-question accepted.")
    held: int = Field(description="Documents held and never accepted.")
    rejected: int = Field(description="Documents all of whose judged chunks were rejected.")


class AskResult(BaseModel):
    """An ask run's outcome, as its trail records it (what `tracerag ask` prints)."""

    run_id: str = Field(description="The run's id (its trail).")
    collection: str = Field(description="The collection's name on this server.")
    question: str = Field(description="The question as asked.")
    status: str = Field(description="complete, no_llm, truncated or failed (then the sources are its fallback).")
    message: str = Field(description="What the run says of itself (why it ended so, that no model ran).")
    advice: str = Field(description="What to do about how it ended (start the model server, ...); empty if nothing.")
    llm: dict[str, str] | None = Field(description="Provider and model; None when no model was configured.")
    sub_questions: list[str] = Field(description="The sub-questions as they stood at the end (after re-plans).")
    verdicts: VerdictCounts = Field(description="How many documents were accepted, held and rejected.")
    llm_calls: int = Field(description="Model calls made.")
    tokens: int = Field(description="Prompt and completion tokens of every model call.")
    cost_usd: float = Field(description="The model calls' cost in US dollars (0 for a local model).")
    wall_s: float | None = Field(description="How long the run took, in seconds.")
    sources: list[AskSource] = Field(description="The ranked sources, best first.")


def ask_result(name: str, events: list[Event], documents: dict[str, Document]) -> AskResult:
    """An ask run's result from its trail events and the documents they name (`documents_of`)."""
    run, result = run_event(events), result_event(events)
    kind = summarise(events).kind
    if kind != "ask":
        raise NotFoundError(f"run {run.run_id!r}: a {kind} run, not an ask run (its trail: .../trails/{run.run_id})")
    if result is None:
        raise NotFoundError(f"run {run.run_id!r}: no result in its trail yet (still running, or it stopped)")
    standing = {d: "reject" for d in result.rejected} | {d: "hold" for d in result.held}
    standing |= {d: "accept" for d in result.accepted}
    totals = result.totals
    return AskResult(
        run_id=run.run_id,
        collection=name,
        question=run.question,
        status=str(result.status),
        message=result.message,
        advice=advice(str(result.status), result.message, dict(run.config.get("llm") or {})),
        llm=run.llm,
        sub_questions=[q.question for q in sub_questions(events)],
        verdicts=VerdictCounts(accepted=len(result.accepted), held=len(result.held), rejected=len(result.rejected)),
        llm_calls=int(totals.get("llm_calls", 0)),
        tokens=int(totals.get("prompt_tokens", 0) + totals.get("completion_tokens", 0)),
        cost_usd=float(totals.get("cost_usd", 0.0)),
        wall_s=totals.get("wall_s"),
        sources=[
            AskSource(
                rank=s.rank,
                doc_id=s.doc_id,
                chunk_id=s.chunk_id,
                title=s.title,
                title_source=s.title_source,
                date=s.date,
                corpus=s.corpus,
                language=s.language,
                publication=s.publication,
                url=s.url,
                verdict=standing.get(s.doc_id),
                origin=s.origin,
                promoted_from_hold=s.promoted_from_hold,
                score=s.score,
                accepted_by=s.accepted_by,
                sub_questions=s.accepted_questions,
                reasons=s.reasons,
                span=s.span,
                quote=s.quote,
                in_collection=s.in_collection,
                flags=s.flags,
            )
            for s in collect_sources(events, documents)
        ],
    )


class AskProgress:
    """A trail listener that turns the agent's events into the job's progress events, each saying where the run
    stands so far: `run` (its id, as soon as known), `plan` (the sub-questions, again after a re-plan),
    `sub_question` (the one being worked on), `stage` (re-evaluation, briefing, rank), `search`, `verdicts`
    (chunks judged so far by their latest verdict), `llm` (calls, tokens and cost so far), `result`."""

    def __init__(self, job: Job):
        self.job = job
        self.questions: list[SubQuestion] = []
        self.current: tuple[str, int | None] | None = None
        self.latest: dict[str, str] = {}  # chunk id -> its latest verdict (a re-evaluation replaces a hold)
        self.calls = self.tokens = 0
        self.cost = 0.0

    def __call__(self, event: TrailEvent) -> None:
        job = self.job
        if isinstance(event, RunEvent):
            job.emit("run", run_id=event.run_id, question=event.question, llm=event.llm)
        elif isinstance(event, PlanEvent):
            self.questions = list(event.sub_questions)
            job.emit("plan", sub_questions=self._questions(), analysis=event.analysis, fallback=event.fallback)
        elif isinstance(event, ReplanEvent):
            self.questions = replanned(self.questions, event)
            self._stage("briefing", event.sq)
            job.emit("plan", sub_questions=self._questions(), replanned=True, failure=event.failure)
        elif isinstance(event, VerdictEvent | ReevalEvent):
            self._stage("reeval" if isinstance(event, ReevalEvent) else "sub_question", event.sq)
            self.latest[event.chunk_id] = str(event.verdict)
            counts = {v: sum(1 for x in self.latest.values() if x == v) for v in ("accept", "hold", "reject")}
            job.emit("verdicts", **counts, doc_id=event.doc_id, verdict=str(event.verdict))
        elif isinstance(event, SearchEvent):
            self._stage("sub_question", event.sq)
            query = event.args.get("query")
            job.emit(
                "search", sq=event.sq, step=event.step, tool=str(event.tool), query=query if isinstance(query, str)
                else None, results=event.results, new=event.new, skipped=event.skipped.reason if event.skipped else None
            )  # fmt: skip
        elif isinstance(event, LLMCallEvent):
            self.calls += 1
            self.tokens += event.prompt_tokens + event.completion_tokens
            self.cost += event.cost_usd
            job.emit(
                "llm", calls=self.calls, tokens=self.tokens, cost_usd=round(self.cost, 6), purpose=str(event.purpose),
                latency_s=event.latency_s, error=event.error
            )  # fmt: skip
        elif isinstance(event, BriefingEvent):
            self._stage("briefing", event.sq)
        elif isinstance(event, RerankEvent):
            self._stage("rank", None)
        elif isinstance(event, ResultEvent):
            job.emit(
                "result", status=str(event.status), message=event.message, accepted=len(event.accepted),
                held=len(event.held), rejected=len(event.rejected), sources=len(event.ranking)
            )  # fmt: skip

    def _questions(self) -> list[str]:
        return [q.question for q in self.questions]

    def _stage(self, stage: str, sq: int | None) -> None:
        """Say when the run moves on to another sub-question or stage (once, not at every event of it)."""
        if (stage, sq) == self.current:
            return
        self.current = (stage, sq)
        if stage == "sub_question" and sq is not None:
            question = self.questions[sq].question if 0 <= sq < len(self.questions) else None
            self.job.emit("sub_question", sq=sq, question=question, of=len(self.questions))
        else:
            self.job.emit("stage", stage=stage, sq=sq)


def ask_job(name: str, path: Path, settings: Settings, model: StructuredLLM | None, question: str, k: int) -> JobWork:
    """The job's work: the agent on `question` over its own view of the collection; its result is the run's."""
    from tracerag.agent import Agent

    def work(job: Job) -> dict[str, Any]:
        if model is None:
            job.emit("note", message=NO_MODEL_NOTE)
        with Collection.open(path, settings, mode="read", notify=lambda m: job.emit("note", message=m)) as col:
            if col.read_only:
                job.emit("note", message=f"the collection is read-only here ({col.read_only}): the trail goes to a "
                         "private folder")  # fmt: skip
            run = Agent(col, model, trail_dir=col.trails_dir).run(question, k, listeners=[AskProgress(job)])
            if run.trail_path is None:  # the agent always writes one when given a folder
                raise NotFoundError(f"run {run.run_id}: wrote no trail")
            events = read_trail(run.trail_path)
            documents = col.store.get_documents(named_documents(events))
        return ask_result(name, events, documents).model_dump(mode="json")

    return work


@router.post(
    "/collections/{name}/ask", summary="Start the agent on a question", response_model=JobInfo, status_code=202
)
def ask(name: CollectionName, body: AskRequest, state: State) -> JobInfo:
    """Start the agent on a question. Follow the job at /api/jobs/{id}/events (plan, current sub-question,
    verdict counts, tokens and cost so far, the run id); its result is the run's `AskResult`, also at
    /api/collections/{name}/runs/{run_id} once it has ended. Without a configured model the run is the hybrid
    warm start, and says so."""
    path = state.path_of(name)
    model = state.model()  # a model that cannot be built is refused now, not in the job
    job = state.jobs.start("ask", ask_job(name, path, state.settings, model, body.question, body.k), collection=name)
    return JobInfo(**job.summary())


@router.get("/collections/{name}/runs/{run_id}", summary="An ask run's result", response_model=AskResult)
def get_run(name: CollectionName, run_id: RunId, state: State) -> AskResult:
    """An ask run's result, read from its trail."""
    events = trail_events(state, name, run_id)
    return ask_result(name, events, documents_of(state, name, events))
