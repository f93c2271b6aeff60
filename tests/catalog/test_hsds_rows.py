"""The HSDS reader's pure pieces, table by table: what each kind of row becomes in a record.

Rows marked "miami211" are cells of the Miami 211 datapackage ($TRACERAG_DATASETS/miami211) as the file writes
them (line breaks as the two characters backslash-n); the others are written as other HSDS exports write them
(extensions, phone types, holiday schedules, bad coordinates), which the Miami export lacks. Expected values were
worked out by hand from the module's rules.
"""

from __future__ import annotations

import pytest

from tracerag.catalog import hsds
from tracerag.catalog.clean import canonical_forms
from tracerag.catalog.hsds import HsdsStats
from tracerag.catalog.model import Opening, ServiceRecord
from tracerag.catalog.rows import Row
from tracerag.errors import RecordError

MON_FRI = range(5)


def row(**cells: str) -> Row:
    return Row(2, cells)


def week(days: range | tuple[int, ...], opens: int, closes: int) -> list[Opening]:
    return [Opening(d, opens, closes) for d in days]


@pytest.mark.parametrize(
    ("schedule", "hours_text", "openings", "counted"),
    [
        (  # miami211: the rows lost Mon-Fri (one Saturday row), the text has both clauses
            [("Saturday", "10:00am", "2:00pm", "9:00am-5:00pm, Mon-Fri;\\n10:00am-2:00pm, Sat")],
            "9:00am-5:00pm, Mon-Fri;\n10:00am-2:00pm, Sat",
            week(MON_FRI, 540, 1020) + week((5,), 600, 840),
            {"hours_from_text": 1, "rows_disagree": 1},
        ),
        (  # miami211
            [("Wednesday", "5:00pm", "6:00pm", "5:00pm-6:00pm, Wed")],
            "5:00pm-6:00pm, Wed",
            week((2,), 1020, 1080),
            {"hours_from_text": 1},
        ),
        (  # miami211: "5:00" without pm closes after it opens; the one Monday row lost the other days
            [("Monday", "9:00am", "5:00", "9:00am-5:00, Mon-Fri")],
            "9:00am-5:00, Mon-Fri",
            week(MON_FRI, 540, 1020),
            {"hours_from_text": 1, "rows_disagree": 1},
        ),
        (  # miami211: a text that names no day keeps the text, the rows are used
            [("Saturday", "9:30am", "", "Food Pantry: \\n9:30am, Sat")],
            "Food Pantry:\n9:30am, Sat",
            [],
            {},
        ),
        (  # no original_text: the rows
            [("Monday", "09:00", "17:00", ""), ("Tuesday", "09:00", "17:00", "")],
            "",
            week((0, 1), 540, 1020),
            {"hours_from_rows": 1},
        ),
        ([], "", [], {}),
    ],
)
def test_hours(schedule: list[tuple[str, str, str, str]], hours_text: str, openings: list[Opening], counted) -> None:
    rows = [row(weekday=d, opens_at=o, closes_at=c, original_text=t) for d, o, c, t in schedule]
    record, stats = ServiceRecord(id="1", service_id="1", name="x"), HsdsStats()
    hsds._hours(record, rows, stats)
    assert (record.hours_text, record.openings) == (hours_text, openings)
    counts = {k: getattr(stats, k) for k in ("hours_from_text", "hours_from_rows", "rows_disagree")}
    assert {k: v for k, v in counts.items() if v} == counted


_CITIES = canonical_forms(["Miami", "Miami", "MIAMI", "Hialeah", "Miami Beach"])


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        (  # miami211
            {
                "address_1": "11805 SW 26th Street",
                "address_2": "Suite 230",
                "city": "Miami",
                "state_province": "FL",
                "postal_code": "33175",
            },
            ("11805 SW 26th Street, Suite 230", "Miami", "FL", "33175", ""),
        ),
        (  # miami211: ZIP+4 stays as written
            {"address_1": "551 W 51st Place", "city": "Hialeah", "state_province": "FL", "postal_code": "33012-5835"},
            ("551 W 51st Place", "Hialeah", "FL", "33012-5835", ""),
        ),
        (  # another casing of a city takes the common form; the region is the county
            {
                "address_1": "",
                "address_2": "PO Box 12",
                "city": "MIAMI  ",
                "region": "Miami-Dade  County",
                "postal_code": "33128",
            },
            ("PO Box 12", "Miami", "", "33128", "Miami-Dade County"),
        ),
        ({"city": "Homestead"}, ("", "Homestead", "", "", "")),  # a city the table holds once is as written
    ],
)
def test_address(cells: dict[str, str], expected: tuple[str, ...]) -> None:
    assert hsds._address(row(**cells), _CITIES) == expected


@pytest.mark.parametrize(
    ("phones", "numbers", "labels"),
    [
        ([("305-253-4841", "", "", "")], ["305-253-4841"], {}),  # miami211
        (
            [("(305)  253-4841", "12", "voice", "Intake line")],
            ["(305) 253-4841 x12"],
            {"(305) 253-4841 x12": "voice, Intake line"},
        ),
        ([("305-253-4841 ext 12", "12", "", "")], ["305-253-4841 ext 12"], {}),  # the extension already written
        (
            [("305-253-4841", "", "fax", "Fax"), ("305-253-4841", "", "voice", "")],
            ["305-253-4841"],
            {"305-253-4841": "fax, Fax"},
        ),  # one number once, its first label
        ([("", "3", "voice", "")], [], {}),
    ],
)
def test_phones(phones: list[tuple[str, str, str, str]], numbers: list[str], labels: dict[str, str]) -> None:
    rows = [row(number=n, extension=x, type=t, description=d) for n, x, t, d in phones]
    assert hsds._phones(rows) == numbers
    assert hsds._phone_labels(rows, numbers) == labels


@pytest.mark.parametrize(
    ("holidays", "text"),
    [
        ([("2024-12-24", "2024-12-26", "true", "", "")], "closed 2024-12-24 to 2024-12-26"),
        ([("2024-12-31", "2024-12-31", "false", "09:00", "12:00")], "2024-12-31: 09:00-12:00"),
        ([("2024-07-04", "", "", "", "")], "closed 2024-07-04"),  # no hours: closed
        ([("2024-01-01", "", "yes", "", ""), ("2024-01-01", "", "Yes", "", "")], "closed 2024-01-01"),
        ([("", "2024-12-26", "true", "", "")], ""),  # no start date: nothing to say
    ],
)
def test_holidays(holidays: list[tuple[str, str, str, str, str]], text: str) -> None:
    rows = [row(start_date=s, end_date=e, closed=c, opens_at=o, closes_at=x) for s, e, c, o, x in holidays]
    assert hsds._holidays(rows) == text


@pytest.mark.parametrize(
    ("lat", "lon", "expected"),
    [
        ("25.7991167460233", "-80.1967001873212", (25.7991167460233, -80.1967001873212)),  # miami211
        ("", "", (None, None)),  # miami211: most locations
        ("25.79", "", "location 7: coordinates '25.79', '' are not numbers"),
        ("N25.79", "W80.19", "location 7: coordinates 'N25.79', 'W80.19' are not numbers"),
        ("25.79", "-190.2", "location 7: coordinates '25.79', '-190.2' out of range"),
    ],
)
def test_coordinates(lat: str, lon: str, expected: tuple[float | None, float | None] | str) -> None:
    assert hsds._coordinates(row(id="7", latitude=lat, longitude=lon)) == expected


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        ({"id": "136", "name": "GIRL SCOUTS COUNCIL OF TROPICAL FLORIDA, INC."}, None),  # miami211
        ({"id": "", "name": "Food pantry"}, "service without id"),
        ({"id": "12", "name": "Food pantry"}, "duplicate service id '12'"),
        ({"id": "13", "name": "Food pantry", "status": "Inactive"}, "status is 'inactive'"),
        ({"id": "14", "name": "Food pantry", "status": "defunct "}, "status is 'defunct'"),
        ({"id": "15", "name": "Food pantry", "status": "temporarily closed"}, None),  # listed, its status shown
        ({"id": "16", "name": "<br />", "status": "active"}, "service 16 has no name"),
    ],
)
def test_check_service(cells: dict[str, str], expected: str | None) -> None:
    seen = {"12"}
    checked = hsds._check_service(row(**cells), seen, {"file": "services.csv", "line": 2})
    assert (checked.reason if isinstance(checked, RecordError) else checked) == expected
    assert (cells["id"] in seen) == bool(cells["id"])


@pytest.mark.parametrize(
    ("service", "location", "sal", "expected"),
    [
        ("136", "136", "136", ["by sal"]),  # rows naming the service-at-location win
        ("136", "136", "", ["service, no location", "service here"]),  # else the service's, here or nowhere
        ("136", "999", "", ["service, no location"]),
        ("200", "136", "", ["location only"]),  # else the location's own rows
        ("200", "", "", []),
    ],
)
def test_linked_rows(service: str, location: str, sal: str, expected: list[str]) -> None:
    linked = hsds._index(
        [
            row(service_at_location_id="136", service_id="136", location_id="136", note="by sal"),
            row(service_id="136", note="service, no location"),
            row(service_id="136", location_id="136", note="service here"),
            row(service_id="136", location_id="500", note="service elsewhere"),
            row(location_id="136", note="location only"),
        ]
    )
    assert [r["note"] for r in linked.rows(service, location, sal)] == expected


def test_a_service_row_joined_with_its_tables() -> None:
    """One service of miami211 (its rows of each table as the files write them) read into its record."""
    files = {
        "organizations.csv": [row(id="164", name="CAMILLUS HOUSE, INC.")],
        "locations.csv": [row(id="164", latitude="25.7892", longitude="-80.1967")],
        "physical_addresses.csv": [
            row(
                location_id="164",
                address_1="1603 NW 7th Avenue",
                city="Miami",
                state_province="FL",
                postal_code="33136",
                country="US",
            )
        ],
        "services_at_location.csv": [row(id="164", service_id="164", location_id="164")],
        "phones.csv": [
            row(id="164", service_id="164", location_id="164", service_at_location_id="164", number="305-374-1065")
        ],
        "languages.csv": [
            row(service_id="164", location_id="164", language="English"),
            row(service_id="164", location_id="164", language="Spanish (limited)"),
        ],
        "regular_schedules.csv": [
            row(
                service_id="164",
                weekday="Saturday",
                opens_at="8:00am",
                closes_at="5:00pm",
                original_text="7:00am-7:00pm, Mon-Fri;\\n8:00am-5:00pm, Sat",
            )
        ],
        "services_taxonomy.csv": [row(service_id="164", taxonomy_id="BH-1800.8500 * YF-5000")],
        "eligibility.csv": [row(eligibility="Homeless adults")],
    }
    stats = HsdsStats()
    tables = hsds._Tables.read(lambda name: files.get(name, []), {"BH-1800.8500": "Shelters"}, stats, None)
    service = row(id="164", organization_id="164", name="SHELTER\\nFOR MEN", description="Beds.\\n\\n###MON###")
    [record] = hsds._service_records(service, tables, stats, set(), "locations.csv")
    assert isinstance(record, ServiceRecord)
    assert (record.id, record.name, record.organization, record.description) == (
        "164",
        "SHELTER\nFOR MEN",
        "CAMILLUS HOUSE, INC.",
        "Beds.",
    )
    assert (record.address, record.city, record.state, record.zip) == ("1603 NW 7th Avenue", "Miami", "FL", "33136")
    assert (record.latitude, record.longitude, record.phones) == (25.7892, -80.1967, ["305-374-1065"])
    assert record.languages == ["English", "Spanish"]
    assert record.taxonomy == [("BH-1800.8500", "Shelters"), ("YF-5000", "")]
    assert record.openings == week(MON_FRI, 420, 1140) + week((5,), 480, 1020)
    assert record.eligibility == ""  # the eligibility row names no service: never guessed
    assert (stats.countries, stats.eligibility_rows, tables.unlinked) == ({"US": 1}, 1, 1)
