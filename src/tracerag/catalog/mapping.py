"""Read a non-HSDS directory (one CSV or JSONL file) into `ServiceRecord`s, by a mapping of fields to columns.

The mapping (a dict, e.g. read from TOML; field keys may also sit in a `[columns]` table) names the column(s)
that fill each ServiceRecord field, plus options. Every key is in the table of docs/guide/catalog-mapping.md::

    id = "ID"                 # required; a list of columns: the id is a digest of their values (no id column)
    name = "Program"          # required
    city = "City"
    address = ["Street", "Suite"]   # several columns: joined with ", " (other text fields: a blank line)
    hours_text = "Hours"      # read with `schedule.parse_hours_text` into openings; kept as written
    hours_12h = true          # the hours column writes "9-5" for 9am-5pm (211 software does)
    last_verified = "Verified"   # a date (also last_updated, temporary_message_from/_until): ISO, or numeric
    date_order = "mdy"        # ... in this order ("6/21/10"); default ymd
    status = "Status"         # as written; with do_not_refer, statuses never recommended (into the profile)
    do_not_refer = ["Hold"]
    languages = "Languages"
    languages_sep = ";"       # list fields (phones, languages, accessibility, taxonomy): separator, default ";"
    taxonomy = "TermIds"      # term ids ("BD-1800.2000 * YB-8000": linked parts are terms each)
    taxonomy_names = "Terms"  # a parallel column of their names
    country = "Country"       # not a record field: tells the profile which country the directory serves
    encoding = "utf-8"        # CSV only: the file's encoding (default: UTF-8 when it is, else detected)
    delimiter = ","           # CSV only
    clean_languages = true    # reduce language cells to language names (`clean.clean_languages`)
    x_mark = ["X"]            # what marks a cell in an x_marked column (default: any value that is not null)
    [x_marked.languages]      # columns whose mark adds a value to a field: "Spanish" column marked → Spanish
    Spanish = "Spanish"
    [constants]               # a value for every record (where its column, if any, is empty)
    city = "Riverton"

and the row options of `catalog.rows` (filter, exclude, null, aliases). Fields: id, service_id (default: id),
name, organization, description, application_process, fees, eligibility, address, city, state, zip, county,
phones, url, email, languages, accessibility, taxonomy, hours_text, latitude, longitude, status, availability,
temporary_message, last_verified, last_updated, temporary_message_from, temporary_message_until.

Text is cleaned as HSDS text is (literal "\\n", mojibake punctuation, HTML); a city written in several casings or
punctuations takes the file's most common one. A row without id or name, a duplicate id, or a row of the wrong
width is a `RecordError` with file and line; a row repeated cell for cell is read once, with a warning; a
coordinate that is not a number is an error too, and the record keeps no coordinates. A mapped column missing
from the header is one RecordError for the file. A mapping key that is unknown, or of the wrong type, is a
ConfigError naming it.
"""

from __future__ import annotations

import hashlib
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
from tracerag.catalog.record_details import DATE_ORDERS, iso
from tracerag.catalog.rows import ROW_OPTIONS, ReadStats, RowOptions, cell_key
from tracerag.catalog.schedule import parse_hours_text
from tracerag.catalog.words import WordList
from tracerag.errors import ConfigError, RecordError
from tracerag.ingest import RecordWarning
from tracerag.ingest.encoding import asked_encoding
from tracerag.ingest.jsonl import iter_records
from tracerag.ingest.table import iter_rows, rows_of_width

TEXT_FIELDS = (
    "id",
    "service_id",
    "name",
    "organization",
    "description",
    "application_process",
    "fees",
    "eligibility",
    "address",
    "city",
    "state",
    "zip",
    "county",
    "url",
    "email",
    "hours_text",
    *("status", "availability", "temporary_message"),  # what a reply shows beside the hours (record_details)
    *("last_verified", "last_updated", "temporary_message_from", "temporary_message_until"),
)
DATE_FIELDS = ("last_verified", "last_updated", "temporary_message_from", "temporary_message_until")
LIST_FIELDS = ("phones", "languages", "accessibility", "taxonomy", "service_areas")
FLOAT_FIELDS = ("latitude", "longitude")
PROFILE_FIELDS = ("country",)
TABLE_OPTIONS = ("x_marked", "constants", "aliases")
OPTIONS = (
    "delimiter",
    "encoding",
    "clean_languages",
    "hours_12h",
    "taxonomy_names",
    "x_mark",
    "date_order",
    "do_not_refer",
    *(f"{f}_sep" for f in LIST_FIELDS),
    *TABLE_OPTIONS,
    *ROW_OPTIONS,
)
MAPPING_KEYS = (*TEXT_FIELDS, *LIST_FIELDS, *FLOAT_FIELDS, *PROFILE_FIELDS, *OPTIONS)
_DIGEST_BYTES = 8  # 16 hex digits: a key of several columns, stable and short


Read = ServiceRecord | RecordError | RecordWarning


def read_mapped(
    path: Path, mapping: Mapping[str, Any], stats: ReadStats | None = None, words: WordList | None = None
) -> Iterator[Read]:
    """ServiceRecords from one CSV or JSONL file (by its suffix: .jsonl/.json lines, else CSV); RecordErrors for
    rows that cannot be records, RecordWarnings for what was repaired. `stats` counts filtered rows and countries."""
    path = Path(path)
    spec = parse_spec(mapping)
    options = RowOptions.parse(spec)
    stats = stats if stats is not None else ReadStats()
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    jsonl = path.suffix.lower() in (".jsonl", ".ndjson", ".json")
    rows = _jsonl_rows(path) if jsonl else _csv_rows(path, spec, options)
    items: list[Read] = []
    seen: dict[str, tuple[int, Any]] = {}
    for row in rows:
        if isinstance(row, RecordError | RecordWarning):
            items.append(row)
            if isinstance(row, RecordError) and row.line is None:  # the file itself cannot be read
                break
            continue
        line, values = row
        stats.rows += 1
        values = {k: ("" if options.is_null(v) else v) for k, v in values.items()}
        why = options.excluded(values)
        if why:
            stats.filtered[why] += 1
            continue
        items.extend(_record(values, spec, options, seen, stats, file=str(path), line=line, words=words))
    records = [i for i in items if isinstance(i, ServiceRecord)]
    for record in records:
        record.city = options.alias("city", record.city)
        record.county = options.alias("county", record.county)
        record.state = options.alias("state", record.state)
        record.organization = options.alias("organization", record.organization)
        record.languages = list(dict.fromkeys(options.alias("languages", v) for v in record.languages))
        record.accessibility = list(dict.fromkeys(options.alias("accessibility", v) for v in record.accessibility))
    for name in ("city", "county"):
        forms = canonical_forms(getattr(r, name) for r in records)
        for record in records:
            setattr(record, name, canonical(getattr(record, name), forms))
    yield from items


def parse_spec(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The mapping checked: every key known and of its type (a ConfigError names the first that is not)."""
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"mapping: expected a table of keys, not {mapping!r}")
    spec = {k: v for k, v in mapping.items() if k != "columns"}
    if isinstance(mapping.get("columns"), Mapping):
        spec.update(mapping["columns"])
    unknown = sorted(set(spec) - set(MAPPING_KEYS))
    if unknown:
        raise ConfigError(f"mapping: unknown keys {unknown}; expected some of {sorted(MAPPING_KEYS)}")
    missing = [k for k in ("id", "name") if not spec.get(k)]
    if missing:
        raise ConfigError(f"mapping: {' and '.join(missing)} must name a column")
    _check_types(spec)
    _check_marked(spec)
    _check_constants(spec)
    RowOptions.parse(spec)  # checks the row options' types
    return spec


def _check_types(spec: Mapping[str, Any]) -> None:
    """Each key's value of its type: one column, columns, true or false, a codec, a date order, values."""
    for key in ("name", *FLOAT_FIELDS, *PROFILE_FIELDS, "taxonomy_names", "delimiter", "encoding"):
        if spec.get(key) is not None and not isinstance(spec[key], str):
            raise ConfigError(f"mapping: {key} must name one column, not {spec[key]!r}")
    for key in (*TEXT_FIELDS, *LIST_FIELDS):
        value = spec.get(key)
        if value is not None and not _columns_value(value):
            raise ConfigError(f"mapping: {key} must be a column name or a list of them, not {value!r}")
    for key in ("clean_languages", "hours_12h"):
        if key in spec and not isinstance(spec[key], bool):
            raise ConfigError(f"mapping: {key} must be true or false, not {spec[key]!r}")
    if "encoding" in spec:
        asked_encoding(spec["encoding"])  # an unknown codec is a ConfigError naming it
    if spec.get("date_order", "ymd") not in DATE_ORDERS:
        raise ConfigError(f"mapping: date_order must be one of {list(DATE_ORDERS)}, not {spec['date_order']!r}")
    if "do_not_refer" in spec and not _columns_value(spec["do_not_refer"]):
        raise ConfigError(f"mapping: do_not_refer must be a status or a list of them, not {spec['do_not_refer']!r}")
    if "x_mark" in spec and not _columns_value(spec["x_mark"]):
        raise ConfigError(f"mapping: x_mark must be a value or a list of values, not {spec['x_mark']!r}")


def _check_marked(spec: Mapping[str, Any]) -> None:
    """`x_marked`: a table of fields that take marked values, each a table of column = value."""
    marked = spec.get("x_marked", {})
    if not isinstance(marked, Mapping):
        raise ConfigError(f"mapping: x_marked must be a table of fields ([x_marked.languages]), not {marked!r}")
    for name, columns in marked.items():
        if name not in (*TEXT_FIELDS[3:], *LIST_FIELDS):
            raise ConfigError(f"mapping: x_marked.{name}: not a field that can take marked values")
        if not isinstance(columns, Mapping) or not all(isinstance(v, str) for v in columns.values()):
            raise ConfigError(f'mapping: x_marked.{name} must map columns to values ("Column" = "Value")')


def _check_constants(spec: Mapping[str, Any]) -> None:
    """`constants`: a table of field = value (or values), for fields that can take one value for all records."""
    constants = spec.get("constants", {})
    if not isinstance(constants, Mapping):
        raise ConfigError(f"mapping: constants must be a table of field = value, not {constants!r}")
    for name, value in constants.items():
        if name not in (*TEXT_FIELDS[3:], *LIST_FIELDS, *PROFILE_FIELDS):
            raise ConfigError(f"mapping: constants.{name}: not a field that can take one value for all records")
        if not _columns_value(value):
            raise ConfigError(f"mapping: constants.{name} must be a value or a list of values, not {value!r}")


def _columns_value(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(c, str) for c in value))


def _names(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _columns(spec: Mapping[str, Any], options: RowOptions) -> list[str]:
    out: list[str] = []
    for key in (*TEXT_FIELDS, *LIST_FIELDS, *FLOAT_FIELDS, *PROFILE_FIELDS, "taxonomy_names"):
        out += _names(spec.get(key))
    for columns in spec.get("x_marked", {}).values():
        out += list(columns)
    out += options.columns()
    return list(dict.fromkeys(c for c in out if c))


def _csv_rows(
    path: Path, spec: Mapping[str, Any], options: RowOptions
) -> Iterator[tuple[int, dict[str, Any]] | RecordError | RecordWarning]:
    delimiter = str(spec.get("delimiter") or ",")
    delimiter = "\t" if delimiter == "\\t" else delimiter
    rows = iter_rows(path, delimiter, encoding=asked_encoding(spec.get("encoding")), repair=True)
    header = next(rows, None)
    while isinstance(header, RecordWarning):  # the encoding chosen, said once for the file
        yield header
        header = next(rows, None)
    if header is None:
        yield RecordError("empty file (no header)", file=str(path))
        return
    if isinstance(header, RecordError):
        yield RecordError(header.reason, file=str(path))
        return
    _, names = header
    names = [n.strip() for n in names]
    missing = [c for c in _columns(spec, options) if c not in names]
    if missing:
        yield RecordError(f"missing columns {missing}; the header has {names}", file=str(path))
        return
    for item in rows_of_width(rows, len(names), path, delimiter):
        if isinstance(item, RecordError | RecordWarning):
            yield item
            continue
        line, cells = item
        yield line, dict(zip(names, cells, strict=True))


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]] | RecordError | RecordWarning]:
    for item in iter_records(path, repair=True):
        if isinstance(item, RecordError | RecordWarning):
            yield item
            continue
        line, obj, raw = item
        if not isinstance(obj, dict):
            yield RecordError("not a JSON object", file=str(path), line=line, record=raw[:200])
            continue
        yield line, obj


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "; ".join(_str(v) for v in value)
    return str(value)


def _text(values: Mapping[str, Any], columns: Any, joiner: str) -> str:
    texts = [clean_text(_str(values.get(c))) for c in _names(columns)]
    return joiner.join(t for t in texts if t)


def _items(values: Mapping[str, Any], columns: Any, sep: str, *, unique: bool = True) -> list[str]:
    out: list[str] = []
    for c in _names(columns):
        value = values.get(c)
        parts = value if isinstance(value, list) else _str(value).split(sep) if sep else [_str(value)]
        out += [clean_text(_str(p)) for p in parts]
    return [p for p in dict.fromkeys(out) if p] if unique else out  # names parallel to ids keep their places


def _marked(values: Mapping[str, Any], columns: Mapping[str, str], marks: frozenset[str] | None) -> list[str]:
    """The values of the x_marked columns whose cell is marked (any value, or one of `marks`)."""
    out = []
    for column, value in columns.items():
        cell = cell_key(_str(values.get(column)))
        if cell and (marks is None or cell in marks):
            out.append(value)
    return out


def _id(values: Mapping[str, Any], columns: Any) -> str:
    if isinstance(columns, str):
        return " ".join(_str(values.get(columns)).split())
    parts = [" ".join(_str(values.get(c)).split()) for c in columns]
    if not any(parts):
        return ""
    return hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=_DIGEST_BYTES).hexdigest()


def _record(
    values: Mapping[str, Any],
    spec: Mapping[str, Any],
    options: RowOptions,
    seen: dict[str, tuple[int, Any]],
    stats: ReadStats,
    *,
    file: str,
    line: int,
    words: WordList | None = None,
) -> list[Read]:
    """A row's record, with an error for each date or coordinate that cannot be read (the record kept without
    it); a row without id or name, or a second row of an id, is an error (a warning when it repeats the first
    cell for cell)."""
    named = _identity(values, spec, seen, file=file, line=line)
    if not isinstance(named, tuple):
        return [named]
    rid, name = named
    seen[rid] = (line, dict(values))
    constants = spec.get("constants", {})
    marks = frozenset(cell_key(m) for m in _names(spec["x_mark"])) if "x_mark" in spec else None
    marked = {k: _marked(values, cols, marks) for k, cols in spec.get("x_marked", {}).items()}
    fields = _text_fields(values, spec, constants, marked)
    fields["id"], fields["name"] = rid, name
    fields["service_id"] = fields["service_id"] or rid
    fields["city"] = " ".join(fields["city"].split())
    out: list[Read] = []
    for key in DATE_FIELDS:  # kept as ISO dates; a cell that is no date is an error for its line, the record kept
        written, fields[key] = fields[key], iso(fields[key], spec.get("date_order", "ymd"))
        if written and not fields[key]:
            out.append(RecordError(f"record {rid}: {key} {written!r} is not a date", file=file, line=line))
    record = ServiceRecord(**fields)
    _listed_fields(record, values, spec, constants, marked, words)
    hours = record.hours_text
    if hours and spec.get("hours_12h"):
        hours = bare_hours_12h(unglue(hours, weekdays_only=True))
    record.openings = [] if spec.get("hours_12h") and is_dated(hours) else parse_hours_text(hours)
    country = _text(values, spec.get("country"), " ") or _str(constants.get("country"))
    if country:
        stats.countries[country] += 1
    coords = _coordinates(values, spec)
    if isinstance(coords, str):
        out.append(RecordError(f"record {rid}: {coords}", file=file, line=line))
    else:
        record.latitude, record.longitude = coords
    out.append(record)
    return out


def _identity(
    values: Mapping[str, Any], spec: Mapping[str, Any], seen: dict[str, tuple[int, Any]], *, file: str, line: int
) -> tuple[str, str] | RecordError | RecordWarning:
    """(id, name) of a row, or why it gives no record: no id, no name, or an id already read (a warning when the
    row repeats that one cell for cell)."""
    shown = _str(values.get(spec["name"]))[:200]
    rid = _id(values, spec["id"])
    if not rid:
        return RecordError(f"id missing (column {spec['id']!r})", file=file, line=line, record=shown)
    if rid in seen:
        first, cells = seen[rid]
        if cells == dict(values):
            return RecordWarning(f"repeats line {first} cell for cell: read once", file=file, line=line, record=rid)
        return RecordError(f"duplicate id {rid!r}", file=file, line=line, record=shown)
    name = _text(values, spec["name"], " ")
    if not name:
        return RecordError(f"record {rid}: name missing (column {spec['name']!r})", file=file, line=line)
    return rid, name


def _text_fields(
    values: Mapping[str, Any], spec: Mapping[str, Any], constants: Mapping[str, Any], marked: dict[str, list[str]]
) -> dict[str, Any]:
    """The text fields: the columns' texts (an address's parts joined by commas), else the constant, with the
    marked values after them."""
    fields: dict[str, Any] = {}
    for key in TEXT_FIELDS:
        text = _text(values, spec.get(key), ", " if key == "address" else "\n\n")
        if not text and isinstance(constants.get(key), str):
            text = clean_text(constants[key])
        if marked.get(key):
            text = "\n\n".join(t for t in (text, "; ".join(marked[key])) if t)
        fields[key] = text
    return fields


def _listed_fields(
    record: ServiceRecord,
    values: Mapping[str, Any],
    spec: Mapping[str, Any],
    constants: Mapping[str, Any],
    marked: dict[str, list[str]],
    words: WordList | None,
) -> None:
    """The list fields: the columns' items (split at the field's separator), else the constants, with the marked
    values after them; languages cleaned unless the mapping says not to."""

    def sep(key: str) -> str:
        return str(spec.get(f"{key}_sep", ";"))

    def listed(key: str) -> list[str]:
        got = _items(values, spec.get(key), sep(key))
        if not got and key in constants:
            got = [clean_text(v) for v in _names(constants[key])]
        return list(dict.fromkeys([*got, *marked.get(key, [])]))

    record.phones = listed("phones")
    languages = [unglue(v) for v in listed("languages")]
    record.languages = clean_languages(languages, words) if spec.get("clean_languages", True) else languages
    record.accessibility = listed("accessibility")
    record.service_areas = coverage_entries(listed("service_areas"))
    record.taxonomy = _taxonomy(values, spec, sep("taxonomy"), constants, marked.get("taxonomy", []))


def _coordinates(values: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[float | None, float | None] | str:
    """(latitude, longitude) of a row; (None, None) when its cells are empty; what is wrong with them when they
    are not numbers or out of range."""
    coords = [_str(values.get(spec[k])).strip() if spec.get(k) else "" for k in FLOAT_FIELDS]
    if not any(coords):
        return None, None
    try:
        lat, lon = (float(c) for c in coords)
    except ValueError:
        return f"coordinates {coords} are not numbers"
    if -90 <= lat <= 90 and -180 <= lon <= 180:
        return lat, lon
    return f"coordinates {coords} out of range"


def _taxonomy(
    values: Mapping[str, Any], spec: Mapping[str, Any], sep: str, constants: Mapping[str, Any], marked: list[str]
) -> list[tuple[str, str]]:
    """(term id, name) pairs; a linked term ("A * B") gives each part, named by the parallel names column when it
    has as many parts (else the first part takes the whole name)."""
    ids = _items(values, spec.get("taxonomy"), sep, unique=False)
    if not any(ids) and "taxonomy" in constants:
        ids = _names(constants["taxonomy"])
    names = _items(values, spec.get("taxonomy_names"), sep, unique=False)
    terms: dict[str, str] = {}
    for i, cell in enumerate(ids):
        name_parts = [p for term in split_terms(names[i]) for p in term] if i < len(names) else []
        for term in split_terms(cell):
            for j, part in enumerate(term):
                whole = names[i] if j == 0 and i < len(names) else ""
                terms.setdefault(part, name_parts[j] if len(name_parts) == len(term) else whole)
    for value in marked:
        terms.setdefault(value, value)
    return list(terms.items())
