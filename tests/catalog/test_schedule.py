"""Opening hours read from Miami 211's `regular_schedules.csv`: its times, its `original_text` shapes, its typos."""

from __future__ import annotations

import csv
import functools

import pytest

from tests.conftest import datasets_path, require_datasets
from tracerag.catalog.model import Opening
from tracerag.catalog.schedule import openings_from_rows, parse_hours_text, parse_range, parse_time, weekday_index

MIAMI = datasets_path() / "miami211"
MON_FRI = range(5)


@functools.cache
def schedule_rows() -> list[dict[str, str]]:
    path = require_datasets("miami211") / "miami211" / "regular_schedules.csv"
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def spans(openings: list[Opening]) -> set[tuple[int, int, int]]:
    return {(o.weekday, o.opens, o.closes) for o in openings}


def days(openings: list[Opening]) -> set[int]:
    return {o.weekday for o in openings}


def every(days_: range | list[int], opens: int, closes: int) -> set[tuple[int, int, int]]:
    return {(d, opens, closes) for d in days_}


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("9:00am", 540),
        ("9am", 540),
        ("5:00pm", 1020),
        ("12:00pm", 720),
        ("12am", 0),
        ("12:30am", 30),
        ("17:30", 1050),
        ("noon", 720),
        ("Midnight", 0),
        ("9 a.m.", 540),
        # shapes of the file's opens_at column
        ("7:30 am ", 450),
        ("9:00a", 540),
        ("9:0am", 540),
        ("830am", 510),
        ("8:00", 480),
    ],
)
def test_parse_time(text: str, minutes: int) -> None:
    assert parse_time(text) == minutes


@pytest.mark.parametrize("text", ["6:300pm", "5:00pm Mon", "13pm", "9:75am", "", "Mon"])
def test_parse_time_refuses_what_is_not_one_time(text: str) -> None:
    with pytest.raises(ValueError):
        parse_time(text)


@pytest.mark.parametrize(
    ("opens", "closes", "span"),
    [  # every pair below is an (opens_at, closes_at) of the real file
        ("9:00am", "5:00pm", (540, 1020)),
        ("9:00am", "5:00", (540, 1020)),  # close without am/pm: after the opening
        ("8:00", "4:00pm", (480, 960)),
        ("6:00", "8:00pm", (1080, 1200)),  # "6:00-8:00pm, Mon": evening
        ("5:00", "7:00pm", (1020, 1140)),
        ("8:00m", "5:00pm", (480, 1020)),
        ("6:30am", "12:00pm (dispensing)", (390, 720)),
        ("8:30am", "5:00pm (Counter closes at 4:30 pm)", (510, 1020)),
        ("9:00am", "5:00pm Mon", (540, 1020)),
        ("7:30 am ", "6:00 pm", (450, 1080)),
        ("12:00am", "8:00pm", (0, 1200)),
        ("9:00pm", "12:00am", (1260, 1440)),  # until midnight
    ],
)
def test_parse_range_on_real_rows(opens: str, closes: str, span: tuple[int, int]) -> None:
    assert parse_range(opens, closes) == span


def test_parse_range_refuses_typos() -> None:
    assert parse_range("6:30am", "6:300pm") is None
    assert parse_range("9:00pm", "7:00pm") is None  # "9:00pm-7:00pm, Mon-Fri": not 22 hours past midnight
    assert parse_range("", "6:00pm") is None
    assert parse_range("4:00pm", "8:00am") == (960, 480)  # a real overnight shift stays one


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9:00am-5:00pm, Mon-Fri", every(MON_FRI, 540, 1020)),
        ("9:30am-5:00pm, Mon-Thur;\\n9:30am-2:00pm, Fri", every(range(4), 570, 1020) | {(4, 570, 840)}),
        (
            "9:00am-4:00pm, Mon, Tue, Thur, Fri;\\n9:00am-12:00pm, Wed",
            every([0, 1, 3, 4], 540, 960) | {(2, 540, 720)},
        ),
        ("9:00am-12:00pm; 1:00pm-4:00pm, Mon-Fri", every(MON_FRI, 540, 720) | every(MON_FRI, 780, 960)),
        ("8:30am-12:00pm & 1:00pm-3:00pm, Mon-Fri", every(MON_FRI, 510, 720) | every(MON_FRI, 780, 900)),
        (
            "9:00am-1:00pm / 2:00pm-6:00pm, Mon, Wed, Thur",
            every([0, 2, 3], 540, 780) | every([0, 2, 3], 840, 1080),
        ),
        ("9:00am-5:00pm Mon, Tue, Wed, Fri", every([0, 1, 2, 4], 540, 1020)),
        ("7:30amGÇô7:00pm, Mon-Fri", every(MON_FRI, 450, 1140)),  # mojibake en dash
        ("10:00am- -3:00pm, Mon-Fri", every(MON_FRI, 600, 900)),
        ("2:00pm 6:00pm, Mon-Fri", every(MON_FRI, 840, 1080)),
        ("9:30am-4:30pm, Mon, Wed-Sun", every([0, 2, 3, 4, 5, 6], 570, 990)),
        ("8:00am-5:00pm, Mon-Fri\\n8-7pm, wed", every(MON_FRI, 480, 1020) | {(2, 480, 1140)}),
        (
            "Clinic:\\n9:00am-11:30am & 1:00pm-3:30pm,Tue-Fri\\n9:00am-3:30pm, Sat",
            every(range(1, 5), 540, 690) | every(range(1, 5), 780, 930) | {(5, 540, 930)},
        ),
        (  # grades and labels are not times; each section pairs its own ranges and days
            "Grades K-1: \\n2:00pm-6:00pm, Mon-Fri\\n\\nGrades 2-5: \\n3:00pm-6:00pm, Mon, Tue, Thur, Fri;\\n"
            "2:00pm-6:00pm, Wed",
            every(MON_FRI, 840, 1080) | every([0, 1, 3, 4], 900, 1080),
        ),
        (
            "24 hours a day, 7 days a week\\n\\n9:00am-8pm, Mon- Thurs\\n9:00am-5:00pm, Fri",
            every(range(7), 0, 1440) | every(range(4), 540, 1200) | {(4, 540, 1020)},
        ),
        (  # "every 3rd Saturday" is not every Saturday
            "8:00am-4:30pm, Mon, Fri;\\n8:00am-8:00pm, Tue, Wed, Thur;\\n"
            "8:00am-4:30pm, Every 3rd Saturday of each month",
            every([0, 4], 480, 990) | every([1, 2, 3], 480, 1200),
        ),
        (  # a dated one-off is not a weekly opening
            "8:00am-7:00pm, Mon-Thur;\\n8:00am-4:00pm, Fri, Sat\\n\\nChild Immunizations: \\n"
            "8:00am-12:00pm, Saturday, August 18, 2018",
            every(range(4), 480, 1140) | every([4, 5], 480, 960),
        ),
        (  # closing for prayer is not an opening
            "10:00am-3:00pm, Mon, Wed, Thur\\n10:00am-1:00pm, Tues- Fri\\n\\n*12:00pm- 12:30pm close for prayer",
            every([0, 2, 3], 600, 900) | every(range(1, 5), 600, 780),
        ),
        # shapes other directories use
        ("Mon-Fri 8:00am-5:00pm; Sat 9am-1pm", every(MON_FRI, 480, 1020) | {(5, 540, 780)}),
        ("Mon-Fri 8:00am-5:00pm, Sat 9am-1pm", every(MON_FRI, 480, 1020) | {(5, 540, 780)}),
        ("Monday-Friday 9am to 5pm", every(MON_FRI, 540, 1020)),
        ("Mon, Wed, Fri 9am-12pm", every([0, 2, 4], 540, 720)),
        ("Sat 10am-2pm", {(5, 600, 840)}),
        ("Weekdays 9 a.m. - 5 p.m.", every(MON_FRI, 540, 1020)),
        ("Daily noon-midnight", every(range(7), 720, 1440)),
        ("24 hours", every(range(7), 0, 1440)),
        ("24/7", every(range(7), 0, 1440)),
        ("Fri-Mon 10:00-16:00", every([4, 5, 6, 0], 600, 960)),
        ("7:00pm-7:00am, Mon-Fri", every(MON_FRI, 1140, 420)),
        ("9:00am-12:00am, Sat", {(5, 540, 1440)}),
    ],
)
def test_parse_hours_text(text: str, expected: set[tuple[int, int, int]]) -> None:
    assert spans(parse_hours_text(text)) == expected


@pytest.mark.parametrize(
    "text",
    [  # real original_text values that state meeting times, a typo or an end without a start
        "7:00pm, Tue, Fri, Sat",
        "9:00am & 1:00pm, Tue, Thur",
        "9:00am, Mon, Wed, Fri (by appointment only)",
        "Dismissal Bell - 6:00pm, Mon-Fri",
        "6:30am-6:300pm, Mon-Fri",
        "9:00pm-7:00pm, Mon-Fri",
        "1st and 3rd Monday 9am-12pm",
        "Closed Sat-Sun",
        "by appointment",
        "",
    ],
)
def test_unreadable_hours_give_nothing(text: str) -> None:
    assert parse_hours_text(text) == []


def test_openings_are_sorted_and_unique() -> None:
    openings = parse_hours_text("9am-5pm, Mon-Fri; 9am-5pm, Mon")
    assert openings == sorted(openings, key=lambda o: (o.weekday, o.opens, o.closes))
    assert len(openings) == 5


def test_weekday_index() -> None:
    assert [weekday_index(n) for n in ("Monday", "tue", "Thurs", "Fr", "SUNDAY", "x")] == [0, 1, 3, 4, 6, None]


def test_every_distinct_original_text_of_the_file() -> None:
    """Measured on the real file: 544 distinct texts, 533 read; the 11 others are meeting times, typos and
    ends without starts."""
    texts = sorted({r["original_text"] for r in schedule_rows()})
    unread = [t for t in texts if not parse_hours_text(t)]
    assert len(texts) == 544
    assert unread == [
        "1:00pm, Sat",
        "6:30am-6:300pm, Mon-Fri",
        "7:00pm, Tue, Fri, Sat",
        "7:00pm, Wed, Fri;\\n11:00am, Sun",
        "8:30pm, Mon, Thur\\n\\n(Call to verify meeting day and time as they are subject to change)",
        "9:00am & 1:00pm, Tue, Thur",
        "9:00am, Mon, Wed, Fri (by appointment only)",
        "9:00am, Tue, Thur\\n\\nNo tours will be held on holidays.",
        "9:00pm-7:00pm, Mon-Fri",
        "Dismissal Bell - 6:00pm, Mon-Fri",
        "School dismissal - 6:00pm, Mon-Fri",
    ]
    for t in texts:  # every reading stays within a day's minutes
        for o in parse_hours_text(t):
            assert 0 <= o.weekday < 7 and 0 <= o.opens < 1440 and 0 < o.closes <= 1440, (t, o)


def test_rows_read_and_their_lost_days() -> None:
    """The rows' own times parse on every row that has both, but for two typos. The export lost days from
    multi-clause texts, which is why the reader prefers the text: service 164's rows say only Saturday 7am-7pm."""
    rows = schedule_rows()
    timed = [(r["weekday"], r["opens_at"], r["closes_at"]) for r in rows if r["opens_at"] and r["closes_at"]]
    unread = [t for t in timed if not openings_from_rows([t])[1]]
    assert len(timed) == 11218
    week = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
    assert unread == [(d, "6:30am", "6:300pm") for d in week] + [(d, "9:00pm", "7:00pm") for d in week]
    own = [(r["weekday"], r["opens_at"], r["closes_at"]) for r in rows if r["service_id"] == "164"]
    text = {r["original_text"] for r in rows if r["service_id"] == "164"}
    assert text == {"7:00am-7:00pm, Mon-Fri;\\n8:00am-5:00pm, Sat"}
    from_rows, complete = openings_from_rows(own)
    assert complete and spans(from_rows) == {(5, 420, 1140)}
    assert spans(parse_hours_text(text.pop())) == every(MON_FRI, 420, 1140) | {(5, 480, 1020)}
