"""A selection's accepted sources for a reference manager (RIS, CSL-JSON) or a spreadsheet (CSV), with their
cited spans: the same writers as a run's export (`trail/export.py`), each source joined with its document the
same way, and the researcher's decision (who, when, the note, the run it came from) in its reasons."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from tracerag.collection import Collection
from tracerag.model import Document
from tracerag.research.selection import SelectionEntry
from tracerag.trail.export import ExportedSource, PageRegion, joined_source, with_regions, write_sources

ORIGIN = "selection"  # what the export's origin column says of a source the researcher accepted


def decision_reason(entry: SelectionEntry) -> str:
    reason = f"{entry.decision.value} by {entry.who or 'unknown'} on {entry.when}"
    return f"{reason}: {entry.note}" if entry.note else reason


def selection_sources(entries: Sequence[SelectionEntry], documents: Mapping[str, Document]) -> list[ExportedSource]:
    """The entries in the selection's order, each joined with its document (a document the collection no longer
    holds is still exported, flagged)."""
    return [
        joined_source(
            run_id=entry.run_id or "",
            question=entry.question,
            rank=n,
            doc_id=entry.doc_id,
            chunk_id=entry.chunk_id,
            span=entry.span,
            doc=documents.get(entry.doc_id),
            origin=ORIGIN,
            reasons=[decision_reason(entry)],
        )
        for n, entry in enumerate(entries, start=1)
    ]


def export_selection(
    entries: Sequence[SelectionEntry],
    documents: Mapping[str, Document],
    fmt: str,
    *,
    regions: Callable[[Sequence[ExportedSource]], Sequence[list[PageRegion]]] | None = None,
) -> str:
    """`entries` (a selection's accepted ones, as a rule) as csv, ris or csl-json; with `regions`
    (`trail.export.source_regions` bound to the collection), each cited span's page regions as well."""
    sources = selection_sources(entries, documents)
    if regions is not None:
        sources = with_regions(sources, regions(sources))
    return write_sources(sources, fmt)


def export_accepted(
    entries: Sequence[SelectionEntry], col: Collection | None, fmt: str, *, iiif_base: str | None = None
) -> str:
    """`entries` as `fmt`, joined with their documents in `col` and each cited span's page regions where the
    collection keeps ALTO boxes (`iiif_base`, else the collection's `regions.iiif_base`); with no collection
    (its folder gone), the entries alone (the CLI's `selection export` and the web app's)."""
    if col is None:
        return export_selection(entries, {}, fmt)
    from tracerag.trail.export import source_regions

    documents = col.store.get_documents(sorted({e.doc_id for e in entries}))
    return export_selection(
        entries,
        documents,
        fmt,
        regions=lambda sources: source_regions(
            sources,
            documents,
            col.store.boxes_in,
            iiif_base=iiif_base or col.settings.regions.iiif_base,
            dpi=col.settings.regions.dpi,
        ),
    )
