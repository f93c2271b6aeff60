"""Reading Miami 211 (Open Referral HSDS) into ServiceRecords, a small broken datapackage, and mapped CSV/JSONL."""

from __future__ import annotations

import csv
import functools
import json
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import datasets_path, require_datasets
from tracerag.catalog.clean import canonical_forms, clean_languages, clean_text
from tracerag.catalog.hsds import HsdsStats, read_hsds, read_taxonomy
from tracerag.catalog.mapping import read_mapped
from tracerag.catalog.model import ServiceRecord
from tracerag.errors import ConfigError, RecordError

MIAMI = datasets_path() / "miami211"


@functools.cache
def real_read() -> tuple[tuple[ServiceRecord, ...], tuple[RecordError, ...], HsdsStats]:
    """Miami 211 read once per test session (~2 s). Shared with test_store: tests must not change the records."""
    require_datasets("miami211")
    stats = HsdsStats()
    items = list(read_hsds(MIAMI, stats))
    records = tuple(i for i in items if isinstance(i, ServiceRecord))
    errors = tuple(i for i in items if isinstance(i, RecordError))
    return records, errors, stats


def real_records() -> dict[str, ServiceRecord]:
    return {r.id: r for r in real_read()[0]}


# ---------------------------------------------------------------------------------------------- real data


def test_real_counts() -> None:
    """Measured on the file: every service has one location, so records = services and ids = service ids."""
    records, errors, stats = real_read()
    assert errors == ()
    assert len(records) == 4089
    assert stats.services == 4089 and stats.organizations == 1074 and stats.locations == 4089
    assert len({r.id for r in records}) == 4089 and all(r.id == r.service_id for r in records)
    assert len({r.city for r in records} - {""}) == 179
    assert sum(not r.city for r in records) == 31
    assert len({r.zip for r in records} - {""}) == 384
    assert stats.schedule_rows == 11350
    assert sum(bool(r.hours_text) for r in records) == 2597
    assert sum(bool(r.openings) for r in records) == 2586
    assert stats.hours_from_text == 2586 and stats.hours_from_rows == 0
    assert stats.rows_disagree == 367  # rows that lost days from their own original_text
    assert sum(bool(r.hours_text) and not r.openings for r in records) == 11
    assert stats.eligibility_rows == 2244 and stats.eligibility_unlinked == 2244
    assert all(r.eligibility == "" for r in records)  # never guessed by row order
    assert sum(bool(r.taxonomy) for r in records) == 3589
    assert sum(bool(r.phones) for r in records) == 4067
    assert sum(r.latitude is not None for r in records) == 2260
    assert Counter(a for r in records for a in r.accessibility) == {"Handicap accessible": 1620}


def test_text_is_cleaned_everywhere() -> None:
    """Literal backslash-n becomes a newline, cp437 punctuation mojibake is repaired, "###MON###" tags go."""
    records, _, _ = real_read()
    texts = [
        t
        for r in records
        for t in (r.name, r.organization, r.description, r.application_process, r.fees, r.hours_text, r.address)
    ]
    assert not [t for t in texts if "\\n" in t]
    assert not [t for t in texts if "G\u00c7" in t]
    assert not [t for t in texts if "###" in t]
    assert "patients\u2019 homes" in real_records()["216"].description  # "patientsGÇÖ homes" in the file
    salvation = real_records()["149"].description  # "...and more.\\n\\nThe Salvation Army provides..."
    assert "outreach programs and more.\n\nThe Salvation Army provides 280 beds" in salvation
    assert "The Salvation Army\u2019s Red Shield" in salvation
    assert real_records()["164"].hours_text == "7:00am-7:00pm, Mon-Fri;\n8:00am-5:00pm, Sat"


def test_real_record_fields() -> None:
    r = real_records()["136"]
    assert (r.name, r.organization) == ("GIRL SCOUTS COUNCIL OF TROPICAL FLORIDA, INC.",) * 2
    assert (r.address, r.city, r.state, r.zip) == ("11347 SW 160th Street", "Miami", "FL", "33157")
    assert r.phones == ["305-253-4841"] and r.url == "www.girlscoutsfl.org"
    assert r.languages == ["English", "Spanish", "Creole"]
    assert r.taxonomy == [
        ("PL-7000", "Recreational Activities/Sports"),
        ("PS-9800.8500", "Scouting Programs"),
        ("PX", "Volunteer Opportunities"),
    ]
    assert r.description.endswith("potential and self-worth.")  # the "###MON###" tag removed
    assert {(o.weekday, o.opens, o.closes) for o in r.openings} == {(d, 540, 1020) for d in range(5)}
    assert r.application_process == "Call to register" and r.eligibility == ""
    assert real_records()["163"].phones == ["305-573-4200 x57471"]  # extension as written


def test_zips_are_strings_as_written() -> None:
    records = real_records()
    assert all(isinstance(r.zip, str) for r in records.values())
    assert records["505"].zip == "33128-1966"  # ZIP+4 kept
    assert records["5752"].zip == "G1M 3H6" and records["5752"].address == "245, Soumande Road, Local 285"
    assert records["1713"].city == records["1713"].state == records["1713"].zip == ""
    assert Counter(r.state for r in records.values()).most_common(2) == [("FL", 3858), ("DC", 46)]


def test_hours_prefer_the_text_over_rows_that_lost_days() -> None:
    """Service 164's rows: one Saturday row at 7am-7pm; its text: Mon-Fri 7am-7pm and Sat 8am-5pm."""
    r = real_records()["164"]
    assert {(o.weekday, o.opens, o.closes) for o in r.openings} == {(d, 420, 1140) for d in range(5)} | {(5, 480, 1020)}
    typo = real_records()["8092"]  # "9:00pm-7:00pm, Mon-Fri" in both text and rows
    assert typo.openings == [] and typo.hours_text == "9:00pm-7:00pm, Mon-Fri"


def test_languages_are_names_not_notes() -> None:
    records = real_records()
    assert records["997"].languages == ["English", "Spanish"]  # + "other languages available upon request"
    assert records["3313"].languages == ["English", "Spanish"]  # + "Espa+¦ol" and "Spanish\nIngles"
    assert "Haitian Creole" in records["7259"].languages  # written "Haitian-Creole"
    assert Counter(lang for r in records.values() for lang in r.languages).most_common(6) == [
        ("English", 4059),
        ("Spanish", 3270),
        ("Creole", 1440),
        ("French", 177),
        ("Hebrew", 36),
        ("Portuguese", 35),
    ]
    names = {lang for r in records.values() for lang in r.languages}
    assert len(names) == 32
    assert not {n for n in names if any(w in n.lower() for w in ("available", "request", "translat", "line"))}


@pytest.mark.parametrize(
    ("cells", "expected"),
    [  # cells of languages.csv
        (["Spanish (limited)"], ["Spanish"]),
        (["English and Spanish"], ["English", "Spanish"]),
        (["Creole with translators as needed"], ["Creole"]),
        (["French Other languages available upon request"], ["French"]),
        (
            ["English\\nBi-lingual volunteers available to translate Spanish\\nCreole - not always available"],
            ["English", "Creole"],
        ),
        (["Spanish\\n\\nIndividual Counseling: English"], ["Spanish", "English"]),
        (["Spanish and Creole. A telephone translation service is available."], ["Spanish", "Creole"]),
        (
            ["American Sign Language (limited)\\n\\nWe are able to get in person or on the phone interpreters"],
            ["American Sign Language"],
        ),
        (["ASL (intermediate)"], ["American Sign Language"]),
        (["Haitian Creole. Interpretation is also available for other languages."], ["Haitian Creole"]),
        (["other languages available upon request", "Language line available", "is available."], []),
        (["Applications available in English", "Over 140 languages with interpreters available"], []),
    ],
)
def test_clean_languages(cells: list[str], expected: list[str]) -> None:
    assert clean_languages(cells) == expected


def test_clean_text_and_canonical_forms() -> None:
    assert clean_text("a\\nb\\r\\nc  \\n") == "a\nb\nc"
    assert clean_text("donGÇÖt GÇ£quotedGÇ¥ 9GÇô5") == "don\u2019t \u201cquoted\u201d 9\u20135"
    assert clean_text("text.\\n\\n###COL###") == "text."
    forms = canonical_forms(["MIAMI", "Miami", "Miami", "miami", "Opa-Locka", "Opa Locka", "Opa Locka", "DORAL"])
    assert forms == {"miami": "Miami", "opa locka": "Opa Locka", "doral": "DORAL"}
    assert canonical_forms(["MIAMI", "Miami"])["miami"] == "Miami"  # a tie goes to the mixed-case form


@pytest.mark.needs_data("miami211")
def test_taxonomy_vocabulary() -> None:
    terms = read_taxonomy(MIAMI)
    assert len(terms) == 1991  # 1994 rows, ids "J", "FP-4500" and "FP-4000" twice: the first name wins
    assert terms["BD-1800"] == "Emergency Food" and terms["BD-1800.2000-640"] == "Ongoing Emergency Food Assistance"


# --------------------------------------------------------------------------------- a small broken package


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


@pytest.fixture
def package(tmp_path: Path) -> Path:
    S = ["id", "organization_id", "name", "description", "url", "email", "application_process", "fees"]
    rows = [
        ["s1", "o1", "Food Pantry", "Groceries.\\nBring a bag.", "www.a.org", "", "Walk in", ""],  # line 2-
        ["s2", "o1", "Two-line\ndescription", "spans lines 3 and 4", "", "", "", ""],  # lines 3-4
        ["", "o1", "No id", "", "", "", "", ""],  # line 5
        ["s1", "o1", "Duplicate", "", "", "", "", ""],  # line 6
        ["s5", "o1", "", "no name", "", "", "", ""],  # line 7
        ["s4", "o2", "Clinic", "Two sites.", "", "", "", ""],  # line 8
    ]
    write_csv(tmp_path / "services.csv", S, rows)
    with (tmp_path / "services.csv").open("a", encoding="utf-8") as fh:
        fh.write("s6,o1,Short row\n")  # line 9: 3 cells for 8 columns
        fh.write("s7,o1,After the bad row,,,,,\n")  # line 10
    write_csv(tmp_path / "organizations.csv", ["id", "name"], [["o1", "Helping Hands"], ["o2", "City Health"]])
    write_csv(
        tmp_path / "services_at_location.csv",
        ["id", "service_id", "location_id"],
        [["a1", "s1", "l1"], ["a2", "s2", "l2"], ["a3", "s4", "l3"], ["a4", "s4", "l4"], ["a5", "s7", "l5"]],
    )
    write_csv(
        tmp_path / "locations.csv",
        ["id", "name", "latitude", "longitude"],
        [["l1", "A", "25.77", "-80.19"], ["l2", "B", "", ""], ["l3", "C", "north", "-80.1"], ["l4", "D", "", ""]],
    )
    A = ["id", "location_id", "address_1", "address_2", "city", "region", "state_province", "postal_code"]
    write_csv(
        tmp_path / "physical_addresses.csv",
        A,
        [
            ["p1", "l1", "1 Main St", "Suite 2", "MIAMI", "", "FL ", "01234"],
            ["p2", "l2", "2 Main St", "", "Miami", "Miami-Dade", "FL", "33128-1966"],
            ["p3", "l3", "3 Main St", "", " Miami ", "", "FL", "33101"],
            ["p4", "l4", "4 Bay Rd", "", "Key West", "", "FL", "33040"],
        ],
    )
    write_csv(
        tmp_path / "phones.csv",
        ["id", "location_id", "service_id", "number", "extension"],
        [
            ["f1", "", "s1", "305-555-0100", "12"],
            ["f2", "l3", "s4", "305-555-0300", ""],
            ["f3", "l4", "s4", "305-555-0400", ""],
        ],
    )
    write_csv(
        tmp_path / "languages.csv",
        ["id", "service_id", "location_id", "language"],
        [["g1", "s1", "", "Spanish (limited)"], ["g2", "s1", "", "other languages available upon request"]],
    )
    write_csv(
        tmp_path / "regular_schedules.csv",
        ["id", "service_id", "location_id", "weekday", "opens_at", "closes_at", "original_text"],
        [
            ["", "s1", "", "Monday", "", "", "9:00am-12:00pm; 1:00pm-4:00pm, Mon-Fri"],
            ["", "s4", "", "Saturday", "9:00am", "1:00pm", ""],
        ],
    )
    write_csv(
        tmp_path / "accessibility_for_disabilities.csv",
        ["id", "location_id", "accessibility"],
        [["x1", "l1", "Handicap accessible"], ["x2", "l2", ""]],
    )
    write_csv(
        tmp_path / "services_taxonomy.csv", ["id", "service_id", "taxonomy_id"], [["t", "s1", "BD-1800.2000"]] * 2
    )
    write_csv(tmp_path / "taxonomy.csv", ["id", "name"], [["BD-1800.2000", "Food Pantries"]])
    write_csv(
        tmp_path / "eligibility.csv", ["id", "service_id", "eligibility"], [["e1", "s1", "Residents"], ["", "", "x"]]
    )
    return tmp_path


def test_the_ingest_report_says_what_unlinked_eligibility_rows_are(package: Path, tmp_path: Path) -> None:
    """Found by a new user: `eligibility_unlinked: 2244` beside `eligibility_rows: 2244` said nothing."""
    from typer.testing import CliRunner

    from tracerag.cli import app

    result = CliRunner().invoke(app, ["catalog", "ingest", str(package), "--catalog", str(tmp_path / "c")])
    assert result.exit_code == 1, result.output  # the broken rows are skipped
    flat = " ".join(result.output.split())
    assert "eligibility_unlinked: 1 (of the 2 eligibility rows, those without the id of a service read" in flat


def test_a_broken_package_is_read_around_its_errors(package: Path) -> None:
    stats = HsdsStats()
    items = list(read_hsds(package, stats))
    errors = [i for i in items if isinstance(i, RecordError)]
    records = {i.id: i for i in items if isinstance(i, ServiceRecord)}
    where = sorted((Path(e.file).name, e.line, e.reason) for e in errors)
    assert where == [
        ("locations.csv", 4, "location l3: coordinates 'north', '-80.1' are not numbers"),
        ("services.csv", 5, "service without id"),
        ("services.csv", 6, "duplicate service id 's1'"),
        ("services.csv", 7, "service s5 has no name"),
        ("services.csv", 9, "expected 8 columns, found 3"),
    ]
    assert str(errors[0]).startswith(str(package / "services.csv"))
    assert sorted(records) == ["s1", "s2", "s4@l3", "s4@l4", "s7"]  # the read went on after each error
    assert stats.services == 4 and stats.eligibility_rows == 2 and stats.eligibility_unlinked == 1

    s1 = records["s1"]
    assert s1.description == "Groceries.\nBring a bag."
    assert (s1.address, s1.city, s1.state, s1.zip) == ("1 Main St, Suite 2", "Miami", "FL", "01234")
    assert s1.phones == ["305-555-0100 x12"] and s1.languages == ["Spanish"]
    assert s1.accessibility == ["Handicap accessible"] and s1.taxonomy == [("BD-1800.2000", "Food Pantries")]
    assert s1.eligibility == "Residents" and (s1.latitude, s1.longitude) == (25.77, -80.19)
    assert {(o.weekday, o.opens, o.closes) for o in s1.openings} == {(d, 540, 720) for d in range(5)} | {
        (d, 780, 960) for d in range(5)
    }
    assert records["s2"].name == "Two-line\ndescription" and records["s2"].county == "Miami-Dade"
    assert records["s2"].city == records["s4@l3"].city == "Miami"  # "MIAMI", " Miami " and "Miami": one city
    assert records["s2"].zip == "33128-1966"

    a, b = records["s4@l3"], records["s4@l4"]  # one service, two locations: one record each
    assert a.service_id == b.service_id == "s4" and (a.city, b.city) == ("Miami", "Key West")
    assert (a.phones, b.phones) == (["305-555-0300"], ["305-555-0400"])
    assert a.latitude is None  # its coordinates were not numbers
    assert {(o.weekday, o.opens, o.closes) for o in a.openings} == {(5, 540, 780)}  # from the row: no text


def test_a_mapping_given_with_a_datapackage_is_refused_not_ignored(package: Path) -> None:
    """A row filter written for an HSDS folder would otherwise be dropped without a word."""
    from tracerag.catalog.ingest import build_catalog
    from tracerag.config import load_settings

    target = package / "catalog"
    with pytest.raises(ConfigError, match="HSDS datapackage is read by its own column names"):
        build_catalog(package, target, load_settings(), mapping={"filter": {"status": "active"}})
    assert not target.exists()


def test_no_services_file_is_one_error(tmp_path: Path) -> None:
    items = list(read_hsds(tmp_path))
    assert len(items) == 1 and isinstance(items[0], RecordError) and "services.csv" in str(items[0])


def test_html_status_and_linked_codes_in_a_datapackage(tmp_path: Path) -> None:
    """What an unseen directory showed, in HSDS form: HTML in texts, inactive services, linked taxonomy codes."""
    write_csv(
        tmp_path / "services.csv",
        ["id", "name", "description", "status", "fees"],
        [
            ["a", "Pantry", "<p>Food for <b>all</b></p><br />Bring a bag &amp; ID", "active", "None&nbsp;at all"],
            ["b", "Old pantry", "Closed", "inactive", ""],
            ["c", "Gone", "", "Defunct", ""],
        ],
    )
    write_csv(
        tmp_path / "services_taxonomy.csv",
        ["id", "service_id", "taxonomy_id"],
        [["1", "a", "BD-1800.2000 * B * D"], ["2", "a", "BD-1800.2000 * YB-8000"]],
    )
    stats = HsdsStats()
    records = {r.id: r for r in read_hsds(tmp_path, stats) if isinstance(r, ServiceRecord)}
    assert list(records) == ["a"] and stats.filtered == Counter({"status is 'inactive'": 1, "status is 'defunct'": 1})
    pantry = records["a"]
    assert pantry.description == "Food for all\nBring a bag & ID" and pantry.fees == "None at all"
    assert [t for t, _ in pantry.taxonomy] == ["BD-1800.2000", "B", "D", "YB-8000"]


# --------------------------------------------------------------------------------------------- mapped files

MAPPING = {
    "id": "ID",
    "name": "Program",
    "organization": "Agency",
    "address": ["Street", "Unit"],
    "city": "City",
    "zip": "Zip",
    "hours_text": "Hours",
    "languages": "Languages",
    "languages_sep": ";",
    "taxonomy": "Types",
    "taxonomy_names": "TypeNames",
    "latitude": "Lat",
    "longitude": "Lon",
}
HEADER = [
    "ID",
    "Program",
    "Agency",
    "Street",
    "Unit",
    "City",
    "Zip",
    "Hours",
    "Languages",
    "Types",
    "TypeNames",
    "Lat",
    "Lon",
]


def test_read_mapped_csv(tmp_path: Path) -> None:
    path = tmp_path / "programs.csv"
    write_csv(
        path,
        HEADER,
        [
            [
                "1",
                "Pantry",
                "Helping Hands",
                "1 Main St",
                "",
                "HIALEAH",
                "01234",
                "Mon-Fri 9am-5pm; Sat 9am-1pm",
                "English; Spanish (limited); other languages available upon request",
                "BD-1800.2000",
                "Food Pantries",
                "25.8",
                "-80.3",
            ],
            ["2", "Clinic", "", "2 Main St", "Rm 3", "Hialeah", "33010", "by appointment", "", "", "", "", ""],
            ["3", "Clinic", "", "", "", "Hialeah", "", "", "", "", "", "x", "y"],
            ["", "No id", "", "", "", "", "", "", "", "", "", "", ""],
            ["2", "Duplicate", "", "", "", "", "", "", "", "", "", "", ""],
            ["4", "Short"],
        ],
    )
    items = list(read_mapped(path, MAPPING))
    errors = [(e.line, e.reason) for e in items if isinstance(e, RecordError)]
    records = {r.id: r for r in items if isinstance(r, ServiceRecord)}
    assert errors == [
        (4, "record 3: coordinates ['x', 'y'] are not numbers"),
        (5, "id missing (column 'ID')"),
        (6, "duplicate id '2'"),
        (7, "expected 13 columns, found 2"),
    ]
    assert sorted(records) == ["1", "2", "3"]
    one = records["1"]
    assert (one.city, one.zip, one.organization, one.service_id) == ("Hialeah", "01234", "Helping Hands", "1")
    assert one.languages == ["English", "Spanish"] and one.taxonomy == [("BD-1800.2000", "Food Pantries")]
    assert {(o.weekday, o.opens, o.closes) for o in one.openings} == {(d, 540, 1020) for d in range(5)} | {
        (5, 540, 780)
    }
    assert one.hours_text == "Mon-Fri 9am-5pm; Sat 9am-1pm" and (one.latitude, one.longitude) == (25.8, -80.3)
    two = records["2"]
    assert two.address == "2 Main St, Rm 3" and two.openings == [] and two.hours_text == "by appointment"
    assert records["3"].latitude is None


def test_read_mapped_jsonl_and_toml_table(tmp_path: Path) -> None:
    path = tmp_path / "programs.jsonl"
    lines = [
        json.dumps(
            {"ID": 7, "Program": "Legal aid", "City": "Miami", "Languages": ["Creole", "French"], "Hours": "24/7"}
        ),
        "{not json",
        json.dumps(["a list"]),
        json.dumps({"ID": "8", "Program": "Shelter", "City": "MIAMI"}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    items = list(
        read_mapped(
            path,
            {
                "columns": {"id": "ID", "name": "Program", "city": "City"},
                "languages": "Languages",
                "hours_text": "Hours",
            },
        )
    )
    errors = [(e.line, e.reason.split(":")[0]) for e in items if isinstance(e, RecordError)]
    records = {r.id: r for r in items if isinstance(r, ServiceRecord)}
    assert errors == [(2, "bad JSON"), (3, "not a JSON object")]
    assert records["7"].languages == ["Creole", "French"] and len(records["7"].openings) == 7
    assert records["8"].city == "Miami"


def test_read_mapped_refuses_bad_mappings(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    write_csv(path, ["ID", "Program"], [["1", "x"]])
    with pytest.raises(ConfigError, match="name"):
        list(read_mapped(path, {"id": "ID"}))
    with pytest.raises(ConfigError, match="unknown keys"):
        list(read_mapped(path, {"id": "ID", "name": "Program", "colour": "C"}))
    items = list(read_mapped(path, {"id": "ID", "name": "Program", "city": "Town"}))
    assert len(items) == 1 and isinstance(items[0], RecordError) and "missing columns ['Town']" in str(items[0])
