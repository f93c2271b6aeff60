"""A search's filter from what a person asked (sub-corpora, a date range in partial dates, languages, field
values, document ids), each part checked; the sub-corpora and languages it names checked against the collection's;
and, for a search that found nothing, the field keys no document has.

Shared by `tracerag search` and the web app's search: each names its own options (`--from` on the command line,
`date_from` in a request body), so an error says the name the person typed (`OptionNames`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tracerag.collection import Collection
from tracerag.dates import parse_partial_date
from tracerag.errors import TraceError
from tracerag.model import Filter

# A field key a filter can name: the engines reach a field by a JSON path (`fields.KEY`), whose parts are words
# (letters, digits, "_", "-") joined by dots; a space, quote or slash in a key makes the path unreadable.
_FIELD_KEY = re.compile(r"[\w-]+(?:\.[\w-]+)*")


@dataclass(frozen=True)
class OptionNames:
    """How a front door names each part of a filter; the defaults are the request body's field names."""

    date_from: str = "date_from"
    date_to: str = "date_to"
    fields: str = "fields"
    corpus: str = "corpus"
    language: str = "language"
    doc_ids: str = "doc_ids"
    iiif_base: str = "iiif_base"
    dates: str | None = None  # one name for an unreadable date of either bound (the CLI's "--from/--to")


API_NAMES = OptionNames()
CLI_NAMES = OptionNames(
    date_from="--from",
    date_to="--to",
    fields="--field",
    corpus="--corpus",
    language="--language",
    doc_ids="--doc-id",
    iiif_base="--iiif-base",
    dates="--from/--to",
)


def search_filter(
    *,
    corpora: Sequence[str] = (),
    date_from: str | None = None,
    date_to: str | None = None,
    languages: Sequence[str] = (),
    fields: Iterable[tuple[str, str]] = (),
    doc_ids: Sequence[str] = (),
    names: OptionNames = API_NAMES,
) -> Filter:
    """The filter, dates read as partial dates (`1890` is the whole year: `date_to 1900` admits 1900-12-31) and
    checked to be in order; a TraceError naming the option otherwise."""
    pairs = []
    for key, value in fields:
        if not key:
            raise TraceError(f"{names.fields}: a field needs a key (got ={value!r})")
        if not _FIELD_KEY.fullmatch(key):
            raise TraceError(
                f"{names.fields}: the key {key!r} cannot be filtered on: a field key is letters, digits, '_' and '-', "
                "parts joined by dots"
            )
        pairs.append((key, value))
    start = _date(date_from, names.dates or names.date_from, start=True)
    end = _date(date_to, names.dates or names.date_to, start=False)
    if start and end and start > end:
        raise TraceError(f"{names.date_from} {date_from} is after {names.date_to} {date_to}")
    return Filter(
        corpora=tuple(corpora),
        date_from=start,
        date_to=end,
        languages=tuple(languages),
        fields=tuple(pairs),
        doc_ids=tuple(doc_ids),
    )


def _date(value: str | None, name: str, *, start: bool) -> str | None:
    if not value:
        return None
    try:
        parsed = parse_partial_date(value)
    except ValueError as exc:
        raise TraceError(f"{name}: {exc}") from None
    return parsed.start if start else parsed.end


def check_field_keys(col: Collection, flt: Filter, names: OptionNames = API_NAMES) -> None:
    """Raise a TraceError naming each field key of `flt` that no document of `col` has (with the keys it has, and
    where the key lives when it is no field). For a search that found nothing: one pass over the store."""
    known = set(col.store.metadata_keys("fields"))
    unknown = list(dict.fromkeys(key for key, _ in flt.fields if key not in known))
    if not unknown:
        return
    # what a person may mean by a field key that is no field: the option that filters on it
    option_for = {
        "corpus": names.corpus,
        "language": names.language,
        "date": f"{names.date_from}/{names.date_to}",
        "id": names.doc_ids,
        "doc_id": names.doc_ids,
    }
    in_source = set(col.store.metadata_keys("source"))
    notes = []
    for key in unknown:
        if key in option_for:
            notes.append(f"'{key}' is filtered with {option_for[key]}")
        elif key in in_source:
            notes.append(f"'{key}' is in the documents' source, which is not filterable")
    has = f"the fields it has: {', '.join(sorted(known))}" if known else "its documents have no fields"
    keys = ", ".join(repr(key) for key in unknown)
    raise TraceError(
        f"{names.fields}: no document in {col.path} has the field{'s' if len(unknown) > 1 else ''} {keys}; {has}"
        + "".join(f"; {note}" for note in notes)
    )


def check_scope(col: Collection, flt: Filter, names: OptionNames = API_NAMES) -> None:
    """Raise a TraceError naming a sub-corpus or language of `flt` that no document of `col` has, with the ones it
    has: such a filter admits nothing, and an empty answer would read as "nothing matched the words". A parent
    name admits its children (`letemps` covers `letemps/gdl`), as the filter does. For a search that found
    nothing: one pass over the store (its corpus listing, what `tracerag info` shows), and none when the filter
    names no corpus and no language."""
    if not flt.corpora and not flt.languages:
        return
    infos = col.store.corpora()
    if flt.corpora:
        known = [c.name for c in infos]
        unknown = [c for c in flt.corpora if not any(k == c or k.startswith(c + "/") for k in known)]
        if unknown:
            raise TraceError(
                f"{names.corpus}: no sub-corpus {', '.join(repr(c) for c in unknown)} in {col.path}; "
                + (f"it has: {', '.join(_parents_and_children(known))}" if known else "it holds no document")
            )
    if flt.languages:
        spoken = sorted({lang for c in infos for lang in c.languages if lang != "?"})
        unknown = [lang for lang in flt.languages if lang not in spoken]
        if unknown:
            raise TraceError(
                f"{names.language}: no document in {col.path} is in {', '.join(repr(x) for x in unknown)}; "
                + (f"its languages: {', '.join(spoken)}" if spoken else "its documents name no language")
            )


def _parents_and_children(corpora: Sequence[str]) -> list[str]:
    """Every name a corpus filter accepts: each sub-corpus and each parent above one (`letemps`, `letemps/gdl`)."""
    names = set(corpora)
    for corpus in corpora:
        parts = corpus.split("/")
        names.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return sorted(names)
