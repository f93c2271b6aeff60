"""After a sub-question's loop: re-evaluate its held documents once, then brief and re-plan the rest."""

from __future__ import annotations

from tracerag.agent import prompts
from tracerag.agent.context import RunContext, locate, verify_accept
from tracerag.agent.schemas import BriefingAnswer, ReevalAnswer
from tracerag.agent.state import Judgement, SubQuestion
from tracerag.trail.events import Verdict


def reevaluate(ctx: RunContext, sq: int) -> int:
    """Held chunks of sub-question `sq` judged again with the accepted documents and their reasons as context.
    Returns how many were promoted to accept. A missing or unusable answer leaves a chunk held, recorded."""
    held = ctx.ledger.held(sq)
    if not held:
        return 0
    accepted = [
        f"{d}: {ctx.ledger.accepted_by[d][min(ctx.ledger.accepted_by[d])].reason}" for d in ctx.ledger.accepted()
    ]
    docs = ctx.documents([j.doc_id for j in held])
    shown, texts = [], {}
    for i, j in enumerate(held, start=1):
        text, start = ctx.chunk_text(j.chunk_id)
        texts[f"H{i}"] = (j, text, start)
        doc = docs.get(j.doc_id)
        item = {"id": f"H{i}", "held_because": j.reason, "text": " ".join(text.split())[: ctx.settings.excerpt_chars]}
        if doc is not None and doc.date:
            item["date"] = doc.date
        shown.append(item)
    completion = ctx.call("reeval", prompts.reevaluate(ctx.question, accepted, shown), ReevalAnswer, sq=sq)
    answer: ReevalAnswer | None = completion.parsed  # type: ignore[assignment]
    given = {v.id.strip(): v for v in reversed(answer.verdicts)} if answer is not None else {}
    promoted = 0
    for label, (held_j, text, start) in texts.items():
        v = given.get(label)
        if v is None:
            failure = completion.error or "the model gave no verdict for this document"
            ctx.trail.emit(
                "reeval",
                sq=sq,
                doc_id=held_j.doc_id,
                chunk_id=held_j.chunk_id,
                verdict=Verdict.HOLD,
                reason=held_j.reason,
                promoted_from_hold=False,
                failure=failure,
            )
            continue
        reason = " ".join(v.reason.split())[: ctx.settings.reason_chars]
        span = locate(v.quote, text, start) if v.quote else None
        refused = verify_accept(v.verdict, v.quote, span)
        verdict = Verdict.HOLD if refused else Verdict(v.verdict)
        is_promoted = verdict is Verdict.ACCEPT
        promoted += is_promoted
        ctx.ledger.record(Judgement(held_j.doc_id, held_j.chunk_id, verdict, reason, sq, span, is_promoted))
        ctx.trail.emit(
            "reeval",
            sq=sq,
            doc_id=held_j.doc_id,
            chunk_id=held_j.chunk_id,
            verdict=verdict,
            reason=reason,
            promoted_from_hold=is_promoted,
            span=span,
            failure=refused,
        )
    return promoted


def brief_and_replan(
    ctx: RunContext, sq: int, done: SubQuestion, memory: str, remaining: list[SubQuestion], room: int
) -> tuple[str, list[SubQuestion]]:
    """One call: a briefing of what was found, and the remaining sub-questions rewritten (at most `room`).

    Returns the briefing text that seeds the next sub-question's memory and the new remaining list. An unusable
    answer keeps the remaining sub-questions as they were, recorded as a failure."""
    accepted = [
        f"{d}: {ctx.ledger.accepted_by[d][min(ctx.ledger.accepted_by[d])].reason}" for d in ctx.ledger.accepted()
    ]
    rest = [s.record().model_dump() for s in remaining]
    completion = ctx.call(
        "briefing", prompts.briefing(ctx.question, done.question, memory, accepted, rest), BriefingAnswer, sq=sq
    )
    answer: BriefingAnswer | None = completion.parsed  # type: ignore[assignment]
    before = [s.record() for s in remaining]
    if answer is None:
        ctx.trail.emit("briefing", sq=sq, summary="", failure=completion.error)
        ctx.trail.emit("replan", sq=sq, before=before, after=before, failure=completion.error)
        return "", remaining
    ctx.trail.emit(
        "briefing",
        sq=sq,
        summary=answer.summary,
        key_facts=answer.key_facts,
        confirmed_dates=answer.confirmed_dates,
        confirmed_entities=answer.confirmed_entities,
        gaps=answer.gaps,
        search_hints=answer.search_hints,
    )
    new = [
        SubQuestion(s.question.strip(), s.target_corpus or None, list(s.key_entities))
        for s in answer.remaining_sub_questions
        if s.question.strip()
    ][:room]
    ctx.trail.emit("replan", sq=sq, before=before, after=[s.record() for s in new])
    seed = answer.summary
    if answer.search_hints:
        seed += " Hints: " + "; ".join(answer.search_hints)
    if answer.gaps:
        seed += " Gaps: " + "; ".join(answer.gaps)
    return seed.strip(), new
