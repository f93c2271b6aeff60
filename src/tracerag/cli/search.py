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
    IiifBaseOpt,
    app,
    data_text,
    err,
    friendly,
    out,
    settings_with_llm,
    write_json,
)
from tracerag.cli.views import render
from tracerag.errors import TraceError


@app.command()
@friendly
def search(
    query: Annotated[str, typer.Argument(help='What to look for. Quote phrases with "...".')],
    collection: CollectionOpt,
    k: Annotated[int, typer.Option("--k", "-k", help="Number of documents.")] = 10,
    corpus: Annotated[
        list[str] | None, typer.Option("--corpus", metavar="NAME", help="Restrict to a sub-corpus (repeatable).")
    ] = None,
    date_from: Annotated[
        str | None, typer.Option("--from", metavar="DATE", help="Earliest date (1890, 1890-05, 1890-05-01).")
    ] = None,
    date_to: Annotated[
        str | None, typer.Option("--to", metavar="DATE", help="Latest date (inclusive: --to 1900 is up to 1900-12-31).")
    ] = None,
    language: Annotated[
        list[str] | None, typer.Option("--language", metavar="CODE", help="Restrict to a language (repeatable).")
    ] = None,
    field: Annotated[
        list[str] | None, typer.Option("--field", metavar="KEY=VALUE", help="Structured field KEY=VALUE (repeatable).")
    ] = None,
    doc_id: Annotated[
        list[str] | None, typer.Option("--doc-id", metavar="ID", help="Allow-list of document ids (repeatable).")
    ] = None,
    channels: Annotated[
        str | None, typer.Option(metavar="CHANNELS", help="Comma-separated channels (bm25,dense,date,phrase,entity).")
    ] = None,
    windows: Annotated[
        str | None,
        typer.Option(
            metavar="SPAN",
            help="Temporal windowing: equal share per window, e.g. 5y (also the windows --explain shows).",
        ),
    ] = None,
    iiif_base: IiifBaseOpt = None,
    expand: Annotated[
        list[str] | None,
        typer.Option(
            metavar="llm|translate|vocab",
            help="Also search variants, fused by RRF: 'llm' (a model's, --llm; with the query in the collection's "
            "other languages unless expansion.translate is false), 'translate' (those translations alone) or "
            "'vocab' (repeatable).",
        ),
    ] = None,
    variants: Annotated[int | None, typer.Option(min=1, help="LLM variants (default expansion.variants).")] = None,
    add: Annotated[
        list[str] | None,
        typer.Option("--add", metavar="WORD", help="Add a word to the query, e.g. a neighbour (repeatable)."),
    ] = None,
    synonyms: Annotated[
        Path | None, typer.Option(metavar="FILE", help="Spelling/synonym map (TSV) applied to the query.")
    ] = None,
    filter_expr: Annotated[
        str | None,
        typer.Option(
            "--filter", metavar="EXPRESSION", help='Boolean filter: AND OR NOT ( ) "phrase" field:value word*.'
        ),
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm", metavar="MODEL", help="Model for --expand llm/translate: openai:MODEL, local, replay:DIR."
        ),
    ] = None,
    base_url: BaseUrlOpt = None,
    min_ocr: Annotated[
        float | None,
        typer.Option(
            "--min-ocr", min=0, max=1, help="Only documents whose estimated OCR quality is at least this (0-1)."
        ),
    ] = None,
    explain_: Annotated[bool, typer.Option("--explain", help="Show channels, scores, spans and metadata.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object (schema in README).")] = False,
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
