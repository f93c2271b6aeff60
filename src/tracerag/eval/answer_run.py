"""One evaluation of graded answers, as `tracerag eval --answers` runs it: the models loaded with every answer
recorded, the questions graded over a collection (eval/answers.py), the report written (eval/answer_report.py).

Every model call is recorded under the report folder, the drafting model's in `recorded/llm`, a separate
judge's in `recorded/judge`, so that `--llm replay:OUT/recorded/llm` (and `--judge replay:OUT/recorded/judge`)
reproduces the run exactly, offline: that is how the eval runs in CI.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.errors import ConfigError
from tracerag.eval import answer_report
from tracerag.eval.answer_sets import ANSWER_SETS, SET_COLLECTIONS, load_answer_questions
from tracerag.eval.answers import (
    DEFAULT_K,
    AnswerRow,
    GradedQuestion,
    benchmark_questions,
    grade_all,
    read_questions,
    shipped_question,
)
from tracerag.eval.datasets import BENCHMARKS, load_benchmark
from tracerag.eval.report import trails_dir
from tracerag.eval.runner import build_collection, select_queries
from tracerag.llm import StructuredLLM, load_llm

RECORDED = "recorded"
NO_JUDGE = "none"


@dataclass(frozen=True)
class AnswerEval:
    rows: list[AnswerRow]
    result: dict[str, Any]


def _name(model: StructuredLLM | None) -> str | None:
    return f"{model.name}:{model.model}" if model else None


def load_models(settings: Settings, judge: str | None, out: Path) -> tuple[StructuredLLM | None, StructuredLLM | None]:
    """The drafting model (settings' llm.model) and the judge (`judge`, a model spec; default: the same model;
    `none`: no judge, so that faithfulness is the citation check's and relevancy is not asked, a cheaper run),
    each recording its answers under `out`/recorded."""
    for name, spec in (("llm", settings.llm.model), ("judge", judge)):
        _fresh(out / RECORDED / name, spec)
    llm = load_llm(settings, record_to=out / RECORDED / "llm" if settings.llm.model else None)
    if judge is not None and judge.strip().lower() == NO_JUDGE:
        return llm, None
    if judge is None or judge == settings.llm.model:
        return llm, llm
    judged = settings.model_copy(update={"llm": settings.llm.model_copy(update={"model": judge})})
    return llm, load_llm(judged, record_to=out / RECORDED / "judge")


def asked_over(sources: Sequence[str]) -> str:
    """The benchmark whose corpus the sets `sources` are asked over (a shipped set's collection, or a benchmark
    itself), so that an eval without -c drafts from its cached collection; a ConfigError when they are asked over
    two, or one is a file (asked over a collection of its own)."""
    names: set[str] = set()
    for source in sources:
        name, _, only = source.partition(":")
        if name in ANSWER_SETS and not Path(source).exists():
            over = {only} if only else {q.collection for q in load_answer_questions(name)}
            names |= {SET_COLLECTIONS[c] for c in over if c in SET_COLLECTIONS}
        elif source in BENCHMARKS and not Path(source).exists():
            names.add(source)
        else:
            raise ConfigError(f"{source}: a question file is asked over a collection of yours: give it with -c DIR")
    if not names:
        raise ConfigError(f"{', '.join(sources)}: no collection of the datasets folder is known for it: give -c DIR")
    if len(names) > 1:
        found = ", ".join(sorted(names))
        raise ConfigError(
            f"the sets are asked over more than one collection ({found}): keep one (absurd:piaf, absurd:hipe) or "
            "give it with -c DIR"
        )
    return names.pop()


def cached_collection(
    benchmark: str, settings: Settings, progress: Callable[[str, int], Callable[[int], None]] | None = None
) -> Path:
    """The benchmark's cached eval collection (as `tracerag eval BENCHMARK` builds it: under the cache folder's
    `eval/`), built first when it is not there: read in place from the datasets folder, embedded on the CPU
    (minutes for PIAF's 1,518 paragraphs), each step on a bar of its own."""
    bench = load_benchmark(benchmark, settings.datasets)
    ingested = progress(f"ingest {bench.name}", len(bench.documents)) if progress else None
    bars: list[Callable[[int], None]] = []

    def embedded(done: int, total: int) -> None:
        if progress and not bars:
            bars.append(progress(f"embed {bench.name} (chunks)", total))
        for tick in bars:
            tick(done)

    col, _ = build_collection(
        bench, settings.cache_dir / "eval", settings, dense=True,
        progress=(lambda docs, chunks: ingested(docs)) if ingested else None, embed_progress=embedded,
    )  # fmt: skip
    col.close()
    return col.path


def load_questions(
    sources: Sequence[str], root: Path, *, limit: int | None = None, sample: int | None = None, seed: int = 0
) -> list[GradedQuestion]:
    """The questions of each source in turn: a shipped set (`absurd`, `answerable`: eval/answer_sets.py; `absurd:piaf`
    keeps those asked over the collection it names), a JSONL question set (`answers.read_questions`) or a
    benchmark's name (`piaf-fr`: its questions and gold answers, read from the datasets folder `root`); of each,
    the first `limit` or a seeded sample of `sample`. Ids must be unique across the sources."""
    out: list[GradedQuestion] = []
    for source in sources:
        name, _, only = source.partition(":")
        if name in ANSWER_SETS and not Path(source).exists():
            shipped = [shipped_question(q) for q in load_answer_questions(name) if not only or q.collection == only]
            if not shipped:
                raise ConfigError(f"{source}: no question of the {name} set is asked over {only!r}")
            out += _some(shipped, limit, sample, seed)
            continue
        if source in BENCHMARKS and not Path(source).exists():
            bench = load_benchmark(source, root)
            ids = select_queries(bench, limit=limit, sample=sample, seed=seed)
            out += benchmark_questions(bench, ids)
            continue
        out += _some(read_questions(Path(source)), limit, sample, seed)
    seen: set[str] = set()
    for q in out:
        if q.id in seen:
            raise ConfigError(f"the question id {q.id!r} is in two of the sets: ids must be unique")
        seen.add(q.id)
    return out


def _some(asked: list[GradedQuestion], limit: int | None, sample: int | None, seed: int) -> list[GradedQuestion]:
    """The first `limit`, or a seeded sample of `sample` in the set's order."""
    if sample is not None and sample < len(asked):
        picked = set(random.Random(seed).sample(range(len(asked)), sample))
        asked = [q for n, q in enumerate(asked) if n in picked]
    return asked[:limit]


def _fresh(folder: Path, spec: str | None) -> None:
    """An earlier run's recording in the report folder is replaced, not added to (a folder of two models'
    answers replays neither); kept when this run replays from it."""
    source = Path(spec.removeprefix("replay:")).resolve() if spec and spec.startswith("replay:") else None
    if folder.is_dir() and source != folder.resolve():
        for old in folder.glob("*.json"):
            old.unlink()


def run_answer_eval(
    collection: Path,
    settings: Settings,
    questions: Sequence[str],
    out: Path,
    *,
    judge: str | None = None,
    k: int = DEFAULT_K,
    limit: int | None = None,
    sample: int | None = None,
    against: Path | None = None,
    seed: int = 0,
    progress: Callable[[str, int], Callable[[], None]] | None = None,
) -> AnswerEval:
    asked = load_questions(questions, settings.datasets, limit=limit, sample=sample, seed=seed)
    earlier = answer_report.read_rows(against) if against is not None else None
    if earlier is not None and not {q.id for q in asked} & set(earlier):  # before any model call
        raise ConfigError(f"--against {against}: no question in common with this run's sets, nothing to compare")
    llm, judge_llm = load_models(settings, judge, out)
    with Collection.open(collection, settings, mode="read") as col:
        rows = grade_all(col, asked, llm, judge_llm, trails_dir(out), k=k, progress=progress)
    meta = {
        "set": ", ".join(questions),
        "collection": str(collection),
        "llm": _name(llm),
        "judge": _name(judge_llm),
        "k": k,
        "against": str(against) if against else None,
    }
    result = answer_report.summary(rows, meta, earlier, seed=seed)
    answer_report.write(out, result)
    return AnswerEval(rows, result)
