"""TREC run and qrels files, the formats trec_eval and every IR toolkit read.

A run line is `qid Q0 docid rank score tag`; a qrels line is `qid 0 docid grade`. Fields are separated by
whitespace, so ids must not contain any. Writes are atomic (a temporary file in the same directory, then a
rename), so a crash never leaves half a file. Malformed input raises `TrecFormatError`, naming file and line.

In memory a run is `{qid: [(docid, score), ...]}` and qrels are `{qid: {docid: grade}}`.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from tracerag.errors import RecordError

Run = dict[str, list[tuple[str, float]]]
Qrels = dict[str, dict[str, int]]

__all__ = ["Qrels", "Run", "TrecFormatError", "rank_run", "read_qrels", "read_run", "write_qrels", "write_run"]


class TrecFormatError(RecordError):
    """A line of a run or qrels file cannot be read; the message starts with `file:line:`."""


def rank_run(ranking: Iterable[tuple[str, float]] | Mapping[str, float]) -> list[tuple[str, float]]:
    """One query's ranking in the order it is written and evaluated: score descending, ties by doc id ascending.

    Raises ValueError on a repeated doc id or a score that is not a finite number.
    """
    pairs = list(ranking.items()) if isinstance(ranking, Mapping) else list(ranking)
    seen: set[str] = set()
    out: list[tuple[str, float]] = []
    for docid, score in pairs:
        if docid in seen:
            raise ValueError(f"doc id {docid!r} appears twice in one query's ranking")
        seen.add(docid)
        value = float(score)
        if not math.isfinite(value):
            raise ValueError(f"doc id {docid!r} has a score that is not finite: {score!r}")
        out.append((docid, value))
    out.sort(key=lambda pair: (-pair[1], pair[0]))
    return out


def write_run(path: str | Path, run: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> None:
    """Write `run` as TREC run lines `qid Q0 docid rank score tag`, queries in sorted order.

    Within a query the documents are sorted by score descending, ties by doc id ascending, and ranked from 1.
    Scores are written with `repr`, so `read_run` gives back the same floats. Parent directories are created.
    Raises ValueError for an empty or whitespace-containing id or tag, a repeated doc id, or a non-finite score.
    """
    _check_token(tag, "run tag")
    lines: list[str] = []
    for qid in sorted(run):
        _check_token(qid, "query id")
        for rank, (docid, score) in enumerate(rank_run(run[qid]), start=1):
            _check_token(docid, f"doc id (query {qid!r})")
            lines.append(f"{qid} Q0 {docid} {rank} {score!r} {tag}\n")
    _atomic_write(Path(path), lines)


def read_run(path: str | Path) -> Run:
    """Read a TREC run file into `{qid: [(docid, score), ...]}`, each list sorted as `rank_run` sorts it.

    As in trec_eval, the order comes from the scores; the rank column must be an integer but is otherwise
    ignored, and so are the second column and the tag. Blank lines are skipped. Raises `TrecFormatError` for
    a line without exactly six fields, a rank that is not an integer, a score that is not a finite number, or
    a doc id repeated within a query.
    """
    path = Path(path)
    rankings: dict[str, dict[str, float]] = {}
    first_seen: dict[tuple[str, str], int] = {}
    for lineno, fields in _read_fields(path):
        if len(fields) != 6:
            raise TrecFormatError(
                f"expected 6 fields 'qid Q0 docid rank score tag', found {len(fields)}", file=str(path), line=lineno
            )
        qid, _, docid, rank, score, _ = fields
        try:
            int(rank)
        except ValueError:
            raise TrecFormatError(f"rank {rank!r} is not an integer", file=str(path), line=lineno) from None
        try:
            value = float(score)
        except ValueError:
            raise TrecFormatError(f"score {score!r} is not a number", file=str(path), line=lineno) from None
        if not math.isfinite(value):
            raise TrecFormatError(f"score {score!r} is not finite", file=str(path), line=lineno)
        if (qid, docid) in first_seen:
            raise TrecFormatError(
                f"doc {docid!r} already ranked for query {qid!r} on line {first_seen[qid, docid]}",
                file=str(path),
                line=lineno,
            )
        first_seen[qid, docid] = lineno
        rankings.setdefault(qid, {})[docid] = value
    return {qid: rank_run(scores) for qid, scores in rankings.items()}


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Write `qrels` as TREC qrels lines `qid 0 docid grade`, sorted by query then doc id; atomic.

    Raises ValueError for an empty or whitespace-containing id or a grade that is not an integer.
    """
    lines: list[str] = []
    for qid in sorted(qrels):
        _check_token(qid, "query id")
        for docid in sorted(qrels[qid]):
            _check_token(docid, f"doc id (query {qid!r})")
            grade = qrels[qid][docid]
            if isinstance(grade, bool) or not isinstance(grade, int):
                raise ValueError(f"grade of query {qid!r}, doc {docid!r} is not an integer: {grade!r}")
            lines.append(f"{qid} 0 {docid} {grade}\n")
    _atomic_write(Path(path), lines)


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC qrels file into `{qid: {docid: grade}}`.

    Grades are integers; 0 or less means judged non-relevant. The second column is ignored. Blank lines are
    skipped. Raises `TrecFormatError` for a line without exactly four fields, a grade that is not an integer,
    or a (query, doc) pair judged twice.
    """
    path = Path(path)
    qrels: Qrels = {}
    first_seen: dict[tuple[str, str], int] = {}
    for lineno, fields in _read_fields(path):
        if len(fields) != 4:
            raise TrecFormatError(
                f"expected 4 fields 'qid 0 docid grade', found {len(fields)}", file=str(path), line=lineno
            )
        qid, _, docid, grade = fields
        try:
            value = int(grade)
        except ValueError:
            raise TrecFormatError(f"grade {grade!r} is not an integer", file=str(path), line=lineno) from None
        if (qid, docid) in first_seen:
            raise TrecFormatError(
                f"doc {docid!r} already judged for query {qid!r} on line {first_seen[qid, docid]}",
                file=str(path),
                line=lineno,
            )
        first_seen[qid, docid] = lineno
        qrels.setdefault(qid, {})[docid] = value
    return qrels


def _read_fields(path: Path) -> Iterable[tuple[int, list[str]]]:
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            fields = line.split()
            if fields:
                yield lineno, fields


def _check_token(value: object, what: str) -> None:
    if not isinstance(value, str) or not value or any(ch.isspace() for ch in value):
        raise ValueError(f"{what} must be a non-empty string without whitespace, got {value!r}")


def _atomic_write(path: Path, lines: Iterable[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; a result file is meant to be shared
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.writelines(lines)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
