"""`tracerag calibrate`: measure the channels on the collection's own pseudo-queries and store their weights
(ingest and embed do it too, when what the weights describe changed: `calibration.refresh`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from tracerag.cli.app import (
    BaseUrlOpt,
    CollectionOpt,
    ConfigOpt,
    WaitOpt,
    app,
    data_text,
    friendly,
    out,
    print_table,
    settings_with_llm,
    write_json,
)
from tracerag.cli.views import calibration_progress
from tracerag.retrieval.pseudo_queries import QUERIES_PER_KIND, SEED

if TYPE_CHECKING:
    from rich.table import Table

    from tracerag.retrieval.weights import Calibration


@app.command()
@friendly
def calibrate(
    collection: CollectionOpt,
    queries: Annotated[
        int,
        typer.Option(
            "--queries",
            min=10,
            help="Pseudo-queries of each kind (span, keywords, phrase, shuffled, entity, question).",
        ),
    ] = QUERIES_PER_KIND,
    seed: Annotated[int, typer.Option(help="Seed of the documents drawn.")] = SEED,
    questions: Annotated[
        bool,
        typer.Option(
            "--questions/--no-questions",
            help="Ask the model (llm.model, --llm) for a question per passage: one call each.",
        ),
    ] = True,
    llm: Annotated[
        str | None,
        typer.Option("--llm", metavar="MODEL", help="Model for the questions: openai:MODEL, local, replay:DIR."),
    ] = None,
    base_url: BaseUrlOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the calibration as JSON.")] = False,
    wait: WaitOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Weigh each channel by how well it finds the collection's own pseudo-queries (no labels needed); searches
    with retrieval.fusion = "calibrated" (the default) use the weights. Ingest and embed run it when needed."""
    from tracerag.collection import Collection
    from tracerag.retrieval import Retriever, calibration

    settings = settings_with_llm(config, llm, base_url)
    questioner = None
    if questions and settings.llm.model:
        from tracerag.llm import load_llm
        from tracerag.research.pseudo_questions import PassageQuestions

        model = load_llm(settings)
        questioner = PassageQuestions(model) if model is not None else None
    with Collection.open(collection, settings, mode="write", wait=wait) as col:
        if questioner is not None and not json_out:
            out.print(data_text(f"asking {questioner.model} for up to {queries} questions (one call each)…"))
        with calibration_progress() as update:
            found = calibration.calibrate(
                Retriever(col), per_kind=queries, seed=seed, progress=update, questioner=questioner
            )
        if found is None:
            message = f"fewer than {calibration.MIN_DOCUMENTS} documents: not calibrated, every channel weighs 1"
            if json_out:
                write_json({"calibrated": False, "why": message})
            else:
                out.print(message)
            return
        if questioner is None:  # say why more precisely than the library can
            why = "not asked (--no-questions)" if not questions else "no model configured (llm.model)"
            found.kinds["question"].note = f"{why}: no questions asked"
        path = calibration.save(col, found)
    if json_out:
        write_json({"calibrated": True, "path": str(path), **calibration.as_dict(found)})
        return
    print_calibration(found)
    out.print(data_text(f"saved to {path}"))


def print_calibration(found: Calibration) -> None:
    from rich.table import Table

    total = sum(found.queries.values())
    kinds = ", ".join(f"{n} {kind}" for kind, n in found.queries.items() if n)
    out.print(f"{total} pseudo-queries ({kinds}) in {found.seconds:.1f} s ({total / max(found.seconds, 1e-9):.0f}/s)")
    table = Table("channel", "acted on", "pseudo-MRR", "best channel there", "weight")
    for channel, weight in found.weights.items():
        table.add_row(
            channel,
            str(found.acted[channel]),
            f"{found.mrr[channel]:.3f}",
            f"{found.reference[channel]:.3f}",
            f"[bold]{weight:.2f}[/bold]",
        )
    print_table(table)
    out.print("per kind: pseudo-MRR (queries acted on); each kind weighs the same")
    print_table(kind_table(found))
    for kind, report in found.kinds.items():
        if report.note:
            out.print(data_text(f"{kind}: {report.note}"))
    fused = ", ".join(f"{name} {value:.3f}" for name, value in found.fused.items())
    out.print(data_text(f"fused pseudo-MRR: {fused}"))


def kind_table(found: Calibration) -> Table:
    """One row per kind that has queries: each channel's pseudo-MRR with how many it acted on, then the default
    fusion's (80 columns hold four channels)."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1), collapse_padding=True)
    for name in ("kind", "queries", *found.weights, "fused"):
        table.add_column(name, no_wrap=True)
    for kind, report in found.kinds.items():
        if not report.queries:
            continue
        cells = [f"{report.mrr[c]:.3f} ({report.acted[c]})" if c in report.mrr else "-" for c in found.weights]
        fused = f"{report.fused:.3f}" if report.fused is not None else "-"
        table.add_row(kind, str(report.queries), *cells, fused)
    return table
