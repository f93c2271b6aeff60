"""Build a catalog folder: `catalog.sqlite` (exact fields, `CatalogStore`) and `collection/` (a TRACE collection
of the records' free text, for hybrid search). Both are keyed by the record id.

The store is written to a temporary file and moved into place, so a failed build leaves the previous catalog as
it was. The collection is updated in place (unchanged records are no-ops); records gone from the source are
removed from it, so that every id text search finds is a record of the store.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracerag.catalog.hsds import HsdsStats, read_hsds, read_taxonomy
from tracerag.catalog.mapping import read_mapped
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.store import CatalogStore
from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.errors import ConfigError, RecordError
from tracerag.model import Document

CORPUS = "services"
# The language of the records' texts: the text index stems them, and so does `topic_match`, with its Snowball
# stemmer. One value for every catalog until per-catalog profiles say otherwise.
LANGUAGE = "en"


@dataclass
class CatalogReport:
    """What `build_catalog` read and wrote. `skipped` holds every RecordError (file:line and why)."""

    records: int = 0
    skipped: list[RecordError] = field(default_factory=list)
    services: int = 0
    organizations: int = 0
    with_hours: int = 0  # records with any schedule (openings or text)
    with_parsed_hours: int = 0  # records with openings
    hours_text_only: int = 0  # a schedule text no opening could be read from
    hours_rows_disagree: int = 0  # HSDS: schedule rows that contradict their own original_text (the text is used)
    cities: int = 0
    zips: int = 0
    eligibility_rows: int = 0
    eligibility_unlinked: int = 0  # eligibility rows that name no known service
    documents: int = 0  # documents in the collection after the build
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "skipped": [str(e) for e in self.skipped],
            "services": self.services,
            "organizations": self.organizations,
            "with_hours": self.with_hours,
            "with_parsed_hours": self.with_parsed_hours,
            "hours_text_only": self.hours_text_only,
            "hours_rows_disagree": self.hours_rows_disagree,
            "cities": self.cities,
            "zips": self.zips,
            "eligibility_rows": self.eligibility_rows,
            "eligibility_unlinked": self.eligibility_unlinked,
            "documents": self.documents,
            "seconds": round(self.seconds, 2),
        }


def record_document(record: ServiceRecord) -> Document:
    """The collection's view of a record: its free text, titled by its name, with city and zip as fields."""
    fields = {k: v for k, v in (("city", record.city), ("zip", record.zip)) if v}
    return Document(
        id=record.id, text=record.text(), corpus=CORPUS, title=record.name, language=LANGUAGE, fields=fields
    )


def build_catalog(
    source: Path,
    target: Path,
    settings: Settings,
    *,
    fmt: str = "hsds",
    mapping: Mapping[str, Any] | None = None,
    dense: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> CatalogReport:
    """Read `source` (an HSDS datapackage folder, or with fmt="mapped" one CSV/JSONL file and its `mapping`) into
    `target/catalog.sqlite` and `target/collection`. `dense` also embeds the texts; `progress(read, chunks)` is
    the collection ingest's."""
    start = time.perf_counter()
    source, target = Path(source), Path(target)
    report = CatalogReport()
    stats = HsdsStats()
    terms: dict[str, str] = {}
    if fmt == "hsds":
        if not source.is_dir():
            raise ConfigError(f"{source}: an HSDS datapackage is a folder (services.csv, locations.csv, ...)")
        items = read_hsds(source, stats)
        terms = read_taxonomy(source)
    elif fmt == "mapped":
        if mapping is None:
            raise ConfigError("fmt='mapped' needs a mapping of ServiceRecord fields to columns")
        items = read_mapped(source, mapping)
    else:
        raise ConfigError(f"catalog format {fmt!r}: expected 'hsds' or 'mapped'")

    records: dict[str, ServiceRecord] = {}
    for item in items:
        if isinstance(item, RecordError):
            report.skipped.append(item)
        elif item.id in records:
            report.skipped.append(RecordError(f"duplicate record id {item.id!r}", file=str(source)))
        else:
            records[item.id] = item

    target.mkdir(parents=True, exist_ok=True)
    final = target / "catalog.sqlite"
    partial = target / "catalog.sqlite.partial"
    partial.unlink(missing_ok=True)
    store = CatalogStore.create(partial)
    try:
        store.put(records.values())
        if terms:
            store.put_terms(terms)
    finally:
        store.close()
    os.replace(partial, final)

    with Collection.open(target / "collection", settings, mode="write", create=True) as col:
        col.ingest((record_document(r) for r in records.values()), dense=dense, progress=progress)
        if col.store.count_documents() > len(records):
            stale = [d.id for d in col.store.iter_documents() if d.id not in records]
            col.engine.delete(stale)
            col.store.delete(stale)
        report.documents = col.store.count_documents()

    values = list(records.values())
    report.records = len(values)
    report.services = stats.services if fmt == "hsds" else len({r.service_id for r in values})
    report.organizations = stats.organizations if fmt == "hsds" else len({r.organization for r in values} - {""})
    report.with_hours = sum(bool(r.openings or r.hours_text) for r in values)
    report.with_parsed_hours = sum(bool(r.openings) for r in values)
    report.hours_text_only = sum(bool(r.hours_text and not r.openings) for r in values)
    report.hours_rows_disagree = stats.rows_disagree
    report.cities = len({r.city for r in values} - {""})
    report.zips = len({r.zip for r in values} - {""})
    report.eligibility_rows = stats.eligibility_rows
    report.eligibility_unlinked = stats.eligibility_unlinked
    report.seconds = time.perf_counter() - start
    return report
