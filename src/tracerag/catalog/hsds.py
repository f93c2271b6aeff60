"""Read an Open Referral HSDS CSV datapackage into `ServiceRecord`s: one per service at a location.

Tables joined (all optional but services.csv): organizations, services_at_location, locations, physical_addresses,
phones, regular_schedules, languages, accessibility_for_disabilities, services_taxonomy, taxonomy, eligibility,
service_areas.
A service with one location (or none) keeps the service id; one with several gets "{service_id}@{location_id}".

What the exports get wrong, and what is done about it:

- text fields write line breaks as the two characters backslash-n: they become real newlines; HTML (`<br />`,
  `<p>`, `&amp;`) is removed (`clean.clean_text`, as for every reader);
- UTF-8 punctuation read as cp437 ("GÇÖ" for ’, "GÇô" for –): repaired, it is reversible. Letters damaged the
  same way lost a byte ("Mu+¦oz" for Muñoz) and are left as written;
- cities in several casings ("RIVERTON", "Riverton") take the catalog's most common form; states are stripped;
  zips stay strings as written (ZIP+4 included); the addresses' countries are counted for the profile
  (`HsdsStats.countries`);
- a `taxonomy_id` may be a linked (compound) AIRS term ("BD-1800.2000 * YB-8000"): each part is a term;
- languages are free text ("Spanish (limited)", "other languages available upon request"): kept are the language
  names (`clean_languages`), in the catalog's most common spelling ("Haitian-Creole" → "Haitian Creole"), dropped
  the notes about interpreters;
- schedules: the rows' weekday/opens_at/closes_at are derived from `original_text` and lose days when the text has
  several clauses or lists ("..., Mon-Fri;\\n..., Sat" gives a single Saturday row). The text is read first
  (`schedule.parse_hours_text`); the rows are used when it gives nothing. The text itself is kept as `hours_text`;
- descriptions end with service-area tags ("###MON###", "###COL###": codes of the export): removed from the
  text (they name the area served, not the location's county, so `county` stays empty when `region` is);
- services whose `status` is inactive or defunct are left out, counted by status (`HsdsStats.filtered`);
- what a reply shows beside the hours (`catalog.record_details`): the service's `status` as written (a status
  such as "temporarily closed" is shown), each phone's `type` and `description`, `holiday_schedules.csv` as the
  service's availability ("closed 2024-12-24 to 2024-12-26"), and the latest `last_action_date` of the service in
  `metadata.csv` as its last update (HSDS has no verification date);
- eligibility rows are tied to a service by their service_id; rows without one (all of them, in one real
  export) cannot be tied to anything and are only counted (`HsdsStats.eligibility_unlinked`), never guessed by
  row order.

A malformed row (wrong column count, a service without id or name, a duplicate service id, coordinates that are not
numbers) is yielded as a `RecordError` with its file and line, and the read goes on. A bad coordinate only costs
the record its coordinates.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tracerag.catalog.clean import canonical, canonical_forms, clean_languages, clean_text, term_parts
from tracerag.catalog.model import Opening, ServiceRecord
from tracerag.catalog.places import coverage_entries
from tracerag.catalog.record_details import iso
from tracerag.catalog.rows import Row, cell_key
from tracerag.catalog.schedule import openings_from_rows, parse_hours_text
from tracerag.catalog.words import WordList
from tracerag.errors import RecordError, Where
from tracerag.ingest import RecordWarning
from tracerag.ingest.table import iter_rows, rows_of_width

# HSDS service statuses (the specification's: active, inactive, defunct, temporarily closed) that are not listed.
_NOT_LISTED = frozenset({"inactive", "defunct"})

# -------------------------------------------------------------------------------------------------- tables


def read_table(path: Path) -> Iterator[Row | RecordError | RecordWarning]:
    """Rows of one CSV file with their first physical line; cells stripped. A row with another column count than
    the header, or not UTF-8, or bad CSV, is a RecordError. A missing file reads as empty."""
    if not path.is_file():
        return
    rows = iter_rows(path)
    header = next(rows, None)
    if header is None:
        return
    if isinstance(header, RecordError | RecordWarning):  # iter_rows warns only when it repairs, not here
        yield header
        return
    _, names = header
    names = [n.strip() for n in names]
    for item in rows_of_width(rows, len(names), path):
        if isinstance(item, RecordError | RecordWarning):
            yield item
            continue
        line, cells = item
        yield Row(line, {n: c.strip() for n, c in zip(names, cells, strict=True)})


@dataclass
class HsdsStats:
    """What a read found besides the records (filled while `read_hsds` runs)."""

    services: int = 0
    organizations: int = 0
    locations: int = 0
    schedule_rows: int = 0
    hours_from_text: int = 0  # records whose openings were read from original_text
    hours_from_rows: int = 0  # records whose openings came from the rows (the text gave nothing)
    rows_disagree: int = 0  # records whose complete rows say something else than their text
    eligibility_rows: int = 0
    eligibility_unlinked: int = 0
    countries: Counter[str] = field(default_factory=Counter)  # the addresses' country cells, as written
    filtered: Counter[str] = field(default_factory=Counter)  # services left out, by reason (their status)


def read_taxonomy(folder: Path) -> dict[str, str]:
    """Term id → name from taxonomy.csv (an id listed twice keeps its first name)."""
    names: dict[str, str] = {}
    for row in read_table(Path(folder) / "taxonomy.csv"):
        if isinstance(row, Row) and row["id"]:
            names.setdefault(row["id"], clean_text(row["name"]))
    return names


def read_hsds(
    folder: Path, stats: HsdsStats | None = None, words: WordList | None = None
) -> Iterator[ServiceRecord | RecordError | RecordWarning]:
    """One ServiceRecord per service at a location (see the module docstring); RecordErrors for bad rows: those
    of the other tables first, then the services' in file order, then those of services.csv itself."""
    folder = Path(folder)
    stats = stats if stats is not None else HsdsStats()
    errors: list[RecordError | RecordWarning] = []

    def table(name: str) -> list[Row]:
        rows = []
        for item in read_table(folder / name):
            if isinstance(item, RecordError | RecordWarning):
                errors.append(item)
            else:
                rows.append(item)
        return rows

    services_path = folder / "services.csv"
    if not services_path.is_file():
        yield RecordError("no services.csv: not an HSDS datapackage", file=str(folder))
        return
    tables = _Tables.read(table, read_taxonomy(folder), stats, words)
    yield from errors
    errors.clear()

    bad_locations: set[str] = set()
    seen: set[str] = set()
    for row in table("services.csv"):
        checked = _check_service(row, seen, {"file": str(services_path), "line": row.line})
        if isinstance(checked, RecordError):
            yield checked
        elif checked:
            stats.filtered[checked] += 1
        else:
            stats.services += 1
            yield from _service_records(row, tables, stats, bad_locations, str(folder / "locations.csv"))
    stats.eligibility_unlinked = tables.unlinked + sum(len(v) for k, v in tables.eligibility.items() if k not in seen)
    yield from errors


@dataclass
class _Tables:
    """The tables a service is joined with, indexed by the ids they are looked up by (`read` builds them)."""

    organizations: dict[str, str]  # id -> name
    locations: dict[str, Row]
    addresses: dict[str, Row]  # location id -> its first address
    cities: dict[str, str]  # the cities' most common forms (`canonical_forms`)
    at_location: dict[str, list[Row]]  # service id -> its services_at_location rows
    phones: _Linked
    holidays: _Linked
    updated: dict[str, str]  # resource id -> its latest last_action_date (ISO)
    languages: _Linked
    language_forms: dict[str, str]
    schedules: _Linked
    accessibility: dict[str, list[str]]  # location id -> its notes
    covered: dict[str, list[str]]  # service id -> the places it serves (HSDS service_area)
    term_names: dict[str, str]
    terms: dict[str, list[str]]  # service id -> taxonomy term ids (compound terms split)
    eligibility: dict[str, list[str]]  # service id -> its eligibility texts
    unlinked: int  # eligibility rows without a service id
    words: WordList | None = None

    @classmethod
    def read(
        cls, table: Callable[[str], list[Row]], term_names: dict[str, str], stats: HsdsStats, words: WordList | None
    ) -> _Tables:
        """The tables as `table` gives their rows (file name -> rows), read in a fixed order (so are their
        errors); fills the stats' table counts."""
        organizations = {r["id"]: clean_text(r["name"]) for r in table("organizations.csv") if r["id"]}
        locations = {r["id"]: r for r in table("locations.csv") if r["id"]}
        addresses: dict[str, Row] = {}
        for r in table("physical_addresses.csv"):
            addresses.setdefault(r["location_id"], r)
        at_location = _grouped(table("services_at_location.csv"), "service_id")
        phones, holidays = _index(table("phones.csv")), _index(table("holiday_schedules.csv"))
        updated = _latest_updates(table("metadata.csv"))
        language_rows = table("languages.csv")
        language_forms = canonical_forms(n for r in language_rows for n in clean_languages([r["language"]], words))
        schedules = _index(table("regular_schedules.csv"))
        accessibility = _texts(table("accessibility_for_disabilities.csv"), "location_id", "accessibility")
        covered = _texts(table("service_areas.csv"), "service_id", "service_area")
        terms: dict[str, list[str]] = defaultdict(list)
        for r in table("services_taxonomy.csv"):
            if r["service_id"] and r["taxonomy_id"]:
                terms[r["service_id"]].extend(term_parts(r["taxonomy_id"]))
        eligibility_rows = table("eligibility.csv")
        eligibility = _grouped(eligibility_rows, "service_id")
        stats.organizations, stats.locations = len(organizations), len(locations)
        stats.countries.update(c for c in (r["country"].strip() for r in addresses.values()) if c)
        stats.schedule_rows = schedules.count()
        stats.eligibility_rows += len(eligibility_rows)
        return cls(
            organizations=organizations,
            locations=locations,
            addresses=addresses,
            cities=canonical_forms(r["city"] for r in addresses.values()),
            at_location=at_location,
            phones=phones,
            holidays=holidays,
            updated=updated,
            languages=_index(language_rows),
            language_forms=language_forms,
            schedules=schedules,
            accessibility=accessibility,
            covered=covered,
            term_names=term_names,
            terms=terms,
            eligibility={sid: [clean_text(r["eligibility"]) for r in rows] for sid, rows in eligibility.items()},
            unlinked=sum(not r["service_id"] for r in eligibility_rows),
            words=words,
        )


def _grouped(rows: list[Row], key: str) -> dict[str, list[Row]]:
    """The rows by their `key` cell, in file order; rows without one are left out."""
    out: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        if r[key]:
            out[r[key]].append(r)
    return out


def _texts(rows: list[Row], key: str, column: str) -> dict[str, list[str]]:
    """The cleaned `column` texts by the rows' `key` cell; rows without either are left out."""
    out: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r[key] and r[column]:
            out[r[key]].append(clean_text(r[column]))
    return out


def _latest_updates(rows: list[Row]) -> dict[str, str]:
    """Each resource's latest last_action_date in metadata.csv, as an ISO date."""
    updated: dict[str, str] = {}
    for r in rows:
        when = iso(r["last_action_date"])
        if r["resource_id"] and when > updated.get(r["resource_id"], ""):
            updated[r["resource_id"]] = when
    return updated


def _check_service(row: Row, seen: set[str], where: Where) -> RecordError | str | None:
    """A services.csv row's error, else why it is not listed (its status), else None for a service to read.
    Adds its id to `seen`."""
    sid = row["id"]
    if not sid:
        return RecordError("service without id", **where, record=row["name"][:200])
    if sid in seen:
        return RecordError(f"duplicate service id {sid!r}", **where)
    seen.add(sid)
    status = cell_key(row["status"])
    if status in _NOT_LISTED:
        return f"status is {status!r}"
    if not clean_text(row["name"]):
        return RecordError(f"service {sid} has no name", **where)
    return None


def _service_records(
    row: Row, tables: _Tables, stats: HsdsStats, bad_locations: set[str], locations_file: str
) -> Iterator[ServiceRecord | RecordError]:
    """The service's record at each of its locations (one record, with the service id, for one location or none);
    a location's bad coordinates are an error once (`bad_locations`) and leave its records without them."""
    sid = row["id"]
    places = tables.at_location.get(sid) or [Row(0, {"id": "", "location_id": ""})]
    for sal in places:
        lid = sal["location_id"]
        record = _record(row, sal, sid if len(places) == 1 else f"{sid}@{lid}", tables)
        _hours(record, tables.schedules.rows(sid, lid, sal["id"]), stats)
        location = tables.locations.get(lid)
        if location is not None:
            coords = _coordinates(location)
            if isinstance(coords, str):
                if lid not in bad_locations:
                    bad_locations.add(lid)
                    yield RecordError(coords, file=locations_file, line=location.line)
            else:
                record.latitude, record.longitude = coords
        yield record


def _record(row: Row, sal: Row, rid: str, tables: _Tables) -> ServiceRecord:
    """The record of a service (its services.csv row) at a location (its services_at_location row), without
    hours and coordinates."""
    sid, lid, salid = row["id"], sal["location_id"], sal["id"]
    record = ServiceRecord(
        id=rid,
        service_id=sid,
        name=clean_text(row["name"]),
        organization=tables.organizations.get(row["organization_id"], ""),
        description=clean_text(row["description"]),
        application_process=clean_text(row["application_process"]),
        fees=clean_text(row["fees"]),
        eligibility="\n\n".join(t for t in tables.eligibility.get(sid, []) if t),
        url=row["url"],
        email=row["email"],
        taxonomy=[(t, tables.term_names.get(t, "")) for t in dict.fromkeys(tables.terms.get(sid, []))],
        service_areas=coverage_entries(tables.covered.get(sid, [])),
    )
    address = tables.addresses.get(lid)
    if address is not None:
        record.address, record.city, record.state, record.zip, record.county = _address(address, tables.cities)
    phones = tables.phones.rows(sid, lid, salid)
    record.phones = _phones(phones)
    record.phone_labels = _phone_labels(phones, record.phones)
    record.status = clean_text(row["status"])
    record.availability = _holidays(tables.holidays.rows(sid, lid, salid))
    record.last_updated = tables.updated.get(sid, "")
    names = clean_languages((r["language"] for r in tables.languages.rows(sid, lid, salid)), tables.words)
    record.languages = list(dict.fromkeys(canonical(n, tables.language_forms) for n in names))
    record.accessibility = list(dict.fromkeys(tables.accessibility.get(lid, [])))
    return record


def _address(address: Row, cities: dict[str, str]) -> tuple[str, str, str, str, str]:
    """(street, city, state, zip, county) of a physical_addresses row: the city in the catalog's most common
    form, the zip as written, the region as the county."""
    street = [clean_text(address["address_1"]), clean_text(address["address_2"])]
    return (
        ", ".join(p for p in street if p),
        canonical(address["city"], cities),
        address["state_province"],
        address["postal_code"],
        " ".join(address["region"].split()),
    )


@dataclass
class _Linked:
    by_sal: dict[str, list[Row]]
    by_service: dict[str, list[Row]]
    by_location: dict[str, list[Row]]  # rows of a location and no service

    def rows(self, sid: str, lid: str, salid: str) -> list[Row]:
        """Rows of this service at this location: those naming this service-at-location, else the service's rows
        for this location or for no location, else the location's own rows (of no service)."""
        if salid and self.by_sal.get(salid):
            return self.by_sal[salid]
        own = [
            r for r in self.by_service.get(sid, []) if not r["service_at_location_id"] and r["location_id"] in ("", lid)
        ]
        return own or (self.by_location.get(lid, []) if lid else [])

    def count(self) -> int:
        rows = [*self.by_sal.values(), *self.by_service.values(), *self.by_location.values()]
        return len({id(r) for group in rows for r in group})


def _index(rows: list[Row]) -> _Linked:
    linked = _Linked(defaultdict(list), defaultdict(list), defaultdict(list))
    for r in rows:
        if r["service_at_location_id"]:
            linked.by_sal[r["service_at_location_id"]].append(r)
        if r["service_id"]:
            linked.by_service[r["service_id"]].append(r)
        elif r["location_id"]:
            linked.by_location[r["location_id"]].append(r)
    return linked


def _phones(rows: list[Row]) -> list[str]:
    out: list[str] = []
    for r in rows:
        number = " ".join(r["number"].split())
        if not number:
            continue
        ext = r["extension"]
        if ext and ext not in number:
            number = f"{number} x{ext}"
        if number not in out:
            out.append(number)
    return out


def _phone_labels(rows: list[Row], numbers: list[str]) -> dict[str, str]:
    """Each number's type and description as the rows give them ("voice, Intake line")."""
    labels: dict[str, str] = {}
    for r in rows:
        number = " ".join(r["number"].split())
        number = next((n for n in numbers if n == number or n.startswith(f"{number} x")), "")
        label = ", ".join(dict.fromkeys(t for t in (clean_text(r["type"]), clean_text(r["description"])) if t))
        if number and label and number not in labels:
            labels[number] = label
    return labels


def _holidays(rows: list[Row]) -> str:
    """The holiday schedule as one line per entry: "closed 2024-12-24 to 2024-12-26", "2024-12-31: 09:00-12:00"."""
    out = []
    for r in rows:
        start, end = iso(r["start_date"]), iso(r["end_date"])
        if not start:
            continue
        days = start if end in ("", start) else f"{start} to {end}"
        closed = cell_key(r["closed"]) in ("true", "yes", "1")
        hours = f"{r['opens_at']}-{r['closes_at']}" if r["opens_at"] and r["closes_at"] else ""
        out.append(f"closed {days}" if closed or not hours else f"{days}: {hours}")
    return "; ".join(dict.fromkeys(out))


def _hours(record: ServiceRecord, rows: list[Row], stats: HsdsStats) -> None:
    if not rows:
        return
    texts = list(dict.fromkeys(t for t in (clean_text(r["original_text"]) for r in rows) if t))
    record.hours_text = "\n".join(texts)
    from_text: set[Opening] = set()
    for t in texts:
        from_text.update(parse_hours_text(t))
    from_rows, complete = openings_from_rows((r["weekday"], r["opens_at"], r["closes_at"]) for r in rows)
    if from_text:
        record.openings = sorted(from_text, key=lambda o: (o.weekday, o.opens, o.closes))
        stats.hours_from_text += 1
        if complete and set(from_rows) != from_text:
            stats.rows_disagree += 1
    elif from_rows:
        record.openings = from_rows
        stats.hours_from_rows += 1


def _coordinates(location: Row) -> tuple[float | None, float | None] | str:
    lat, lon = location["latitude"], location["longitude"]
    if not lat and not lon:
        return None, None
    try:
        la, lo = float(lat), float(lon)
    except ValueError:
        return f"location {location['id']}: coordinates {lat!r}, {lon!r} are not numbers"
    if not (-90 <= la <= 90 and -180 <= lo <= 180):
        return f"location {location['id']}: coordinates {lat!r}, {lon!r} out of range"
    return la, lo
