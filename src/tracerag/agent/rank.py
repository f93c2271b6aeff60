"""The final rank: documents grouped by how many sub-questions accepted them (more first); within a group,
by similarity between the question and the agent's reasons (the offline embedding model), or by one model call
per group when configured; then the documents not accepted (held first, then the warm start's fused order),
so the list always holds k documents when the warm start found them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tracerag.agent import prompts
from tracerag.agent.context import RunContext
from tracerag.agent.schemas import OrderAnswer
from tracerag.embed import load_embedder
from tracerag.model import RankedSource
from tracerag.trail.events import LLMPurpose, RerankEvent, RerankMethod


def final_rank(ctx: RunContext, warm_start: Sequence[str], k: int) -> list[RankedSource]:
    return fill(ctx, accepted_rank(ctx), warm_start, k)


def accepted_rank(ctx: RunContext) -> list[RankedSource]:
    """The accepted documents, grouped by how many sub-questions accepted them, each group reranked."""
    ledger = ctx.ledger
    groups: dict[int, list[str]] = {}
    for doc_id in ledger.accepted():
        groups.setdefault(len(ledger.accepted_by[doc_id]), []).append(doc_id)
    ranked: list[RankedSource] = []
    for count in sorted(groups, reverse=True):
        docs = groups[count]
        reasons = {d: [j.reason for _, j in sorted(ledger.accepted_by[d].items())] for d in docs}
        method, embedder, scored = _order_group(ctx, docs, reasons)
        order = [(d, round(s, 6)) for d, s in scored]
        ctx.trail.emit(RerankEvent(count=count, method=method, embedder=embedder, order=order))
        for doc_id, score in scored:
            judgements = [j for _, j in sorted(ledger.accepted_by[doc_id].items())]
            first = judgements[0]
            ranked.append(
                RankedSource(
                    rank=len(ranked) + 1,
                    doc_id=doc_id,
                    chunk_id=first.chunk_id,
                    origin="agent",
                    accepted_by=tuple(sorted(ledger.accepted_by[doc_id])),
                    reasons=tuple(dict.fromkeys(j.reason for j in judgements)),
                    span=first.span,
                    promoted_from_hold=any(j.promoted_from_hold for j in judgements),
                    score=score,
                )
            )
    return ranked


def fill(ctx: RunContext, accepted: list[RankedSource], warm_start: Sequence[str], k: int) -> list[RankedSource]:
    """Up to k: the accepted documents, then held ones, then the warm start's others; rejected ones only last."""
    ledger = ctx.ledger
    ranked = list(accepted)
    placed = {r.doc_id for r in ranked}
    rejected = set(ledger.rejected_docs())
    held = [d for d in ledger.held_docs() if d not in placed]
    rest = held + [d for d in warm_start if d not in placed and d not in rejected and d not in held]
    rest += [d for d in warm_start if d in rejected and d not in placed]  # only to fill k, last
    for doc_id in dict.fromkeys(rest):
        if len(ranked) >= k:
            break
        ranked.append(RankedSource(rank=len(ranked) + 1, doc_id=doc_id, chunk_id=None, origin="warm_start"))
    return ranked


def _order_group(
    ctx: RunContext, docs: list[str], reasons: dict[str, list[str]]
) -> tuple[RerankMethod, str | None, list[tuple[str, float]]]:
    """The group's order, best first, with the method that made it (and the embedding model, if one did)."""
    if len(docs) == 1:
        return RerankMethod.SINGLE, None, [(docs[0], 1.0)]
    if ctx.settings.rerank == "llm" and ctx.llm is not None:
        ordered = _llm_order(ctx, docs, reasons)
        if ordered is not None:
            return RerankMethod.LLM, None, [(d, float(len(ordered) - i)) for i, d in enumerate(ordered)]
    embedder = ctx.collection.embedder or load_embedder(ctx.collection.settings.embed)
    if embedder is None:
        return RerankMethod.JUDGED_ORDER, None, [(d, float(len(docs) - i)) for i, d in enumerate(docs)]
    question = embedder.encode_queries([ctx.question])[0]
    vectors = embedder.encode_documents([" ".join(reasons[d]) or d for d in docs])
    sims = vectors @ question / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(question) + 1e-12)
    order = sorted(range(len(docs)), key=lambda i: (-sims[i], i))
    return RerankMethod.EMBEDDING, embedder.name, [(docs[i], float(sims[i])) for i in order]


def _llm_order(ctx: RunContext, docs: list[str], reasons: dict[str, list[str]]) -> list[str] | None:
    labels = {f"A{i}": d for i, d in enumerate(docs, start=1)}
    shown = [{"id": label, "reasons": reasons[d]} for label, d in labels.items()]
    completion = ctx.call(LLMPurpose.RERANK, prompts.order(ctx.question, shown), OrderAnswer)
    if completion.parsed is None:
        return None
    seen = [labels[x] for x in dict.fromkeys(completion.parsed.order) if x in labels]
    return seen + [d for d in docs if d not in seen]  # anything the model left out keeps its place after
