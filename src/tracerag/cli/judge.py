"""`tracerag judge`: a run's candidates (or a selection's sources) scored against the researcher's criteria.

Each candidate is one model call (or a cache hit, no call); every judgment, failures too, is an event of the judge
run's own trail. The diagnostics HistoRAG reports are printed after the table: Spearman between the run's order and
the judge's scores, and with `--compare`, between two judge models on the same candidates. Exit 1 when a judgment
failed (it has no score, never a default one).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from tracerag.cli.app import (
    BaseUrlOpt,
    CollectionOpt,
    ConfigOpt,
    ExitCode,
    app,
    counted,
    data_text,
    err,
    friendly,
    out,
    print_table,
    progress_bar,
    settings_with_llm,
    write_json,
)
from tracerag.cli.options import DECLARED, declared
from tracerag.errors import ConfigError
from tracerag.options import JudgeOptions

if TYPE_CHECKING:
    from rich.progress import TaskID

    from tracerag.research.diagnostics import Correlation
    from tracerag.research.judge import JudgeRun

LlmOpt = Annotated[
    str | None,
    typer.Option(
        "--llm", metavar="MODEL", help="Judge model: openai:MODEL, local, or replay:DIR (default: settings llm.model)."
    ),
]


@app.command()
@friendly
@declared(JudgeOptions)
def judge(
    criteria: Path,
    from_run: str | None = DECLARED,
    selection: str | None = DECLARED,
    collection: CollectionOpt = Path("."),
    k: int | None = DECLARED,
    llm: LlmOpt = None,
    base_url: BaseUrlOpt = None,
    compare: Annotated[
        str | None, typer.Option("--compare", help="A second judge model on the same candidates (rank correlation).")
    ] = None,
    no_cache: bool = DECLARED,
    trail_dir: Annotated[Path | None, typer.Option(help="Write the judge run's trail here.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the judgments and diagnostics as JSON.")] = False,
    config: ConfigOpt = None,
) -> ExitCode:
    """Score each candidate 0-10 against your criteria, reasoning first, one model call per candidate (cached by
    criteria, chunk and model: `judgments.sqlite` in the collection, or per user when it is read-only here)."""
    from tracerag.collection import Collection, trail_roots
    from tracerag.llm import load_llm
    from tracerag.research.criteria import load_criteria
    from tracerag.research.diagnostics import judge_vs_judge, retrieval_vs_judge
    from tracerag.research.judge import JudgeCache, judge_run, judge_sources
    from tracerag.trail import find_trail, read_trail

    if (from_run is None) == (selection is None):  # said before a model is loaded
        raise ConfigError("give one of --from RUN or --selection QUESTION")
    crit = load_criteria(criteria)
    settings = settings_with_llm(config, llm, base_url)
    model = load_llm(settings)
    if model is None:
        raise ConfigError("the judge needs a model: --llm openai:MODEL, local or replay:DIR (or settings llm.model)")
    other = None
    if compare:
        other = load_llm(settings_with_llm(config, compare, base_url))
        assert other is not None  # a non-empty spec always builds a model (or raises ConfigError)
    with Collection.open(collection, settings, mode="read") as col:
        run = None
        if from_run is not None:
            path = find_trail(trail_roots(col.path, settings), from_run)
            run = (path.stem, read_trail(path))
        found = judge_sources(col, settings, run=run, selection=selection, k=k)
        for doc_id in found.missing:
            err.print(data_text(f"skipped {doc_id}: the collection no longer holds it", "yellow"))
        candidates, question, source = found.candidates, found.question, found.source
        cache = None if no_cache else JudgeCache.for_collection(col, settings)
        trails = trail_dir or col.trails_dir
        runs: list[JudgeRun] = []
        for judge_model in [model, *([other] if other is not None else [])]:
            with progress_bar() as bar:
                task = bar.add_task(f"judging with {judge_model.model}", total=len(candidates), extra="")

                def advance(done: int, total: int, seconds: float, task: TaskID = task) -> None:
                    bar.update(task, completed=done, extra=f"{done / seconds * 60:.1f}/min" if seconds else "")

                runs.append(
                    judge_run(
                        col,
                        settings,
                        judge_model,
                        crit,
                        candidates,
                        question=crit.question or question,
                        source_run=source,
                        trail_dir=trails,
                        cache=cache,
                        progress=advance,
                    )
                )
    first = runs[0]
    correlations = [retrieval_vs_judge(first.judgments)]
    if len(runs) > 1:
        correlations.append(judge_vs_judge(first.judgments, runs[1].judgments))
    failed = sum(len(r.failures) for r in runs)
    if json_out:
        write_json(
            {
                "runs": [
                    {
                        "run_id": r.run_id,
                        "trail": str(r.trail_path),
                        "model": r.judgments[0].model if r.judgments else None,
                        "calls": r.calls,
                        "judgments": [vars(j) for j in r.judgments],
                    }
                    for r in runs
                ],
                "criteria_hash": crit.digest,
                "skipped": found.missing,
                "diagnostics": [c.to_dict() for c in correlations],
            }
        )
    else:
        _print(runs, correlations)
    return ExitCode.PARTIAL if failed or found.missing else ExitCode.OK


def _print(runs: list[JudgeRun], correlations: list[Correlation]) -> None:
    from rich.table import Table

    first = runs[0]
    table = Table("rank", "document", "score", "reasoning", show_lines=False)
    for j in first.judgments:
        score = Text(str(j.score)) if j.score is not None else Text("failed", style="red")
        why = data_text(j.reasoning if j.score is not None else j.failure, "" if j.score is not None else "red")
        table.add_row(str(j.rank or "-"), data_text(j.doc_id), score, why)
    print_table(table)
    for r in runs:
        cached = sum(j.cached for j in r.judgments)
        model = r.judgments[0].model if r.judgments else "?"
        line = f"{model}: {counted(len(r.judgments), 'judgment')}, {counted(r.calls, 'model call')}, {cached} cached"
        if r.failures:
            line += f", {counted(len(r.failures), 'failure')} (no score)"
        out.print(data_text(f"{line} · trail {r.trail_path}"))
    for c in correlations:
        rho = "undefined" if c.rho is None else f"{c.rho:+.3f}"
        out.print(data_text(f"Spearman ρ, {c.what}: {rho} over {counted(c.n, 'pair')}"))
    if any(r.failures for r in runs):
        err.print("[yellow]some candidates have no score: their failures are in the trail[/yellow]")
