"""Library code knows no place: no city, county or region of any real directory here appears in src/tracerag.

The names are read from the directories themselves (the Miami HSDS datapackage and the two San Francisco
files), so a place written into code for one catalog fails this test, whichever catalog it came from. What a
catalog knows of its place belongs in its profile.toml; what a language knows, in catalog/words/*.toml.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_datasets

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first

SRC = Path(__file__).resolve().parents[2] / "src" / "tracerag"

# City names that are also ordinary English words, which code may use as words ("a homestead exemption" is not
# needed today, but "plantation" or "sunrise" could be). Listed here, each one, rather than skipped silently.
ORDINARY_WORDS = frozenset({"homestead", "medley", "marathon", "plantation", "sunrise", "highland", "bryan"})
# Region codes that code writes as something else, in capitals: each with what it is there.
CODE_WORDS = {
    "IN": "the SQL operator",
    "OR": "the SQL operator",
    "OK": "an exit code's name",
    "NE": "the named-entity tags of HIPE (NE-COARSE-LIT)",
    "NC": "a licence's NonCommercial clause (CC BY-NC)",
    "LA": "the name of the AIRS/211 LA taxonomy (a product, not a directory's place)",
}


def _csv_rows(path: Path) -> Iterator[dict[str, str]]:
    raw = path.read_bytes().decode("utf-8", errors="replace")
    text = raw.replace("\r\n", "\n").replace("\r", "\n")  # the SF 211 export has old-Mac line endings
    yield from csv.DictReader(io.StringIO(text))


def place_names(datasets: Path) -> tuple[set[str], set[str]]:
    """(names, region codes): the cities, counties and regions the three directories hold."""
    names: set[str] = set()
    codes: set[str] = set()
    for row in _csv_rows(datasets / "miami211" / "physical_addresses.csv"):
        names.update(row[c] for c in ("city", "region"))
        codes.add(row["state_province"])
    sf = datasets / "sf-openreferral"
    for row in _csv_rows(sf / "211-sf.csv"):
        for prefix in ("Physical", "Mailing", "Other"):
            names.update(row.get(f"{prefix}{c}", "") for c in ("City", "County"))
            codes.add(row.get(f"{prefix}StateProvince", ""))
    # The youth-program list has no city, county or region column (its sites are all in the city the 211
    # export names): its header is checked so that a column added to a later release is read too.
    header = next(csv.reader(io.StringIO((sf / "dcyf-youth-programs.csv").read_text("utf-8", errors="replace"))))
    assert not [h for h in header if re.search(r"city|county|state|province|region", h, re.I)], header
    codes = {c.strip() for c in codes if c.strip()}
    names = {" ".join(n.split()) for n in names if n.strip()}
    try:
        import pycountry  # the region names of the codes (FL → Florida), as the profile inference writes them
    except ImportError:  # pragma: no cover - pycountry is a dependency of the profile inference
        pycountry = None
    if pycountry is not None:
        for code in codes:
            sub = pycountry.subdivisions.get(code=f"US-{code}")
            if sub is not None:
                names.add(sub.name)
    return names, codes


def _sources() -> list[tuple[Path, str]]:
    return [(p, p.read_text(encoding="utf-8")) for p in sorted(SRC.rglob("*.py"))]


def test_no_place_name_of_a_real_directory_appears_in_library_code() -> None:
    names, codes = place_names(require_datasets("miami211", "sf-openreferral"))
    assert {"Miami", "Hialeah", "San Francisco", "San Mateo", "Florida"} <= names  # the reading works
    assert {"FL", "CA"} <= codes
    found: list[str] = []
    sources = _sources()
    for name in sorted(names):
        if name.casefold() in ORDINARY_WORDS:
            continue
        # Word boundaries; any run of spaces or a hyphen between the words ("Miami Dade", "Miami-Dade").
        words = [re.escape(w) for w in re.split(r"[\s-]+", name)]
        pattern = re.compile(r"(?<![\w])" + r"[\s-]+".join(words) + r"(?![\w])", re.I)
        found += [f"{path.relative_to(SRC)}: {name!r}" for path, text in sources if pattern.search(text)]
    for code in sorted(codes - set(CODE_WORDS)):  # a code is a place only written as one: uppercase, alone
        pattern = re.compile(rf"(?<![\w.]){re.escape(code.upper())}(?![\w])")
        found += [f"{path.relative_to(SRC)}: {code!r}" for path, text in sources if pattern.search(text)]
    assert not found, "place names in library code (move them to the catalog's profile):\n" + "\n".join(found)


def test_the_check_finds_a_planted_name(tmp_path: Path) -> None:
    names, _ = place_names(require_datasets("miami211", "sf-openreferral"))
    planted = 'CITY = "hialeah"  # a place written into code\n'
    hits = [n for n in names if re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", planted, re.I)]
    assert hits == ["Hialeah"]


@pytest.mark.parametrize("name", sorted(ORDINARY_WORDS))
def test_each_listed_ordinary_word_is_a_place_of_a_directory(name: str) -> None:
    names, _ = place_names(require_datasets("miami211", "sf-openreferral"))
    assert name in {n.casefold() for n in names}  # an exception that no longer names a place goes


# What only the United States writes, that the condition rules once held in code (now catalog/words/country-us.toml):
# acronyms compared with case, phrases without it.
US_ACRONYMS = ("SSN", "DACA", "TPS", "TANF", "SNAP", "SSI", "FPL", "VA", "DD-214")
US_PHRASES = ("social security", "medicaid", "medicare", "food stamps", "qualified aliens", "lawfully present")


def test_no_countrys_own_terms_appear_in_library_code() -> None:
    from tracerag.catalog.words import CountryWords

    us = CountryWords.load("US")
    patterns = [
        re.compile(p, re.I)
        for p in (
            us.other_documents,
            us.status_affirm,
            us.status_deny,
            us.status_number,
            us.status_served,
            us.low_income_affirm,
            us.veterans_affirm,
            us.veterans_affirm_exact,
        )
        if p
    ]
    for term in (*US_ACRONYMS, *US_PHRASES):  # each is the country file's: the list is not stale
        assert any(p.search(term) for p in patterns), term
    found = []
    for path, source in _sources():
        text = source.replace("\\b", " ")  # a word boundary written in a pattern ("\\bSSN\\b") is no letter
        for term in US_ACRONYMS:
            if re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", text):
                found.append(f"{path.relative_to(SRC)}: {term!r}")
        for term in US_PHRASES:
            words = r"(?:\\s\+|\s+)".join(re.escape(w) for w in term.split())  # written, or as a pattern
            if re.search(rf"(?<!\w){words}(?!\w)", text, re.I):
                found.append(f"{path.relative_to(SRC)}: {term!r}")
    assert not found, "a country's own terms in library code (move them to its country-xx.toml):\n" + "\n".join(found)
