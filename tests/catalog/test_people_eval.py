"""The people-written catalog eval: the scorer on a small fixture whose every figure is known, the requests file's
errors (file:line and field), and the real Miami requests run through `tracerag catalog eval --requests` against
floors measured on the assistant as it is."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REPO
from tracerag.catalog.model import Opening, ServiceRecord
from tracerag.catalog.store import CatalogStore
from tracerag.cli import app
from tracerag.errors import ConfigError
from tracerag.eval import catalog_people as people
from tracerag.eval.catalog_people import Answered, Directory

MIAMI_REQUESTS = REPO / "benchmarks" / "catalog_people" / "miami.jsonl"

# Floors on benchmarks/catalog_people/miami.jsonl, measured on the assistant after issue 22 (rules only, k = 5, the
# catalog without a places file, asked as on Wednesday 2026-12-09 20:00) with
#   tracerag catalog ingest /work/shared/datasets/miami211 --catalog /tmp/miami
#   tracerag catalog eval --catalog /tmp/miami --requests benchmarks/catalog_people/miami.jsonl --out /tmp/people
# Counts of turns (k of n). Before issue 22 the same file gave 81, 57, 34, 11, 35, 6 and 1.
OUTCOME_OK_AT_LEAST = 107  # measured 107 of 117 scored turns
# measured 89 of 105 turns with acceptable ids (90 on Qdrant Edge: tantivy's BM25 puts miami-paging-003's acceptable
# senior centres on its first two pages, so its third shows none; 8 of the 15 shown are acceptable on either engine)
HIT_AT_LEAST = 89
WRONGLY_REFUSED_AT_MOST = 8  # measured 8 of 105 turns expecting an answer (7 neighbourhoods: no places file)
CONTRADICTED_AT_MOST = 0  # measured 0 of 35 turns with forbidden ids
REPEATS_AT_MOST = 0  # measured 0 repeated recommendations in the paging conversations
NOTHING_NEW_AT_MOST = 0  # measured 0 of 14 "more" turns gave nothing new while acceptable services remained
SPANISH_AT_LEAST = 9  # measured 9 of 9 Spanish turns understood
URGENT_FIRST_AT_LEAST = 13  # measured 13 of 14 urgent turns with a reachable-now service first
CRISIS_NUMBERS_AT_LEAST = 15  # measured 15 of 15 turns that must carry the profile's numbers
# Measured 0 and held at 0 (the assistant's hard promises): structural violations, out of catalog, do-not-refer.


# ------------------------------------------------------------------------------------------------ the scorer


def _record(rid: str, city: str, *, weekdays: tuple[int, ...] = ()) -> ServiceRecord:
    record = ServiceRecord(id=rid, service_id=rid, name=f"service {rid}", city=city, zip="10001")
    record.openings = [Opening(d, 540, 1020) for d in weekdays]
    return record


class _RecordWithStatus(ServiceRecord):
    """A record with a `status` whether or not `ServiceRecord` has the field yet (the records work adds it): the
    scorer reads it with getattr."""


def _conversation(line: dict, where: str = "fixture:1") -> people.Conversation:
    return people._conversation(json.dumps(line), where)


FIXTURE_RECORDS = {
    "a": _record("a", "Riverton", weekdays=(0, 1)),
    "b": _record("b", "Riverton", weekdays=(6,)),
    "c": _record("c", "Lakeside"),  # the wrong city for a Riverton request
    "f": _record("f", "Riverton"),  # a women-only shelter, say: forbidden for a man
    "h": _record("h", "Riverton"),  # a 24-hour line
}


def _directory(numbers: tuple[str, ...] | None = ("988", "911")) -> Directory:
    return Directory(frozenset(FIXTURE_RECORDS), FIXTURE_RECORDS, numbers, frozenset())


def test_each_figure_of_the_scorer_is_the_one_planted():
    urgent = _conversation(
        {
            "id": "u1",
            "catalog": "x",
            "category": "urgent",
            "language": "en",
            "made": "fixture",
            "turns": [
                {
                    "say": "i want to die, riverton",
                    "expect": {"outcome": ["answer"], "first": ["h"], "acceptable": ["h", "a"], "crisis_numbers": True},
                }
            ],
        }
    )
    fact = _conversation(
        {
            "id": "s1",
            "catalog": "x",
            "category": "stated_fact",
            "language": "en",
            "made": "fixture",
            "turns": [
                {
                    "say": "25 year old man, shelter in riverton",
                    "expect": {"outcome": ["answer"], "acceptable": ["a"], "forbidden": ["f"], "city": ["Riverton"]},
                }
            ],
        }
    )
    paging = _conversation(
        {
            "id": "p1",
            "catalog": "x",
            "category": "paging",
            "language": "en",
            "made": "fixture",
            "turns": [
                {"say": "food in riverton", "expect": {"outcome": ["answer"], "acceptable": ["a", "b"]}},
                {"say": "show me more", "expect": {"outcome": ["answer"], "acceptable": ["a", "b"]}},
            ],
        }
    )
    refused = _conversation(
        {
            "id": "e1",
            "catalog": "x",
            "category": "everyday",
            "language": "es",
            "made": "fixture",
            "turns": [{"say": "comida en riverton", "expect": {"outcome": ["answer"], "acceptable": ["a"]}}],
        }
    )
    directory = _directory()
    scores = [
        # the 24-hour line first, the reply carries 988 as "9 8 8" but not 911
        *people.score_conversation(urgent, [Answered("answer", ["h", "a"], "call 9 8 8 now", 3.0)], directory, 5),
        # the forbidden shelter offered, and a Lakeside service for a Riverton request
        *people.score_conversation(fact, [Answered("answer", ["f", "c", "a"], "", 5.0)], directory, 5),
        # the second page repeats "a" and brings nothing new while "b" was never shown
        *people.score_conversation(
            paging, [Answered("answer", ["a"], "", 1.0), Answered("answer", ["a", "x"], "", 2.0)], directory, 5
        ),
        # an answerable request refused
        *people.score_conversation(refused, [Answered("no_match", [], "Nothing matches", 4.0)], directory, 5),
    ]
    table = people.summarise(scores)
    overall = table["all"]
    assert (overall["conversations"], overall["turns"]) == (4, 5)
    assert (overall["outcome_ok"]["k"], overall["outcome_ok"]["n"]) == (4, 5)
    assert (overall["wrongly_refused"]["k"], overall["wrongly_refused"]["n"]) == (1, 5)
    assert (overall["hit"]["k"], overall["hit"]["n"]) == (4, 5)
    assert (overall["first_ok"]["k"], overall["first_ok"]["n"]) == (1, 1)
    assert (overall["crisis_numbers"]["k"], overall["crisis_numbers"]["n"]) == (0, 1)  # 911 missing
    assert (overall["contradicted"]["k"], overall["contradicted"]["n"]) == (1, 1)
    assert (overall["nothing_new"]["k"], overall["nothing_new"]["n"]) == (0, 1)  # "x" was new, if out of catalog
    assert (overall["spanish_understood"]["k"], overall["spanish_understood"]["n"]) == (0, 1)
    assert overall["structural"] == 1  # "c" is in Lakeside
    assert overall["out_of_catalog"] == 1  # "x"
    assert overall["repeats"] == 1  # "a" on the second page
    assert overall["recommendations"] == 8
    assert overall["latency_ms"] == {"median": 3.0, "p95": 5.0}
    assert list(table) == ["all", "urgent", "everyday", "stated_fact", "paging"]
    assert table["paging"]["turns"] == 2 and table["urgent"]["first_ok"]["rate"] == 1.0
    assert table["everyday"]["first_ok"]["rate"] is None  # a rate over no turn
    failed = {(s.conversation, s.turn): s.failed for s in scores}
    assert any("crisis numbers missing from the reply: 911" in f for f in failed[("u1", 0)])
    assert any(f.startswith("forbidden offered") and "f" in f for f in failed[("s1", 0)])
    assert any(f.startswith("structural: c: city: Lakeside") for f in failed[("s1", 0)])
    assert "wrongly refused" in failed[("e1", 0)]
    assert any(f.startswith("repeat: a") for f in failed[("p1", 1)])


def test_a_page_that_brings_nothing_new_while_services_remain_counts():
    paging = _conversation(
        {
            "id": "p2",
            "catalog": "x",
            "category": "paging",
            "language": "en",
            "made": "fixture",
            "turns": [
                {"say": "food", "expect": {"outcome": ["answer"], "acceptable": ["a", "b"]}},
                {"say": "more", "expect": {"outcome": ["answer"], "acceptable": ["a", "b"]}},
                {"say": "more", "expect": {"outcome": ["answer", "none_found"], "acceptable": ["a", "b"]}},
            ],
        }
    )
    answers = [
        Answered("answer", ["a"], "", 1.0),
        Answered("answer", ["a"], "", 1.0),
        Answered("answer", ["b"], "", 1.0),
    ]
    scores = people.score_conversation(paging, answers, _directory(), 5)
    assert [s.checks.get("nothing_new") for s in scores] == [None, True, False]
    assert [s.counts["repeats"] for s in scores] == [0, 1, 0]


def test_a_profile_without_crisis_numbers_fails_the_turn_and_says_so():
    conversation = _conversation(
        {
            "id": "u2",
            "catalog": "x",
            "category": "urgent",
            "language": "en",
            "made": "fixture",
            "turns": [{"say": "help", "expect": {"outcome": ["answer", "clarify"], "crisis_numbers": True}}],
        }
    )
    (score,) = people.score_conversation(conversation, [Answered("clarify", [], "Where?", 1.0)], _directory(None), 5)
    assert score.checks == {"outcome_ok": True, "wrongly_refused": False, "crisis_numbers": False}
    assert "crisis numbers: profile has no crisis numbers" in score.failed


def test_do_not_refer_status_counts_when_the_record_and_profile_carry_it():
    record = _RecordWithStatus(id="d", service_id="d", name="d", city="Riverton")
    record.status = "Active - do not refer"
    directory = Directory(frozenset({"d"}), {"d": record}, None, frozenset({"active - do not refer"}))
    conversation = _conversation(
        {
            "id": "d1",
            "catalog": "x",
            "category": "everyday",
            "language": "en",
            "made": "fixture",
            "turns": [{"say": "food", "expect": {"outcome": ["answer"]}}],
        }
    )
    (score,) = people.score_conversation(conversation, [Answered("answer", ["d"], "", 1.0)], directory, 5)
    assert score.counts["do_not_refer"] == 1 and "do-not-refer offered: d" in score.failed[0]
    allowed = Directory(frozenset({"d"}), {"d": record}, None, frozenset())
    (score,) = people.score_conversation(conversation, [Answered("answer", ["d"], "", 1.0)], allowed, 5)
    assert score.counts["do_not_refer"] == 0


def test_numbers_are_found_however_their_digits_are_grouped():
    assert people.says_number("Call (305) 358-4357 any time", "305-358-4357")
    assert people.says_number("dial 911.", "911")
    assert not people.says_number("call 19110", "911")  # inside a longer number
    assert not people.says_number("nothing here", "988")


def test_expected_ids_the_catalog_lacks_fail_every_turn_of_their_conversation():
    conversation = _conversation(
        {
            "id": "m1",
            "catalog": "x",
            "category": "everyday",
            "language": "en",
            "made": "fixture",
            "turns": [{"say": "food", "expect": {"outcome": ["answer"], "acceptable": ["a", "zz"]}}],
        }
    )
    assert people.unknown_ids([conversation], set(FIXTURE_RECORDS)) == {"m1": ["zz"]}
    (score,) = people.score_conversation(conversation, [Answered("answer", ["a"], "", 1.0)], _directory(), 5, ["zz"])
    assert score.checks["outcome_ok"] is False and score.checks["hit"] is False
    assert "expectation names ids not in the catalog: zz" in score.failed


# ------------------------------------------------------------------------------------------------ the file


GOOD = {
    "id": "g1",
    "catalog": "x",
    "category": "typo",
    "language": "en",
    "made": "fixture",
    "turns": [{"say": "fod", "expect": {"outcome": ["answer"]}}],
}


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("{not json", "not a JSON object"),
        (json.dumps(GOOD | {"category": "misc"}), "category: 'misc' is not one of"),
        (json.dumps(GOOD | {"turns": []}), "turns: missing or not a non-empty list"),
        (json.dumps(GOOD | {"made": ""}), "made: missing"),
        (json.dumps(GOOD | {"colour": "red"}), "colour: unknown field"),
        (json.dumps(GOOD | {"turns": [{"say": "x", "expect": {"outcome": ["maybe"]}}]}), "turns[0].expect.outcome"),
        (json.dumps(GOOD | {"turns": [{"say": "x", "expect": {"outcome": ["answer"], "weekday": [7]}}]}), ".weekday"),
        (json.dumps(GOOD | {"turns": [{"say": "x", "expect": {"outcome": ["answer"], "first": "a"}}]}), ".first"),
        (json.dumps(GOOD | {"turns": [{"say": "", "expect": {"outcome": ["answer"]}}]}), "turns[0].say"),
        (json.dumps(GOOD | {"turns": [{"say": "x"}]}), "no turn has an `expect`"),
        (json.dumps(GOOD | {"turns": [{"say": "x", "expect": {"outcome": ["answer"], "gold": []}}]}), "gold: unknown"),
    ],
)
def test_a_malformed_line_is_an_error_naming_file_line_and_field(tmp_path: Path, line: str, field: str):
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        people.load_requests(path)
    assert f"{path}:3: " in str(caught.value) and field in str(caught.value)


def test_a_repeated_conversation_id_names_both_lines(tmp_path: Path):
    path = tmp_path / "requests.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"requests\.jsonl:2: id: 'g1' already used at .*requests\.jsonl:1"):
        people.load_requests(path)


# ------------------------------------------------------------------------------------------------ the Miami file


def test_the_miami_requests_cover_every_category_with_ids_of_the_catalog(catalog: Path):
    conversations = people.load_requests(MIAMI_REQUESTS)
    counts = Counter(c.category for c in conversations)
    assert set(counts) == set(people.CATEGORIES) and min(counts.values()) >= 8 and counts["urgent"] >= 12
    assert len(conversations) >= 90 and {c.catalog for c in conversations} == {"miami"}
    assert all(len(c.turns) > 1 for c in conversations if c.category in ("follow_up", "paging"))
    assert sum(c.language == "es" for c in conversations) >= 8
    with CatalogStore.of_catalog(catalog) as store:
        assert people.unknown_ids(conversations, set(store.all_ids())) == {}


def test_catalog_eval_requests_runs_the_miami_conversations_above_their_floors(catalog: Path, tmp_path: Path):
    out = tmp_path / "people"
    result = CliRunner().invoke(
        app, ["catalog", "eval", "--catalog", str(catalog), "--requests", str(MIAMI_REQUESTS), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))
    row = summary["catalogs"]["miami"]["results"]["all"]
    assert row["conversations"] == len(people.load_requests(MIAMI_REQUESTS))
    assert row["outcome_ok"]["k"] >= OUTCOME_OK_AT_LEAST
    assert row["hit"]["k"] >= HIT_AT_LEAST
    assert row["wrongly_refused"]["k"] <= WRONGLY_REFUSED_AT_MOST
    assert row["contradicted"]["k"] <= CONTRADICTED_AT_MOST
    assert row["repeats"] <= REPEATS_AT_MOST
    assert row["nothing_new"]["k"] <= NOTHING_NEW_AT_MOST
    assert row["spanish_understood"]["k"] >= SPANISH_AT_LEAST
    assert row["first_ok"]["k"] >= URGENT_FIRST_AT_LEAST
    assert row["crisis_numbers"]["k"] >= CRISIS_NUMBERS_AT_LEAST
    assert row["structural"] == 0 and row["out_of_catalog"] == 0 and row["do_not_refer"] == 0
    turns = [json.loads(line) for line in (out / people.TURNS_JSONL).read_text(encoding="utf-8").splitlines()]
    assert len(turns) == row["turns"] and all({"request", "outcome", "recommended", "failed"} <= set(t) for t in turns)
    report = (out / "results.md").read_text(encoding="utf-8")
    assert [line for line in report.splitlines() if len(line) > 120] == []
    assert "| urgent |" in report and "turns.jsonl" in result.output


def test_an_expected_id_the_catalog_lacks_is_a_warning_and_a_failing_turn(catalog: Path, tmp_path: Path):
    requests = tmp_path / "miami.jsonl"
    line = GOOD | {
        "catalog": "miami",
        "turns": [{"say": "food in hialeah", "expect": {"outcome": ["answer"], "acceptable": ["no-such-id"]}}],
    }
    requests.write_text(json.dumps(line) + "\n", encoding="utf-8")
    out = tmp_path / "people"
    result = CliRunner().invoke(
        app, ["catalog", "eval", "--catalog", str(catalog), "--requests", str(requests), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert f"{requests}:1: g1: ids not in the catalog" in " ".join(result.output.split())
    (turn,) = [json.loads(x) for x in (out / people.TURNS_JSONL).read_text(encoding="utf-8").splitlines()]
    assert turn["checks"]["outcome_ok"] is False and "no-such-id" in " ".join(turn["failed"])


def test_a_malformed_requests_file_stops_the_command_with_its_line(catalog: Path, tmp_path: Path):
    requests = tmp_path / "bad.jsonl"
    requests.write_text(json.dumps(GOOD | {"catalog": "miami"}) + "\n" + '{"id": 3}\n', encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["catalog", "eval", "--catalog", str(catalog), "--requests", str(requests), "--out", str(tmp_path / "o")],
        env={"COLUMNS": "400"},  # at 80 columns Rich folds the tmp path wherever its length puts the fold
    )
    assert result.exit_code != 0
    assert "bad.jsonl:2: id: missing or not a non-empty string" in " ".join(result.output.split())
