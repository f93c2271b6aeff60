"""Read an Open Referral HSDS CSV datapackage into `ServiceRecord`s: one per service at a location.

Tables joined (all optional but services.csv): organizations, services_at_location, locations, physical_addresses,
phones, regular_schedules, languages, accessibility_for_disabilities, services_taxonomy, taxonomy, eligibility.
A service with one location (or none) keeps the service id; one with several gets "{service_id}@{location_id}".

What the exports get wrong, and what is done about it:

- text fields write line breaks as the two characters backslash-n: they become real newlines;
- UTF-8 punctuation read as cp437 ("GÇÖ" for ’, "GÇô" for –): repaired, it is reversible. Letters damaged the
  same way lost a byte ("Mu+¦oz" for Muñoz) and are left as written;
- cities in several casings ("MIAMI", "Miami") take the catalog's most common form; states are stripped;
  zips stay strings as written (ZIP+4 included);
- languages are free text ("Spanish (limited)", "other languages available upon request"): kept are the language
  names (`clean_languages`), in the catalog's most common spelling ("Haitian-Creole" → "Haitian Creole"), dropped
  the notes about interpreters;
- schedules: the rows' weekday/opens_at/closes_at are derived from `original_text` and lose days when the text has
  several clauses or lists ("..., Mon-Fri;\\n..., Sat" gives a single Saturday row). The text is read first
  (`schedule.parse_hours_text`); the rows are used when it gives nothing. The text itself is kept as `hours_text`;
- descriptions end with service-area tags ("###MON###" Monroe, "###COL###" Collier): removed from the text (they
  name the area served, not the location's county, so `county` stays empty when `region` is);
- eligibility rows are tied to a service by their service_id; rows without one (all of Miami 211's) cannot be
  tied to anything and are only counted (`HsdsStats.eligibility_unlinked`), never guessed by row order.

A malformed row (wrong column count, a service without id or name, a duplicate service id, coordinates that are not
numbers) is yielded as a `RecordError` with its file and line, and the read goes on. A bad coordinate only costs
the record its coordinates.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tracerag.catalog.filters import normalise_key
from tracerag.catalog.model import Opening, ServiceRecord
from tracerag.catalog.schedule import openings_from_rows, parse_hours_text
from tracerag.errors import RecordError
from tracerag.ingest.table import iter_rows, rows_of_width

# ----------------------------------------------------------------------------------------------- cleaning

_MOJIBAKE = re.compile("G\u00c7(.)")  # "ΓÇ" + one more cp437 character: U+2000..U+203F read as cp437
_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\ufeff]")
_PAREN = re.compile(r"\([^()]*\)?")
_MARKER = re.compile(r"[ \t]*#{2,}[A-Z]{0,4}#*")  # "###MON###", "###COL###": service-area tags of the export


def _repair(m: re.Match[str]) -> str:
    try:
        return bytes([0xE2, 0x80, m.group(1).encode("cp437")[0]]).decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return m.group(0)


def clean_text(text: str | None) -> str:
    """A directory's text as meant: literal "\\n" made newlines, cp437 punctuation mojibake repaired, the export's
    "###MON###"-like tags removed, trimmed."""
    if not text:
        return ""
    out = text.replace("\\r\\n", "\n").replace("\\n", "\n").replace("\\r", "\n").replace("\\t", " ")
    if "G\u00c7" in out:
        out = _MOJIBAKE.sub(_repair, out)
    out = _MARKER.sub("", _ZERO_WIDTH.sub("", out))
    return "\n".join(line.rstrip() for line in out.strip().splitlines()).strip()


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that end a language name in a cell ("Spanish available upon request", "Creole with translators ...").
_LANGUAGE_NOISE = _words(
    """other others language languages available availability upon request requested translation translations
    translator translators translated interpreter interpreters interpretation interpreting services service line
    via any all over telephone phone tele written materials material only is are with and or limited some basic
    by as needed when sometimes may be used provided website publications appointment staff"""
)
# Language names a cell may give (English names, as US directories write them); anything else is a note.
_KNOWN_LANGUAGES = _words(
    """afrikaans albanian amharic arabic armenian assyrian bengali bosnian bulgarian burmese cantonese catalan
    cebuano chinese chuukese creole croatian czech danish dari dutch english estonian farsi filipino finnish
    french fulani garifuna georgian german greek gujarati haitian hakka hausa hawaiian hebrew hindi hmong
    hungarian icelandic igbo ilocano indonesian italian japanese karen khmer kinyarwanda korean kurdish lao
    latvian lithuanian macedonian malay malayalam mandarin marathi marshallese mixteco mongolian navajo nepali
    norwegian oromo papiamento pashto patois persian polish portuguese punjabi quechua romanian russian samoan
    serbian sindhi sinhala slovak slovenian somali spanish swahili swedish tagalog taiwanese tamil telugu thai
    tibetan tigrinya toisanese tongan turkish twi ukrainian urdu uzbek vietnamese wolof yiddish yoruba zulu"""
)
_LANGUAGE_ALIASES = {
    "espanol": "Spanish",
    "espa ol": "Spanish",  # "Espa+¦ol": the ñ lost to mojibake
    "ingles": "English",
    "francais": "French",
    "kreyol": "Creole",
    "asl": "American Sign Language",
}
_LANGUAGE_SPLIT = re.compile(r"[\n,;/&]|\.\s|\.$|\band\b|\bor\b", re.IGNORECASE)
_SIGN = re.compile(r"\b(?:american\s+)?sign\s+language\b", re.IGNORECASE)


def clean_languages(values: Iterable[str]) -> list[str]:
    """Language names from free-text cells, in order, without repeats: "Spanish (limited)" → Spanish,
    "English and Spanish" → English, Spanish, "Creole with translators as needed" → Creole. Notes such as
    "other languages available upon request" or "Language line available" give nothing: a name counts when it
    (or its last word, "Haitian Creole") is a known language name, or a sign language."""
    return list(dict.fromkeys(name for raw in values for name in _languages_in(raw)))


@lru_cache(maxsize=1 << 14)
def _languages_in(raw: str) -> tuple[str, ...]:
    names = (_language(segment) for segment in _LANGUAGE_SPLIT.split(_PAREN.sub(" ", clean_text(raw))))
    return tuple(n for n in names if n)


def _language(segment: str) -> str:
    segment = segment.rsplit(":", 1)[-1].strip(" .-*'\"")
    if not segment:
        return ""
    alias = _LANGUAGE_ALIASES.get(normalise_key(segment))
    if alias:
        return alias
    sign = _SIGN.search(segment)
    if sign:
        return " ".join(w.capitalize() for w in sign.group(0).split())
    words: list[str] = []
    for word in segment.split():
        bare = word.strip(".'\"")
        if not bare or not bare[0].isupper() or bare.casefold() in _LANGUAGE_NOISE:
            break
        words.append(bare)
    if not words or len(words) > 3:
        return ""
    phrase = " ".join(words)
    alias = _LANGUAGE_ALIASES.get(normalise_key(phrase))
    if alias:
        return alias
    last = normalise_key(phrase).split(" ")[-1]
    return phrase if last in _KNOWN_LANGUAGES else ""


def canonical_forms(values: Iterable[str]) -> dict[str, str]:
    """normalise_key → the most common written form (ties: a mixed-case form, then the first seen)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    first: dict[str, int] = {}
    for i, value in enumerate(values):
        v = " ".join(value.split())
        if v:
            counts[normalise_key(v)][v] += 1
            first.setdefault(v, i)
    return {
        key: min(c, key=lambda v, c=c: (-c[v], v.isupper() or v.islower(), first[v]))
        for key, c in counts.items()
        if key
    }


def canonical(value: str, forms: dict[str, str]) -> str:
    v = " ".join(value.split())
    return forms.get(normalise_key(v), v) if v else ""


# -------------------------------------------------------------------------------------------------- tables


@dataclass(slots=True)
class _Row:
    line: int
    cells: dict[str, str]

    def __getitem__(self, key: str) -> str:
        return self.cells.get(key, "")


def read_table(path: Path) -> Iterator[_Row | RecordError]:
    """Rows of one CSV file with their first physical line; cells stripped. A row with another column count than
    the header, or not UTF-8, or bad CSV, is a RecordError. A missing file reads as empty."""
    if not path.is_file():
        return
    rows = iter_rows(path)
    header = next(rows, None)
    if header is None:
        return
    if isinstance(header, RecordError):
        yield header
        return
    _, names = header
    names = [n.strip() for n in names]
    for item in rows_of_width(rows, len(names), path):
        if isinstance(item, RecordError):
            yield item
            continue
        line, cells = item
        yield _Row(line, {n: c.strip() for n, c in zip(names, cells, strict=True)})


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


def read_taxonomy(folder: Path) -> dict[str, str]:
    """Term id → name from taxonomy.csv (an id listed twice keeps its first name)."""
    names: dict[str, str] = {}
    for row in read_table(Path(folder) / "taxonomy.csv"):
        if isinstance(row, _Row) and row["id"]:
            names.setdefault(row["id"], clean_text(row["name"]))
    return names


def read_hsds(folder: Path, stats: HsdsStats | None = None) -> Iterator[ServiceRecord | RecordError]:
    """One ServiceRecord per service at a location (see the module docstring); RecordErrors for bad rows."""
    folder = Path(folder)
    stats = stats if stats is not None else HsdsStats()
    errors: list[RecordError] = []

    def table(name: str) -> list[_Row]:
        rows = []
        for item in read_table(folder / name):
            if isinstance(item, RecordError):
                errors.append(item)
            else:
                rows.append(item)
        return rows

    services_path = folder / "services.csv"
    if not services_path.is_file():
        yield RecordError("no services.csv: not an HSDS datapackage", file=str(folder))
        return

    organizations = {r["id"]: clean_text(r["name"]) for r in table("organizations.csv") if r["id"]}
    stats.organizations = len(organizations)
    locations_path = folder / "locations.csv"
    locations = {r["id"]: r for r in table("locations.csv") if r["id"]}
    stats.locations = len(locations)
    addresses: dict[str, _Row] = {}
    for r in table("physical_addresses.csv"):
        addresses.setdefault(r["location_id"], r)
    cities = canonical_forms(r["city"] for r in addresses.values())
    at_location: dict[str, list[_Row]] = defaultdict(list)
    for r in table("services_at_location.csv"):
        if r["service_id"]:
            at_location[r["service_id"]].append(r)
    phones = _index(table("phones.csv"))
    language_rows = table("languages.csv")
    languages = _index(language_rows)
    language_forms = canonical_forms(n for r in language_rows for n in clean_languages([r["language"]]))
    schedules = _index(table("regular_schedules.csv"))
    stats.schedule_rows = schedules.count()
    accessibility: dict[str, list[str]] = defaultdict(list)
    for r in table("accessibility_for_disabilities.csv"):
        if r["location_id"] and r["accessibility"]:
            accessibility[r["location_id"]].append(clean_text(r["accessibility"]))
    term_names = read_taxonomy(folder)
    terms: dict[str, list[str]] = defaultdict(list)
    for r in table("services_taxonomy.csv"):
        if r["service_id"] and r["taxonomy_id"]:
            terms[r["service_id"]].append(r["taxonomy_id"])
    eligibility: dict[str, list[str]] = defaultdict(list)
    unlinked = 0
    for r in table("eligibility.csv"):
        stats.eligibility_rows += 1
        if r["service_id"]:
            eligibility[r["service_id"]].append(clean_text(r["eligibility"]))
        else:
            unlinked += 1
    yield from errors
    errors.clear()

    bad_locations: set[str] = set()
    seen: set[str] = set()
    for row in table("services.csv"):
        sid = row["id"]
        where = {"file": str(services_path), "line": row.line}
        if not sid:
            yield RecordError("service without id", **where, record=row["name"][:200])
            continue
        if sid in seen:
            yield RecordError(f"duplicate service id {sid!r}", **where)
            continue
        seen.add(sid)
        name = clean_text(row["name"])
        if not name:
            yield RecordError(f"service {sid} has no name", **where)
            continue
        stats.services += 1
        places = at_location.get(sid) or [_Row(0, {"id": "", "location_id": ""})]
        for sal in places:
            lid = sal["location_id"]
            rid = sid if len(places) == 1 else f"{sid}@{lid}"
            address = addresses.get(lid)
            record = ServiceRecord(
                id=rid,
                service_id=sid,
                name=name,
                organization=organizations.get(row["organization_id"], ""),
                description=clean_text(row["description"]),
                application_process=clean_text(row["application_process"]),
                fees=clean_text(row["fees"]),
                eligibility="\n\n".join(t for t in eligibility.get(sid, []) if t),
                url=row["url"],
                email=row["email"],
                taxonomy=[(t, term_names.get(t, "")) for t in dict.fromkeys(terms.get(sid, []))],
            )
            if address is not None:
                street = [clean_text(address["address_1"]), clean_text(address["address_2"])]
                record.address = ", ".join(p for p in street if p)
                record.city = canonical(address["city"], cities)
                record.state = address["state_province"]
                record.zip = address["postal_code"]
                record.county = " ".join(address["region"].split())
            record.phones = _phones(phones.rows(sid, lid, sal["id"]))
            names = clean_languages(r["language"] for r in languages.rows(sid, lid, sal["id"]))
            record.languages = list(dict.fromkeys(canonical(n, language_forms) for n in names))
            record.accessibility = list(dict.fromkeys(accessibility.get(lid, [])))
            _hours(record, schedules.rows(sid, lid, sal["id"]), stats)
            location = locations.get(lid)
            if location is not None:
                coords = _coordinates(location)
                if isinstance(coords, str):
                    if lid not in bad_locations:
                        bad_locations.add(lid)
                        yield RecordError(coords, file=str(locations_path), line=location.line)
                else:
                    record.latitude, record.longitude = coords
            yield record
    stats.eligibility_unlinked = unlinked + sum(len(v) for k, v in eligibility.items() if k not in seen)
    yield from errors


@dataclass
class _Linked:
    by_sal: dict[str, list[_Row]]
    by_service: dict[str, list[_Row]]
    by_location: dict[str, list[_Row]]  # rows of a location and no service

    def rows(self, sid: str, lid: str, salid: str) -> list[_Row]:
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


def _index(rows: list[_Row]) -> _Linked:
    linked = _Linked(defaultdict(list), defaultdict(list), defaultdict(list))
    for r in rows:
        if r["service_at_location_id"]:
            linked.by_sal[r["service_at_location_id"]].append(r)
        if r["service_id"]:
            linked.by_service[r["service_id"]].append(r)
        elif r["location_id"]:
            linked.by_location[r["location_id"]].append(r)
    return linked


def _phones(rows: list[_Row]) -> list[str]:
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


def _hours(record: ServiceRecord, rows: list[_Row], stats: HsdsStats) -> None:
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


def _coordinates(location: _Row) -> tuple[float | None, float | None] | str:
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
