"""The researcher's selection as relevance judgments: `tracerag eval --benchmark selection:QUESTION -c DIR`.

One query, the research question; its judgments are the selection's decisions: accepted = relevant (grade 1),
rejected = judged not relevant, undecided (or never seen) = unjudged. The usual metrics (R@k, MRR, nDCG, MAP)
treat an unjudged document as not relevant, as trec_eval does; a selection judges only what the researcher saw,
so the report adds what tells the two apart: `judged@10` (the share of a run's top 10 the researcher decided
on), the accepted and rejected documents in the top 10, and the condensed-list metrics (Sakai 2007: the ranking
with its unjudged documents removed, then scored), which compare runs fairly when most of what they find was
never reviewed. The collection is the researcher's own: nothing is built, every retrieval run searches it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.errors import ConfigError
from tracerag.eval.datasets import Benchmark, Query
from tracerag.eval.metrics import evaluate
from tracerag.research.selection import Decision, open_selections

PREFIX = "selection:"
QUERY_ID = "selection"
CONDENSED_METRICS = ("P@10", "MRR@10", "nDCG@10", "MAP")
TOP = 10

Run = Mapping[str, Sequence[tuple[str, float]]]


def is_selection(benchmark: str | Path) -> bool:
    return str(benchmark).startswith(PREFIX)


def selection_benchmark(benchmark: str, collection: Collection, settings: Settings) -> Benchmark:
    """The benchmark of `selection:QUESTION` (the question or a unique beginning of it) on `collection`."""
    question = str(benchmark)[len(PREFIX) :]
    if not question.strip():
        raise ConfigError("--benchmark selection:QUESTION needs the research question after 'selection:'")
    with open_selections(collection.path, settings) as store:
        key = store.resolve(question)
        entries = store.entries(key)
    relevant = {e.doc_id: 1 for e in entries if e.decision is Decision.ACCEPTED}
    rejected = {e.doc_id for e in entries if e.decision is Decision.REJECTED}
    if not relevant:
        raise ConfigError(
            f"the selection of {key!r} accepts no source yet ({len(rejected)} rejected): nothing to score against"
        )
    # Metadata only (dates for the decade diagnostic, the count): a selection's collection may be large.
    ids = collection.store.document_ids()
    documents = list(collection.store.get_documents(ids, text=False).values())
    undecided = sum(e.decision is Decision.UNDECIDED for e in entries)
    description = (
        f"The researcher's selection for {key!r} in {collection.path}: {len(relevant)} accepted (relevant), "
        f"{len(rejected)} rejected (judged not relevant), {undecided} undecided (unjudged, as every document "
        "never reviewed). Human judgments, but only of what was reviewed: see judged@10 and the condensed metrics."
    )
    return Benchmark(
        name=f"selection:{key}",
        description=description,
        documents=documents,
        queries={QUERY_ID: Query(QUERY_ID, key, type="selection")},
        qrels={QUERY_ID: relevant},
        nonrelevant={QUERY_ID: rejected},
    )


def condensed(run: Run, judged: Mapping[str, set[str]]) -> dict[str, list[tuple[str, float]]]:
    """Each ranking with its unjudged documents removed (order kept)."""
    return {q: [(d, s) for d, s in ranking if d in judged.get(q, set())] for q, ranking in run.items()}


def selection_scores(bench: Benchmark, run: Run, query_ids: Sequence[str]) -> dict[str, float]:
    """What a run is, against a selection: the judged share of its top 10, how many accepted and rejected it
    ranks there, and the condensed-list metrics."""
    judged = {q: set(bench.qrels.get(q, {})) | bench.nonrelevant.get(q, set()) for q in query_ids}
    judged_share, accepted, rejected = [], [], []
    for q in query_ids:
        top = [d for d, _ in run.get(q, [])[:TOP]]
        judged_share.append(sum(d in judged[q] for d in top) / len(top) if top else 0.0)
        accepted.append(sum(d in bench.qrels.get(q, {}) for d in top))
        rejected.append(sum(d in bench.nonrelevant.get(q, set()) for d in top))
    qrels = {q: bench.qrels[q] for q in query_ids}
    short = evaluate(qrels, condensed({q: list(run.get(q, [])) for q in query_ids}, judged), CONDENSED_METRICS)
    n = len(query_ids)
    return {
        "judged@10": math.fsum(judged_share) / n,
        "accepted@10": math.fsum(accepted) / n,
        "rejected@10": math.fsum(rejected) / n,
    } | {f"{name}'": value for name, value in short.items()}


def selection_markdown(scores: Mapping[str, Mapping[str, float]]) -> str:
    """The report's table of `selection_scores` per run."""
    names = ["judged@10", "accepted@10", "rejected@10", *(f"{m}'" for m in CONDENSED_METRICS)]
    lines = [
        "",
        "## Against the selection (unjudged apart)",
        "",
        "judged@10: share of the top 10 the researcher decided on; accepted@10 / rejected@10: how many of each it "
        "ranks there; a metric with ' is computed on the condensed list (unjudged documents removed).",
        "",
        "| run | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for run, values in scores.items():
        lines.append(f"| {run} | " + " | ".join(f"{values[n]:.4f}" for n in names) + " |")
    return "\n".join(lines) + "\n"
