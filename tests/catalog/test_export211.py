"""Reading a 211 resource export: the San Francisco file as it is, and a small export with every level and fault."""

from __future__ import annotations

import csv
import functools
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import require_datasets
from tracerag.catalog.export211 import REQUIRED_COLUMNS, read_211_export, sniff
from tracerag.catalog.ingest import detect_format
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.rows import ReadStats
from tracerag.errors import ConfigError, RecordError


@functools.cache
def sf_read() -> tuple[dict[str, ServiceRecord], tuple, ReadStats]:
    path = require_datasets("sf-openreferral") / "sf-openreferral" / "211-sf.csv"
    stats = ReadStats()
    items = list(read_211_export(path, stats=stats))
    records = {i.id: i for i in items if isinstance(i, ServiceRecord)}
    return records, tuple(i for i in items if not isinstance(i, ServiceRecord)), stats


def test_the_sf_export_is_recognised_and_read_whole() -> None:
    path = require_datasets("sf-openreferral") / "sf-openreferral" / "211-sf.csv"
    assert sniff(path) and detect_format(path) == "211-export"  # a CR-only file, by its header
    records, other, stats = sf_read()
    assert other == () and stats.rows == 2824
    # 368 inactive, 144 left out of the directory, 8 sites of such agencies; agencies with sites are their sites
    assert stats.filtered == Counter(
        {
            "AgencyStatus is 'inactive'": 368,
            "ExcludeFromDirectory is 'yes'": 144,
            "its agency: AgencyStatus is 'inactive'": 5,
            "its agency: ExcludeFromDirectory is 'yes'": 3,
        }
    )
    assert len(records) == 1629 and stats.countries == Counter({"United States": 1629})
    assert Counter(r.city for r in records.values()) == Counter({"San Francisco": 1628, "Presidio of San Francisco": 1})


def test_sites_take_what_they_lack_from_their_agency() -> None:
    records, _, _ = sf_read()
    site = records["10598729"]  # a site of its agency 10598728: the agency's description, phone and term
    assert site.service_id == "10598728" and site.organization == "SAN FRANCISCO BEACON INITIATIVE"
    assert site.description.startswith("Provides youth and family centers") and site.phones == ["415-934-4848"]
    assert site.taxonomy == [("youth_issues", "Youth Issues")] and site.address == "1390 Market Street, Suite 900"
    assert {(o.weekday, o.opens, o.closes) for o in site.openings} == {(d, 540, 1020) for d in range(5)}  # "9-5"
    shares = Counter(bool(getattr(r, f)) for r in records.values() for f in ("description", "taxonomy", "openings"))
    assert shares[True] >= 3680  # measured 1,151 descriptions, 1,501 tagged, 1,035 with openings (3,687)


def test_linked_codes_are_named_and_html_is_gone() -> None:
    records, _, _ = sf_read()
    terms = {t for r in records.values() for t in r.taxonomy}
    assert ("RX-8450.7000-700", "Residential Alcoholism Treatment Facilities") in terms
    assert ("YS-2000.9500", "Women") in terms  # the linked part, named from TaxonomyTermsNotDeactivated
    assert ("BD-1800.2000", "Food Pantries") in terms  # an agency's "Tax" name, given its code from a program row
    assert not any(" * " in t or ";" in t for t, _ in terms)
    texts = [r.text() for r in records.values()]
    assert not any("<br" in t or "<p" in t or "&nbsp" in t or "&amp" in t for t in texts)


def test_private_addresses_are_not_published() -> None:
    records, _, _ = sf_read()
    path = require_datasets("sf-openreferral") / "sf-openreferral" / "211-sf.csv"
    with path.open(encoding="utf-8", newline="") as fh:
        private = {r["ResourceAgencyNum"] for r in csv.DictReader(fh) if r["PhysicalAddressIsPrivate"] == "Yes"}
    kept = [records[i] for i in private if i in records]
    assert kept and all(r.address == "" and r.zip for r in kept)


HEADER = [
    *REQUIRED_COLUMNS,
    "AgencyStatus",
    "ExcludeFromDirectory",
    "AgencyDescription",
    "PhysicalAddress1",
    "PhysicalAddress2",
    "PhysicalCity",
    "PhysicalStateProvince",
    "PhysicalPostalCode",
    "PhysicalCountry",
    "PhysicalAddressIsPrivate",
    "HoursOfOperation",
    "Phone1Number",
    "Phone1IsPrivate",
    "PhoneFax",
    "LanguagesOffered",
    "DisabilitiesAccess",
    "TaxonomyCodes",
    "TaxonomyTerm",
    "Tax",
    "ConnectsToSiteNum",
    "ConnectsToProgramNum",
    "Latitude",
    "Longitude",
]


def row(**cells: str) -> list[str]:
    return [cells.get(c, "") for c in HEADER]


@pytest.fixture
def small(tmp_path: Path) -> Path:
    rows = [
        row(
            ResourceAgencyNum="1",
            PublicName="HELP CENTER",
            TaxonomyLevelName="Agency",
            ParentAgencyNum="0",
            ParentAgency="HELP CENTER",
            AgencyStatus="Active",
            AgencyDescription="Offers <b>food</b> &amp; clothing",
            PhysicalAddress1="1 Main St",
            PhysicalCity="RIVERTON",
            PhysicalPostalCode="12345",
            Phone1Number="555-0100",
            PhoneFax="555-0199",
            LanguagesOffered="SpanishChinese (Cantonese)",
            Tax="Food Pantries",
            DisabilitiesAccess="Building entrance accessible; Not wheelchair accessible at this time;",
        ),
        row(
            ResourceAgencyNum="2",
            PublicName="HELP CENTER EAST",
            TaxonomyLevelName="Site",
            ParentAgencyNum="1",
            ParentAgency="HELP CENTER",
            AgencyStatus="Active",
            PhysicalAddress1="9 East Rd",
            PhysicalCity="Riverton",
            PhysicalPostalCode="12346",
            HoursOfOperation="Monday-Friday, 9AM-1PMSaturday, 10-2",
        ),
        row(
            ResourceAgencyNum="3",
            PublicName="SAFE HOUSE",
            TaxonomyLevelName="Site",
            ParentAgencyNum="1",
            ParentAgency="HELP CENTER",
            AgencyStatus="Active",
            PhysicalAddress1="secret",
            PhysicalCity="Riverton",
            PhysicalPostalCode="12347",
            PhysicalAddressIsPrivate="Yes",
            HoursOfOperation="2/4/2008 to 4/15/2008 Monday, 9-5",
        ),
        row(
            ResourceAgencyNum="4",
            PublicName="OLD SITE",
            TaxonomyLevelName="Site",
            ParentAgencyNum="1",
            AgencyStatus="Inactive",
            PhysicalCity="Riverton",
        ),
        row(
            ResourceAgencyNum="5",
            PublicName="GONE AGENCY",
            TaxonomyLevelName="Agency",
            ParentAgencyNum="0",
            AgencyStatus="Inactive",
            PhysicalCity="Riverton",
        ),
        row(
            ResourceAgencyNum="6",
            PublicName="GONE AGENCY SITE",
            TaxonomyLevelName="Site",
            ParentAgencyNum="5",
            AgencyStatus="Active",
            PhysicalCity="Riverton",
        ),
        row(
            ResourceAgencyNum="7",
            PublicName="TUTORING",
            TaxonomyLevelName="Program",
            ParentAgencyNum="1",
            AgencyStatus="Active",
            TaxonomyCodes="HL-8700.3000 * YB-9500.1500; BD-1800.2000",
            TaxonomyTerm="Homework Help Programs; Food Pantries;",
            Phone1Number="555-0111",
            Phone1IsPrivate="TRUE",
        ),
        row(
            ResourceAgencyNum="8",
            TaxonomyLevelName="ProgramAtSite",
            ParentAgencyNum="1",
            AgencyStatus="Active",
            ConnectsToSiteNum="2",
            ConnectsToProgramNum="7",
        ),
        row(ResourceAgencyNum="2", PublicName="DUPLICATE", TaxonomyLevelName="Site", ParentAgencyNum="1"),
        row(
            ResourceAgencyNum="9",
            TaxonomyLevelName="Site",
            ParentAgencyNum="0",
            AgencyStatus="Active",
            Latitude="north",
            Longitude="-1",
        ),
        ["10", "short row"],
    ]
    path = tmp_path / "export.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\r")
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


def test_a_small_export_every_level_and_fault(small: Path) -> None:
    stats = ReadStats()
    items = list(read_211_export(small, stats=stats))
    records = {i.id: i for i in items if isinstance(i, ServiceRecord)}
    errors = sorted((e.line, e.reason) for e in items if isinstance(e, RecordError))
    assert errors == [
        (10, "duplicate ResourceAgencyNum '2'"),
        (11, "resource 9 has no name"),
        (12, f"expected {len(HEADER)} columns, found 2"),
    ]
    assert stats.filtered == Counter({"AgencyStatus is 'inactive'": 2, "its agency: AgencyStatus is 'inactive'": 1})
    assert sorted(records) == ["2", "3", "7", "8"]  # the agency has sites: they are its records
    east = records["2"]
    assert (east.service_id, east.organization, east.city) == ("1", "HELP CENTER", "Riverton")
    assert east.description == "Offers food & clothing" and east.phones == ["555-0100"]  # no fax
    assert east.languages == ["Spanish", "Chinese", "Cantonese"] and east.accessibility == [
        "Building entrance accessible"
    ]
    assert east.taxonomy == [("BD-1800.2000", "Food Pantries")]  # the agency's term, coded by the program row
    assert {(o.weekday, o.opens, o.closes) for o in east.openings} == {(d, 540, 780) for d in range(5)} | {
        (5, 600, 840)
    }
    safe = records["3"]
    assert safe.address == "" and safe.zip == "12347" and safe.openings == [] and safe.hours_text.startswith("2/4/2008")
    program = records["7"]
    assert program.taxonomy == [
        ("HL-8700.3000", "Homework Help Programs"),
        ("YB-9500.1500", ""),
        ("BD-1800.2000", "Food Pantries"),
    ]
    assert program.address == "1 Main St" and program.phones == ["555-0100"]  # its own phone is private
    at_site = records["8"]
    assert (at_site.name, at_site.service_id, at_site.address) == ("TUTORING", "7", "9 East Rd")


def test_row_options_of_a_211_export(small: Path) -> None:
    stats = ReadStats()
    items = list(read_211_export(small, {"exclude": {"AgencyStatus": "Closed"}, "null": ["555-0100"]}, stats))
    records = {i.id: i for i in items if isinstance(i, ServiceRecord)}
    assert {"4", "6"} <= set(records) and not stats.filtered  # the default filter replaced
    assert records["2"].phones == []
    with pytest.raises(ConfigError, match="do not apply to a 211 export"):
        list(read_211_export(small, {"id": "ResourceAgencyNum"}))
