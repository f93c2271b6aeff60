"""Read a non-HSDS directory (one CSV or JSONL file) into `ServiceRecord`s, by a mapping of fields to columns.

The mapping (a dict, e.g. read from TOML; keys may also sit in a `[columns]` table) names the column that fills
each ServiceRecord field, plus a few options::

    id = "ID"                 # required
    name = "Program"          # required
    city = "City"
    zip = "Zip"
    address = ["Street", "Suite"]   # several columns: joined with ", " (other text fields: a blank line)
    hours_text = "Hours"      # read with `schedule.parse_hours_text` into openings; kept as written
    languages = "Languages"
    languages_sep = ";"       # list fields (phones, languages, accessibility, taxonomy): separator, default ";"
    taxonomy = "TermIds"      # term ids; `taxonomy_names` = a parallel column of their names
    latitude = "Lat"
    longitude = "Lon"
    delimiter = ","           # CSV only
    clean_languages = true    # reduce language cells to language names (`hsds.clean_languages`)

Fields: id, service_id (default: id), name, organization, description, application_process, fees, eligibility,
address, city, state, zip, county, phones, url, email, languages, accessibility, taxonomy, hours_text, latitude,
longitude. Text is cleaned as HSDS text is (literal "\\n", mojibake punctuation); a city written in several casings
takes the file's most common one. A row without id or name, a duplicate id, or a row of the wrong width is a
`RecordError` with file and line; a coordinate that is not a number is one too, and the record keeps no
coordinates. A mapped column missing from the header is one RecordError for the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tracerag.catalog.hsds import canonical, canonical_forms, clean_languages, clean_text
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.schedule import parse_hours_text
from tracerag.errors import ConfigError, RecordError
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
)
LIST_FIELDS = ("phones", "languages", "accessibility", "taxonomy")
FLOAT_FIELDS = ("latitude", "longitude")
OPTIONS = ("delimiter", "clean_languages", "taxonomy_names", *(f"{f}_sep" for f in LIST_FIELDS))


def read_mapped(path: Path, mapping: Mapping[str, Any]) -> Iterator[ServiceRecord | RecordError]:
    """ServiceRecords from one CSV or JSONL file (by its suffix: .jsonl/.json lines, else CSV)."""
    path = Path(path)
    spec = _spec(mapping)
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    rows = _jsonl_rows(path) if path.suffix.lower() in (".jsonl", ".ndjson", ".json") else _csv_rows(path, spec)
    items: list[ServiceRecord | RecordError] = []
    seen: set[str] = set()
    for row in rows:
        if isinstance(row, RecordError):
            items.append(row)
            if row.line is None:  # the file itself cannot be read
                break
            continue
        line, values = row
        items.extend(_record(values, spec, seen, file=str(path), line=line))
    forms = canonical_forms(i.city for i in items if isinstance(i, ServiceRecord))
    for item in items:
        if isinstance(item, ServiceRecord):
            item.city = canonical(item.city, forms)
        yield item


def _spec(mapping: Mapping[str, Any]) -> dict[str, Any]:
    spec = {k: v for k, v in mapping.items() if k != "columns"}
    if isinstance(mapping.get("columns"), Mapping):
        spec.update(mapping["columns"])
    known = set(TEXT_FIELDS) | set(LIST_FIELDS) | set(FLOAT_FIELDS) | set(OPTIONS)
    unknown = sorted(set(spec) - known)
    if unknown:
        raise ConfigError(f"mapping: unknown keys {unknown}; expected some of {sorted(known)}")
    missing = [k for k in ("id", "name") if not spec.get(k)]
    if missing:
        raise ConfigError(f"mapping: {' and '.join(missing)} must name a column")
    for key in ("id", "name", *FLOAT_FIELDS, "taxonomy_names"):
        if spec.get(key) is not None and not isinstance(spec[key], str):
            raise ConfigError(f"mapping: {key} must name one column, not {spec[key]!r}")
    for key in (*TEXT_FIELDS, *LIST_FIELDS):
        value = spec.get(key)
        if value is not None and not (
            isinstance(value, str) or (isinstance(value, list) and all(isinstance(c, str) for c in value))
        ):
            raise ConfigError(f"mapping: {key} must be a column name or a list of them, not {value!r}")
    return spec


def _columns(spec: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key in (*TEXT_FIELDS, *LIST_FIELDS, *FLOAT_FIELDS, "taxonomy_names"):
        value = spec.get(key)
        out += [value] if isinstance(value, str) else list(value or [])
    return list(dict.fromkeys(c for c in out if c))


def _csv_rows(path: Path, spec: Mapping[str, Any]) -> Iterator[tuple[int, dict[str, Any]] | RecordError]:
    delimiter = str(spec.get("delimiter") or ",")
    rows = iter_rows(path, "\t" if delimiter == "\\t" else delimiter)
    header = next(rows, None)
    if header is None:
        yield RecordError("empty file (no header)", file=str(path))
        return
    if isinstance(header, RecordError):
        yield RecordError(header.reason, file=str(path))
        return
    _, names = header
    names = [n.strip() for n in names]
    missing = [c for c in _columns(spec) if c not in names]
    if missing:
        yield RecordError(f"missing columns {missing}; the header has {names}", file=str(path))
        return
    for item in rows_of_width(rows, len(names), path, delimiter):
        if isinstance(item, RecordError):
            yield item
            continue
        line, cells = item
        yield line, dict(zip(names, cells, strict=True))


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]] | RecordError]:
    for item in iter_records(path):
        if isinstance(item, RecordError):
            yield item
            continue
        line, obj, raw = item
        if not isinstance(obj, dict):
            yield RecordError("not a JSON object", file=str(path), line=line, record=raw[:200])
            continue
        yield line, obj


def _text(values: Mapping[str, Any], columns: Any, joiner: str) -> str:
    if not columns:
        return ""
    parts = [columns] if isinstance(columns, str) else list(columns)
    texts = [clean_text(_str(values.get(c))) for c in parts]
    return joiner.join(t for t in texts if t)


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "; ".join(_str(v) for v in value)
    return str(value)


def _items(values: Mapping[str, Any], columns: Any, sep: str, *, unique: bool = True) -> list[str]:
    if not columns:
        return []
    out: list[str] = []
    for c in [columns] if isinstance(columns, str) else columns:
        value = values.get(c)
        parts = value if isinstance(value, list) else _str(value).split(sep) if sep else [_str(value)]
        out += [clean_text(_str(p)) for p in parts]
    return [p for p in dict.fromkeys(out) if p] if unique else out  # names parallel to ids keep their places


def _record(
    values: Mapping[str, Any], spec: Mapping[str, Any], seen: set[str], *, file: str, line: int
) -> list[ServiceRecord | RecordError]:
    shown = _str(values.get(spec["name"]))[:200]
    rid = _text(values, spec["id"], " ")
    if not rid:
        return [RecordError(f"id missing (column {spec['id']!r})", file=file, line=line, record=shown)]
    if rid in seen:
        return [RecordError(f"duplicate id {rid!r}", file=file, line=line, record=shown)]
    name = _text(values, spec["name"], " ")
    if not name:
        return [RecordError(f"record {rid}: name missing (column {spec['name']!r})", file=file, line=line)]
    seen.add(rid)
    fields: dict[str, Any] = {}
    for key in TEXT_FIELDS:
        fields[key] = _text(values, spec.get(key), ", " if key == "address" else "\n\n")
    fields["id"], fields["name"] = rid, name
    fields["service_id"] = fields["service_id"] or rid
    fields["city"] = " ".join(fields["city"].split())
    record = ServiceRecord(**fields)

    def sep(key: str) -> str:
        return str(spec.get(f"{key}_sep", ";"))

    record.phones = _items(values, spec.get("phones"), sep("phones"))
    languages = _items(values, spec.get("languages"), sep("languages"))
    record.languages = clean_languages(languages) if spec.get("clean_languages", True) else languages
    record.accessibility = _items(values, spec.get("accessibility"), sep("accessibility"))
    ids = _items(values, spec.get("taxonomy"), sep("taxonomy"), unique=False)
    names = _items(values, spec.get("taxonomy_names"), sep("taxonomy"), unique=False)
    terms: dict[str, str] = {}
    for i, term in enumerate(ids):
        if term:
            terms.setdefault(term, names[i] if i < len(names) else "")
    record.taxonomy = list(terms.items())
    record.openings = parse_hours_text(record.hours_text)
    out: list[ServiceRecord | RecordError] = []
    coords = [_str(values.get(spec[k])).strip() if spec.get(k) else "" for k in FLOAT_FIELDS]
    if any(coords):
        try:
            lat, lon = (float(c) for c in coords)
        except ValueError:
            out.append(RecordError(f"record {rid}: coordinates {coords} are not numbers", file=file, line=line))
        else:
            if -90 <= lat <= 90 and -180 <= lon <= 180:
                record.latitude, record.longitude = lat, lon
            else:
                out.append(RecordError(f"record {rid}: coordinates {coords} out of range", file=file, line=line))
    out.append(record)
    return out
