"""The search-and-review loop of one sub-question.

Warm start (hybrid retrieval on the sub-question, constrained to its corpus) and a first review of its best
documents, then steps: the model picks a tool; searches add unreviewed chunks to a queue; `review` judges the next
batch against the ORIGINAL question. Guards,
each recorded in the trail: a step limit (the last step forces finish), an identical query is skipped and two
repeats end the loop, three empty searches warn, `finish` is refused while nothing is accepted (a third ask ends
the loop as "nothing found"), two unusable action answers in a row end the loop. An undecided or unparseable
verdict holds the chunk and records why.

A tool's arguments are validated against its model before it runs (agent/tools.py). Malformed ones (a date that
is not one, an unknown corpus, k out of bounds, an argument the tool does not take) are sent back to the model
with the problem, as `llm/` does for an answer that does not match the schema (`llm.repair_rounds` times); a
corrected answer goes on, recorded as the guard `repaired_arguments`. Still malformed, the step is the guard
`bad_arguments` ("...; the search was not run"), the model is told at its next step, and the step counts as an
unusable answer. Only validation problems are caught: any other exception is a bug and ends the run as `failed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from tracerag.agent import prompts
from tracerag.agent.context import RunContext
from tracerag.agent.planner import corpus_listing
from tracerag.agent.schemas import ArgumentContext, NoArgs, ReviewAnswer, ToolArgs
from tracerag.agent.state import Judgement, Memory
from tracerag.agent.tools import (
    TOOLS,
    ActionAnswer,
    MalformedArguments,
    Search,
    Tool,
    ToolCall,
    record_ranking,
    run_search,
    tool_list,
)
from tracerag.agent.verdicts import Review
from tracerag.llm import Message
from tracerag.model import Document, Filter, Ranking, SubQuestion, Verdict
from tracerag.retrieval.search import SearchRequest
from tracerag.trail.events import (
    Guard,
    GuardEvent,
    LLMPurpose,
    MemoryEvent,
    ReviewEvent,
    SearchEvent,
    SearchSkip,
    SearchTool,
    VerdictEvent,
)


class LoopEnd(StrEnum):
    """How a sub-question's loop ended."""

    FINISH = "finish"  # the model finished, something accepted
    STEP_LIMIT = "step_limit"
    REPEATS = "repeats"  # a second repeated search
    ACTION_FAILURES = "action_failures"  # two unusable action answers in a row: the run is truncated
    NOTHING_FOUND = "nothing_found"  # finish asked three times with nothing accepted
    CANCELLED = "cancelled"  # whoever asked for the run cancelled it: the run is truncated


@dataclass
class LoopOutcome:
    warm_start: list[str]  # documents of the warm start, fused order
    steps: int
    ended_by: LoopEnd
    memory: str
    searches: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Action:
    """A step the model chose, its arguments validated."""

    tool: Tool
    args: ToolArgs


@dataclass(frozen=True)
class StepFailure:
    """A step that yields no usable action: the guard that records it and what the model is told."""

    guard: Guard  # UNUSABLE_ACTION (no valid answer) or BAD_ARGUMENTS (its arguments still malformed)
    message: str


REVIEW_FALLBACK = Action(TOOLS["review"], NoArgs())


class SearchReviewLoop:
    def __init__(self, ctx: RunContext, sq_index: int, sub: SubQuestion, memory_seed: str = ""):
        self.ctx = ctx
        self.sq = sq_index
        self.sub = sub
        self.cfg = ctx.settings
        self.memory = Memory(self.cfg.memory_chars, memory_seed)
        self.step = 0
        self.base = self._base_filter(sub.target_corpus)
        self.queue: list[tuple[str, str]] = []  # (doc_id, chunk_id) waiting for review, best first
        self.searched: set[tuple] = set()
        self.searches: list[str] = []
        self.repeats = 0
        self.empties = 0
        self.note = ""
        self._arguments: ArgumentContext | None = None

    # -- the loop -------------------------------------------------------------------------------------

    def run(self) -> LoopOutcome:
        warm = self.warm_start()
        limit = min(self.cfg.max_steps, self.cfg.hard_step_cap)
        failures = refusals = 0
        ended_by = LoopEnd.STEP_LIMIT
        while self.step < limit:
            if self.ctx.stop.is_set():  # checked between steps: a model call under way is let finish
                self._guard(Guard.CANCELLED, f"cancelled before step {self.step + 1}: loop ended")
                ended_by = LoopEnd.CANCELLED
                break
            self.step += 1
            if self.step == limit:
                self._guard(Guard.STEP_LIMIT, f"step {self.step} of {limit}: finish forced")
                break
            if self.step == 1 and self.queue:
                # The loop opens by judging the warm start's best documents: the cheapest evidence there is, and
                # what the model needs in its memory to search well (small models otherwise search in circles).
                self.review()
                continue
            action = self._next_action()
            if isinstance(action, StepFailure):
                self._guard(action.guard, action.message)
                failures += 1
                if failures >= 2:
                    self._guard(Guard.ACTION_FAILURES, "two unusable action answers in a row: loop ended")
                    ended_by = LoopEnd.ACTION_FAILURES
                    break
                if not self.queue:
                    continue
                action = REVIEW_FALLBACK
            else:
                failures = 0
            if action.tool.name == "finish":
                if self.ctx.ledger.accepted(self.sq):
                    ended_by = LoopEnd.FINISH
                    break
                refusals += 1
                if refusals >= 3:
                    # The model insists and the queue is all it has: stop paying for the same answer.
                    self._guard(Guard.NOTHING_FOUND, "finish asked three times with nothing accepted: loop ended")
                    ended_by = LoopEnd.NOTHING_FOUND
                    break
                self._guard(Guard.FINISH_REFUSED, "finish refused: nothing accepted yet")
                continue
            if action.tool.name == "review":
                if not self.queue:
                    self._guard(Guard.NOTHING_TO_REVIEW, "review asked with no unreviewed document: search first")
                    continue
                self.review()
                continue
            if self.search(action) == "end":
                ended_by = LoopEnd.REPEATS
                break
        return LoopOutcome(warm, self.step, ended_by, self.memory.render(), self.searches)

    def warm_start(self) -> list[str]:
        """Hybrid retrieval on the sub-question, within its corpus: the first candidates and the fallback list."""
        ranking = self.ctx.retriever.search(
            SearchRequest(self.sub.question, k=self.cfg.warm_start_k, filter=self.base, windows="")
        )
        record_ranking(self.ctx, ranking, self.sub.question, self.sq, 0)
        self.ctx.trail.emit(
            SearchEvent(
                sq=self.sq,
                step=0,
                tool=SearchTool.WARM_START,
                args={"query": self.sub.question},
                filter=self.base.to_dict(),
                results=len(ranking.documents),
                new=self._enqueue(ranking),
            )
        )
        warm = ToolCall(SearchTool.WARM_START, self.sub.question, (), self.base, self.cfg.warm_start_k)
        self.searched.add(warm.key)
        return ranking.doc_ids()

    # -- steps ----------------------------------------------------------------------------------------

    def _next_action(self) -> Action | StepFailure:
        ledger = self.ctx.ledger
        status = (
            f"step {self.step}; accepted {len(ledger.accepted(self.sq))}, held {len(ledger.held(self.sq))}, "
            f"unreviewed {len(self.queue)}" + ("; recent searches found nothing" if self.empties >= 3 else "")
        )
        if self.note:
            status += f"; last step: {self.note}"
            self.note = ""
        peek = self.ctx.documents([d for d, _ in self.queue[:5]])
        candidates = [_label(peek[d], 80) for d, _ in self.queue[:5] if d in peek]
        messages = prompts.action(
            self.ctx.question,
            self.sub.question,
            self.memory.render(),
            status,
            self.searches[-6:],
            candidates,
            tool_list(),
            self._corpus_names(),
        )
        problem: MalformedArguments | None = None
        rounds = self.ctx.llm.repair_rounds if self.ctx.llm is not None else 0
        for _ in range(rounds + 1):
            completion = self.ctx.call(LLMPurpose.ACTION, messages, ActionAnswer, sq=self.sq)
            answer = completion.parsed
            if answer is None:
                return StepFailure(Guard.UNUSABLE_ACTION, f"unusable action answer: {completion.error}")
            tool = TOOLS[answer.tool]
            try:
                args = tool.arguments(answer, self._argument_context())
            except MalformedArguments as exc:
                problem = exc
                messages = [
                    *messages,
                    Message("assistant", completion.text),
                    Message("user", f"Your answer was unusable: {exc}. Answer again."),
                ]
                continue
            if problem is not None:  # not a note to the model: the repair round already told it
                self.ctx.trail.emit(
                    GuardEvent(
                        sq=self.sq,
                        step=self.step,
                        guard=Guard.REPAIRED_ARGUMENTS,
                        message=f"{problem}; sent back to the model, which answered anew",
                    )
                )
            return Action(tool, args)
        return StepFailure(Guard.BAD_ARGUMENTS, f"{problem}; the search was not run")  # only searches take arguments

    def search(self, action: Action) -> str | None:
        tool = action.tool
        assert isinstance(tool, Search), tool  # the loop hands only searches here
        corpus = getattr(action.args, "corpus", None)
        base = Filter(corpora=(corpus,)) if corpus else self.base
        call = tool.plan(action.args, self.sub.question, base, self.cfg.search_k)
        args = action.args.model_dump(exclude_none=True)
        if call.key in self.searched:
            self.repeats += 1
            self._emit_search(call, args, 0, 0, skipped=SearchSkip.REPEAT)
            self.note = "that search repeated an earlier one and was skipped; a second repeat ends the search"
            if self.repeats >= 2:
                self._guard(Guard.REPEATS, "two repeated searches: loop ended")
                return "end"
            return None
        if "dense" in call.channels and call.channels == ("dense",) and not self.ctx.retriever.has_vectors:
            self._emit_search(call, args, 0, 0, skipped=SearchSkip.NO_VECTORS)
            return None
        self.searched.add(call.key)
        self.searches.append(f"{call.tool}({call.query})")
        ranking = run_search(self.ctx, call, self.sq, self.step)
        new = self._enqueue(ranking, front=True)
        self._emit_search(call, args, len(ranking.documents), new)
        if not ranking.documents:
            self.empties += 1
            if self.empties == 3:
                self._guard(Guard.EMPTY_SEARCHES, "three searches found nothing: try other words, spellings or corpora")
        return None

    def review(self) -> None:
        """Judge the next batch (the verdict stage: every chunk shown gets a checked verdict, a hold when the model
        gave none), then update the memory from the answer."""
        batch, self.queue = self.queue[: self.cfg.review_batch], self.queue[self.cfg.review_batch :]
        self.ctx.trail.emit(ReviewEvent(sq=self.sq, step=self.step, chunks=batch))
        stage = Review(self.ctx, self.sq, self.step, self.sub.question, self.memory.render())
        answer = stage.run(Review.candidates(self.ctx, batch)).answer
        if isinstance(answer, ReviewAnswer):
            delta = self.memory.update(answer.memory)
            self.ctx.trail.emit(MemoryEvent(sq=self.sq, step=self.step, memory=self.memory.render(), delta=delta))

    # -- helpers --------------------------------------------------------------------------------------

    def _carry(self, doc_id: str, chunk_id: str, earlier: Judgement) -> None:
        """An earlier sub-question's accept of this same chunk counts for this one too: same question, same text,
        no new model call; the trail says whose verdict it was."""
        self.ctx.ledger.record(Judgement(doc_id, chunk_id, Verdict.ACCEPT, earlier.reason, self.sq, earlier.span))
        self.ctx.trail.emit(
            VerdictEvent(
                sq=self.sq,
                step=self.step,
                doc_id=doc_id,
                chunk_id=chunk_id,
                verdict=Verdict.ACCEPT,
                reason=earlier.reason,
                span=earlier.span,
                carried_from=earlier.sq,
            )
        )

    def _enqueue(self, ranking: Ranking, front: bool = False) -> int:
        """Queue each found document's best chunk not yet judged; a rejected chunk's document stays findable
        through its other chunks that this search also found. Verdicts of earlier sub-questions on the same
        chunk are reused (same question, same text) and count for this sub-question too."""
        ledger = self.ctx.ledger
        queued_docs = {d for d, _ in self.queue}
        fresh: list[tuple[str, str]] = []
        chunks_of: dict[str, list[str]] = {}
        for hits in ranking.channel_hits.values():
            for h in sorted(hits, key=lambda h: h.rank):
                chunks_of.setdefault(h.doc_id, [])
                if h.chunk_id not in chunks_of[h.doc_id]:
                    chunks_of[h.doc_id].append(h.chunk_id)
        for doc in ranking.documents:
            if doc.doc_id in queued_docs or self.sq in ledger.accepted_by.get(doc.doc_id, {}):
                continue
            options = [doc.best_chunk_id] + [c for c in chunks_of.get(doc.doc_id, []) if c != doc.best_chunk_id]
            for chunk_id in options:
                earlier = ledger.by_chunk.get(chunk_id)
                if earlier is None:
                    fresh.append((doc.doc_id, chunk_id))
                    queued_docs.add(doc.doc_id)
                    break
                if earlier.sq != self.sq and earlier.verdict is Verdict.ACCEPT:
                    self._carry(doc.doc_id, chunk_id, earlier)
                    break
                # judged in this sub-question, or rejected/held before: try the document's next chunk
        self.queue = fresh + self.queue if front else self.queue + fresh
        return len(fresh)

    def _emit_search(
        self, call: ToolCall, args: dict, results: int, new: int, skipped: SearchSkip | None = None
    ) -> None:
        self.ctx.trail.emit(
            SearchEvent(
                sq=self.sq,
                step=self.step,
                tool=call.tool,
                args={**args, "query": call.query},
                filter=call.filter.to_dict(),
                results=results,
                new=new,
                skipped=skipped,
            )
        )

    def _guard(self, guard: Guard, message: str) -> None:
        self.ctx.trail.emit(GuardEvent(sq=self.sq, step=self.step, guard=guard, message=message))
        self.note = message  # the model is told what its last step came to

    def _corpus_names(self) -> list[str]:
        return [c["name"] for c in corpus_listing(self.ctx)]

    def _argument_context(self) -> ArgumentContext:
        """The sub-corpora a search may name (a full name or its parent, as filters accept) and those listed."""
        if self._arguments is None:
            known = {c.name for c in self.ctx.collection.store.corpora()}
            known |= {n.split("/")[0] for n in known}
            self._arguments = ArgumentContext(frozenset(known), tuple(self._corpus_names()))
        return self._arguments

    def _base_filter(self, corpus: str | None) -> Filter:
        if not corpus:
            return Filter()
        known = {c.name for c in self.ctx.collection.store.corpora()}
        parents = {n.split("/")[0] for n in known}
        if corpus not in known | parents:
            self._guard(Guard.UNKNOWN_CORPUS, f"corpus {corpus!r} is not in this collection: searching all")
            return Filter()
        return Filter(corpora=(corpus,))


def _label(doc: Document, width: int) -> str:
    head = (doc.title or doc.text).strip().replace("\n", " ")
    return f"{doc.id}: {head[:width]}"
