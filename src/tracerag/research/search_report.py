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
from tracerag.research.search_run import SearchRun, run_search
from tracerag.retrieval import SearchRequest
from tracerag.retrieval.explain import explain
from tracerag.retrieval.kwic import snippets
from tracerag.retrieval.search_filter import API_NAMES, OptionNames, check_field_keys, check_scope
from tracerag.retrieval.synonyms import SynonymMap


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
    add_snippets(col, result)
    return result, run


SNIPPETS = 2  # keyword-in-context windows per result: the best two, so a second group of matched words shows too
SNIPPET_CHARS = 160  # of context each: two lines of an 80-column terminal


def add_snippets(col: Collection, result: dict[str, Any]) -> None:
    """Give each result its `snippets`: the keyword-in-context windows of its best chunk (`retrieval/kwic.py`),
    each with its document offsets, the matched words' spans, and the line of the source file it starts on
    where the reader recorded how to find it (`line_at`)."""
    queries = searched_queries(result)
    docs = col.store.get_documents([r["doc_id"] for r in result["results"]], text=False)
    sources = {r["doc_id"]: docs[r["doc_id"]].source if r["doc_id"] in docs else {} for r in result["results"]}
    # the text between the line map's last entry before a chunk and the chunk, to count lines over
    before = {
        r["doc_id"]: (entry[0], r["best_chunk"]["start"])
        for r in result["results"]
        if (entry := _entry_before(sources[r["doc_id"]], r["best_chunk"]["start"])) is not None
    }
    leads = col.store.text_spans((doc_id, lo, hi) for doc_id, (lo, hi) in before.items())
    for r in result["results"]:
        best, doc_id = r["best_chunk"], r["doc_id"]
        lead = leads.get((doc_id, *before[doc_id]), "") if doc_id in before else ""
        r["snippets"] = [
            {
                "text": sn.text,
                "start": sn.start,
                "end": sn.end,
                "spans": [list(span) for span in sn.spans],
                "cut_before": sn.cut_before,
                "cut_after": sn.cut_after,
                "line": line_at(sources[doc_id], sn.start, best["start"] - len(lead), lead + best["text"]),
            }
            for sn in snippets(
                best["text"], queries, r["language"], width=SNIPPET_CHARS, count=SNIPPETS, offset=best["start"]
            )
        ]


def _entry_before(source: dict[str, Any], offset: int) -> list[int] | None:
    found = None
    for entry in source.get("line_offsets") or ():
        if entry[0] > offset:
            break
        found = entry
    return found


def line_at(source: dict[str, Any], offset: int, text_start: int, text: str) -> int | None:
    """The line of the source file (`source["file"]`) where the document's character `offset` is, from the map a
    line-based reader records (`source["line_offsets"]`, `ingest/hipe.py`): the last entry's line at or before
    `offset`, plus the runs of whitespace from it to `offset`, counted in `text` (the document's text from
    `text_start`, which must reach back to the entry). None when the reader recorded no map."""
    entry = _entry_before(source, offset)
    if entry is None or entry[0] < text_start:
        return None
    between = text[entry[0] - text_start : offset - text_start]
    runs = sum(1 for i, ch in enumerate(between) if ch.isspace() and (i == 0 or not between[i - 1].isspace()))
    return int(entry[1]) + runs


def searched_queries(result: dict[str, Any]) -> list[str]:
    """Every query a search ran: the one searched (with the researcher's additions) and each variant's."""
    expansion = result.get("expansion") or {}
    queries = [expansion.get("searched") or result["params"].get("query", "")]
    queries += [v["query"] for v in expansion.get("variants", []) if v.get("query")]
    return [q for q in dict.fromkeys(queries) if q]
