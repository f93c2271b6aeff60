"""Build a catalog folder: `catalog.sqlite` (exact fields, `CatalogStore`) and `collection/` (a TRACE collection
of the records' free text, for hybrid search), both keyed by the record id, and beside them `profile.toml`: the
catalog's locale and regional conventions, inferred from the records (`profile_inference`) and editable.

The store is written to a temporary file and moved into place, so a failed build leaves the previous catalog as
it was. The collection is updated in place (unchanged records are no-ops); records gone from the source are
removed from it, so that every id text search finds is a record of the store.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pycountry

from tracerag.catalog import export211
from tracerag.catalog.gazetteer import load_places
from tracerag.catalog.hsds import HsdsStats, read_hsds, read_taxonomy
from tracerag.catalog.mapping import read_mapped
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.profile_inference import Inference, infer, write_profile
from tracerag.catalog.record_status import do_not_refer_statuses
from tracerag.catalog.rows import ReadStats
from tracerag.catalog.store import CatalogStore
from tracerag.catalog.words import WordList
from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.errors import ConfigError, NothingIngestedError, RecordError
from tracerag.ingest import RecordWarning
from tracerag.model import Document

CORPUS = "services"
# The language of a catalog's texts when its profile names none (the text index stems them, and so does
# `topic_match`): `CatalogProfile.language` is the catalog's own, set by `catalog ingest --language`.
LANGUAGE = "en"
PLACES_FILE = "places.toml"  # a places file given at ingest, copied beside the profile
FORMATS = ("auto", "hsds", export211.FORMAT, "mapped")


@dataclass
class CatalogReport:
    """What `build_catalog` read and wrote. `skipped` holds every RecordError (file:line and why), `warnings` what
    a reader repaired in a record it kept, `filtered` the rows the row options left out, by reason."""

    format: str = ""
    records: int = 0
    skipped: list[RecordError] = field(default_factory=list)
    warnings: list[RecordWarning] = field(default_factory=list)
    filtered: dict[str, int] = field(default_factory=dict)
    services: int = 0
    organizations: int = 0
    with_hours: int = 0  # records with any schedule (openings or text)
    with_parsed_hours: int = 0  # records with openings
    hours_text_only: int = 0  # a schedule text no opening could be read from
    hours_rows_disagree: int = 0  # HSDS: schedule rows that contradict their own original_text (the text is used)
    cities: int = 0
    zips: int = 0
    with_taxonomy: int = 0  # records tagged with at least one taxonomy term
    eligibility_rows: int = 0
    eligibility_unlinked: int = 0  # eligibility rows that name no known service
    documents: int = 0  # documents in the collection after the build
    profile: str = ""  # the profile written beside the catalog
    profile_inferred: dict[str, str] = field(default_factory=dict)  # field -> "value (how it was inferred)"
    profile_kept: dict[str, Any] = field(default_factory=dict)  # every value a person had set, kept
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "records": self.records,
            "skipped": [str(e) for e in self.skipped],
            "warnings": [str(w) for w in self.warnings],
            "filtered": dict(self.filtered),
            "services": self.services,
            "organizations": self.organizations,
            "with_hours": self.with_hours,
            "with_parsed_hours": self.with_parsed_hours,
            "hours_text_only": self.hours_text_only,
            "hours_rows_disagree": self.hours_rows_disagree,
            "cities": self.cities,
            "zips": self.zips,
            "with_taxonomy": self.with_taxonomy,
            "eligibility_rows": self.eligibility_rows,
            "eligibility_unlinked": self.eligibility_unlinked,
            "documents": self.documents,
            "profile": self.profile,
            "profile_inferred": dict(self.profile_inferred),
            "profile_kept": dict(self.profile_kept),
            "seconds": round(self.seconds, 2),
        }


def inferred_values(inference: Inference) -> dict[str, str]:
    """What the ingest inferred, for the report: each value and how it was found ("US (addresses: 4,058 of
    4,059 records)"), with the values read along with it (the region's aliases, the postal-code prefix)."""
    values = inference.values

    def shown(value: Any) -> str:
        if isinstance(value, dict):
            if set(value) == {"label", "number"}:  # a profile phone number, as a reply gives it ("911: Emergency")
                return f"{value['number']}: {value['label']}"
            return ", ".join(f"{k} → {v}" for k, v in value.items())
        if isinstance(value, list | tuple):
            return ("; " if any(isinstance(v, dict) for v in value) else ", ").join(map(shown, value))
        return str(value)

    out = {}
    for key, how in inference.how.items():
        value = shown(values.get(key))
        if key == "region" and values.get("region_aliases"):
            value += f", also {shown(values['region_aliases'])}"
        if key == "postal_code_pattern" and values.get("postal_code_prefix"):
            value += f", matched on its first {values['postal_code_prefix']} characters"
        out[key] = f"{value} ({how})"
    return out


def record_document(record: ServiceRecord, language: str = LANGUAGE) -> Document:
    """The collection's view of a record: its free text, titled by its name, with city and zip as fields."""
    fields = {k: v for k, v in (("city", record.city), ("zip", record.zip)) if v}
    return Document(
        id=record.id, text=record.text(), corpus=CORPUS, title=record.name, language=language, fields=fields
    )


def check_language(language: str | None) -> None:
    """A `--language` must be an ISO 639-1 code (the profile names word lists and stemmers by it)."""
    if language is None:
        return
    found = pycountry.languages.get(alpha_2=language.strip().lower()) if len(language.strip()) == 2 else None
    if found is None:
        raise ConfigError(f"--language {language!r}: expected an ISO 639-1 code such as en, es, fr")


def detect_format(source: Path, mapping: Mapping[str, Any] | None = None) -> str:
    """The reader for `source`: a folder is an HSDS datapackage; a mapping that names the id column maps a file;
    a CSV file with a 211 export's header is one (a mapping then only sets its row options); else the file needs
    a mapping."""
    source = Path(source)
    if source.is_dir():
        return "hsds"
    if not source.is_file():
        raise ConfigError(f"{source}: no such file or folder")
    if mapping and ("id" in mapping or "id" in (mapping.get("columns") or {})):
        return "mapped"
    encoding = mapping.get("encoding") if mapping else None
    if source.suffix.lower() not in (".jsonl", ".ndjson", ".json") and export211.sniff(source, encoding):
        return export211.FORMAT
    if mapping:
        return "mapped"
    raise ConfigError(
        f"{source}: not an HSDS datapackage folder nor a 211 export (its header lacks "
        f"{', '.join(export211.REQUIRED_COLUMNS)}): pass --mapping FILE naming which column fills which field "
        "(see the README, 'Mapping a directory')"
    )


def cell_words(language: str | None) -> WordList | None:
    """The word list that reads the directory's language cells: the packaged one of `--language` when there is
    one, else None (the readers' packaged default). The profile's own list (`words = ...`) is not read here: the
    profile is inferred after the records are read."""
    code = (language or LANGUAGE).strip().lower()
    try:
        return WordList.load(code)
    except ConfigError:
        return None


def build_catalog(
    source: Path,
    target: Path,
    settings: Settings,
    *,
    fmt: str = "auto",
    mapping: Mapping[str, Any] | None = None,
    dense: bool = False,
    progress: Callable[[int, int], None] | None = None,
    language: str | None = None,
    help_line: str | None = None,
    name: str | None = None,
    places: Path | None = None,
) -> CatalogReport:
    """Read `source` (an HSDS datapackage folder, a 211 export, or a CSV/JSONL file and its `mapping`) into
    `target/catalog.sqlite` and `target/collection`, and write the catalog's profile (`profile.toml`, inferred
    from the records and merged with what a person set; `language`, `help_line` and `name` win when given).
    `dense` also embeds the texts; `progress(read, chunks)` is the collection ingest's. `places`: a places file
    (`gazetteer.load_places`), checked against the records and copied beside the profile as `places.toml`,
    which the profile then names. A first ingest that reads no record raises NothingIngestedError (with the report)
    and writes nothing."""
    start = time.perf_counter()
    source, target = Path(source), Path(target)
    check_language(language)  # before anything is read or written
    if fmt not in FORMATS:
        raise ConfigError(f"catalog format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if fmt == "auto":
        fmt = detect_format(source, mapping)
    report = CatalogReport(format=fmt)
    words = cell_words(language)
    stats = HsdsStats()
    read_stats = ReadStats()
    items, terms = _reader(source, fmt, mapping, stats, read_stats, words)
    records = _collect(items, source, report)
    if not records and not (target / "catalog.sqlite").exists():
        # as a first `tracerag ingest`: nothing read, nothing written (exit 2), the report says what was skipped
        reason = (
            f"no record of {source} could be read ({len(report.skipped)} skipped)"
            if report.skipped
            else f"{source} holds no record"
        )
        raise NothingIngestedError(f"{reason}: no catalog was made in {target}", report)
    if fmt != "hsds":
        for record in records.values():
            terms.update((t, n) for t, n in record.taxonomy if n and t not in terms)
    values = list(records.values())
    given = {"language": language.strip().lower() if language else None, "help_line": help_line, "name": name}
    # the profile is checked before anything is written: a bad --language leaves the catalog as it was
    inference = infer(values, stats.countries if fmt == "hsds" else read_stats.countries)
    named = (mapping or {}).get("do_not_refer") if fmt == "mapped" else None
    _add_do_not_refer(inference, values, [named] if isinstance(named, str) else list(named or []), words)

    _write_store(target, records, terms, places)
    if places is not None:
        shutil.copyfile(places, target / PLACES_FILE)
        given["places"] = PLACES_FILE
    written = write_profile(target, inference, given)
    report.documents = _write_collection(target, values, settings, written.profile.language, dense, progress)
    _count(report, values, stats if fmt == "hsds" else None, read_stats)
    report.profile = str(written.path)
    report.profile_inferred = inferred_values(inference)
    report.profile_kept = written.kept
    report.seconds = time.perf_counter() - start
    return report


def _reader(
    source: Path,
    fmt: str,
    mapping: Mapping[str, Any] | None,
    stats: HsdsStats,
    read_stats: ReadStats,
    words: WordList | None,
) -> tuple[Iterable[ServiceRecord | RecordError | RecordWarning], dict[str, str]]:
    """The records of `source` as the format's reader yields them, and the taxonomy's names where the format
    keeps them apart (HSDS); a datapackage given with a mapping is refused."""
    if fmt == "hsds":
        if not source.is_dir():
            raise ConfigError(f"{source}: an HSDS datapackage is a folder (services.csv, locations.csv, ...)")
        if mapping:  # refused, not ignored: a row filter the user wrote must not be silently dropped
            raise ConfigError(
                f"{source}: an HSDS datapackage is read by its own column names and leaves out inactive and "
                "defunct services itself; --mapping applies to a 211 export (row options) or to one CSV/JSONL file"
            )
        return read_hsds(source, stats, words), read_taxonomy(source)
    if fmt == export211.FORMAT:
        return export211.read_211_export(source, mapping, read_stats, words), {}
    if mapping is None:
        raise ConfigError("fmt='mapped' needs a mapping of ServiceRecord fields to columns")
    return read_mapped(source, mapping, read_stats, words), {}


def _collect(
    items: Iterable[ServiceRecord | RecordError | RecordWarning], source: Path, report: CatalogReport
) -> dict[str, ServiceRecord]:
    """The records by id; errors, warnings and a second record of an id go to the report."""
    records: dict[str, ServiceRecord] = {}
    for item in items:
        if isinstance(item, RecordError):
            report.skipped.append(item)
        elif isinstance(item, RecordWarning):
            report.warnings.append(item)
        elif item.id in records:
            report.skipped.append(RecordError(f"duplicate record id {item.id!r}", file=str(source)))
        else:
            records[item.id] = item
    return records


def _add_do_not_refer(
    inference: Inference, values: list[ServiceRecord], named: list[str], words: WordList | None
) -> None:
    """The statuses a mapping names, and those whose words say not to refer (`catalog.record_status`), into the
    inferred profile."""
    do_not_refer = tuple(dict.fromkeys([*named, *do_not_refer_statuses(values, (words or WordList.load()).records)]))
    if do_not_refer:
        inference.values["do_not_refer"] = do_not_refer
        held = sum(r.status in do_not_refer for r in values)
        inference.how["do_not_refer"] = f"statuses named by the mapping or saying not to refer, on {held} records"


def _write_store(target: Path, records: dict[str, ServiceRecord], terms: dict[str, str], places: Path | None) -> None:
    """`catalog.sqlite`, written beside and moved into place: a failed build leaves the previous one."""
    target.mkdir(parents=True, exist_ok=True)
    partial = target / "catalog.sqlite.partial"
    partial.unlink(missing_ok=True)
    store = CatalogStore.create(partial)
    try:
        store.put(records.values())
        if terms:
            store.put_terms(terms)
        if places is not None:  # a name the records lack stops the ingest here, the catalog as it was
            load_places(Path(places), store.gazetteer())
    finally:
        store.close()
    os.replace(partial, target / "catalog.sqlite")


def _write_collection(
    target: Path,
    values: list[ServiceRecord],
    settings: Settings,
    language: str,
    dense: bool,
    progress: Callable[[int, int], None] | None,
) -> int:
    """The records' texts into `collection/`, records gone from the source removed; returns its documents."""
    ids = {r.id for r in values}
    with Collection.open(target / "collection", settings, mode="write", create=True) as col:
        col.ingest((record_document(r, language) for r in values), dense=dense, progress=progress)
        if col.store.count_documents() > len(ids):
            stale = [d.id for d in col.store.iter_documents() if d.id not in ids]
            col.engine.delete(stale)
            col.store.delete(stale)
        return col.store.count_documents()


def _count(report: CatalogReport, values: list[ServiceRecord], hsds: HsdsStats | None, read_stats: ReadStats) -> None:
    """The report's counts: an HSDS read's own (`hsds`), else those of the records and the row reader."""
    stats = hsds or HsdsStats()
    report.filtered = dict((hsds.filtered if hsds else read_stats.filtered).most_common())
    report.records = len(values)
    report.services = hsds.services if hsds else len({r.service_id for r in values})
    report.organizations = hsds.organizations if hsds else len({r.organization for r in values} - {""})
    report.with_hours = sum(bool(r.openings or r.hours_text) for r in values)
    report.with_parsed_hours = sum(bool(r.openings) for r in values)
    report.hours_text_only = sum(bool(r.hours_text and not r.openings) for r in values)
    report.hours_rows_disagree = stats.rows_disagree
    report.cities = len({r.city for r in values} - {""})
    report.zips = len({r.zip for r in values} - {""})
    report.with_taxonomy = sum(bool(r.taxonomy) for r in values)
    report.eligibility_rows = stats.eligibility_rows
    report.eligibility_unlinked = stats.eligibility_unlinked
