"""The answer eval's question sets: the shipped files hold what the issue asks for (at least 40 absurd questions per
language, each kind in each language, controls with gold passages that exist), and the loader names file:line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import require_datasets
from tracerag.errors import RecordError
from tracerag.eval.answer_sets import (
    ABSTAIN_KINDS,
    ANSWERABLE,
    answer_set_path,
    load_answer_questions,
)
from tracerag.eval.datasets import piaf_corpus
from tracerag.ingest.hipe import read as read_hipe
from tracerag.model import Document

LANGUAGES = ("fr", "en", "de")


def test_the_absurd_set_has_forty_questions_per_language_and_every_kind_in_each() -> None:
    questions = load_answer_questions("absurd")
    per_language = Counter(q.language for q in questions)
    assert all(per_language[lang] >= 40 for lang in LANGUAGES), per_language
    kinds = Counter((q.language, q.kind) for q in questions)
    for lang in LANGUAGES:
        for kind in ABSTAIN_KINDS:
            # "each about a third": no kind below a quarter of its language's questions
            assert kinds[lang, kind] * 4 >= per_language[lang], (lang, kind, kinds)
    assert all(q.should_abstain and q.gold_doc is None for q in questions)
    assert {q.collection for q in questions} == {"piaf", "hipe"}


def test_the_answerable_set_has_controls_in_each_language() -> None:
    questions = load_answer_questions("answerable")
    assert len(questions) >= 20
    assert set(Counter(q.language for q in questions)) == set(LANGUAGES)
    assert all(q.kind == ANSWERABLE and not q.should_abstain and q.gold_doc and q.gold_answer for q in questions)


def test_ids_and_questions_are_unique_across_both_sets() -> None:
    questions = load_answer_questions("absurd") + load_answer_questions("answerable")
    ids = [q.id for q in questions]
    assert len(ids) == len(set(ids))
    texts = [q.question.casefold() for q in questions]
    assert len(texts) == len(set(texts))


def test_the_sets_ship_as_package_data() -> None:
    """Found through importlib.resources (as from an installed wheel), and listed in pyproject's package-data."""
    from importlib.resources import files

    shipped = files("tracerag.data") / "eval" / "answers"
    assert (shipped / "absurd.jsonl").is_file() and (shipped / "README.md").is_file()
    assert answer_set_path("absurd").samefile(Path(str(shipped / "absurd.jsonl")))
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"data/eval/answers/*.jsonl"' in pyproject and '"data/eval/answers/*.md"' in pyproject


def test_an_unknown_set_name_is_refused() -> None:
    with pytest.raises(ValueError, match="absurd, answerable"):
        answer_set_path("nonsense")


GOOD = {"id": "x-1", "collection": "piaf", "language": "fr", "kind": "absent", "question": "Q ?", "note": "n"}


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps({**GOOD, "question": " "}), "lacks question"),
        (json.dumps({**GOOD, "kind": "silly"}), "kind 'silly' is none of"),
        (json.dumps({**GOOD, "qestion": "typo"}), "unknown fields qestion"),
        (json.dumps({**GOOD, "kind": "answerable", "gold_doc": "d"}), "needs gold_answer"),
        (json.dumps({**GOOD, "gold_doc": "d"}), "a absent question has no gold"),
        (json.dumps(GOOD), "id 'x-1' already on line 1"),
    ],
)
def test_a_malformed_line_is_an_error_naming_file_and_line(tmp_path: Path, line: str, reason: str) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + line + "\n", encoding="utf-8")
    with pytest.raises(RecordError) as caught:
        load_answer_questions(path)
    assert caught.value.file == str(path) and caught.value.line == 3
    assert reason in str(caught.value) and str(caught.value).startswith(f"{path}:3: ")


def test_a_file_of_the_same_shape_loads_in_order(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    second = {**GOOD, "id": "x-2", "kind": "answerable", "gold_doc": "Lyon:0", "gold_answer": "Lyon"}
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    loaded = load_answer_questions(path)
    assert [q.id for q in loaded] == ["x-1", "x-2"]
    assert loaded[1].gold_doc == "Lyon:0" and loaded[0].gold_doc is None


def _collections(root: Path) -> dict[str, dict[str, str]]:
    """Document id -> whitespace-normalised text, per collection, read in place."""
    piaf = {d.id: " ".join(d.text.split()) for d in piaf_corpus(root)[0]}
    hipe = {d.id: " ".join(d.text.split()) for d in read_hipe(root / "hipe2022") if isinstance(d, Document)}
    return {"piaf": piaf, "hipe": hipe}


def test_each_gold_passage_exists_and_holds_its_gold_answer() -> None:
    collections = _collections(require_datasets("piaf", "hipe2022"))
    for q in load_answer_questions("answerable"):
        assert q.gold_doc is not None and q.gold_answer is not None
        docs = collections[q.collection]
        assert q.gold_doc in docs, f"{q.id}: {q.gold_doc} is not a {q.collection} document"
        assert q.gold_answer in docs[q.gold_doc], f"{q.id}: {q.gold_answer!r} is not in {q.gold_doc}"
