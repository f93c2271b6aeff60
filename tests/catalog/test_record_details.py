"""What every recommendation shows besides name, address and hours (issue 22, parts 5 and 6): who it is for, its
phones with their type, notices (a temporary message between its dates, a seasonal hours text, a status), when the
directory last verified it, flagged when too old; and services of a "do not refer" status never recommended.

On the real San Francisco 211 export (its records were last verified in 2005-2014; every one of its kept rows is
"Active": the export holds no "do not refer" status, so that part is tested on a small export written here) and on
small 211, HSDS and mapped fixtures."""

from __future__ import annotations

import csv
import functools
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from tests.catalog import built
from tests.conftest import require_datasets
from tracerag.catalog.assistant import CatalogAssistant
from tracerag.catalog.export211 import read_211_export
from tracerag.catalog.hsds import read_hsds
from tracerag.catalog.ingest import build_catalog
from tracerag.catalog.mapping import read_mapped
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.profile import CatalogProfile
from tracerag.catalog.record_details import details_of, format_date, parse_date, verified_phrase
from tracerag.catalog.record_status import do_not_refer_statuses, excluded_by_status, says_do_not_refer
from tracerag.catalog.words import WordList
from tracerag.config import load_settings
from tracerag.errors import ConfigError, RecordError
from tracerag.trail import MemoryListener
from tracerag.trail.events import CatalogCheckEvent

ON = date(2026, 12, 6)  # the day the replies below are for (a fixed day: ages and notices depend on it)
WORDS = WordList.load().records


def sf_path() -> Path:
    return require_datasets("sf-openreferral") / "sf-openreferral" / "211-sf.csv"


@functools.cache
def sf_records() -> dict[str, ServiceRecord]:
    return {r.id: r for r in read_211_export(sf_path()) if isinstance(r, ServiceRecord)}


@pytest.fixture(scope="module")
def sf_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built.sf211(tmp_path_factory)  # built once per run from sf_path(); this module's own copy


# ------------------------------------------------------------------------------------------------ dates


@pytest.mark.parametrize(
    ("text", "order", "expected"),
    [
        ("6/21/10", "mdy", date(2010, 6, 21)),
        ("12/31/09", "mdy", date(2009, 12, 31)),
        ("21/6/2010", "dmy", date(2010, 6, 21)),
        ("2010-06-21", "mdy", date(2010, 6, 21)),  # ISO whatever the order
        ("2010-06-21T10:00:00Z", "ymd", date(2010, 6, 21)),
        ("6/21/1999 10:30 AM", "mdy", date(1999, 6, 21)),
        ("1/2/75", "mdy", date(1975, 1, 2)),
        ("21/6/10", "mdy", None),  # no 21st month
        ("last spring", "mdy", None),
        ("", "mdy", None),
    ],
)
def test_dates_as_directories_write_them(text: str, order: str, expected: date | None) -> None:
    assert parse_date(text, order) == expected


def test_a_date_is_written_with_the_word_lists_month_names() -> None:
    assert format_date("2010-06-21", WORDS) == "21 June 2010"
    with pytest.raises(ValueError, match="date order"):
        parse_date("1/2/3", "ydm")


# --------------------------------------------------------------------------------- the SF 211 export


def test_the_sf_export_gives_verification_dates_phone_kinds_and_statuses() -> None:
    records = sf_records()
    assert len(records) == 1629
    verified = Counter(r.last_verified[:4] for r in records.values() if r.last_verified)
    assert sum(verified.values()) == 1178 and min(verified) == "2005" and max(verified) == "2014"
    assert sum(bool(r.last_verified or r.last_updated) for r in records.values()) == 1626
    # every kept row is "Active" (368 Inactive rows are filtered out): no "do not refer" status in this export
    assert Counter(r.status for r in records.values()) == Counter({"Active": 1629})
    assert do_not_refer_statuses(records.values(), WORDS) == ()
    site = records["10598729"]  # a site with its agency's number, labelled by the agency's column
    assert site.last_verified == "2014-01-27" and site.phone_labels == {"415-934-4848": "business line"}
    hotline = records["10596554"]
    assert hotline.phone_labels == {"888-495-8020": "hotline, Tenant Rights Hotline"}
    assert records["10605215"].availability == "No wait"  # AvailabilityPeriod as written


def test_sf_recommendations_show_when_they_were_last_verified_flagged_as_old(sf_catalog: Path, tmp_path: Path) -> None:
    with CatalogAssistant(sf_catalog, load_settings(), trail_dir=tmp_path) as a:
        a.on = ON
        turn = a.ask("food pantry in San Francisco")
        assert turn.outcome == "answer" and len(turn.recommendations) == 5
        data = turn.to_dict()["recommendations"]
        for rec, shown in zip(turn.recommendations, data, strict=True):
            record = rec.record
            stamp = record.last_verified or record.last_updated
            assert stamp and shown["last_verified"] == stamp and shown["verified_stale"] is True
            assert shown["verified_what"] == ("last verified" if record.last_verified else "last updated")
            line = verified_phrase(rec.details, WORDS)  # type: ignore[arg-type]
            assert line in turn.reply and "call to check" in line and format_date(stamp, WORDS) in line
            for number in record.phones:
                label = record.phone_labels.get(number)
                assert (f"{number} ({label})" if label else number) in turn.reply
        assert "Last verified 5 December 2008: over 18 years ago, call to check" in turn.reply
        # a profile that accepts older records shows the date without the flag
        a.profile = a.profile.model_copy(update={"verified_max_age_days": 365 * 100})
        a.reset()
        again = a.ask("food pantry in San Francisco")
        assert "Last verified 5 December 2008" in again.reply and "call to check" not in again.reply


def test_the_eligibility_is_shown_as_written(sf_catalog: Path, tmp_path: Path) -> None:
    with CatalogAssistant(sf_catalog, load_settings(), trail_dir=tmp_path) as a:
        turn = a.ask("alcohol treatment in San Francisco")  # 47 records of the export state who they are for
        with_rules = [r for r in turn.recommendations if r.record.eligibility.strip()]
        assert [r.record.id for r in with_rules] == ["10605215"]
        assert "For: Woman (age18-35) with drug or alcohol addiction" in turn.reply
        for rec in with_rules:
            assert f"For: {' '.join(rec.record.eligibility.split())}" in turn.reply
        assert all(
            d["eligibility"] == r.record.eligibility.strip()
            for d, r in zip(turn.to_dict()["recommendations"], turn.recommendations, strict=True)
        )


# ------------------------------------------------------------------------- a small 211 export: status

COLUMNS = [
    "ResourceAgencyNum", "PublicName", "TaxonomyLevelName", "ParentAgencyNum", "ParentAgency", "AgencyStatus",
    "ExcludeFromDirectory", "AgencyDescription", "Eligibility", "PhysicalAddress1", "PhysicalCity",
    "PhysicalStateProvince", "PhysicalPostalCode", "PhysicalCountry", "HoursOfOperation", "Phone1Number",
    "Phone1Name", "Phone1Description", "PhoneNumberHotline", "PhoneNumberHotlineDescription", "WebsiteAddress",
    "Tax", "TemporaryMessage", "TemporaryMessageAppears", "TemporaryMessageExpires", "AvailabilityPeriod",
    "LastVerifiedOn", "UpdatedOn",
]  # fmt: skip


def agency(num: str, name: str, **cells: str) -> list[str]:
    base = {
        "ResourceAgencyNum": num,
        "PublicName": name,
        "TaxonomyLevelName": "Agency",
        "ParentAgencyNum": "0",
        "ParentAgency": name,
        "AgencyStatus": "Active",
        "ExcludeFromDirectory": "No",
        "AgencyDescription": "Free groceries for families.",
        "PhysicalAddress1": f"{num} Main Street",
        "PhysicalCity": "Riverton",
        "PhysicalStateProvince": "CA",
        "PhysicalPostalCode": "94100",
        "PhysicalCountry": "United States",
        "HoursOfOperation": "Monday-Friday, 9-5",
        "Phone1Number": f"415-555-01{num.zfill(2)}",
        "Tax": "Food Pantries",
        "LastVerifiedOn": "6/21/10",
    }
    base.update(cells)
    return [base.get(c, "") for c in COLUMNS]


@pytest.fixture(scope="module")
def riverton(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("riverton")
    source = folder / "riverton-211.csv"
    rows = [
        agency("1", "FIRST PANTRY", Phone1Name="Intake", Eligibility="Residents of Riverton only"),
        agency("2", "HELD PANTRY", AgencyStatus="Active, but do not refer"),
        agency(
            "3",
            "REPAIRS PANTRY",
            TemporaryMessage="Closed for repairs; call first",
            TemporaryMessageAppears="1/1/20",
            TemporaryMessageExpires="12/31/2099",
            PhoneNumberHotline="800-555-0199",
            PhoneNumberHotlineDescription="24 hours daily",
        ),
        agency("4", "OLD NOTICE PANTRY", TemporaryMessage="Closed in 2019", TemporaryMessageExpires="12/31/19"),
        agency(
            "5",
            "WINTER PANTRY",
            HoursOfOperation="November through March: Monday-Friday, 9-5",
            AvailabilityPeriod="Winter only",
            LastVerifiedOn="",
            UpdatedOn="11/30/26",
        ),
        agency("6", "GONE PANTRY", AgencyStatus="Inactive"),
    ]
    with source.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        w.writerows(rows)
    target = folder / "catalog"
    build_catalog(source, target, load_settings(), dense=False)
    return target


def test_a_do_not_refer_status_is_found_at_ingest_and_written_into_the_profile(riverton: Path) -> None:
    profile = CatalogProfile.load(riverton)
    assert profile.do_not_refer == ("Active, but do not refer",)
    assert says_do_not_refer("Active, but do not refer", WORDS) and says_do_not_refer("DON'T REFER", WORDS)
    assert not says_do_not_refer("Active", WORDS) and not says_do_not_refer("Referral required", WORDS)
    held = ServiceRecord(id="x", service_id="x", name="x", status="active, BUT do not refer")
    assert "do not refer" in excluded_by_status(held, profile.do_not_refer)
    assert excluded_by_status(held, ()) == ""  # a profile that names none excludes none


def test_a_do_not_refer_service_is_never_recommended_and_the_trail_says_why(riverton: Path, tmp_path: Path) -> None:
    events = MemoryListener()
    with CatalogAssistant(riverton, load_settings(), trail_dir=tmp_path, listeners=[events], k=2) as a:
        a.on = ON
        turns = [a.ask("food pantry in Riverton"), a.ask("show me more"), a.ask("more")]
    shown = [r.record.name for t in turns for r in t.recommendations]
    assert sorted(shown) == ["FIRST PANTRY", "OLD NOTICE PANTRY", "REPAIRS PANTRY", "WINTER PANTRY"]
    assert "HELD PANTRY" not in " ".join(t.reply for t in turns) and "GONE PANTRY" not in turns[0].reply
    assert (
        turns[-1].outcome == "none_found"
        and "That is all" in turns[-1].reply
        and "shown 4 service(s)" in turns[-1].reply
    )
    skipped = [e for e in events.of(CatalogCheckEvent) if any("do not refer" in v for v in e.violations)]
    assert skipped and {e.record_id for e in skipped} == {"2"} and not any(e.selected for e in skipped)


def test_notices_seasons_phones_and_eligibility_of_the_small_export(riverton: Path, tmp_path: Path) -> None:
    with CatalogAssistant(riverton, load_settings(), trail_dir=tmp_path, k=10) as a:
        a.on = ON
        turn = a.ask("food pantry in Riverton")
    items = {r.record.name: r for r in turn.recommendations}
    reply = turn.reply
    assert "Notice: Closed for repairs; call first" in reply  # between 1 Jan 2020 and 31 Dec 2099
    assert "Closed in 2019" not in reply  # expired: not shown
    assert "Phone: 800-555-0199 (hotline, 24 hours daily)" in reply or "800-555-0199 (hotline, 24 hours daily)" in reply
    assert "Phone: 415-555-0101 (Intake)" in reply and "For: Residents of Riverton only" in reply
    winter = items["WINTER PANTRY"].details
    assert winter is not None and winter.season == "November through March: Monday-Friday, 9-5"
    assert "Season (as written): November through March: Monday-Friday, 9-5" in reply
    assert "Availability: Winter only" in reply
    assert winter.verified_what == "last updated" and not winter.stale  # updated a week before ON, never verified
    assert "Last updated 30 November 2026" in reply
    first = items["FIRST PANTRY"].details
    assert first is not None and first.stale and first.verified == "2010-06-21"
    data = {d["name"]: d for d in turn.to_dict()["recommendations"]}
    assert data["REPAIRS PANTRY"]["notices"] == ["Notice: Closed for repairs; call first"]
    assert data["REPAIRS PANTRY"]["phone_details"][-1] == {"number": "800-555-0199", "label": "hotline, 24 hours daily"}


def test_a_notice_applies_between_its_dates_only() -> None:
    record = ServiceRecord(
        id="n",
        service_id="n",
        name="n",
        temporary_message="Closed this week",
        temporary_message_from="2026-12-01",
        temporary_message_until="2026-12-07",
    )
    for day, shown in [(date(2026, 11, 30), False), (date(2026, 12, 1), True), (ON, True), (date(2026, 12, 8), False)]:
        notices = details_of(record, WORDS, today=day, max_age_days=365).notices
        assert (notices == ("Notice: Closed this week",)) is shown, day


# ---------------------------------------------------------------------------------- HSDS and mapped


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def test_hsds_status_phone_types_holidays_and_metadata(tmp_path: Path) -> None:
    write_csv(
        tmp_path / "services.csv",
        ["id", "name", "status"],
        [["a", "Pantry", "temporarily closed"], ["b", "Clinic", "active"], ["c", "Gone", "inactive"]],
    )
    write_csv(
        tmp_path / "phones.csv",
        ["id", "service_id", "location_id", "number", "extension", "type", "description"],
        [["p1", "a", "", "305-555-0100", "12", "voice", "Intake line"], ["p2", "b", "", "305-555-0200", "", "", ""]],
    )
    write_csv(
        tmp_path / "holiday_schedules.csv",
        ["id", "service_id", "location_id", "closed", "opens_at", "closes_at", "start_date", "end_date"],
        [
            ["h1", "a", "", "true", "", "", "2026-12-24", "2026-12-26"],
            ["h2", "a", "", "false", "09:00", "12:00", "2026-12-31", ""],
        ],
    )
    write_csv(
        tmp_path / "metadata.csv",
        ["id", "resource_id", "resource_type", "last_action_date", "last_action_type"],
        [["m1", "a", "service", "2024-03-01", "update"], ["m2", "a", "service", "2025-01-15T10:00:00", "update"]],
    )
    records = {r.id: r for r in read_hsds(tmp_path) if isinstance(r, ServiceRecord)}
    assert set(records) == {"a", "b"}
    pantry, clinic = records["a"], records["b"]
    assert pantry.status == "temporarily closed" and pantry.last_updated == "2025-01-15"
    assert pantry.phone_labels == {"305-555-0100 x12": "voice, Intake line"} and clinic.phone_labels == {}
    assert pantry.availability == "closed 2026-12-24 to 2026-12-26; 2026-12-31: 09:00-12:00"
    notices = details_of(pantry, WORDS, today=ON, max_age_days=365).notices
    assert notices == (
        "Status: temporarily closed",
        "Availability: closed 2026-12-24 to 2026-12-26; 2026-12-31: 09:00-12:00",
    )
    assert details_of(clinic, WORDS, today=ON, max_age_days=365).notices == ()  # "active" says nothing


def test_mapped_status_dates_and_do_not_refer(tmp_path: Path) -> None:
    source = tmp_path / "d.csv"
    write_csv(
        source,
        ["ID", "Program", "City", "State", "Verified", "Notice", "Until"],
        [
            ["1", "Pantry", "Riverton", "Hold", "21/06/2010", "Moved upstairs", "31/12/2030"],
            ["2", "Clinic", "Riverton", "Open", "not yet", "", ""],
        ],
    )
    mapping = {
        "id": "ID",
        "name": "Program",
        "city": "City",
        "status": "State",
        "last_verified": "Verified",
        "temporary_message": "Notice",
        "temporary_message_until": "Until",
        "date_order": "dmy",
        "do_not_refer": ["Hold"],
    }
    items = list(read_mapped(source, mapping))
    records = {i.id: i for i in items if isinstance(i, ServiceRecord)}
    errors = [i for i in items if isinstance(i, RecordError)]
    assert records["1"].last_verified == "2010-06-21" and records["1"].temporary_message_until == "2030-12-31"
    assert records["2"].last_verified == "" and set(records) == {"1", "2"}  # the record is kept, the date is not
    assert len(errors) == 1 and errors[0].line == 3 and "last_verified 'not yet' is not a date" in str(errors[0])
    with pytest.raises(ConfigError, match="date_order"):
        list(read_mapped(source, mapping | {"date_order": "yearfirst"}))
    target = tmp_path / "catalog"
    build_catalog(source, target, load_settings(), mapping=mapping, dense=False)
    assert CatalogProfile.load(target).do_not_refer == ("Hold",)  # named by the mapping: no words say so


def test_a_cell_that_says_nothing_shows_no_for_line() -> None:
    from datetime import date

    from tracerag.catalog.model import ServiceRecord
    from tracerag.catalog.record_details import details_of
    from tracerag.catalog.words import WordList

    words = WordList.load("en").records
    for cell in ("None", "N/A", " none "):
        record = ServiceRecord(id="1", service_id="1", name="Pantry", eligibility=cell)
        assert details_of(record, words, today=date(2026, 12, 9), max_age_days=365).eligibility == ""
    record = ServiceRecord(id="1", service_id="1", name="Pantry", eligibility="Women 18 and older")
    assert details_of(record, words, today=date(2026, 12, 9), max_age_days=365).eligibility == "Women 18 and older"
