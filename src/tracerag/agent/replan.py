"""After a sub-question: one call briefs what was found and rewrites the sub-questions still to come."""

from __future__ import annotations

from tracerag.agent import prompts
from tracerag.agent.context import RunContext
from tracerag.agent.schemas import BriefingAnswer
from tracerag.agent.verdicts import accepted_context
from tracerag.model import SubQuestion
from tracerag.trail.events import BriefingEvent, LLMPurpose, ReplanEvent


def brief_and_replan(
    ctx: RunContext, sq: int, done: SubQuestion, memory: str, remaining: list[SubQuestion], room: int
) -> tuple[str, list[SubQuestion]]:
    """One call: a briefing of what was found, and the remaining sub-questions rewritten (at most `room`).

    Returns the briefing text that seeds the next sub-question's memory and the new remaining list. An unusable
    answer keeps the remaining sub-questions as they were, recorded as a failure."""
    rest = [s.to_dict() for s in remaining]
    messages = prompts.briefing(ctx.question, done.question, memory, accepted_context(ctx), rest)
    completion = ctx.call(LLMPurpose.BRIEFING, messages, BriefingAnswer, sq=sq)
    answer = completion.parsed
    if answer is None:
        ctx.trail.emit(BriefingEvent(sq=sq, summary="", failure=completion.error))
        ctx.trail.emit(ReplanEvent(sq=sq, before=remaining, after=remaining, failure=completion.error))
        return "", remaining
    ctx.trail.emit(
        BriefingEvent(
            sq=sq,
            summary=answer.summary,
            key_facts=answer.key_facts,
            confirmed_dates=answer.confirmed_dates,
            confirmed_entities=answer.confirmed_entities,
            gaps=answer.gaps,
            search_hints=answer.search_hints,
        )
    )
    new = [s.to_sub_question() for s in answer.remaining_sub_questions if s.question.strip()][:room]
    ctx.trail.emit(ReplanEvent(sq=sq, before=remaining, after=new))
    seed = answer.summary
    if answer.search_hints:
        seed += " Hints: " + "; ".join(answer.search_hints)
    if answer.gaps:
        seed += " Gaps: " + "; ".join(answer.gaps)
    return seed.strip(), new
