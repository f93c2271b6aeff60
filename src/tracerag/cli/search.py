"""`tracerag search`: one hybrid search, printed as a list, explained, or as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tracerag.cli.app import (
    BaseUrlOpt,
    CollectionOpt,
    ConfigOpt,
    ExitCode,
    app,
    data_text,
    err,
    friendly,
    out,
    settings_with_llm,
    write_json,
)
from tracerag.cli.options import DECLARED, declared
from tracerag.cli.views import render
from tracerag.errors import TraceError
from tracerag.options import SearchOptions


@app.command()
@friendly
@declared(SearchOptions)
def search(
    query: str,
    collection: CollectionOpt,
    k: int = DECLARED,
    corpus: list[str] | None = DECLARED,
    date_from: str | None = DECLARED,
    date_to: str | None = DECLARED,
    language: list[str] | None = DECLARED,
    field: list[str] | None = DECLARED,
    doc_id: list[str] | None = DECLARED,
    channels: str | None = DECLARED,
    windows: str | None = DECLARED,
    iiif_base: str | None = DECLARED,
    expand: list[str] | None = DECLARED,
    variants: int | None = DECLARED,
    add: list[str] | None = DECLARED,
    synonyms: Path | None = DECLARED,
    filter_expr: str | None = DECLARED,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm", metavar="MODEL", help="Model for --expand llm/translate: openai:MODEL, local, replay:DIR."
        ),
    ] = None,
    base_url: BaseUrlOpt = None,
    min_ocr: float | None = DECLARED,
    explain_: bool = DECLARED,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object (schema: docs/guide/search.md, `--json` schema).")
    ] = False,
    config: ConfigOpt = None,
) -> ExitCode | None:
    """Hybrid search: each channel ranks chunks, documents are scored by their best chunk, the channels' scores are
    fused (weighed by the collection's calibration: `tracerag calibrate`)."""
    from tracerag.collection import Collection
    from tracerag.ingest.alto_regions import check_base
    from tracerag.retrieval import SearchRequest
    from tracerag.retrieval.search_filter import CLI_NAMES, search_filter
    from tracerag.retrieval.synonyms import SynonymMap
    from tracerag.search.report import explained_search

    flt = search_filter(
        corpora=corpus or (),
        date_from=date_from,
        date_to=date_to,
        languages=language or (),
        fields=_field_pairs(field),
        doc_ids=doc_id or (),
        names=CLI_NAMES,
    )
    iiif_base = check_base(iiif_base)  # a bad base is refused before anything is searched or written
    request = SearchRequest(
        query=query,
        k=k,
        filter=flt,
        channels=tuple(c.strip() for c in channels.split(",")) if channels else None,
        windows=windows,
        min_ocr_quality=min_ocr,
    )
    synonym_map = SynonymMap.read(synonyms) if synonyms else None
    settings = settings_with_llm(config, llm, base_url)
    model = None
    if {"llm", "translate"} & set(expand or []):
        from tracerag.llm import load_llm

        model = load_llm(settings)
    with Collection.open(collection, settings, mode="read") as col:
        result, run = explained_search(
            col,
            request,
            expand=expand or (),
            variants=variants,
            llm=model,
            synonyms=synonym_map,
            added=add or (),
            filter_expression=filter_expr,
            iiif_base=iiif_base,
            names=CLI_NAMES,
        )
        ranking = run.ranking
    # one line, to grep: the run a judge or a review starts from (`--from RUN`)
    err.print(data_text(f"run {run.run_id}" + (f" · trail {run.trail_path}" if run.trail_path else "")), soft_wrap=True)
    for failure in run.failures:
        err.print(data_text(f"warning: {failure}; searched without it", "yellow"))
    if json_out:
        write_json(result)
        return ExitCode.PARTIAL if run.failures else None
    if explain_ and ranking.params.get("expansion", {}).get("variants"):
        for v in ranking.params["expansion"]["variants"]:
            out.print(data_text(f"variant ({v['source']}, {v['kind']}): {v['query']}  {v['why']}", "dim"))
    render(result, explain_, out)
    return ExitCode.PARTIAL if run.failures else None


def _field_pairs(field: list[str] | None) -> list[tuple[str, str]]:
    """`--field KEY=VALUE` options as pairs."""
    pairs = []
    for item in field or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TraceError(f"--field {item!r}: expected KEY=VALUE")
        pairs.append((key, value))
    return pairs
