"""xling-piaf: translated PIAF questions (benchmarks/crosslingual) over PIAF's French paragraphs, on the real data."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REPO, require_datasets
from tracerag.errors import DataUnavailableError, RecordError
from tracerag.eval.datasets import BENCHMARKS, CROSSLINGUAL_DIR, Benchmark, load_benchmark, piaf_fr, xling_piaf

QUESTIONS = REPO / "benchmarks" / "crosslingual"


@pytest.fixture(scope="module")
def piaf_root() -> Path:
    return require_datasets("piaf")


@pytest.fixture(scope="module")
def xling(piaf_root: Path) -> Benchmark:
    return load_benchmark("xling-piaf", piaf_root)


def _records(name: str) -> list[dict]:
    lines = (QUESTIONS / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_the_questions_are_found_in_the_repository_by_default() -> None:
    assert CROSSLINGUAL_DIR == QUESTIONS
    assert BENCHMARKS["xling-piaf"] is xling_piaf


def test_counts_ids_types_and_gold(xling: Benchmark, piaf_root: Path) -> None:
    english = _records("piaf-en.jsonl")
    assert len(english) >= 200
    assert [r["id"] for r in english] == [f"xp-en-{n:04d}" for n in range(1, len(english) + 1)]
    assert {r["language"] for r in english} == {"en"}
    assert len({r["source"] for r in english}) == len(english)  # no French question translated twice
    per_language = Counter(q.language for q in xling.queries.values())
    assert per_language["en"] == len(english)
    assert len(xling.queries) == sum(len(_records(p.name)) for p in QUESTIONS.glob("piaf-*.jsonl"))

    french = piaf_fr(piaf_root)
    assert [(d.id, d.text) for d in xling.documents] == [(d.id, d.text) for d in french.documents]
    docs = {d.id: d for d in xling.documents}
    for qid, query in xling.queries.items():
        (gold,) = xling.qrels[qid]
        source = query.metadata["source"]
        assert french.qrels[source] == {gold: 1}  # the paragraph the French original was written on
        assert query.type == f"{query.language}->fr" and query.language != "fr"
        assert query.text and query.text != french.queries[source].text  # translated, not copied
        assert gold in docs


def test_the_english_questions_are_the_seeded_pick(piaf_root: Path) -> None:
    """README: pick = 400 seeded PIAF ids, English takes pick[0:200]; a skipped one is replaced from a draw
    seeded "23-en" among the others, in order."""
    ids = sorted(piaf_fr(piaf_root).queries)
    pick = sorted(random.Random(23).sample(ids, 400))
    chosen = set(pick)
    draw = random.Random("23-en").sample([i for i in ids if i not in chosen], 10)
    sources = [r["source"] for r in _records("piaf-en.jsonl")]
    from_pick = [s for s in sources if s in set(pick[:200])]
    replacements = sources[len(from_pick) :]
    assert from_pick == sorted(from_pick) and len(from_pick) == 197  # 3 skipped, listed in the README
    assert replacements == draw[:3]
    assert len(sources) == 200


def _write(folder: Path, lines: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "piaf-en.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_bad_line_names_its_file_and_line(tmp_path: Path, piaf_root: Path) -> None:
    good = _records("piaf-en.jsonl")[0]
    path = _write(tmp_path / "unknown", [json.dumps(good), json.dumps({**good, "id": "x2", "source": "p0"})])
    with pytest.raises(RecordError, match=rf"{path}:2: source 'p0' is not a PIAF question id"):
        xling_piaf(piaf_root, questions=path.parent)

    path = _write(tmp_path / "twice", [json.dumps(good), "", json.dumps(good)])
    with pytest.raises(RecordError, match=rf"{path}:3: id '{good['id']}' is used twice"):
        xling_piaf(piaf_root, questions=path.parent)

    path = _write(tmp_path / "broken", [json.dumps(good), '{"id": "x2", "language": "en", "text": "Why?"}', "{"])
    with pytest.raises(RecordError, match=rf"{path}:2: lacks source"):
        xling_piaf(piaf_root, questions=path.parent)

    path = _write(tmp_path / "notjson", ["{"])
    with pytest.raises(RecordError, match=rf"{path}:1: not JSON"):
        xling_piaf(piaf_root, questions=path.parent)


def test_every_language_file_in_the_folder_is_read(tmp_path: Path, piaf_root: Path) -> None:
    good = _records("piaf-en.jsonl")[0]
    _write(tmp_path, [json.dumps(good)])
    german = {"id": "xp-de-0001", "language": "de", "text": "Was ist Thiamethoxam?", "source": good["source"]}
    (tmp_path / "piaf-de.jsonl").write_text(json.dumps(german) + "\n", encoding="utf-8")
    bench = xling_piaf(piaf_root, questions=tmp_path)
    assert {q.id: q.type for q in bench.queries.values()} == {good["id"]: "en->fr", "xp-de-0001": "de->fr"}
    assert bench.qrels["xp-de-0001"] == bench.qrels[good["id"]]


def test_missing_questions_name_the_folder(tmp_path: Path, piaf_root: Path) -> None:
    with pytest.raises(DataUnavailableError, match=f"xling-piaf: no translated questions .* in {tmp_path}"):
        xling_piaf(piaf_root, questions=tmp_path)
