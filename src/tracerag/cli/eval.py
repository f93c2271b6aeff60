"""`tracerag eval`: runs of the retrieval (and the agent) scored on a benchmark, with a report folder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from tracerag.cli.app import (
    BaseUrlOpt,
    ConfigOpt,
    ExitCode,
    app,
    count_tracker,
    data_text,
    err,
    friendly,
    out,
    progress_bar,
    settings_with_llm,
    step_tracker,
    write_stdout,
)
from tracerag.errors import ConfigError
from tracerag.text import safe_line

if TYPE_CHECKING:
    from tracerag.config import Settings


@app.command("eval")
@friendly
def eval_(
    benchmark: Annotated[
        str | None,
        typer.Option(
            help="Benchmark name (see --list), a BEIR-layout folder, or selection:QUESTION (a researcher's "
            "selection as judgments, with -c DIR)."
        ),
    ] = None,
    runs: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated runs: bm25, dense, phrase, bm25+date, hybrid, hybrid+windows, runs of --run-config, "
            "the peer bm25s, and agent (the TRACE agent, with --llm or llm.model). The first is the baseline of the "
            "significance tests. Default: bm25,hybrid, or none when --run-file is given."
        ),
    ] = None,
    run_file: Annotated[
        list[str] | None,
        typer.Option(
            "--run-file",
            help="NAME=PATH: a saved TREC run (e.g. from `tracerag fuse`) scored after --runs; repeatable.",
        ),
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="Report folder (results.json, results.md, runs/*.trec).")
    ] = Path("reports/eval"),
    run_config: Annotated[
        Path | None, typer.Option(help="TOML file of named runs ([runs.NAME] channels, windows).")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Evaluate the first N judged queries.")] = None,
    sample: Annotated[int | None, typer.Option(min=1, help="Evaluate a seeded sample of N judged queries.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of --sample.")] = 0,
    no_dense: Annotated[bool, typer.Option("--no-dense", help="Build the collection without vectors.")] = False,
    collections: Annotated[Path | None, typer.Option(help="Where benchmark collections are built and reused.")] = None,
    collection: Annotated[
        Path | None,
        typer.Option(
            "--collection",
            "-c",
            help="The collection of a selection:QUESTION benchmark (the researcher's), or the one --answers drafts "
            "over (default: the cached collection of the benchmark the sets are asked over, built if need be).",
        ),
    ] = None,
    data: Annotated[
        Path | None, typer.Option("--data", metavar="DIR", help="Datasets folder (TRACERAG_DATASETS).")
    ] = None,
    list_: Annotated[bool, typer.Option("--list", help="Describe every benchmark and exit.")] = False,
    answers: Annotated[
        list[str] | None,
        typer.Option(
            "--answers",
            metavar="SET",
            help="Grade drafted answers over the collection -c DIR instead of rankings: a shipped set (absurd, "
            "answerable; absurd:piaf keeps one collection's), a JSONL question set or a benchmark with gold answers "
            "(piaf-fr); repeatable. --limit and --sample apply to each set.",
        ),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            metavar="MODEL",
            help="With --answers: the judging model (default: the --llm model; none: no judge, the citation "
            "check's verdicts and no relevancy).",
        ),
    ] = None,
    against: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="With --answers: an earlier report to compare with, question by question."),
    ] = None,
    k: Annotated[int, typer.Option("--k", min=1, help="With --answers: sources searched per question.")] = 3,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            metavar="MODEL",
            help="Model of the agent run, or with --answers the drafter (and the default judge): openai:MODEL, local, "
            "replay:DIR, or none (extractive drafts).",
        ),
    ] = None,
    base_url: BaseUrlOpt = None,
    config: ConfigOpt = None,
) -> ExitCode:
    """Evaluate runs on a benchmark: recall, MRR, nDCG, MAP per run with paired significance against the first.
    With --answers, grade drafted answers: faithfulness, relevancy, citations, abstention. Exit 1 when some agent
    runs ended failed or truncated."""
    from tracerag.eval.datasets import BENCHMARKS
    from tracerag.eval.harness import run_evaluation
    from tracerag.eval.report import read_markdown, trails_dir

    settings = settings_with_llm(config, llm, base_url, **({"datasets": data} if data else {}))
    if list_:
        for name, loader in BENCHMARKS.items():
            doc = (loader.__doc__ or "").strip().splitlines()
            out.print(Text.assemble((name, "bold"), ": ", safe_line(doc[0] if doc else "")))
        return ExitCode.OK
    if answers is not None:
        if benchmark or runs or run_file:
            raise ConfigError("--answers grades drafts, not rankings: leave out --benchmark, --runs and --run-file")
        if collection is None:  # the cached collection of what the sets are asked over, built if need be
            from tracerag.eval.answer_run import asked_over, cached_collection

            over = asked_over(answers)
            with progress_bar() as progress:
                collection = cached_collection(over, settings, count_tracker(progress))
            err.print(data_text(f"drafting over {collection} (the cached {over} collection)", "dim"))
        return _eval_answers(
            settings, answers, collection, out_dir, judge=judge, against=against, k=k, limit=limit, sample=sample,
            seed=seed,
        )  # fmt: skip
    if benchmark is None:
        raise ConfigError("--benchmark NAME or folder is required (see --list)")
    run_files: dict[str, Path] = {}
    for item in run_file or []:
        name, sep, path = item.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(f"--run-file {item!r}: expected NAME=PATH")
        if name.strip() in run_files:
            raise ConfigError(f"--run-file: the name {name.strip()!r} is given twice")
        run_files[name.strip()] = Path(path.strip())
    if runs is None:
        runs = "" if run_files else "bm25,hybrid"
    with progress_bar() as progress:
        evaluation = run_evaluation(
            benchmark,
            settings,
            runs.split(","),
            out_dir,
            run_config=run_config,
            run_files=run_files,
            limit=limit,
            sample=sample,
            seed=seed,
            dense=not no_dense,
            collections=collections,
            collection=collection,
            ingest_progress=count_tracker(progress),
            progress=step_tracker(progress),
            notify=lambda message: err.print(data_text(message, "yellow")),
        )
    write_stdout(read_markdown(out_dir) + f"\nreports in {out_dir}\n")
    if evaluation.agent_ended_early:
        err.print(
            data_text(
                f"{evaluation.agent_ended_early} of {evaluation.queries} agent runs ended failed or truncated (with "
                f"their fallback ranking, scored as such); their trails are in {trails_dir(out_dir)}",
                "yellow",
            )
        )
        return ExitCode.PARTIAL
    return ExitCode.OK


def _eval_answers(
    settings: Settings,
    questions: Sequence[str],
    collection: Path,
    out: Path,
    *,
    judge: str | None,
    against: Path | None,
    k: int,
    limit: int | None,
    sample: int | None,
    seed: int,
) -> ExitCode:
    """Grade, write the report and print it; say how to replay the run. Exit 1 when a draft failed (the model
    gave no usable draft) or a verdict could not be had: those figures are partial."""
    from tracerag.eval.answer_run import RECORDED, run_answer_eval
    from tracerag.eval.report import read_markdown

    if settings.llm.model is None:
        err.print("[yellow]no language model: extractive drafts, judged lexically (no relevancy)[/yellow]")
    with progress_bar() as progress:
        done = run_answer_eval(
            collection, settings, questions, out, judge=judge, k=k, limit=limit, sample=sample,
            seed=seed, against=against,
            progress=step_tracker(progress),
        )  # fmt: skip
    write_stdout(read_markdown(out) + f"\nreports in {out}\n")
    if settings.llm.model:
        replay = f"--llm replay:{out / RECORDED / 'llm'}"
        if (out / RECORDED / "judge").is_dir():
            replay += f" --judge replay:{out / RECORDED / 'judge'}"
        write_stdout(f"replay it offline with {replay}\n")
    partial = sum(r.unjudged for r in done.rows) + sum(r.failure is not None for r in done.rows)
    return ExitCode.PARTIAL if partial else ExitCode.OK
