"""Read a 211 resource export (`--format 211-export`): the one-wide-row-per-resource CSV that I&R software writes,
with the AIRS/211 LA taxonomy. Recognised by its header (`is_211_export`).

Shape. Every row is a resource with a level (`TaxonomyLevelName`): an Agency (the organisation: its description,
phones, taxonomy), a Site (a place where the agency serves, under `ParentAgencyNum`: its own address and hours),
a Program (a service of the agency, with its own taxonomy codes and eligibility) or a ProgramAtSite (a program at
a site: `ConnectsToProgramNum`, `ConnectsToSiteNum`). One `ServiceRecord` per place a service is offered:

- a Site is a record: its name, address, hours and coordinates, and, where it states none of its own, its
  agency's description, phones, languages, accessibility, taxonomy, web site and email; `service_id` is the
  agency's (one service, many sites) and `organization` the agency's name;
- a Program is a record (its address, else its agency's); a ProgramAtSite is one too, named after its program,
  at its site's address;
- an Agency is a record only when no kept Site lists it as parent (its services are otherwise listed at its
  sites, one of which is almost always the agency's own address).

What the export gets wrong, and what is done about it:

- rows end with a lone CR (old Mac line ends): read as line ends;
- the line breaks inside a cell were dropped ("Monday-Friday, 9AM-6PMSaturday, 9AM-4PM", "SpanishTagalog"):
  put back before a weekday name in hours, and between glued words in language cells (`clean.unglue`);
- hours are written on the 12-hour clock without am/pm ("Monday-Friday, 9-5"): made explicit
  (`clean.bare_hours_12h`); an hours text with a date in it (a season, a one-off clinic) gives no openings and
  is kept as written;
- the taxonomy comes as codes with linked parts ("RX-8450.7000-700 * YS-2000.9500": a service for a target
  population; `clean.split_terms`) named by the parallel `TaxonomyTerm` column, or, for agencies, as one term
  name without its code (`Tax`): named terms take the code the file gives that name elsewhere, else an id made
  from the name ("food_pantries");
- inactive resources and those marked to be left out of the directory are still in the file: rows with
  `AgencyStatus` Inactive or `ExcludeFromDirectory` Yes are filtered out (a site of an inactive agency too) and
  counted by reason; a `--mapping` file may set other row options (`catalog.rows`: filter, exclude, null,
  aliases);
- a private address (`PhysicalAddressIsPrivate` Yes: a shelter's location) is not published: the record keeps
  its city and postal code only; private phones are left out, and so are fax lines;
- the accessibility checklist also holds values that state no feature ("Not wheelchair accessible at this
  time", "Not necessary for service", "Varies according to location"): left out;
- "NA" / "N/A" cells are empty;
- what a person needs to judge a record (`catalog.record_details`): the status as written (`AgencyStatus`, the
  record's, else its agency's: "Active, but do not refer" is kept, and excluded when recommending,
  `catalog.record_status`), `LastVerifiedOn` and `UpdatedOn` (month first, as the export writes them: "6/21/10"),
  the `TemporaryMessage` between `TemporaryMessageAppears` and `TemporaryMessageExpires`, `AvailabilityPeriod`
  and `ServiceNotAlwaysAvailability`, and each phone's name, type and description (else the kind its column
  names: "toll free", "hotline").

A malformed row (wrong column count, no id, a duplicate id, no name anywhere) is a `RecordError` with its line; a
coordinate that is not a number costs the record its coordinates, with an error for its line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tracerag.catalog.clean import (
    bare_hours_12h,
    canonical,
    canonical_forms,
    clean_languages,
    clean_text,
    is_dated,
    split_terms,
    unglue,
)
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.places import coverage_entries
from tracerag.catalog.record_details import iso
from tracerag.catalog.rows import ROW_OPTIONS, ReadStats, Row, RowOptions, cell_key
from tracerag.catalog.schedule import parse_hours_text
from tracerag.catalog.words import WordList
from tracerag.errors import ConfigError, RecordError, Where
from tracerag.ingest import RecordWarning
from tracerag.ingest.encoding import asked_encoding
from tracerag.ingest.table import iter_rows, rows_of_width
from tracerag.text import fold_key

FORMAT = "211-export"
REQUIRED_COLUMNS = ("ResourceAgencyNum", "PublicName", "TaxonomyLevelName", "ParentAgencyNum")
DEFAULT_OPTIONS = RowOptions(
    drop={"AgencyStatus": frozenset({"inactive"}), "ExcludeFromDirectory": frozenset({"yes"})},
    nulls=frozenset({"na", "n/a"}),
)
_PHONES = (
    *(f"Phone{i}" for i in range(1, 6)),
    "PhoneTollFree",
    "PhoneNumberHotline",
    "PhoneNumberBusinessLine",
)
_NO_FEATURE = re.compile(r"\bnot (?:wheelchair accessible|necessary)\b|\bvar(?:y|ies) according\b", re.IGNORECASE)
_TRUE = frozenset({"yes", "true", "1"})
DATE_ORDER = "mdy"  # how the export writes dates ("6/21/10")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_SLUG = re.compile(r"[^a-z0-9]+")
_LIST = re.compile(r"\s*;\s*")

Read = ServiceRecord | RecordError | RecordWarning


def is_211_export(header: list[str]) -> bool:
    """Whether a CSV header is a 211 resource export's."""
    names = {h.strip() for h in header}
    return all(c in names for c in REQUIRED_COLUMNS)


def sniff(path: Path, encoding: str | None = None) -> bool:
    """Whether `path` is a CSV file whose header is a 211 export's."""
    for item in iter_rows(Path(path), encoding=asked_encoding(encoding), repair=True):
        if isinstance(item, tuple):
            return is_211_export(item[1])
        if isinstance(item, RecordError):
            return False
    return False


def options_from(mapping: Mapping[str, Any] | None) -> tuple[RowOptions, str | None]:
    """The row options (and encoding) a `--mapping` file sets for a 211 export: only `encoding` and the row
    options (filter, exclude, null, aliases) apply, each replacing the reader's default."""
    if not mapping:
        return DEFAULT_OPTIONS, None
    unknown = sorted(set(mapping) - {*ROW_OPTIONS, "encoding"})
    if unknown:
        raise ConfigError(
            f"mapping: {unknown} do not apply to a 211 export (its columns are known); "
            f"expected some of {sorted({*ROW_OPTIONS, 'encoding'})}"
        )
    encoding = mapping.get("encoding")
    if encoding is not None:
        if not isinstance(encoding, str):
            raise ConfigError(f"mapping: encoding must be a codec name, not {encoding!r}")
        asked_encoding(encoding)
    return RowOptions.parse(mapping, defaults=DEFAULT_OPTIONS), encoding


class _Row(Row):
    """A row of the export, with the columns that link it to its program and agency."""

    __slots__ = ()

    @property
    def id(self) -> str:
        return self["ResourceAgencyNum"]

    @property
    def level(self) -> str:
        return cell_key(self["TaxonomyLevelName"])


def read_211_export(
    path: Path,
    mapping: Mapping[str, Any] | None = None,
    stats: ReadStats | None = None,
    words: WordList | None = None,
) -> Iterator[Read]:
    """One ServiceRecord per place a service is offered (see the module docstring); RecordErrors for bad rows,
    RecordWarnings for what was repaired; `stats` counts the rows filtered out by reason and the countries;
    `words` (the catalog's word list; the packaged default when None) names the languages of language cells."""
    path = Path(path)
    options, encoding = options_from(mapping)
    stats = stats if stats is not None else ReadStats()
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    out: list[Read] = []
    items = iter_rows(path, encoding=asked_encoding(encoding), repair=True)
    names = _header(items, path, options, out)
    if isinstance(names, RecordError):
        yield from out
        yield names
        return
    rows = _rows(items, names, path, options, stats, out)
    kept = _kept(rows, options, stats)
    with_sites = {r["ParentAgencyNum"] for r in kept.values() if r.level in ("site", "programatsite")}
    reader = _Reader(rows, *_term_table(rows.values()), str(path), words)
    records: list[ServiceRecord] = []
    for row in kept.values():
        if row.level == "agency" and row.id in with_sites:
            continue
        for read in reader.record(row):
            out.append(read)
            if isinstance(read, ServiceRecord):
                records.append(read)
                country = " ".join(reader.place(row)["PhysicalCountry"].split())
                if country:
                    stats.countries[country] += 1
    _spelt_alike(records, options)
    yield from out


def _header(items: Iterator[Any], path: Path, options: RowOptions, out: list[Read]) -> list[str] | RecordError:
    """The column names (warnings about the repairs before them go to `out`), or why the file is not a 211
    export: no header, or a required column (or one the row options name) missing."""
    header = None
    for item in items:
        if isinstance(item, RecordWarning):
            out.append(item)
            continue
        header = item
        break
    if header is None or isinstance(header, RecordError):
        return RecordError("empty file (no header)" if header is None else header.reason, file=str(path))
    names = [n.strip() for n in header[1]]
    missing = [c for c in (*REQUIRED_COLUMNS, *options.columns()) if c not in names]
    if missing:
        return RecordError(f"not a 211 export: missing columns {missing}", file=str(path))
    return names


def _rows(
    items: Iterator[Any], names: list[str], path: Path, options: RowOptions, stats: ReadStats, out: list[Read]
) -> dict[str, _Row]:
    """The rows by ResourceAgencyNum, null cells emptied; a row without one, or a second row of one, is an error
    (into `out`, with the readers' errors and warnings)."""
    rows: dict[str, _Row] = {}
    for item in rows_of_width(items, len(names), path):
        if isinstance(item, RecordError | RecordWarning):
            out.append(item)
            continue
        line, cells = item
        stats.rows += 1
        row = _Row(line, {n: ("" if options.is_null(c) else c.strip()) for n, c in zip(names, cells, strict=True)})
        if not row.id:
            out.append(RecordError("row without ResourceAgencyNum", file=str(path), line=line))
        elif row.id in rows:
            out.append(RecordError(f"duplicate ResourceAgencyNum {row.id!r}", file=str(path), line=line))
        else:
            rows[row.id] = row
    return rows


def _kept(rows: dict[str, _Row], options: RowOptions, stats: ReadStats) -> dict[str, _Row]:
    """The rows the row options keep, they and their agency; those left out are counted by reason."""
    kept: dict[str, _Row] = {}
    for rid, row in rows.items():
        why = options.excluded(row.cells)
        parent = rows.get(row["ParentAgencyNum"]) if row["ParentAgencyNum"] not in ("", "0", rid) else None
        if why is None and parent is not None and options.excluded(parent.cells):
            why = f"its agency: {options.excluded(parent.cells)}"
        if why:
            stats.filtered[why] += 1
        else:
            kept[rid] = row
    return kept


def _spelt_alike(records: list[ServiceRecord], options: RowOptions) -> None:
    """The mapping's aliases applied; cities and counties in the export's most common form."""
    for record in records:
        for name in ("city", "county", "state", "organization"):
            setattr(record, name, options.alias(name, getattr(record, name)))
        record.languages = list(dict.fromkeys(options.alias("languages", v) for v in record.languages))
    for name in ("city", "county"):
        forms = canonical_forms(getattr(r, name) for r in records)
        for record in records:
            setattr(record, name, canonical(getattr(record, name), forms))


def _term_table(rows: Any) -> tuple[dict[str, str], dict[str, str]]:
    """(folded term name → code, code → name) from the rows whose codes and names are parallel (programs): the
    primary terms from `TaxonomyTerm`, the linked parts from `TaxonomyTermsNotDeactivated` where it lists every
    term (it leaves deactivated ones out). A name given alone (an agency's `Tax`) then takes its code."""
    by_name: dict[str, str] = {}
    by_code: dict[str, str] = {}

    def add(code: str, name: str) -> None:
        name = clean_text(name)
        if name:
            by_name.setdefault(fold_key(name), code)
            by_code.setdefault(code, name)

    for row in rows:
        codes = split_terms(row["TaxonomyCodes"])
        if not codes:
            continue
        names = [n for n in _LIST.split(row["TaxonomyTerm"]) if n]
        if len(codes) == len(names):
            for term, name in zip(codes, names, strict=True):
                add(term[0], name)
        linked = _LIST.split(row["TaxonomyTermsNotDeactivated"])
        if len(linked) == len(codes):
            for term, named in zip(codes, linked, strict=True):
                parts = [p.strip() for p in named.split("*")]
                if len(parts) == len(term):
                    for code, name in zip(term, parts, strict=True):
                        add(code, name)
    return by_name, by_code


class _Reader:
    def __init__(
        self,
        rows: Mapping[str, _Row],
        code_of: Mapping[str, str],
        name_of: Mapping[str, str],
        file: str,
        words: WordList | None = None,
    ):
        self.rows, self.code_of, self.name_of, self.file, self.words = rows, code_of, name_of, file, words

    def parent(self, row: _Row) -> _Row | None:
        pid = row["ParentAgencyNum"]
        return self.rows.get(pid) if pid not in ("", "0", row.id) else None

    def program(self, row: _Row) -> _Row | None:
        return self.rows.get(row["ConnectsToProgramNum"]) if row.level == "programatsite" else None

    def place(self, row: _Row) -> _Row:
        """The row whose address a record takes: a ProgramAtSite's site; a row without an address, its agency."""
        if row.level == "programatsite" and row["ConnectsToSiteNum"] in self.rows:
            return self.rows[row["ConnectsToSiteNum"]]
        if not (row["PhysicalAddress1"] or row["PhysicalPostalCode"]):
            parent = self.parent(row)
            if parent is not None:
                return parent
        return row

    def lineage(self, row: _Row) -> list[_Row]:
        """The rows a record takes what it lacks from, nearest first: itself, its program, its agency."""
        out = [row]
        for other in (self.program(row), self.parent(row)):
            if other is not None and other not in out:
                out.append(other)
        return out

    def record(self, row: _Row) -> list[Read]:
        """The row's record, what it lacks taken from its program and agency (`lineage`), and an error for
        coordinates that cannot be read (the record is kept without them); a row without a name is an error."""
        where: Where = {"file": self.file, "line": row.line}
        lineage = self.lineage(row)
        name = clean_text(next((r["PublicName"] for r in lineage[:2] if r["PublicName"]), "")) or clean_text(
            row["AlternateName"]
        )
        if not name:
            return [RecordError(f"resource {row.id} has no name", **where)]
        parent = self.parent(row)
        place = self.place(row)
        private = cell_key(place["PhysicalAddressIsPrivate"]) in _TRUE
        record = ServiceRecord(
            id=row.id,
            service_id=_service_id(row, parent),
            name=name,
            organization=clean_text(parent["PublicName"] if parent else row["ParentAgency"]) or name,
            description=_first(lineage, "AgencyDescription"),
            application_process=_first(lineage, "ApplicationProcess", "DocumentsRequired"),
            fees=_first(lineage, "FeeStructureSource"),
            eligibility=_first(lineage, "Eligibility"),
            address="" if private else _street(place),
            city=" ".join(place["PhysicalCity"].split()),
            state=place["PhysicalStateProvince"],
            zip=place["PhysicalPostalCode"],
            county=" ".join(place["PhysicalCounty"].split()),
            url=_first(lineage, "WebsiteAddress"),
            email=_first(lineage, "EmailAddressMain"),
        )
        record.phones = next((p for p in (_phones(r) for r in lineage) if p), [])
        owner = next((r for r in lineage if _phones(r) == record.phones), row)
        record.phone_labels = _phone_labels(owner, record.phones)
        record.status = next((clean_text(r["AgencyStatus"]) for r in lineage if r["AgencyStatus"]), "")
        _dates(record, row)
        self._inherited(record, lineage)
        hours = clean_text(row["HoursOfOperation"] or row["Hours"] or place["HoursOfOperation"])
        record.hours_text = hours
        read = bare_hours_12h(unglue(hours, weekdays_only=True))
        record.openings = [] if is_dated(read) else parse_hours_text(read)
        coords = _coordinates(row, place)
        if isinstance(coords, str):
            return [RecordError(f"resource {row.id}: {coords}", **where), record]
        record.latitude, record.longitude = coords
        return [record]

    def _inherited(self, record: ServiceRecord, lineage: list[_Row]) -> None:
        """Languages, accessibility, taxonomy and the places served: the first of the lineage that gives any."""
        record.languages = next(
            (
                n
                for n in (clean_languages([unglue(clean_text(r["LanguagesOffered"]))], self.words) for r in lineage)
                if n
            ),
            [],
        )
        record.accessibility = next((a for a in (_access(r) for r in lineage) if a), [])
        record.taxonomy = next((t for t in (self.terms(r) for r in lineage) if t), [])
        record.service_areas = next((a for a in (coverage_entries(r[c] for c in _COVERAGE) for r in lineage) if a), [])

    def terms(self, row: _Row) -> list[tuple[str, str]]:
        """A row's taxonomy: its codes, named from the parallel column or the file's other rows; else its one
        term name (`Tax`), under the code the file gives that name, else an id made from the name."""
        codes = split_terms(row["TaxonomyCodes"])
        names = [n for n in _LIST.split(row["TaxonomyTerm"]) if n]
        terms: dict[str, str] = {}
        for i, term in enumerate(codes):
            for j, code in enumerate(term):
                name = names[i] if j == 0 and len(names) == len(codes) else self.name_of.get(code, "")
                terms.setdefault(code, clean_text(name))
        if not terms and row["Tax"]:
            name = clean_text(row["Tax"])
            terms[self.code_of.get(fold_key(name)) or _SLUG.sub("_", fold_key(name)).strip("_")] = name
        return list(terms.items())


_COVERAGE = ("Coverage", "CoverageArea", "CoverageAreaText")  # the places a resource serves (`catalog.places`)


def _first(lineage: list[_Row], *columns: str) -> str:
    """The columns' texts of the first row of the lineage that has any, one paragraph each."""
    for r in lineage:
        text = "\n\n".join(t for t in (clean_text(r[c]) for c in columns) if t)
        if text:
            return text
    return ""


def _dates(record: ServiceRecord, row: _Row) -> None:
    """The row's own dates and notices: verification, update, the temporary message and its dates, the periods
    it is available in."""
    record.last_verified = iso(row["LastVerifiedOn"], DATE_ORDER)
    record.last_updated = iso(row["UpdatedOn"], DATE_ORDER)
    record.temporary_message = clean_text(row["TemporaryMessage"])
    if record.temporary_message:
        record.temporary_message_from = iso(row["TemporaryMessageAppears"], DATE_ORDER)
        record.temporary_message_until = iso(row["TemporaryMessageExpires"], DATE_ORDER)
    periods = (clean_text(row[c]) for c in ("AvailabilityPeriod", "ServiceNotAlwaysAvailability"))
    record.availability = "; ".join(p for p in periods if p)


def _coordinates(row: _Row, place: _Row) -> tuple[float | None, float | None] | str:
    """(latitude, longitude) of the row, else of its place; (None, None) when neither gives any; what is wrong
    with them when they are not numbers or out of range."""
    lat, lon = row["Latitude"] or place["Latitude"], row["Longitude"] or place["Longitude"]
    if not (lat or lon):
        return None, None
    try:
        la, lo = float(lat), float(lon)
    except ValueError:
        return f"coordinates {lat!r}, {lon!r} are not numbers"
    if -90 <= la <= 90 and -180 <= lo <= 180:
        return la, lo
    return f"coordinates {lat!r}, {lon!r} out of range"


def _phones(row: _Row) -> list[str]:
    out: list[str] = []
    for prefix in _PHONES:
        number_column = f"{prefix}Number" if prefix.startswith("Phone") and prefix[5:].isdigit() else prefix
        private_column = f"{prefix}IsPrivate"
        number = " ".join(row[number_column].split())
        if number and cell_key(row[private_column]) not in _TRUE and number not in out:
            out.append(number)
    return out


def _phone_labels(row: _Row, numbers: list[str]) -> dict[str, str]:
    """Each number's name, type and description as the row gives them ("Intake", "24 hours daily"), else the kind
    of number its column names ("toll free", "hotline"); numbers of the numbered columns without any: none."""
    labels: dict[str, str] = {}
    for prefix in _PHONES:
        numbered = prefix[5:].isdigit()
        number = " ".join(row[f"{prefix}Number" if numbered else prefix].split())
        if number not in numbers or number in labels:
            continue
        parts = [row[f"{prefix}{c}"] for c in ("Name", "Type", "Description")] if numbered else []
        if not numbered:
            kind = _CAMEL.sub(" ", prefix.removeprefix("Phone").removeprefix("Number")).lower()
            parts = [kind, row[f"{prefix}Description"]]
        label = ", ".join(dict.fromkeys(p for p in (clean_text(x) for x in parts) if p))
        if label:
            labels[number] = label
    return labels


def _service_id(row: _Row, parent: _Row | None) -> str:
    """A site offers its agency's service (one service, many sites); a program at a site, its program."""
    if row.level == "site" and parent is not None:
        return parent.id
    return row["ConnectsToProgramNum"] or row.id


def _street(row: _Row) -> str:
    return ", ".join(p for p in (clean_text(row[c]) for c in ("PhysicalAddress1", "PhysicalAddress2")) if p)


def _access(row: _Row) -> list[str]:
    values = (clean_text(v) for v in row["DisabilitiesAccess"].split(";"))
    return list(dict.fromkeys(v for v in values if v and not _NO_FEATURE.search(v)))
