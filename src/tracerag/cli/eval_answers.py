"""`tracerag eval --answers FILE -c DIR`: drafted answers graded (eval/answer_run.py), the report printed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tracerag.cli.app import ExitCode, err, progress_bar, step_tracker, write_stdout
from tracerag.config import Settings
from tracerag.eval.answer_run import RECORDED, run_answer_eval
from tracerag.eval.report import read_markdown


def eval_answers(
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
