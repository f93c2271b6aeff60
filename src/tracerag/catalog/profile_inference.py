"""The catalog profile inferred from the records at `tracerag catalog ingest`, and merged with what a person set.

What is inferred, and from what (every rule reads the data; none knows a place):

- `country`: the addresses' country cells (names or codes, read with pycountry) when at least half the records
  state one; else the country whose numbering plan makes the records' phone numbers valid (phonenumbers, on a
  sample, each number tried under every calling code); else the few address cells there are; else none;
- `region`: the state or province of most records (a majority of those that state one), named as ISO 3166-2 names
  it when the country has a subdivision of that code ("ON" → "Ontario", with "ON" as its alias), else as written;
- `postal_code_pattern` / `postal_code_prefix`: the shapes of the postal codes seen (digits, letters, separators),
  the most common as the base and longer forms that extend it as an optional suffix ("33128" and "33128-1966" →
  `\\d{5}(?:-\\d{4})?`, matched on 5 characters); shapes of fewer than 1% of the codes are noise and left out;
- `place_aliases`: a hyphenated place ("Lake-Riverton" as a county) one side of which is itself another place of
  the catalog ("Lake" a city) is also known by its other side ("Riverton"), when that side names no place and is
  part of no other name;
- `emergency_numbers` / `crisis_numbers`: the numbers the country's word file (`words/country-{cc}.toml`,
  `[numbers]`) gives for the inferred country; none when the country or its file is unknown;
- `home_place`: the city of at least `HOME_PLACE_SHARE` of all the records, when there is one (a city's own
  directory, a programme list of one city): a request naming no place is then answered there, not asked about;
- `language`: `--language`, else "en" (the records' texts are not guessed at); `help_line` and `name` are only
  ever given (`--help-line`, `--name`), never guessed.

A re-ingest keeps what a person edited. `profile.inferred.toml` beside `profile.toml` holds what the last ingest
inferred; a value of `profile.toml` that differs from it (or a key it has that the other lacks) was set by a
person and wins over the new inference; a value equal to it follows the data. Options given on the command line
win over both. Deleting a key from `profile.toml` hands it back to inference.
"""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import phonenumbers
import pycountry
import tomli_w

from tracerag.catalog.clean import place_key
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.profile import PROFILE_FILE, CatalogProfile
from tracerag.catalog.words import CountryWords
from tracerag.errors import ConfigError

INFERRED_FILE = "profile.inferred.toml"
GIVEN_FIELDS = ("language", "help_line", "name")
PHONE_SAMPLE = 40  # distinct numbers tried under every calling code: ~1 s, and plenty to tell plans apart
HOME_PLACE_SHARE = 0.95  # a directory with this share of its records in one city is that city's directory
NOISE_SHARE = 0.01  # postal-code shapes rarer than this are typing errors, not a form of the code
_EDIT_NOTE = (
    "# The catalog's profile, inferred by `tracerag catalog ingest` and editable: a value you change here is kept\n"
    "# by the next ingest (it differs from profile.inferred.toml); delete a key to hand it back to inference.\n"
)
_INFERRED_NOTE = "# What the last `tracerag catalog ingest` inferred (do not edit: edit profile.toml).\n"


@dataclass
class Inference:
    """The inferred profile values, and how each was found (for the ingest report)."""

    values: dict[str, Any] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)


def infer(records: Sequence[ServiceRecord], countries: Mapping[str, int] | None = None) -> Inference:
    """Infer the regional profile values from the records and the addresses' country cells."""
    out = Inference()
    country, how = infer_country(countries or {}, len(records), (p for r in records for p in r.phones))
    if country:
        out.values["country"], out.how["country"] = country, how
    if country:
        words = CountryWords.load(country)
        for key, numbers in (("emergency_numbers", words.emergency_numbers), ("crisis_numbers", words.crisis_numbers)):
            if numbers:
                out.values[key] = [{"label": label, "number": number} for label, number in numbers]
                out.how[key] = f"{', '.join(n for _, n in numbers)}, from {words.source}"
    region = infer_region([r.state for r in records], country)
    if region:
        out.values["region"], out.values["region_aliases"] = region[0], region[1]
        out.how["region"] = region[2]
    postal = infer_postal_codes([r.zip for r in records])
    if postal:
        out.values["postal_code_pattern"] = postal[0]
        if postal[1] is not None:
            out.values["postal_code_prefix"] = postal[1]
        out.how["postal_code_pattern"] = postal[2]
    aliases = infer_place_aliases([r.city for r in records], [r.county for r in records])
    if aliases:
        out.values["place_aliases"] = aliases
        out.how["place_aliases"] = f"{len(aliases)} from hyphenated place names"
    home = infer_home_place([r.city for r in records])
    if home:
        out.values["home_place"], out.how["home_place"] = home
    return out


# ------------------------------------------------------------------------------------------------- country


def country_code(value: str) -> str | None:
    """ISO 3166-1 alpha-2 code of a country cell ("United States", "USA", "us"), or None."""
    value = " ".join(value.split())
    if not value:
        return None
    try:
        return pycountry.countries.lookup(value).alpha_2
    except LookupError:
        return None


def infer_country(countries: Mapping[str, int], records: int, phones: Iterable[str]) -> tuple[str | None, str]:
    """(ISO code, how it was found): addresses when half the records state a country, else phone numbers."""
    codes: Counter[str] = Counter()
    for value, n in countries.items():
        code = country_code(value)
        if code:
            codes[code] += n
    stated = sum(codes.values())
    if codes and stated * 2 >= records:
        code, n = codes.most_common(1)[0]
        return code, f"addresses: {n:,} of {records:,} records"
    by_phone = phone_country(phones)
    if by_phone[0]:
        return by_phone
    if codes:
        code, n = codes.most_common(1)[0]
        return code, f"addresses: {n:,} of {records:,} records (no phone number is valid anywhere)"
    return None, "no country in the addresses, no valid phone number"


def phone_country(phones: Iterable[str], sample: int = PHONE_SAMPLE) -> tuple[str | None, str]:
    """The country whose numbering plan makes most of the sampled numbers valid: a number written with "+" says
    its own; one written nationally is tried under each calling code's main region and counts for the region
    of the number it then is. ("415-555-0100" is valid under +1, as a US number, and perhaps by chance under
    another plan: the plan under which most of them are valid wins.)"""
    numbers = list(dict.fromkeys(p for p in (" ".join(x.split()) for x in phones) if sum(c.isdigit() for c in p) >= 6))
    numbers = numbers[:: max(1, len(numbers) // sample)][:sample]
    if not numbers:
        return None, "no phone numbers"
    mains = [regions[0] for regions in phonenumbers.COUNTRY_CODE_TO_REGION_CODE.values() if regions[0] != "001"]
    votes: Counter[str] = Counter()
    for number in numbers:
        found = _international(number)
        if found:
            votes[found] += 1
            continue
        for region in dict.fromkeys(found for main in mains if (found := _national(number, main))):
            votes[region] += 1
    if not votes:
        return None, f"none of {len(numbers)} phone numbers is valid anywhere"
    region, n = votes.most_common(1)[0]
    return region, f"phone numbers: {n} of {len(numbers)} sampled are valid there"


def _international(number: str) -> str | None:
    if not number.lstrip().startswith("+"):
        return None
    try:
        parsed = phonenumbers.parse(number, None)
    except phonenumbers.NumberParseException:
        return None
    return phonenumbers.region_code_for_number(parsed) if phonenumbers.is_valid_number(parsed) else None


def _national(number: str, region: str) -> str | None:
    try:
        parsed = phonenumbers.parse(number, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(parsed):
        return None
    return phonenumbers.region_code_for_number(parsed)


# -------------------------------------------------------------------------------------------------- region


def infer_region(states: Sequence[str], country: str | None) -> tuple[str, tuple[str, ...], str] | None:
    """(region, its aliases, how) from the records' state cells: the most common, when a majority of the records
    that state one do."""
    counts = Counter(" ".join(s.split()) for s in states if s and s.strip())
    if not counts:
        return None
    value, n = counts.most_common(1)[0]
    stated = sum(counts.values())
    if n * 2 <= stated:
        return None
    how = f"state/province of {n:,} of {stated:,} records"
    if country:
        sub = pycountry.subdivisions.get(code=f"{country}-{value.upper()}")
        if sub is not None:
            return sub.name, (value,), how
        named = [
            s for s in pycountry.subdivisions.get(country_code=country) or [] if s.name.casefold() == value.casefold()
        ]
        if named:
            return named[0].name, (named[0].code.split("-", 1)[1],), how
    return value, (), how


# -------------------------------------------------------------------------------------------- postal codes

_RUN = re.compile(r"9+|A+|.")


def _shape(code: str) -> str:
    return "".join("9" if c.isdigit() else "A" if c.isalpha() else c for c in code.strip().upper())


def _regex(shape: str) -> str:
    out = []
    for run in _RUN.findall(shape):
        if run[0] == "9":
            out.append(r"\d" + (f"{{{len(run)}}}" if len(run) > 1 else ""))
        elif run[0] == "A":
            out.append("[A-Z]" + (f"{{{len(run)}}}" if len(run) > 1 else ""))
        else:
            out.append(" ?" if run == " " else "-" if run == "-" else re.escape(run))
    return "".join(out)


def infer_postal_codes(codes: Sequence[str]) -> tuple[str, int | None, str] | None:
    """(pattern, prefix, how) from the postal codes seen; None when there are none."""
    shapes = Counter(_shape(c) for c in codes if c and c.strip())
    total = sum(shapes.values())
    if not total:
        return None
    common = {s: n for s, n in shapes.items() if n >= max(2, NOISE_SHARE * total)}
    if not common:
        return None
    base = max(common, key=lambda s: (common[s], -len(s)))
    suffixes = sorted({s[len(base) :] for s in common if s != base and s.startswith(base)}, key=len)
    pattern = _regex(base)
    if suffixes:
        pattern += "(?:" + "|".join(_regex(s) for s in suffixes) + ")?"
    shape = re.compile(pattern)
    covered = sum(1 for c in codes if c and c.strip() and shape.fullmatch(c.strip().upper()))
    how = f"{covered:,} of {total:,} codes have this shape"
    return pattern, (len(base) if suffixes else None), how


# ----------------------------------------------------------------------------------------------- places


def infer_place_aliases(cities: Sequence[str], counties: Sequence[str]) -> dict[str, str]:
    """Other names of hyphenated places (see the module docstring): {alias: the catalog's name}."""
    names = {place_key(v): " ".join(v.split()) for v in [*cities, *counties] if v and v.strip()}
    words = Counter(w for key in names for w in set(key.split()))
    candidates: dict[str, list[str]] = {}
    for name in names.values():
        sides = [s.strip() for s in name.split("-")]
        if len(sides) != 2 or not all(sides):
            continue
        for known, other in ((sides[0], sides[1]), (sides[1], sides[0])):
            other_key = place_key(other)
            if place_key(known) in names and other_key not in names and words[other_key] == 1:
                candidates.setdefault(other, []).append(name)
    return {alias: targets[0] for alias, targets in candidates.items() if len(set(targets)) == 1}


def infer_home_place(cities: Sequence[str]) -> tuple[str, str] | None:
    """(the city, how) when at least `HOME_PLACE_SHARE` of all the records are in one city (records stating no
    city count against it), named as most of its records write it; else None."""
    keys = Counter(place_key(c) for c in cities if c and c.strip())
    if not keys:
        return None
    key, n = keys.most_common(1)[0]
    if n < HOME_PLACE_SHARE * len(cities):
        return None
    written = Counter(" ".join(c.split()) for c in cities if c and place_key(c) == key)
    return written.most_common(1)[0][0], f"city of {n:,} of {len(cities):,} records"


# ------------------------------------------------------------------------------------------ merge and write


def _read(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the catalog profile: {exc}") from exc


def _same(a: Any, b: Any) -> bool:
    norm = lambda v: list(v) if isinstance(v, tuple) else v  # noqa: E731 - TOML reads tuples as lists
    return norm(a) == norm(b)


@dataclass
class ProfileWrite:
    """What `write_profile` wrote: the profile, its path, and every value a person had set (kept over what the
    data says, or over the default where nothing is inferred: a name, a help line)."""

    profile: CatalogProfile
    path: Path
    kept: dict[str, Any]
    how: dict[str, str]


def write_profile(catalog_dir: Path, inference: Inference, given: Mapping[str, Any] | None = None) -> ProfileWrite:
    """Merge the inference with the profile a person may have edited (module docstring), validate, and write
    `profile.toml` and `profile.inferred.toml` into `catalog_dir`. `given`: values from the command line."""
    catalog_dir = Path(catalog_dir)
    current = _read(catalog_dir / PROFILE_FILE)
    last = _read(catalog_dir / INFERRED_FILE)
    given = {k: v for k, v in (given or {}).items() if v is not None}
    merged: dict[str, Any] = {}
    kept: dict[str, Any] = {}
    for key, info in CatalogProfile.model_fields.items():
        if key == "version":
            continue
        default = info.get_default(call_default_factory=True)
        if key in given:
            merged[key] = given[key]
        elif key in current and not _same(current[key], default) and not _same(current[key], last.get(key, default)):
            merged[key] = current[key]  # set by a person: the file's value is not what was inferred, nor a default
            kept[key] = current[key]
        elif key in inference.values:
            merged[key] = inference.values[key]
    try:
        profile = CatalogProfile(**merged)
    except ValueError as exc:
        raise ConfigError(f"{catalog_dir / PROFILE_FILE}: invalid catalog profile: {exc}") from None
    path = profile.save(catalog_dir)
    _write(path, _EDIT_NOTE + path.read_text(encoding="utf-8"))
    _write(
        catalog_dir / INFERRED_FILE,
        _INFERRED_NOTE + tomli_w.dumps({k: v for k, v in inference.values.items() if v is not None}),
    )
    return ProfileWrite(profile, path, kept, dict(inference.how))


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
