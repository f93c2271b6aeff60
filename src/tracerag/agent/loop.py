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

from tracerag.agent import prompts
from tracerag.agent.context import RunContext, locate, verify_accept
from tracerag.agent.planner import corpus_listing
from tracerag.agent.schemas import ArgumentContext, NoArgs, ReviewAnswer, ToolArgs
from tracerag.agent.state import Judgement, Memory, SubQuestion
from tracerag.agent.tools import (
    TOOLS,
    ActionAnswer,
    MalformedArguments,
    SearchTool,
    Tool,
    ToolCall,
    record_ranking,
    run_search,
    tool_list,
)
from tracerag.llm import Message
from tracerag.model import Filter, Ranking
from tracerag.retrieval.search import SearchRequest
from tracerag.trail.events import Verdict


@dataclass
class LoopOutcome:
    warm_start: list[str]  # documents of the warm start, fused order
    steps: int
    ended_by: str  # "finish", "step_limit", "repeats", "action_failures", "nothing_found"
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

    guard: str  # "unusable_action" (no valid answer) or "bad_arguments" (its arguments still malformed)
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
        ended_by = "step_limit"
        while self.step < limit:
            self.step += 1
            if self.step == limit:
                self._guard("step_limit", f"step {self.step} of {limit}: finish forced")
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
                    self._guard("action_failures", "two unusable action answers in a row: loop ended")
                    ended_by = "action_failures"
                    break
                if not self.queue:
                    continue
                action = REVIEW_FALLBACK
            else:
                failures = 0
            if action.tool.name == "finish":
                if self.ctx.ledger.accepted(self.sq):
                    ended_by = "finish"
                    break
                refusals += 1
                if refusals >= 3:
                    # The model insists and the queue is all it has: stop paying for the same answer.
                    self._guard("nothing_found", "finish asked three times with nothing accepted: loop ended")
                    ended_by = "nothing_found"
                    break
                self._guard("finish_refused", "finish refused: nothing accepted yet")
                continue
            if action.tool.name == "review":
                if not self.queue:
                    self._guard("nothing_to_review", "review asked with no unreviewed document: search first")
                    continue
                self.review()
                continue
            if self.search(action) == "end":
                ended_by = "repeats"
                break
        return LoopOutcome(warm, self.step, ended_by, self.memory.render(), self.searches)

    def warm_start(self) -> list[str]:
        """Hybrid retrieval on the sub-question, within its corpus: the first candidates and the fallback list."""
        ranking = self.ctx.retriever.search(
            SearchRequest(self.sub.question, k=self.cfg.warm_start_k, filter=self.base, windows="")
        )
        record_ranking(self.ctx, ranking, self.sub.question, self.sq, 0)
        self.ctx.trail.emit(
            "search",
            sq=self.sq,
            step=0,
            tool="warm_start",
            args={"query": self.sub.question},
            filter=self.base.to_dict(),
            results=len(ranking.documents),
            new=self._enqueue(ranking),
        )
        self.searched.add(("warm_start", " ".join(self.sub.question.lower().split()), self.base))
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
            completion = self.ctx.call("action", messages, ActionAnswer, sq=self.sq)
            if not completion.ok:
                return StepFailure("unusable_action", f"unusable action answer: {completion.error}")
            answer: ActionAnswer = completion.parsed  # type: ignore[assignment]
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
                    "guard",
                    sq=self.sq,
                    step=self.step,
                    guard="repaired_arguments",
                    message=f"{problem}; sent back to the model, which answered anew",
                )
            return Action(tool, args)
        return StepFailure("bad_arguments", f"{problem}; the search was not run")  # only searches take arguments

    def search(self, action: Action) -> str | None:
        tool: SearchTool = action.tool  # type: ignore[assignment]
        corpus = getattr(action.args, "corpus", None)
        base = Filter(corpora=(corpus,)) if corpus else self.base
        call = tool.plan(action.args, self.sub.question, base, self.cfg.search_k)  # type: ignore[arg-type]
        args = action.args.model_dump(exclude_none=True)
        if call.key in self.searched:
            self.repeats += 1
            self._emit_search(call, args, 0, 0, skipped="identical to an earlier search")
            self.note = "that search repeated an earlier one and was skipped; a second repeat ends the search"
            if self.repeats >= 2:
                self._guard("repeats", "two repeated searches: loop ended")
                return "end"
            return None
        if "dense" in call.channels and call.channels == ("dense",) and not self.ctx.retriever.has_vectors:
            self._emit_search(call, args, 0, 0, skipped="this collection has no vectors: semantic search unavailable")
            return None
        self.searched.add(call.key)
        self.searches.append(f"{call.tool}({call.query})")
        ranking = run_search(self.ctx, call, self.sq, self.step)
        new = self._enqueue(ranking, front=True)
        self._emit_search(call, args, len(ranking.documents), new)
        if not ranking.documents:
            self.empties += 1
            if self.empties == 3:
                self._guard("empty_searches", "three searches found nothing: try other words, spellings or corpora")
        return None

    def review(self) -> None:
        """Judge the next batch; every chunk shown gets a verdict, a held one when the model gave none."""
        batch, self.queue = self.queue[: self.cfg.review_batch], self.queue[self.cfg.review_batch :]
        self.ctx.trail.emit("review", sq=self.sq, step=self.step, chunks=batch)
        docs = self.ctx.documents([d for d, _ in batch])
        shown, texts = [], {}
        for i, (doc_id, chunk_id) in enumerate(batch, start=1):
            text, start = self.ctx.chunk_text(chunk_id)
            texts[f"D{i}"] = (doc_id, chunk_id, text, start)
            shown.append(_shown(f"D{i}", docs.get(doc_id), text, self.cfg.excerpt_chars))
        messages = prompts.review(self.ctx.question, self.sub.question, self.memory.render(), shown)
        completion = self.ctx.call("review", messages, ReviewAnswer, sq=self.sq)
        answer: ReviewAnswer | None = completion.parsed  # type: ignore[assignment]
        given = {}
        if answer is not None:
            for v in answer.verdicts:
                given.setdefault(v.id.strip(), v)
        for label, (doc_id, chunk_id, text, start) in texts.items():
            v = given.get(label)
            if v is None:
                failure = completion.error or "the model gave no verdict for this document"
                self._judge(doc_id, chunk_id, Verdict.HOLD, "no usable verdict: held", None, failure)
            else:
                span = locate(v.quote, text, start) if v.quote else None
                refused = verify_accept(v.verdict, v.quote, span)
                verdict = Verdict.HOLD if refused else v.verdict
                self._judge(doc_id, chunk_id, verdict, v.reason, span, refused)
        if answer is not None:
            delta = self.memory.update(answer.memory)
            self.ctx.trail.emit("memory", sq=self.sq, step=self.step, memory=self.memory.render(), delta=delta)

    # -- helpers --------------------------------------------------------------------------------------

    def _judge(self, doc_id, chunk_id, verdict, reason, span, failure, carried_from=None) -> None:
        reason = " ".join(reason.split())[: self.cfg.reason_chars]
        self.ctx.ledger.record(Judgement(doc_id, chunk_id, verdict, reason, self.sq, span))
        self.ctx.trail.emit(
            "verdict",
            sq=self.sq,
            step=self.step,
            doc_id=doc_id,
            chunk_id=chunk_id,
            verdict=verdict,
            reason=reason,
            span=span,
            failure=failure,
            carried_from=carried_from,
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
                    self._judge(doc.doc_id, chunk_id, Verdict.ACCEPT, earlier.reason, earlier.span, None, earlier.sq)
                    break
                # judged in this sub-question, or rejected/held before: try the document's next chunk
        self.queue = fresh + self.queue if front else self.queue + fresh
        return len(fresh)

    def _emit_search(self, call: ToolCall, args: dict, results: int, new: int, skipped: str | None = None) -> None:
        self.ctx.trail.emit(
            "search",
            sq=self.sq,
            step=self.step,
            tool=call.tool,
            args={**args, "query": call.query},
            filter=call.filter.to_dict(),
            results=results,
            new=new,
            skipped=skipped,
        )

    def _guard(self, guard: str, message: str) -> None:
        self.ctx.trail.emit("guard", sq=self.sq, step=self.step, guard=guard, message=message)
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
            self._guard("unknown_corpus", f"corpus {corpus!r} is not in this collection: searching all")
            return Filter()
        return Filter(corpora=(corpus,))


def _label(doc, width: int) -> str:
    head = (doc.title or doc.text).strip().replace("\n", " ")
    return f"{doc.id}: {head[:width]}"


def _shown(label: str, doc, text: str, limit: int) -> dict:
    item = {"id": label}
    if doc is not None:
        if doc.title:
            item["title"] = doc.title
        if doc.date:
            item["date"] = doc.date
        item["corpus"] = doc.corpus
    item["text"] = " ".join(text.split())[:limit]
    return item
