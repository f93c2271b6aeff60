"""Exporting a run's sources, from the trail recorded from a real run (tests/fixtures/trails/agent.jsonl,
rewritten by `python -m tests.fixtures.record_trails`): CSV that round-trips the exact evidence, RIS that a
reference manager imports (one record per source, one line per value), CSL-JSON with the right date parts;
a source the collection no longer holds is still exported, flagged."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re

import pytest

from tests.fixtures.record_trails import QUESTION
from tests.trail import AGENT_TRAIL, MISSING_ID, recorded, small_collection
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import TrailError
from tracerag.trail.events import ResultEvent
from tracerag.trail.export import (
    CSV_COLUMNS,
    FORMATS,
    NOT_IN_COLLECTION,
    derived_title,
    export_sources,
    one_line,
    sub_questions,
)

RIS_LINE = re.compile(r"^[A-Z][A-Z0-9]  - ")
SUB_QUESTIONS = ["La panique des éléphants", "incendie au théâtre", "Un incendie en 1881"]


@pytest.fixture(scope="module")
def col(tmp_path_factory, datasets_dir):
    return small_collection(tmp_path_factory, datasets_dir)


@pytest.fixture(scope="module")
def case(col):
    return recorded(AGENT_TRAIL, col.path)


@pytest.fixture(scope="module")
def events(case):
    return case.events


@pytest.fixture(scope="module")
def result(events) -> ResultEvent:
    assert isinstance(events[-1], ResultEvent)
    return events[-1]


def _quote(col, result, doc_id: str) -> str:
    ranked = next(r for r in result.ranking if r.doc_id == doc_id)
    start, end = ranked.span
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


def test_csv_round_trips_with_the_exact_evidence(col, case, result):
    out = export_sources(case.events, col.documents, "csv")
    reader = csv.DictReader(io.StringIO(out, newline=""))
    assert tuple(reader.fieldnames) == CSV_COLUMNS
    rows = list(reader)
    assert [r["doc_id"] for r in rows] == [r.doc_id for r in result.ranking]
    assert [int(r["rank"]) for r in rows] == list(range(1, len(rows) + 1))
    assert {r["run_id"] for r in rows} == {case.run_id} and {r["question"] for r in rows} == {QUESTION}
    by_id = {r["doc_id"]: r for r in rows}
    for ranked in result.ranking:
        row = by_id[ranked.doc_id]
        if ranked.span is None:
            assert row["span_start"] == row["span_end"] == row["quote"] == ""
            continue
        assert (int(row["span_start"]), int(row["span_end"])) == ranked.span
        if ranked.doc_id != MISSING_ID:
            assert row["quote"] == _quote(col, result, ranked.doc_id)
    # the quotes that are hardest to carry: markup, line breaks, a tab, a Unicode line separator
    exp, poole, sonar = col.hipe_ids
    assert by_id["hostile-1"]["quote"] == "[bold]INCENDIE[/bold] :thumbs_up: au [red]théâtre[/red] [/]\nLe feu a"
    assert by_id["gaz-1881-05-27"]["quote"] == "Un violent incendie\ta détruit les entrepôts\u2028du"
    assert by_id[exp]["quote"] == "FAITS DIVERS\nLa panique des éléphants au grand"
    # accepted by every sub-question (the last as re-planned), each reason once
    assert by_id[exp]["accepted_by"] == "0;1;2"
    assert by_id[exp]["sub_questions"] == " | ".join(f"[{i}] {q}" for i, q in enumerate(SUB_QUESTIONS))
    assert by_id[exp]["reasons"] == "accept: FAITS DIVERS La panique des"
    assert by_id["gaz-1881-05-27"]["sub_questions"] == "[2] Un incendie en 1881"
    assert by_id[exp]["publication"] == "EXP" and by_id[exp]["date"] == "1888-08-03"
    assert by_id[exp]["corpus"] == "hipe2020/exp" and by_id[exp]["language"] == "fr"
    assert by_id[poole]["place"] == "Poole" and by_id["gaz-1881-05-27"]["place"] == "Lausanne"
    assert by_id["hostile-1"]["promoted_from_hold"] == "true" and by_id[exp]["promoted_from_hold"] == "false"
    # a title of its own, or one derived from the first words, and said so
    assert by_id["lpj-1881-a"]["title"] == 'Le Salon de 1881 (compte rendu "officiel")'
    assert by_id["lpj-1881-a"]["title_source"] == "document"
    assert by_id[exp]["title_source"] == "text" and by_id[exp]["title"].startswith("FAITS DIVERS La panique")
    assert by_id["lpj-1881-a"]["url"] == "https://gallica.bnf.fr/ark:/12148/bpt6k1"
    assert by_id["lpj-1881-a"]["page"] == "2"
    # the held and the rejected documents fill the list from the warm starts, with no evidence
    for doc_id in ("lpj-1881-a", poole, sonar):
        assert by_id[doc_id]["origin"] == "warm_start" and by_id[doc_id]["reasons"] == by_id[doc_id]["quote"] == ""
    assert [r["doc_id"] for r in rows][-1] == sonar  # rejected: last
    # a missing document keeps what the trail knows, flagged
    missing = by_id[MISSING_ID]
    assert missing["in_collection"] == "false" and NOT_IN_COLLECTION in missing["flags"]
    assert missing["title"] == MISSING_ID and missing["title_source"] == "doc_id"
    assert missing["reasons"] == "accept: Un incendie a ravagé le" and missing["quote"] == ""
    assert all(r["in_collection"] == "true" and r["flags"] == "" for r in rows if r["doc_id"] != MISSING_ID)


def test_ris_has_one_record_per_source_each_value_on_one_line(col, case, result):
    out = export_sources(case.events, col.documents, "ris")
    assert out.startswith("TY  - ")
    records = _ris_records(out)
    assert len(records) == len(result.ranking)
    for record, ranked in zip(records, result.ranking, strict=True):
        assert record[0][0] == "TY" and record[-1] == ("ER", "")
        tags = dict(record)
        assert tags["ID"] == ranked.doc_id
        assert all(not re.search(r"[\r\n\v\f\u2028\u2029\x85]", value) for _, value in record)
        assert sum(1 for tag, _ in record if tag == "TY") == 1
    by_id = {dict(r)["ID"]: dict(r) for r in records}
    exp, poole, sonar = col.hipe_ids
    assert by_id[exp]["TY"] == "NEWS" and by_id[exp]["T2"] == "EXP"
    assert by_id[exp]["PY"] == "1888" and by_id[exp]["DA"] == "1888/08/03/"
    assert by_id[exp]["AB"] == one_line(_quote(col, result, exp))
    assert "FAITS DIVERS La panique des" in by_id[exp]["N1"] and one_line(_quote(col, result, exp)) in by_id[exp]["N1"]
    assert case.run_id in by_id[exp]["N1"] and QUESTION in by_id[exp]["N1"]
    assert "derived from the first words" in by_id[exp]["N1"]
    hostile = by_id["hostile-1"]
    assert hostile["TY"] == "GEN" and "T2" not in hostile and hostile["DA"] == "1881/05//"
    assert hostile["UR"] == "https://example.org/doc?a=1&b=[2]"
    assert hostile["AB"] == "[bold]INCENDIE[/bold] :thumbs_up: au [red]théâtre[/red] [/] Le feu a"
    assert by_id["lpj-1881-a"]["TI"] == 'Le Salon de 1881 (compte rendu "officiel")'
    assert by_id["lpj-1881-a"]["DA"] == "1881///" and by_id["lpj-1881-a"]["LA"] == "fr"
    assert by_id["gaz-1881-05-27"]["CY"] == "Lausanne"
    assert by_id[MISSING_ID]["TY"] == "GEN" and NOT_IN_COLLECTION in by_id[MISSING_ID]["N1"]
    assert "AB" not in by_id[sonar] and "AB" not in by_id[MISSING_ID]


def test_csl_json_items_with_date_parts_from_partial_dates(col, case, result):
    items = json.loads(export_sources(case.events, col.documents, "csl-json"))
    assert [item["id"] for item in items] == [r.doc_id for r in result.ranking]
    by_id = {item["id"]: item for item in items}
    exp, poole, sonar = col.hipe_ids
    assert by_id["lpj-1881-a"]["issued"] == {"date-parts": [[1881]]}
    assert by_id["hostile-1"]["issued"] == {"date-parts": [[1881, 5]]}
    assert by_id["gaz-1881-05-27"]["issued"] == {"date-parts": [[1881, 5, 27]]}
    assert by_id[exp]["issued"] == {"date-parts": [[1888, 8, 3]]}
    assert by_id[exp]["type"] == "article-newspaper" and by_id[exp]["container-title"] == "EXP"
    assert by_id["hostile-1"]["type"] == "document" and "container-title" not in by_id["hostile-1"]
    assert by_id["hostile-1"]["abstract"] == _quote(col, result, "hostile-1")
    assert by_id["hostile-1"]["URL"] == "https://example.org/doc?a=1&b=[2]"
    assert by_id["lpj-1881-a"]["language"] == "fr" and by_id["lpj-1881-a"]["page"] == "2"
    note = by_id[exp]["note"]
    assert "FAITS DIVERS La panique des" in note and _quote(col, result, exp) in note and case.run_id in note
    missing = by_id[MISSING_ID]
    assert "issued" not in missing and "abstract" not in missing and NOT_IN_COLLECTION in missing["note"]
    for item in items:
        assert set(item) <= {"id", "type", "title", "container-title", "issued", "language", "note", "abstract"} | {
            "URL",
            "page",
            "publisher-place",
        }


def test_documents_read_back_from_the_reopened_collection_export_the_same(col, case, result):
    ranked = [r.doc_id for r in result.ranking]
    with Collection.open(col.path, load_settings(), mode="read") as reopened:
        documents = reopened.store.get_documents(ranked)
    assert MISSING_ID not in documents
    for fmt in FORMATS:
        assert export_sources(case.events, documents, fmt) == export_sources(case.events, col.documents, fmt)


def test_with_no_documents_every_source_is_still_exported_and_flagged(case, result):
    rows = list(csv.DictReader(io.StringIO(export_sources(case.events, {}, "csv"), newline="")))
    assert [r["doc_id"] for r in rows] == [r.doc_id for r in result.ranking]
    assert all(r["in_collection"] == "false" and r["title"] == r["doc_id"] for r in rows)
    assert len(_ris_records(export_sources(case.events, {}, "ris"))) == len(result.ranking)
    assert len(json.loads(export_sources(case.events, {}, "csl-json"))) == len(result.ranking)


def test_a_span_outside_the_document_is_flagged_not_cut(col, events, result):
    broken = [dataclasses.replace(r, span=(5, 10**6)) if r.rank == 1 else r for r in result.ranking]
    damaged = [*events[:-1], result.model_copy(update={"ranking": broken})]
    row = next(csv.DictReader(io.StringIO(export_sources(damaged, col.documents, "csv"), newline="")))
    assert row["quote"] == "" and "outside the document text" in row["flags"]


def test_unknown_format_and_unfinished_run_are_trail_errors(col, events):
    with pytest.raises(TrailError, match=r"'bibtex'.*csv, ris, csl-json"):
        export_sources(events, col.documents, "bibtex")
    assert export_sources(events, col.documents, " CSV ") == export_sources(events, col.documents, "csv")
    with pytest.raises(TrailError, match="no 'result' event"):
        export_sources(events[:-1], col.documents, "csv")


def test_derived_titles_and_one_line_values():
    assert derived_title("Short  notice.\n") == "Short notice."
    long = derived_title("word " * 40)
    assert long.endswith("…") and len(long.split()) == 12
    assert len(derived_title("x" * 500)) <= 91
    assert derived_title("") == ""
    assert one_line("a\r\nb\nc\u2028d\x0be\x00f  ") == "a b c d ef"


def test_sub_questions_follow_the_replans(events):
    """A re-plan after sub-question s keeps 0..s and replaces what was still to come."""
    assert [sq.question for sq in sub_questions(events)] == SUB_QUESTIONS
    plan_only = [e for e in events if e.kind != "replan"]
    assert sub_questions(plan_only)[2].question == "Les feux de 1881 en Suisse"
