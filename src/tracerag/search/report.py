"""One search, recorded as a run and explained: what `tracerag search --json` prints and the web app's search
answers, made in one place so that both run a search exactly alike (the filter checked, the run in the trail, the
ranking as `retrieval/explain.py`'s data with the run id, the expansion and what failed)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from tracerag.collection import Collection
from tracerag.ingest.alto_regions import check_base
from tracerag.llm import StructuredLLM
from tracerag.retrieval import SearchRequest
from tracerag.retrieval.explain import explain, searched_queries
from tracerag.retrieval.search_filter import API_NAMES, OptionNames, check_field_keys, check_scope
from tracerag.retrieval.synonyms import SynonymMap
from tracerag.search.run import SearchRun, run_search

__all__ = ["explained_search", "searched_queries"]


def explained_search(
    col: Collection,
    request: SearchRequest,
    *,
    expand: Sequence[str] = (),
    variants: int | None = None,
    llm: StructuredLLM | None = None,
    synonyms: SynonymMap | None = None,
    added: Sequence[str] = (),
    filter_expression: str | None = None,
    iiif_base: str | None = None,
    names: OptionNames = API_NAMES,
    record: bool = True,
    asked: Mapping[str, str] | None = None,
) -> tuple[dict[str, Any], SearchRun]:
    """Search `col` as asked, record the run, and explain its ranking. A sub-corpus, language or field key no
    document has, in a search that found nothing, is a TraceError (rather than an empty answer); an expansion that
    could not be made is in `failures` and the search goes on without it. `record` False: nothing is written (the
    run id is then no run's); `asked` is kept in the run's config (`run_search`)."""
    iiif_base = check_base(iiif_base, names.iiif_base)
    start = time.perf_counter()
    run = run_search(
        col,
        request,
        expand=expand,
        variants=variants,
        llm=llm,
        synonyms=synonyms,
        added=added,
        filter_expression=filter_expression,
        record=record,
        asked=asked,
    )
    ranking = run.ranking
    if not ranking.documents:
        # why nothing was found, when the filter says it: a sub-corpus, language or field key no document has (one
        # pass over the store, paid only by a search that found nothing)
        check_scope(col, request.filter, names)
        if request.filter.fields:
            check_field_keys(col, request.filter, names)
    result = explain(ranking, col, iiif_base=iiif_base)
    result["seconds"] = round(time.perf_counter() - start, 4)
    result["run_id"] = run.run_id
    result["expansion"] = ranking.params.get("expansion")
    result["failures"] = run.failures
    return result, run
