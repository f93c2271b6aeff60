"""TREC run and qrels files: layout, round trips, atomic writes, and errors that name file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.errors import RecordError
from tracerag.eval.trec import TrecFormatError, rank_run, read_qrels, read_run, write_qrels, write_run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eval"


def test_write_run_layout(tmp_path: Path) -> None:
    run = {"q2": [("b", 0.5), ("a", 0.5), ("c", 2.0)], "q1": [("x", -1.25)]}
    path = tmp_path / "out" / "run.txt"  # parent is created
    write_run(path, run, "bm25")
    # Queries sorted; within one, score descending, ties by doc id ascending; rank from 1.
    assert path.read_text(encoding="utf-8") == (
        "q1 Q0 x 1 -1.25 bm25\nq2 Q0 c 1 2.0 bm25\nq2 Q0 a 2 0.5 bm25\nq2 Q0 b 3 0.5 bm25\n"
    )


def test_run_round_trip(tmp_path: Path) -> None:
    run = {
        "q1": [("d3", 0.1), ("d1", 1 / 3), ("d2", 1 / 3), ("d4", 1e-17)],
        "q10": [("d9", 7.0)],
        "q2": [("z", -0.0), ("y", 123456789.123456789)],
    }
    path = tmp_path / "run.txt"
    write_run(path, run, "tag")
    back = read_run(path)
    assert back == {qid: rank_run(ranking) for qid, ranking in run.items()}  # floats come back exactly
    assert back["q1"] == [("d1", 1 / 3), ("d2", 1 / 3), ("d3", 0.1), ("d4", 1e-17)]
    write_run(path, back, "tag")
    assert read_run(path) == back


def test_read_fixture_run_orders_by_score_not_rank_column() -> None:
    run = read_run(FIXTURES / "run_a.txt")
    assert list(run) == ["q1", "q2", "q3", "q9"]
    assert run["q1"] == [("d2", 3.0), ("d1", 2.0), ("d3", 1.0)]
    assert [doc for doc, _ in run["q2"]] == ["d4", "d5", "d6"]  # file ranks d5 first, same score: id wins
    assert len(run["q3"]) == 12


def test_qrels_round_trip(tmp_path: Path) -> None:
    qrels = read_qrels(FIXTURES / "qrels.txt")
    assert qrels["q1"] == {"d1": 1, "d3": 2, "d5": 0}
    assert set(qrels) == {"q1", "q2", "q3", "q4"}
    path = tmp_path / "qrels.txt"
    write_qrels(path, qrels)
    assert read_qrels(path) == qrels
    assert path.read_text(encoding="utf-8") == (FIXTURES / "qrels.txt").read_text(encoding="utf-8")


def test_write_is_atomic_and_replaces(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    write_run(path, {"q1": [("a", 1.0)]}, "first")
    write_run(path, {"q1": [("b", 1.0)]}, "second")
    assert path.read_text(encoding="utf-8") == "q1 Q0 b 1 1.0 second\n"
    # A rejected run leaves the previous file untouched and no temporary file behind.
    with pytest.raises(ValueError, match="not finite"):
        write_run(path, {"q1": [("c", float("nan"))]}, "third")
    assert path.read_text(encoding="utf-8") == "q1 Q0 b 1 1.0 second\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.txt"]


@pytest.mark.parametrize(
    ("run", "tag", "message"),
    [
        ({"q1": [("a", 1.0), ("a", 2.0)]}, "t", "appears twice"),
        ({"q 1": [("a", 1.0)]}, "t", "query id"),
        ({"q1": [("a b", 1.0)]}, "t", "doc id"),
        ({"q1": [("a", 1.0)]}, "", "run tag"),
        ({"q1": [("a", float("inf"))]}, "t", "not finite"),
    ],
)
def test_write_run_rejects_bad_input(tmp_path: Path, run, tag, message) -> None:
    with pytest.raises(ValueError, match=message):
        write_run(tmp_path / "run.txt", run, tag)
    assert not (tmp_path / "run.txt").exists()


def test_write_qrels_rejects_bad_grade(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not an integer"):
        write_qrels(tmp_path / "qrels.txt", {"q1": {"d1": 1.5}})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("q1 Q0 d9 4 0.5", "expected 6 fields"),
        ("q1 Q0 d9 4 0.5 tag extra", "expected 6 fields"),
        ("q1 Q0 d9 four 0.5 tag", "rank 'four' is not an integer"),
        ("q1 Q0 d9 4 high tag", "score 'high' is not a number"),
        ("q1 Q0 d9 4 nan tag", "score 'nan' is not finite"),
        ("q1 Q0 d1 4 0.5 tag", "doc 'd1' already ranked for query 'q1' on line 1"),
    ],
)
def test_read_run_malformed_line(tmp_path: Path, bad_line: str, message: str) -> None:
    path = tmp_path / "bad.run"
    # Line 1 fine, line 2 blank (skipped but counted), line 3 fine, line 4 broken.
    path.write_text(f"q1 Q0 d1 1 2.0 tag\n\nq1 Q0 d2 2 1.0 tag\n{bad_line}\n", encoding="utf-8")
    with pytest.raises(TrecFormatError, match=message) as caught:
        read_run(path)
    assert str(caught.value).startswith(f"{path}:4: ")
    assert isinstance(caught.value, RecordError)
    assert (caught.value.file, caught.value.line) == (str(path), 4)


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("q1 0 d9", "expected 4 fields"),
        ("q1 Q0 d9 4 0.5 tag", "expected 4 fields"),
        ("q1 0 d9 1.5", "grade '1.5' is not an integer"),
        ("q1 0 d1 0", "doc 'd1' already judged for query 'q1' on line 1"),
    ],
)
def test_read_qrels_malformed_line(tmp_path: Path, bad_line: str, message: str) -> None:
    path = tmp_path / "bad.qrels"
    path.write_text(f"q1 0 d1 1\nq2 0 d1 0\n{bad_line}\n", encoding="utf-8")
    with pytest.raises(TrecFormatError, match=message) as caught:
        read_qrels(path)
    assert str(caught.value).startswith(f"{path}:3: ")
