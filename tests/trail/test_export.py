"""Exporting a run's sources: CSV that round-trips the exact evidence, RIS that a reference manager imports (one
record per source, one line per value), CSL-JSON with the right date parts; missing documents still exported."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from tests.trail import MISSING_ID, QUESTION, small_collection, write_trail
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import TrailError
from tracerag.trail import read_trail
from tracerag.trail.export import (
    CSV_COLUMNS,
    FORMATS,
    NOT_IN_COLLECTION,
    date_parts,
    derived_title,
    export_sources,
    one_line,
    sub_questions,
)

RIS_LINE = re.compile(r"^[A-Z][A-Z0-9]  - ")


@pytest.fixture(scope="module")
def col(tmp_path_factory, datasets_dir):
    return small_collection(tmp_path_factory, datasets_dir)


@pytest.fixture(scope="module")
def case(col):
    return write_trail(col)


@pytest.fixture(scope="module")
def events(case):
    return read_trail(case.path)


def _quote(col, case, doc_id: str) -> str:
    start, end = case.spans[doc_id]
    return col.documents[doc_id].text[start:end]


def _ris_records(text: str) -> list[list[tuple[str, str]]]:
    records: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] | None = None
    for line in text.split("\n"):
        if not line:
            continue
        assert RIS_LINE.match(line), f"not a RIS line: {line!r}"
        tag, value = line[:2], line[6:]
        if tag == "TY":
            assert current is None, "TY inside a record"
            current = []
        assert current is not None, f"{tag} outside a record"
        current.append((tag, value))
        if tag == "ER":
            records.append(current)
            current = None
    assert current is None, "a record without ER"
    return records


def test_csv_round_trips_with_the_exact_evidence(col, case, events):
    out = export_sources(events, col.documents, "csv")
    reader = csv.DictReader(io.StringIO(out, newline=""))
    assert tuple(reader.fieldnames) == CSV_COLUMNS
    rows = list(reader)
    assert [r["doc_id"] for r in rows] == case.ranking
    assert [int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1))
    assert {r["run_id"] for r in rows} == {case.run_id} and {r["question"] for r in rows} == {QUESTION}
    by_id = {r["doc_id"]: r for r in rows}
    for doc_id, (start, end) in case.spans.items():
        row = by_id[doc_id]
        assert (int(row["span_start"]), int(row["span_end"])) == (start, end)
        if doc_id != MISSING_ID:
            assert row["quote"] == _quote(col, case, doc_id)
    # the quotes that are hardest to carry: markup, line breaks, a tab, a Unicode line separator
    assert by_id["hostile-1"]["quote"] == "[bold]INCENDIE[/bold] au théâtre [/]\nLe feu"
    assert "\t" in by_id["gaz-1881-05-27"]["quote"] and "\u2028" in by_id["gaz-1881-05-27"]["quote"]
    exp, topres, sonar = col.hipe_ids
    assert "\n" in by_id[exp]["quote"]
    assert by_id[exp]["accepted_by"] == "0;1"
    assert by_id[exp]["sub_questions"].startswith("[0] Fires reported in French newspapers | [1] ")
    assert by_id[exp]["reasons"].count(" | ") == 1 and "elephants" in by_id[exp]["reasons"]
    assert by_id[exp]["publication"] == "EXP" and by_id[exp]["date"] == "1888-08-03"
    assert by_id[exp]["corpus"] == "hipe2020/exp" and by_id[exp]["language"] == "fr"
    assert by_id[topres]["place"] == "Poole"
    # sub-question 2 is the re-plan's, not the plan's third
    assert by_id["gaz-1881-05-27"]["sub_questions"] == "[2] Fires of 1881 in the Swiss and French press"
    assert by_id["hostile-1"]["promoted_from_hold"] == "true"
    # a title of its own, or one derived from the first words, and said so
    assert by_id["lpj-1881-a"]["title"] == 'Le Salon de 1881 (compte rendu "officiel")'
    assert by_id["lpj-1881-a"]["title_source"] == "document"
    assert by_id[exp]["title_source"] == "text" and by_id[exp]["title"].startswith("FAITS DIVERS La panique")
    assert (
        by_id["lpj-1881-a"]["url"] == "https://gallica.bnf.fr/ark:/12148/bpt6k1" and by_id["lpj-1881-a"]["page"] == "2"
    )
    # a warm-start source has no evidence; a missing document keeps what the trail knows, flagged
    assert by_id[sonar]["origin"] == "warm_start" and by_id[sonar]["quote"] == by_id[sonar]["span_start"] == ""
    missing = by_id[MISSING_ID]
    assert missing["in_collection"] == "false" and NOT_IN_COLLECTION in missing["flags"]
    assert missing["title"] == MISSING_ID and missing["title_source"] == "doc_id"
    assert missing["reasons"] == "An account of the fire, since removed." and missing["quote"] == ""
    assert all(r["in_collection"] == "true" and r["flags"] == "" for r in rows if r["doc_id"] != MISSING_ID)


def test_ris_has_one_record_per_source_each_value_on_one_line(col, case, events):
    out = export_sources(events, col.documents, "ris")
    assert out.startswith("TY  - ")
    records = _ris_records(out)
    assert len(records) == len(case.ranking)
    for record, doc_id in zip(records, case.ranking, strict=True):
        assert record[0][0] == "TY" and record[-1] == ("ER", "")
        tags = dict(record)
        assert tags["ID"] == doc_id
        assert all(not re.search(r"[\r\n\v\f\u2028\u2029\x85]", value) for _, value in record)
        assert sum(1 for tag, _ in record if tag == "TY") == 1
    by_id = {dict(r)["ID"]: dict(r) for r in records}
    exp, topres, sonar = col.hipe_ids
    assert by_id[exp]["TY"] == "NEWS" and by_id[exp]["T2"] == "EXP"
    assert by_id[exp]["PY"] == "1888" and by_id[exp]["DA"] == "1888/08/03/"
    assert by_id[exp]["AB"] == one_line(_quote(col, case, exp))
    assert "elephants" in by_id[exp]["N1"] and one_line(_quote(col, case, exp)) in by_id[exp]["N1"]
    assert case.run_id in by_id[exp]["N1"] and QUESTION in by_id[exp]["N1"]
    assert "derived from the first words" in by_id[exp]["N1"]
    hostile = by_id["hostile-1"]
    assert hostile["TY"] == "GEN" and "T2" not in hostile and hostile["DA"] == "1881/05//"
    assert hostile["UR"] == "https://example.org/doc?a=1&b=[2]"
    assert hostile["AB"] == "[bold]INCENDIE[/bold] au théâtre [/] Le feu"
    assert by_id["lpj-1881-a"]["TI"] == 'Le Salon de 1881 (compte rendu "officiel")'
    assert by_id["lpj-1881-a"]["DA"] == "1881///" and by_id["lpj-1881-a"]["LA"] == "fr"
    assert by_id["gaz-1881-05-27"]["CY"] == "Lausanne"
    assert by_id[MISSING_ID]["TY"] == "GEN" and NOT_IN_COLLECTION in by_id[MISSING_ID]["N1"]
    assert "AB" not in by_id[sonar] and "AB" not in by_id[MISSING_ID]


def test_csl_json_items_with_date_parts_from_partial_dates(col, case, events):
    items = json.loads(export_sources(events, col.documents, "csl-json"))
    assert [item["id"] for item in items] == case.ranking
    by_id = {item["id"]: item for item in items}
    exp, topres, sonar = col.hipe_ids
    assert by_id["lpj-1881-a"]["issued"] == {"date-parts": [[1881]]}
    assert by_id["hostile-1"]["issued"] == {"date-parts": [[1881, 5]]}
    assert by_id["gaz-1881-05-27"]["issued"] == {"date-parts": [[1881, 5, 27]]}
    assert by_id[exp]["issued"] == {"date-parts": [[1888, 8, 3]]}
    assert by_id[exp]["type"] == "article-newspaper" and by_id[exp]["container-title"] == "EXP"
    assert by_id["hostile-1"]["type"] == "document" and "container-title" not in by_id["hostile-1"]
    assert by_id["hostile-1"]["abstract"] == _quote(col, case, "hostile-1")
    assert by_id["hostile-1"]["URL"] == "https://example.org/doc?a=1&b=[2]"
    assert by_id["lpj-1881-a"]["language"] == "fr" and by_id["lpj-1881-a"]["page"] == "2"
    note = by_id[exp]["note"]
    assert "elephants" in note and _quote(col, case, exp) in note and case.run_id in note
    missing = by_id[MISSING_ID]
    assert "issued" not in missing and "abstract" not in missing and NOT_IN_COLLECTION in missing["note"]
    for item in items:
        assert set(item) <= {"id", "type", "title", "container-title", "issued", "language", "note", "abstract"} | {
            "URL",
            "page",
            "publisher-place",
        }


def test_documents_read_back_from_the_reopened_collection_export_the_same(col, case, events):
    with Collection.open(col.path, load_settings(), mode="read") as reopened:
        documents = reopened.store.get_documents(case.ranking)
    assert MISSING_ID not in documents
    for fmt in FORMATS:
        assert export_sources(events, documents, fmt) == export_sources(events, col.documents, fmt)


def test_with_no_documents_every_source_is_still_exported_and_flagged(case, events):
    rows = list(csv.DictReader(io.StringIO(export_sources(events, {}, "csv"), newline="")))
    assert [r["doc_id"] for r in rows] == case.ranking
    assert all(r["in_collection"] == "false" and r["title"] == r["doc_id"] for r in rows)
    assert len(_ris_records(export_sources(events, {}, "ris"))) == len(case.ranking)
    assert len(json.loads(export_sources(events, {}, "csl-json"))) == len(case.ranking)


def test_a_span_outside_the_document_is_flagged_not_cut(col, events):
    result = events[-1]
    broken = [r.model_copy(update={"span": (5, 10**6)}) if r.rank == 1 else r for r in result.ranking]
    damaged = [*events[:-1], result.model_copy(update={"ranking": broken})]
    row = next(csv.DictReader(io.StringIO(export_sources(damaged, col.documents, "csv"), newline="")))
    assert row["quote"] == "" and "outside the document text" in row["flags"]


def test_unknown_format_and_unfinished_run_are_trail_errors(col, events):
    with pytest.raises(TrailError, match=r"'bibtex'.*csv, ris, csl-json"):
        export_sources(events, col.documents, "bibtex")
    assert export_sources(events, col.documents, " CSV ") == export_sources(events, col.documents, "csv")
    with pytest.raises(TrailError, match="no 'result' event"):
        export_sources(events[:-1], col.documents, "csv")


@pytest.mark.parametrize(
    ("date", "parts"),
    [
        ("1881", [1881]),
        ("1881-05", [1881, 5]),
        ("1881-05-27", [1881, 5, 27]),
        ("0987-01", [987, 1]),
        (None, None),
        ("", None),
        ("s.d.", None),
    ],
)
def test_date_parts(date, parts):
    assert date_parts(date) == parts


def test_derived_titles_and_one_line_values():
    assert derived_title("Short  notice.\n") == "Short notice."
    long = derived_title("word " * 40)
    assert long.endswith("…") and len(long.split()) == 12
    assert len(derived_title("x" * 500)) <= 91
    assert derived_title("") == ""
    assert one_line("a\r\nb\nc\u2028d\x0be\x00f  ") == "a b c d ef"


def test_sub_questions_follow_the_replans(events):
    """A re-plan after sub-question s keeps 0..s and replaces what was still to come."""
    assert [sq.question for sq in sub_questions(events)] == [
        "Fires reported in French newspapers",
        "Disasters in British local papers",
        "Fires of 1881 in the Swiss and French press",
    ]
    plan_only = [e for e in events if e.kind != "replan"]
    assert sub_questions(plan_only)[2].question == "Fires in Swiss newspapers"
