"""`tracerag ask` and `tracerag trail`: the agent and its audit trail on the command line.

Options are checked before a run starts, so a bad one writes no trail; a run that ended failed or truncated exits
1. Questions, ids, reasons and model output are data: printed as `Text` through `app.data_text`. The trail group
(`trail_app`) is added to the app in `tracerag.cli.__init__`.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from tracerag.cli.app import (
    BaseUrlOpt,
    CollectionOpt,
    ConfigOpt,
    ExitCode,
    ExportFormatOpt,
    ExportOutOpt,
    app,
    data_text,
    err,
    friendly,
    out,
    print_table,
    settings_with_llm,
    write_export,
    write_json,
)
from tracerag.cli.options import DECLARED, IiifBaseOpt, declared
from tracerag.errors import ConfigError, TrailError
from tracerag.options import AskOptions

if TYPE_CHECKING:
    from tracerag.agent.pipeline import AgentResult
    from tracerag.model import Document
    from tracerag.trail import Event

trail_app = typer.Typer(
    help="Show, export and inspect the audit trail of every run (`trail list` says each run's kind).",
    no_args_is_help=True,
)

LlmOpt = Annotated[
    str | None,
    typer.Option(
        "--llm", metavar="MODEL", help="Model: openai:MODEL, local, or replay:DIR (default: settings llm.model)."
    ),
]


@app.command()
@friendly
@declared(AskOptions)
def ask(
    question: str | None = DECLARED,
    collection: CollectionOpt = Path("."),
    k: int = DECLARED,
    llm: LlmOpt = None,
    base_url: BaseUrlOpt = None,
    replay_run: Annotated[
        str | None,
        typer.Option("--replay", metavar="RUN", help="Re-run a recorded run (id or trail file) from its LLM answers."),
    ] = None,
    record: Annotated[Path | None, typer.Option(help="Also save every model answer in this folder.")] = None,
    trail_dir: Annotated[
        Path | None,
        typer.Option(help="Write the run's trail here (default: the collection's trails/, or a private folder)."),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    config: ConfigOpt = None,
) -> ExitCode:
    """Find, judge and rank the sources for a question with the TRACE agent; every step goes to the trail.
    Exit 1 when the run ended failed or truncated (the sources are then its fallback ranking), or when a replay
    does not reproduce the recorded ranking."""
    from tracerag.agent import Agent
    from tracerag.agent.replay import replay
    from tracerag.collection import Collection, trail_roots
    from tracerag.llm import load_llm
    from tracerag.model import RunStatus
    from tracerag.trail import find_trail

    # What a run would trip over is checked before it starts (and writes a trail): the question and --k here,
    # the model by load_llm, the channels by the Agent's retriever.
    if not replay_run and not (question and question.strip()):
        raise ConfigError("a question is required (or --replay RUN)")
    settings = settings_with_llm(config, llm, base_url)
    with Collection.open(collection, settings, mode="read") as col:
        trails = trail_dir or col.trails_dir
        if col.read_only and trail_dir is None:
            err.print(data_text(f"{col.path} is read-only here ({col.read_only}): the trail goes to {trails}"))
        if replay_run:
            recorded = find_trail(trail_roots(col.path, settings), replay_run)
            report = replay(col, recorded, trail_dir=trails)
            _print_result(report.replayed, json_out, collection, trail_dir)
            if report.same:
                err.print(data_text(f"replay reproduced the recorded ranking of {replay_run}", "green"))
                return ExitCode.OK
            for line in report.differences():
                err.print(data_text(line, "red"))
            return ExitCode.PARTIAL
        assert question is not None  # checked above: without --replay there is a question
        model = load_llm(settings, record_to=record)
        if model is not None:  # without one, the result's message says so (once), and how to configure one
            err.print(data_text(f"agent with {model.name}:{model.model}"))
        with err.status("the agent is working (each step goes to the trail)…"):
            result = Agent(col, model, trail_dir=trails).run(question, k)
    _print_result(result, json_out, collection, trail_dir)
    if result.status in (RunStatus.FAILED, RunStatus.TRUNCATED):
        return ExitCode.PARTIAL
    return ExitCode.OK


def _print_result(result: AgentResult, json_out: bool, collection: Path, trail_dir: Path | None) -> None:
    from rich.table import Table

    if json_out:
        write_json(
            {
                "run_id": result.run_id,
                "status": str(result.status),
                "message": result.message,
                "trail": str(result.trail_path) if result.trail_path else None,
                "totals": result.totals,
                "ranking": [r.to_dict() for r in result.ranking],
            }
        )
        return
    if result.message:
        out.print(data_text(result.message, "yellow", block=True))
    # The review's columns only when they hold something: without a model (or a review that accepted nothing and
    # gave no reason) they are empty, and two empty columns squeeze the origin into a folded word at 80 columns.
    reviewed = any(r.accepted_by or r.reasons for r in result.ranking)
    headers = ("#", "document", "accepted by", "origin", "reason") if reviewed else ("#", "document", "origin")
    table = Table(*headers, show_lines=False)
    # an id is copied into other commands: its column takes the longest id's width, the others wrap
    table.columns[1].min_width = max((len(r.doc_id) for r in result.ranking), default=0) or None
    for r in result.ranking:
        origin = data_text(r.origin + (" (promoted from hold)" if r.promoted_from_hold else ""))
        if not reviewed:
            table.add_row(str(r.rank), data_text(r.doc_id), origin)
            continue
        subs = ",".join(str(s + 1) for s in r.accepted_by) or "-"
        table.add_row(str(r.rank), data_text(r.doc_id), subs, origin, data_text(r.reasons[0] if r.reasons else ""))
    print_table(table)
    t = result.totals
    out.print(
        Text(
            f"status {result.status} · {int(t.get('llm_calls', 0))} LLM calls · "
            f"{int(t.get('prompt_tokens', 0) + t.get('completion_tokens', 0))} tokens · ${t.get('cost_usd', 0):.4f} · "
            f"{t.get('wall_s', 0):.1f} s"
        )
    )
    # A command to copy: the run id finds the trail among the collection's (a private folder's too); one
    # written to --trail-dir is named by its file.
    run = result.run_id if trail_dir is None or result.trail_path is None else str(result.trail_path)
    show = shlex.join(["tracerag", "trail", "show", run, "-c", str(collection)])
    out.print(data_text(f"trail: {result.trail_path}  ({show})"), soft_wrap=True)  # copied whole, never wrapped


@trail_app.command("list")
@friendly
def trail_list(collection: CollectionOpt = Path(".")) -> ExitCode:
    """The runs recorded in a collection, newest last (exit 1 when a trail file is damaged)."""
    from rich.table import Table

    from tracerag.collection import trail_roots
    from tracerag.config import load_settings
    from tracerag.trail import list_trails, read_trail
    from tracerag.trail.summary import summarise

    if not any((collection / name).exists() for name in ("collection.toml", "catalog.sqlite", "trails")):
        # a folder named wrong would list nothing and exit 0: said, as the commands that open one say it
        raise ConfigError(f"-c {collection}: not a TRACE collection or catalog (no collection.toml, no trails/)")
    damaged: list[TrailError] = []
    # With the runs made while it was read-only here (they went to a private folder).
    paths = [path for root in trail_roots(collection, load_settings()) for path in list_trails(root)]
    rows: list[tuple[tuple[str, str, str], Text, Text]] = []
    for path in paths:
        try:
            events = read_trail(path)
        except TrailError as exc:  # one damaged trail does not hide the others
            damaged.append(exc)
            # The run column names the file; a path in a narrow cell would be cut before its line number.
            where = f"line {exc.line}: " if exc.line is not None else ""
            rows.append(((path.stem[:15], "", path.name), Text("damaged", style="red"), data_text(where + exc.reason)))
            continue
        summary = summarise(events)
        # a call is no run of its own kind: its status says what it is ("call · answered")
        status = f"call · {summary.status}" if summary.kind == "call" else summary.status
        question = data_text(summary.question)
        if summary.client:  # who asked, under what was asked: a column of its own would squeeze the question
            question.append("\n").append_text(data_text("asked by " + summary.client, "dim"))
        # by the id's second, then the run's own start: an assistant's calls of one second in the order made
        rows.append(((path.stem[:15], summary.started, path.name), data_text(status), question))
    table = Table("run", "status", "question")
    # a run id is copied into other commands: its column keeps the longest id whole, the others wrap
    table.columns[0].min_width = max((len(path.stem) for path in paths), default=0) or None
    for (_, _, name), status_cell, question_cell in sorted(rows, key=lambda row: row[0]):
        table.add_row(data_text(Path(name).stem), status_cell, question_cell)
    print_table(table)
    for bad in damaged:  # each in full, `file:line: reason` on one line, never cut
        err.print(Text.assemble(("damaged trail", "red"), " ", data_text(bad)), soft_wrap=True)
    return ExitCode.PARTIAL if damaged else ExitCode.OK


@trail_app.command("show")
@friendly
def trail_show(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix), or a trail .jsonl file.")],
    collection: CollectionOpt = Path("."),
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also show every LLM call.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Render a run's trail: plan, searches, verdicts with reasons, guards, re-evaluation, re-plan, final rank."""
    from tracerag.collection import trail_roots
    from tracerag.config import load_settings
    from tracerag.trail import find_trail, read_trail
    from tracerag.trail.show import render_trail

    events = read_trail(find_trail(trail_roots(collection, load_settings(config)), run))
    documents = _documents(collection, events, config)
    for renderable in render_trail(events, documents, verbose=verbose):
        out.print(renderable)


@trail_app.command("export")
@friendly
def trail_export(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix), or a trail .jsonl file.")],
    collection: CollectionOpt = Path("."),
    fmt: ExportFormatOpt = "csv",
    output: ExportOutOpt = None,
    iiif_base: IiifBaseOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Export the final sources with their reasons and exact evidence spans (RIS and CSL-JSON import into Zotero),
    and where each span lies on the page scans when the collection keeps ALTO boxes."""
    from tracerag.collection import Collection, trail_roots
    from tracerag.config import load_settings
    from tracerag.ingest.alto_regions import check_base
    from tracerag.trail import find_trail, read_trail
    from tracerag.trail.export import ExportedSource, export_sources, store_regions

    base = check_base(iiif_base)
    events = read_trail(find_trail(trail_roots(collection, load_settings(config)), run))
    documents = _documents(collection, events, config)

    def regions(sources: Sequence[ExportedSource]) -> list:
        if not Collection.exists(collection):
            return [[] for _ in sources]
        with Collection.open(collection, load_settings(config), mode="read") as col:
            settings = col.settings.regions
            return store_regions(col.store, documents, iiif_base=base or settings.iiif_base, dpi=settings.dpi)(sources)

    text = export_sources(events, documents, fmt, regions=regions)
    write_export(text, output)
    if output is not None:
        err.print(data_text(f"wrote {output}"))


@trail_app.command("schema")
@friendly
def trail_schema() -> None:
    """Print the JSON Schema every trail line validates against."""
    from tracerag.trail import event_schema

    sys.stdout.write(json.dumps(event_schema(), indent=2) + "\n")


def _documents(collection: Path, events: list[Event], config: Path | None) -> dict[str, Document]:
    """The documents a trail names, to show their text (none when the collection is not at hand)."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.trail.export import named_documents

    if not Collection.exists(collection):
        return {}
    with Collection.open(collection, load_settings(config), mode="read") as col:
        return col.store.get_documents(named_documents(events))
