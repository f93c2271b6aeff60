"""The answer eval's question sets, people-written: questions a cited draft must abstain on, and answerable controls.

They ship with the package (`tracerag/data/eval/answers/*.jsonl`, README.md there says how they were made and
checked) so that an answer eval runs from an install. `absurd` holds questions with no answer in the collection
they are asked over (absent from it, anachronistic, or resting on a false premise); `answerable` holds questions
whose answer is in one known passage, so that a model that abstains on everything does not score as a good one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from tracerag.errors import RecordError

ANSWER_SETS = ("absurd", "answerable")  # the files shipped with the package
# the benchmark whose corpus is each collection the shipped sets are asked over (their README): its cached eval
# collection is what `tracerag eval --answers absurd:piaf` drafts from when no -c is given
SET_COLLECTIONS = {"piaf": "piaf-fr", "hipe": "xling-hipe"}
ABSTAIN_KINDS = ("absent", "anachronism", "false_premise")  # where the right answer is an abstention
ANSWERABLE = "answerable"
KINDS = (*ABSTAIN_KINDS, ANSWERABLE)

_REQUIRED = ("id", "collection", "language", "kind", "question", "note")
_GOLD = ("gold_doc", "gold_answer")


@dataclass(frozen=True, slots=True)
class AnswerQuestion:
    """One question of an answer set. `gold_doc` (a document id of `collection`) and `gold_answer` (copied from that
    document's text) are set exactly when `kind` is answerable."""

    id: str
    collection: str
    language: str
    kind: str
    question: str
    note: str
    gold_doc: str | None = None
    gold_answer: str | None = None

    @property
    def should_abstain(self) -> bool:
        return self.kind != ANSWERABLE


def answer_set_path(name: str) -> Path:
    """Where a shipped answer set lies (`absurd` or `answerable`)."""
    if name not in ANSWER_SETS:
        raise ValueError(f"no answer set {name!r}; shipped: {', '.join(ANSWER_SETS)}")
    return Path(str(files("tracerag").joinpath("data", "eval", "answers", f"{name}.jsonl")))


def _record(rec: Any, file: str, line: int) -> AnswerQuestion:
    if not isinstance(rec, dict):
        raise RecordError("not a JSON object", file=file, line=line)
    unknown = sorted(set(rec) - set(_REQUIRED) - set(_GOLD))
    if unknown:  # a misspelt field would otherwise be dropped without a word
        raise RecordError(f"unknown fields {', '.join(unknown)}", file=file, line=line)
    missing = [k for k in _REQUIRED if not isinstance(rec.get(k), str) or not rec[k].strip()]
    if missing:
        raise RecordError(f"lacks {', '.join(missing)} (non-empty strings)", file=file, line=line)
    kind = rec["kind"]
    if kind not in KINDS:
        raise RecordError(f"kind {kind!r} is none of {', '.join(KINDS)}", file=file, line=line)
    gold = {k: rec.get(k) for k in _GOLD}
    if kind == ANSWERABLE:
        lacking = [k for k, v in gold.items() if not isinstance(v, str) or not v.strip()]
        if lacking:
            raise RecordError(f"an answerable question needs {', '.join(lacking)}", file=file, line=line)
    elif any(v is not None for v in gold.values()):
        raise RecordError(f"a {kind} question has no gold passage nor answer", file=file, line=line)
    return AnswerQuestion(**{k: rec[k] for k in _REQUIRED}, gold_doc=gold["gold_doc"], gold_answer=gold["gold_answer"])


def load_answer_questions(kind_file: str | Path) -> list[AnswerQuestion]:
    """The questions of a shipped set (`"absurd"`, `"answerable"`) or of a JSONL file of the same shape, in file
    order. A malformed line or a repeated id raises `RecordError` naming the file and the line."""
    path = answer_set_path(kind_file) if isinstance(kind_file, str) and kind_file in ANSWER_SETS else Path(kind_file)
    questions: list[AnswerQuestion] = []
    first_line: dict[str, int] = {}
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordError(f"not JSON ({exc.msg})", file=str(path), line=n) from None
            question = _record(rec, str(path), n)
            if question.id in first_line:
                raise RecordError(
                    f"id {question.id!r} already on line {first_line[question.id]}", file=str(path), line=n
                )
            first_line[question.id] = n
            questions.append(question)
    return questions
