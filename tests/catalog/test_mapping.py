"""Mapping options learnt from an unseen directory (a 211 export of another region, mapped with --mapping): row
filters, null markers, place variants merged or aliased, HTML out of texts, linked taxonomy codes as terms;
and from the San Francisco youth programs: X-marked columns, constants, an id made of several columns."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from tracerag.catalog.mapping import MAPPING_KEYS, read_mapped
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.rows import ReadStats
from tracerag.errors import ConfigError, RecordError
from tracerag.ingest import RecordWarning

HEADER = ["Id", "Name", "Status", "City", "County", "Description", "Codes", "Terms"]


def write(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture
def export(tmp_path: Path) -> Path:
    """Modelled on the unseen export: active and inactive services, county -1, city Unknown, one city in four
    spellings and a regional name, HTML in descriptions, linked taxonomy codes."""
    rows = [
        [
            "1",
            "Pantry",
            "Active",
            "Lakeview DC",
            "Lake",
            "Food<br />Bring a bag",
            "BD-1800.2000 * B * D",
            "Food Pantries",
        ],
        ["2", "Clinic", "Active", "Lakeview, D.C.", "-1", "<p>Free care</p>", "LN-1500", "Community Clinics"],
        ["3", "Shelter", "Inactive", "Lakeview DC", "Lake", "Closed", "BH-1800", "Shelters"],
        ["4", "Legal aid", "Active", "Unknown", "Lake", "Tenants &amp; owners", "FT-3000 * YB-8000", "Legal * Seniors"],
        ["5", "Meals", "Active", "Metro Lakeview", "Lake", "Hot meals", "BD-5000", "Soup Kitchens"],
        ["6", "Closed one", "INACTIVE ", "Lakeview DC", "Lake", "", "", ""],
        ["7", "Tax help", "Active", "LAKEVIEW DC", "Lake", "", "", ""],
    ]
    return write(tmp_path / "export.csv", HEADER, rows)


MAPPING = {
    "id": "Id",
    "name": "Name",
    "city": "City",
    "county": "County",
    "description": "Description",
    "taxonomy": "Codes",
    "taxonomy_names": "Terms",
}


def read(path: Path, mapping: dict, stats: ReadStats | None = None) -> tuple[dict[str, ServiceRecord], list]:
    items = list(read_mapped(path, mapping, stats))
    return {i.id: i for i in items if isinstance(i, ServiceRecord)}, [
        i for i in items if not isinstance(i, ServiceRecord)
    ]


def test_without_options_every_row_is_read_as_written(export: Path) -> None:
    records, other = read(export, MAPPING)
    assert sorted(records) == ["1", "2", "3", "4", "5", "6", "7"] and other == []
    assert records["2"].county == "-1" and records["4"].city == "Unknown"  # what the unseen directory showed


def test_a_row_filter_keeps_active_services_and_counts_the_others(export: Path) -> None:
    stats = ReadStats()
    records, _ = read(export, MAPPING | {"filter": {"Status": "Active"}}, stats)
    assert sorted(records) == ["1", "2", "4", "5", "7"]
    assert stats.filtered == Counter({"Status is not 'active'": 2}) and stats.rows == 7  # "INACTIVE " too
    stats = ReadStats()
    records, _ = read(export, MAPPING | {"exclude": {"Status": ["Inactive", "Closed"]}}, stats)
    assert sorted(records) == ["1", "2", "4", "5", "7"] and stats.filtered == Counter({"Status is 'inactive'": 2})


def test_null_markers_are_no_value(export: Path) -> None:
    records, _ = read(export, MAPPING | {"null": ["-1", "Unknown"]})
    assert records["2"].county == "" and records["4"].city == ""
    assert records["1"].county == "Lake"  # "1" is not "-1": markers compare whole


def test_city_spellings_are_merged_and_aliases_name_the_rest(export: Path) -> None:
    records, _ = read(export, MAPPING)
    assert {records[i].city for i in ("1", "2", "3", "6", "7")} == {"Lakeview DC"}  # the most common spelling
    assert records["5"].city == "Metro Lakeview"
    records, _ = read(export, MAPPING | {"aliases": {"city": {"Metro Lakeview": "Lakeview, D.C."}}})
    assert records["5"].city == "Lakeview DC"  # the alias, then the catalog's spelling of it


def test_html_is_out_of_the_texts(export: Path) -> None:
    records, _ = read(export, MAPPING)
    assert records["1"].description == "Food\nBring a bag"
    assert records["2"].description == "Free care" and records["4"].description == "Tenants & owners"


def test_linked_taxonomy_codes_become_proper_terms(export: Path) -> None:
    records, _ = read(export, MAPPING)
    assert records["1"].taxonomy == [("BD-1800.2000", "Food Pantries"), ("B", ""), ("D", "")]
    assert records["4"].taxonomy == [("FT-3000", "Legal"), ("YB-8000", "Seniors")]  # names split as the codes are


def test_x_marked_columns_constants_and_a_key_of_several_columns(tmp_path: Path) -> None:
    path = write(
        tmp_path / "youth.csv",
        ["Agency", "Program", "Site", "Zip", "0-5", "'6-13", "English", "Spanish", "Filipino (Tagalog)", "Other"],
        [
            ["A", "Tutoring", "Hall", "94110", "", "X", "X", "X", "", "Samoan, Tongan"],
            ["A", "Tutoring", "School", "94112", "X", "X", "X", "", "X", ""],
            ["A", "Tutoring", "School", "94112", "X", "X", "X", "", "X", ""],  # the same row again
            ["B", "Tutoring", "School", "94112", "", "", "x", "", "", ""],
        ],
    )
    mapping = {
        "id": ["Agency", "Program", "Site"],
        "name": "Program",
        "organization": "Agency",
        "zip": "Zip",
        "languages": "Other",
        "languages_sep": ",",
        "x_marked": {
            "eligibility": {"0-5": "ages 0 to 5", "'6-13": "ages 6 to 13"},
            "languages": {"English": "English", "Spanish": "Spanish", "Filipino (Tagalog)": "Tagalog"},
        },
        "constants": {"city": "Riverton", "state": "XY", "country": "Canada"},
    }
    stats = ReadStats()
    records, other = read(path, mapping, stats)
    assert len(records) == 3 and all(len(rid) == 16 for rid in records)  # a digest of agency, program and site
    assert [(o.line, o.reason) for o in other if isinstance(o, RecordWarning)] == [
        (4, "repeats line 3 cell for cell: read once")
    ]
    hall, school, other_b = sorted(records.values(), key=lambda r: (r.organization, r.zip))
    assert hall.languages == ["Samoan", "Tongan", "English", "Spanish"] and hall.eligibility == "ages 6 to 13"
    assert school.languages == ["English", "Tagalog"] and school.eligibility == "ages 0 to 5; ages 6 to 13"
    assert other_b.languages == ["English"] and other_b.eligibility == ""  # any mark counts ("x")
    assert {r.city for r in records.values()} == {"Riverton"} and {r.state for r in records.values()} == {"XY"}
    assert stats.countries == Counter({"Canada": 3})
    records, _ = read(path, mapping | {"x_mark": ["yes"]})  # only "yes" marks now: none of these cells
    assert records[hall.id].languages == ["Samoan", "Tongan"] and records[other_b.id].languages == []


def test_a_mapping_with_an_error_is_refused_naming_the_key(export: Path) -> None:
    for bad, key in [
        ({"filter": "Active"}, "filter"),
        ({"filter": {"Status": {"a": 1}}}, "filter.Status"),
        ({"null": {"x": 1}}, "null"),
        ({"aliases": {"colour": {"a": "b"}}}, "aliases.colour"),
        ({"aliases": {"city": ["a"]}}, "aliases.city"),
        ({"x_marked": {"id": {"A": "B"}}}, "x_marked.id"),
        ({"constants": {"name": "x"}}, "constants.name"),
        ({"encoding": "no-such-codec"}, "no-such-codec"),
        ({"hours_12h": "yes"}, "hours_12h"),
        ({"colour": "Red"}, "colour"),
    ]:
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            list(read_mapped(export, MAPPING | bad))
    items = list(read_mapped(export, MAPPING | {"filter": {"State": "Active"}}))
    assert len(items) == 1 and isinstance(items[0], RecordError) and "missing columns ['State']" in str(items[0])


def test_every_mapping_key_is_in_the_docs() -> None:
    """The docs site's "Mapping a directory" page (moved there from the README) lists every mapping key."""
    page = (Path(__file__).parents[2] / "docs" / "guide" / "catalog-mapping.md").read_text(encoding="utf-8")
    missing = [k for k in MAPPING_KEYS if f"`{k}`" not in page]
    assert not missing, f"mapping keys not in docs/guide/catalog-mapping.md: {missing}"
