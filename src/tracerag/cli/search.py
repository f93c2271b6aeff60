"""`tracerag search`: one hybrid search, printed as a list, explained, or as JSON."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from tracerag.cli.app import CollectionOpt, ConfigOpt, app, friendly, out, write_json
from tracerag.cli.views import render
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.dates import parse_partial_date
from tracerag.errors import TraceError
from tracerag.model import Filter


@app.command()
@friendly
def search(
    query: Annotated[str, typer.Argument(help='What to look for. Quote phrases with "...".')],
    collection: CollectionOpt,
    k: Annotated[int, typer.Option("--k", "-k", help="Number of documents.")] = 10,
    corpus: Annotated[list[str] | None, typer.Option("--corpus", help="Restrict to a sub-corpus (repeatable).")] = None,
    date_from: Annotated[str | None, typer.Option("--from", help="Earliest date (1890, 1890-05, 1890-05-01).")] = None,
    date_to: Annotated[
        str | None, typer.Option("--to", help="Latest date (inclusive: --to 1900 is up to 1900-12-31).")
    ] = None,
    language: Annotated[
        list[str] | None, typer.Option("--language", help="Restrict to a language (repeatable).")
    ] = None,
    field: Annotated[list[str] | None, typer.Option("--field", help="Structured field KEY=VALUE (repeatable).")] = None,
    doc_id: Annotated[
        list[str] | None, typer.Option("--doc-id", help="Allow-list of document ids (repeatable).")
    ] = None,
    channels: Annotated[str | None, typer.Option(help="Comma-separated channels (bm25,dense,date,phrase).")] = None,
    windows: Annotated[str | None, typer.Option(help="Temporal windowing: equal share per window, e.g. 5y.")] = None,
    explain_: Annotated[bool, typer.Option("--explain", help="Show channels, scores, spans and metadata.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object (schema in README).")] = False,
    config: ConfigOpt = None,
) -> None:
    """Hybrid search: each channel ranks chunks, documents are scored by their best chunk, the channels' scores are
    fused (weighed by the collection's calibration: `tracerag calibrate`)."""
    from tracerag.retrieval import Retriever, SearchRequest
    from tracerag.retrieval.explain import explain

    flt = _filter(corpus, date_from, date_to, language, field, doc_id)
    request = SearchRequest(
        query=query,
        k=k,
        filter=flt,
        channels=tuple(c.strip() for c in channels.split(",")) if channels else None,
        windows=windows,
    )
    with Collection.open(collection, load_settings(config), mode="read") as col:
        start = time.perf_counter()
        ranking = Retriever(col).search(request)
        if not ranking.documents and flt.fields:
            _check_field_keys(col, flt)  # a key no document has finds nothing: say so, rather than nothing
        result = explain(ranking, col)
        result["seconds"] = round(time.perf_counter() - start, 4)
    if json_out:
        write_json(result)
        return
    render(result, explain_, out)


# What a user may mean by `--field KEY=...` for a key that is not a field: the option that filters on it.
_OPTION_FOR = {
    "corpus": "--corpus",
    "language": "--language",
    "date": "--from/--to",
    "id": "--doc-id",
    "doc_id": "--doc-id",
}


def _check_field_keys(col: Collection, flt: Filter) -> None:
    """Raise a TraceError naming each `--field` key that no document of `col` has (with the keys it has, and
    where the key lives when it is no field). Asked only when a search found nothing: one pass over the store."""
    known = set(col.store.metadata_keys("fields"))
    unknown = list(dict.fromkeys(key for key, _ in flt.fields if key not in known))
    if not unknown:
        return
    in_source = set(col.store.metadata_keys("source"))
    notes = []
    for key in unknown:
        if key in _OPTION_FOR:
            notes.append(f"'{key}' is filtered with {_OPTION_FOR[key]}")
        elif key in in_source:
            notes.append(f"'{key}' is in the documents' source, which is not filterable")
    has = f"the fields it has: {', '.join(sorted(known))}" if known else "its documents have no fields"
    keys = ", ".join(repr(key) for key in unknown)
    raise TraceError(
        f"--field: no document in {col.path} has the field{'s' if len(unknown) > 1 else ''} {keys}; {has}"
        + "".join(f"; {note}" for note in notes)
    )


def _filter(
    corpus: list[str] | None,
    date_from: str | None,
    date_to: str | None,
    language: list[str] | None,
    field: list[str] | None,
    doc_id: list[str] | None,
) -> Filter:
    """The search's filter from its options, each checked (KEY=VALUE fields, partial dates in order)."""
    fields = []
    for item in field or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise TraceError(f"--field {item!r}: expected KEY=VALUE")
        fields.append((key, value))
    try:
        start = parse_partial_date(date_from).start if date_from else None
        end = parse_partial_date(date_to).end if date_to else None
    except ValueError as exc:
        raise TraceError(f"--from/--to: {exc}") from None
    if start and end and start > end:
        raise TraceError(f"--from {date_from} is after --to {date_to}")
    return Filter(
        corpora=tuple(corpus or ()),
        date_from=start,
        date_to=end,
        languages=tuple(language or ()),
        fields=tuple(fields),
        doc_ids=tuple(doc_id or ()),
    )
