"""Dates a reader meets: EDTF unspecified digits become the range they cover; a date that is not one costs the
record its date (kept undated, with a warning), never the record. Valid partial dates mean what they meant."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.dates import date_parts, normalise_date, parse_partial_date
from tracerag.ingest import RecordWarning, hipe, jsonl, table, textdir
from tracerag.model import DateRange, Document


@pytest.mark.parametrize(
    ("value", "canonical", "start", "end"),
    [
        ("18xx", "18XX", "1800-01-01", "1899-12-31"),
        ("189x", "189X", "1890-01-01", "1899-12-31"),
        ("1XXX", "1XXX", "1000-01-01", "1999-12-31"),
        ("1887-XX", "1887", "1887-01-01", "1887-12-31"),
        ("1887-xx-xx", "1887", "1887-01-01", "1887-12-31"),
        ("1887-05-XX", "1887-05", "1887-05-01", "1887-05-31"),
        ("1887?", "1887", "1887-01-01", "1887-12-31"),  # EDTF uncertain / approximate: the same range
        ("1887-05~", "1887-05", "1887-05-01", "1887-05-31"),
    ],
)
def test_unspecified_digits_are_the_range_they_cover(value: str, canonical: str, start: str, end: str) -> None:
    assert normalise_date(value) == canonical
    assert parse_partial_date(canonical) == parse_partial_date(value) == DateRange(start, end)


@pytest.mark.parametrize("value", ["1887-13-45", "1887-02-30", "1887-13", "18x7", "spring 1881", "18XX-05", "X887"])
def test_what_is_not_a_date_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="unparseable date"):
        normalise_date(value)


def test_valid_partial_dates_keep_their_meaning() -> None:
    assert [normalise_date(v) for v in ("1887", "1887-5", "1887-05-17", "1887-05-17T10:00:00", " ", None)] == [
        "1887",
        "1887-05",
        "1887-05-17",
        "1887-05-17",
        None,
        None,
    ]
    assert parse_partial_date("1888-02") == DateRange("1888-02-01", "1888-02-29")
    assert normalise_date("XXXX") is None  # wholly unspecified: stated unknown, undated


def _dates_and_warnings(items: list) -> tuple[dict[str, str | None], list[tuple[int | None, str]]]:
    docs = {d.id: d.date for d in items if isinstance(d, Document)}
    return docs, [(w.line, w.reason) for w in items if isinstance(w, RecordWarning)]


def test_every_reader_keeps_a_record_whose_date_is_not_a_date(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(
        '{"id": "ok", "text": "x", "date": "18xx"}\n{"id": "bad", "text": "y", "date": "1887-13-45"}\n', "utf-8"
    )
    dates, warnings = _dates_and_warnings(list(jsonl.read(tmp_path / "a.jsonl")))
    assert dates == {"ok": "18XX", "bad": None}
    assert warnings == [(2, "bad date: unparseable date '1887-13-45': month 13 out of range; kept undated")]

    (tmp_path / "t.csv").write_text("id,text,date\nc1,x,189x\nc2,y,1887-02-30\n", "utf-8")
    dates, warnings = _dates_and_warnings(list(table.read(tmp_path / "t.csv", date_column="date")))
    assert dates == {"c1": "189X", "c2": None}
    assert [line for line, _ in warnings] == [3] and "no such day" in warnings[0][1]

    folder = tmp_path / "txt"
    folder.mkdir()
    (folder / "n.txt").write_text("Note.", "utf-8")
    (folder / "n.json").write_text('{"date": "18x7", "title": "Note"}', "utf-8")
    items = list(textdir.read(folder))
    dates, warnings = _dates_and_warnings(items)
    assert dates == {"n": None} and [d.title for d in items if isinstance(d, Document)] == ["Note"]
    assert "18x7" in warnings[0][1]

    tsv = tmp_path / "h.tsv"
    tsv.write_text("TOKEN\tMISC\n# hipe2022:document_id = h1\n# hipe2022:date = 1887-13-45\nMot\t_\n", "utf-8")
    dates, warnings = _dates_and_warnings(list(hipe.read(tsv)))
    assert dates == {"h1": None} and warnings[0][0] == 3 and "kept undated" in warnings[0][1]


@pytest.mark.parametrize(
    ("date", "parts"),
    [
        ("1881", [1881]),
        ("1881-05", [1881, 5]),
        ("1881-05-27", [1881, 5, 27]),
        ("0987-01", [987, 1]),
        ("1881-5", [1881, 5]),
        ("1887-05-XX", [1887, 5]),  # an unspecified day narrows nothing
        ("1887?", [1887]),
        ("18XX", None),  # a range of years: no parts (a citation keeps it raw)
        ("XXXX", None),
        (None, None),
        ("", None),
        ("s.d.", None),
        ("1881-13", None),
    ],
)
def test_date_parts_are_the_numbers_a_citation_holds(date, parts):
    assert date_parts(date) == parts
