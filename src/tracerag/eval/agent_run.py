"""The agent as an evaluation run: each query is asked as a question; besides the ranked list, the accepted set
is scored (precision and recall against the judgments) and the cost of each question is kept: model calls,
tokens, dollars and seconds. Every question's trail is written under the report folder for inspection.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import mean

from tracerag.agent import Agent
from tracerag.collection import Collection
from tracerag.eval.datasets import Benchmark
from tracerag.llm import StructuredLLM
from tracerag.model import RunStatus

Run = dict[str, list[tuple[str, float]]]


def agent_all(
    collection: Collection,
    benchmark: Benchmark,
    query_ids: Sequence[str],
    llm: StructuredLLM | None,
    trail_dir: Path,
    *,
    k: int = 10,
    progress: Callable[[], None] | None = None,
) -> tuple[Run, dict[str, float]]:
    """The agent's ranking per query (score 1/rank) and its mean accepted-set quality and cost per question."""
    agent = Agent(collection, llm, trail_dir=trail_dir)
    run: Run = {}
    stats: list[dict[str, float]] = []
    for qid in query_ids:
        result = agent.run(benchmark.queries[qid].text, k)
        run[qid] = [(r.doc_id, 1.0 / r.rank) for r in result.ranking]
        relevant = {d for d, grade in benchmark.qrels.get(qid, {}).items() if grade > 0}
        accepted = set(result.accepted)
        hits = len(accepted & relevant)
        stats.append(
            {
                "accepted": len(accepted),
                "accepted_precision": hits / len(accepted) if accepted else 0.0,
                "accepted_recall": hits / len(relevant) if relevant else 0.0,
                "llm_calls": result.totals.get("llm_calls", 0.0),
                "failed_calls": result.totals.get("failed_calls", 0.0),
                "tokens": result.totals.get("prompt_tokens", 0.0) + result.totals.get("completion_tokens", 0.0),
                "cost_usd": result.totals.get("cost_usd", 0.0),
                "latency_s": result.totals.get("wall_s", 0.0),
                "completed": float(result.status is RunStatus.COMPLETE),
                # the CLI exits 1 when any did
                "ended_early": float(result.status in (RunStatus.FAILED, RunStatus.TRUNCATED)),
            }
        )
        if progress:
            progress()
    summary = {key: mean(s[key] for s in stats) for key in stats[0]} if stats else {}
    if stats:
        with_accepted = [s for s in stats if s["accepted"]]
        # Precision over the questions where the agent accepted something: an empty set has no precision.
        summary["accepted_precision"] = mean(s["accepted_precision"] for s in with_accepted) if with_accepted else 0.0
    return run, summary
