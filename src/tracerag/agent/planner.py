"""The planner: one call splits the question into sub-questions, each aimed at one sub-corpus.

The collection's sub-corpora (sizes, date ranges, languages) are shown to the model. An answer that names a
sub-corpus the collection lacks, or more sub-questions than allowed, is sent back once with the problem; if the
plan is still unusable the run goes on with one sub-question, the question itself, and the trail says why.
"""

from __future__ import annotations

from typing import Any

from tracerag.agent import prompts
from tracerag.agent.context import RunContext
from tracerag.agent.schemas import PlanAnswer
from tracerag.llm import Message
from tracerag.model import SubQuestion
from tracerag.trail.events import LLMPurpose, PlanEvent

MAX_LISTED = 12


def corpus_listing(ctx: RunContext) -> list[dict[str, Any]]:
    """The sub-corpora the planner may aim at, with sizes, date ranges and languages. A collection with many
    (HIPE has 51 newspapers) is shown by its top-level corpora, which filters accept too: the prompt stays short
    enough for a small local model."""
    corpora = ctx.collection.store.corpora()
    rows: list[dict[str, Any]] = [
        {
            "name": c.name,
            "documents": c.documents,
            "date_min": c.date_min,
            "date_max": c.date_max,
            "languages": sorted(c.languages),
        }
        for c in corpora
    ]
    if len(rows) <= MAX_LISTED:
        return rows
    parents: dict[str, dict[str, Any]] = {}
    for row in rows:
        name = row["name"].split("/")[0]
        agg = parents.setdefault(
            name, {"name": name, "documents": 0, "date_min": None, "date_max": None, "languages": set(), "parts": 0}
        )
        agg["documents"] += row["documents"]
        agg["parts"] += 1
        agg["languages"] |= set(row["languages"])
        for key, pick in (("date_min", min), ("date_max", max)):
            if row[key]:
                agg[key] = pick(agg[key], row[key]) if agg[key] else row[key]
    return [{**p, "languages": sorted(p["languages"])} for p in parents.values()]


def plan(ctx: RunContext) -> list[SubQuestion]:
    corpora = corpus_listing(ctx)
    real = [c.name for c in ctx.collection.store.corpora()]
    names = set(real) | {n.split("/")[0] for n in real}  # a full name the model knows is as good as its parent
    limit = ctx.settings.max_sub_questions
    messages = prompts.planner(ctx.question, corpora, limit)
    problem = None
    for attempt in range(2):
        completion = ctx.call(LLMPurpose.PLAN, messages, PlanAnswer)
        answer = completion.parsed
        if answer is None:
            problem = completion.error or "no usable plan"
            break
        problem = _check(answer, names, limit)
        if problem is None:
            subs = [s.to_sub_question() for s in answer.sub_questions]
            ctx.trail.emit(PlanEvent(analysis=answer.analysis, sub_questions=subs, dates=answer.dates))
            return subs
        if attempt == 0:
            messages = [
                *messages,
                Message("assistant", completion.text),
                Message("user", f"That plan cannot be used: {problem}. Answer again."),
            ]
    fallback = SubQuestion(ctx.question)
    ctx.trail.emit(PlanEvent(analysis="", sub_questions=[fallback], fallback=problem))
    return [fallback]


def _check(answer: PlanAnswer, corpora: set[str], limit: int) -> str | None:
    if len(answer.sub_questions) > limit:
        return f"{len(answer.sub_questions)} sub-questions; at most {limit} are allowed"
    unknown = [s.target_corpus for s in answer.sub_questions if s.target_corpus and s.target_corpus not in corpora]
    if unknown:
        return f"unknown sub-corpus {unknown[0]!r}; use one of {sorted(corpora)} or null"
    return None
