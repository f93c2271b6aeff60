"""`tracerag ask` and `tracerag trail`: the agent and its audit trail on the command line.

Registered on the main app by `cli.py`. Parse, build settings, call the library, print; errors that the user
can act on become one red line and exit code 2 (through `cli._friendly`). Options are checked before a run
starts, so a bad one writes no trail; a run that ended failed or truncated exits 1. Questions, ids, reasons and
model output are data: printed as `Text` through `cli.data_text`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from tracerag.cli import (
    CollectionOpt,
    ConfigOpt,
    ExitCode,
    _friendly,
    app,
    data_text,
    err,
    out,
    write_json,
    write_stdout,
)
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import ConfigError, TrailError
from tracerag.model import RunStatus

trail_app = typer.Typer(help="Show, export and inspect the audit trails of agent runs.", no_args_is_help=True)
app.add_typer(trail_app, name="trail")

LlmOpt = Annotated[
    str | None,
    typer.Option("--llm", help="Model: openai:MODEL, local, or replay:DIR (default: settings llm.model)."),
]


@app.command()
@_friendly
def ask(
    question: Annotated[str | None, typer.Argument(help="The research question.")] = None,
    collection: CollectionOpt = Path("."),
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Number of sources.")] = 10,
    llm: LlmOpt = None,
    base_url: Annotated[str | None, typer.Option(help="Endpoint of an openai: model.")] = None,
    replay_run: Annotated[
        str | None, typer.Option("--replay", help="Re-run a recorded run (id or trail file) from its LLM answers.")
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
    from tracerag.llm import load_llm

    # What a run would trip over is checked before it starts (and writes a trail): the question and --k here,
    # the model by load_llm, the channels by the Agent's retriever.
    if not replay_run and not (question and question.strip()):
        raise ConfigError("a question is required (or --replay RUN)")
    overrides = {k_: v for k_, v in {"model": llm, "base_url": base_url}.items() if v}
    settings = load_settings(config, **({"llm": overrides} if overrides else {}))
    with Collection.open(collection, settings, mode="read") as col:
        trails = trail_dir or col.trails_dir
        if col.read_only and trail_dir is None:
            err.print(data_text(f"{col.path} is read-only here ({col.read_only}): the trail goes to {trails}"))
        if replay_run:
            report = replay(col, _trail_file(col.path, replay_run, settings), trail_dir=trails)
            _print_result(report.replayed, json_out)
            if report.same:
                err.print(data_text(f"replay reproduced the recorded ranking of {replay_run}", "green"))
                return ExitCode.OK
            for line in report.differences():
                err.print(data_text(line, "red"))
            return ExitCode.PARTIAL
        model = load_llm(settings, record_to=record)
        if model is None:
            err.print("[yellow]no language model configured: running the hybrid warm start only[/yellow]")
        else:
            err.print(data_text(f"agent with {model.name}:{model.model}"))
        with err.status("the agent is working (each step goes to the trail)…"):
            result = Agent(col, model, trail_dir=trails).run(question, k)
    _print_result(result, json_out)
    if result.status in (RunStatus.FAILED, RunStatus.TRUNCATED):
        return ExitCode.PARTIAL
    return ExitCode.OK


def _print_result(result, json_out: bool) -> None:
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
    table = Table("#", "document", "accepted by", "origin", "reason", show_lines=False)
    for r in result.ranking:
        subs = ",".join(str(s + 1) for s in r.accepted_by) or "-"
        flag = " (promoted from hold)" if r.promoted_from_hold else ""
        table.add_row(
            str(r.rank),
            data_text(r.doc_id),
            subs,
            data_text(r.origin + flag),
            data_text(r.reasons[0] if r.reasons else ""),
        )
    out.print(table)
    t = result.totals
    out.print(
        Text(
            f"status {result.status} · {int(t.get('llm_calls', 0))} LLM calls · "
            f"{int(t.get('prompt_tokens', 0) + t.get('completion_tokens', 0))} tokens · ${t.get('cost_usd', 0):.4f} · "
            f"{t.get('wall_s', 0):.1f} s"
        )
    )
    out.print(data_text(f"trail: {result.trail_path}  (tracerag trail show {result.run_id} -c ...)"))


@trail_app.command("list")
@_friendly
def trail_list(collection: CollectionOpt = Path(".")) -> ExitCode:
    """The runs recorded in a collection, newest last (exit 1 when a trail file is damaged)."""
    from tracerag.collection import private_root
    from tracerag.trail import list_trails, read_trail

    table = Table("run", "status", "question")
    damaged = 0
    # With the runs made while it was read-only here (they went to a private folder).
    private = list_trails(private_root(collection, load_settings()))
    for path in sorted(list_trails(collection) + private, key=lambda p: p.name):
        try:
            events = read_trail(path)
        except TrailError as exc:  # one damaged trail does not hide the others
            damaged += 1
            table.add_row(data_text(path.stem), Text("damaged", style="red"), data_text(exc))
            continue
        result = next((e for e in reversed(events) if e.kind == "result"), None)
        question = events[0].question if events and events[0].kind == "run" else ""
        table.add_row(data_text(path.stem), data_text(result.status if result else "unfinished"), data_text(question))
    out.print(table)
    return ExitCode.PARTIAL if damaged else ExitCode.OK


@trail_app.command("show")
@_friendly
def trail_show(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix), or a trail .jsonl file.")],
    collection: CollectionOpt = Path("."),
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also show every LLM call.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Render a run's trail: plan, searches, verdicts with reasons, guards, re-evaluation, re-plan, final rank."""
    from tracerag.trail import read_trail
    from tracerag.trail.show import render_trail

    events = read_trail(_trail_file(collection, run, load_settings(config)))
    documents = _documents(collection, events, config)
    for renderable in render_trail(events, documents, verbose=verbose):
        out.print(renderable)


@trail_app.command("export")
@_friendly
def trail_export(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix), or a trail .jsonl file.")],
    collection: CollectionOpt = Path("."),
    fmt: Annotated[str, typer.Option("--format", help="csv, ris or csl-json.")] = "csv",
    output: Annotated[Path | None, typer.Option("--out", "-o", help="File to write (default: stdout).")] = None,
    config: ConfigOpt = None,
) -> None:
    """Export the final sources with their reasons and exact evidence spans (RIS and CSL-JSON import into Zotero)."""
    from tracerag.trail import read_trail
    from tracerag.trail.export import export_sources

    events = read_trail(_trail_file(collection, run, load_settings(config)))
    text = export_sources(events, _documents(collection, events, config), fmt)
    if output is None:
        write_stdout(text)
    else:
        output.write_text(text, encoding="utf-8")
        err.print(data_text(f"wrote {output}"))


@trail_app.command("schema")
def trail_schema() -> None:
    """Print the JSON Schema every trail line validates against."""
    from tracerag.trail import event_schema

    sys.stdout.write(json.dumps(event_schema(), indent=2) + "\n")


def _documents(collection: Path, events: list, config: Path | None) -> dict:
    ids = {r.doc_id for e in events if e.kind == "result" for r in e.ranking}
    ids |= {e.doc_id for e in events if e.kind in ("verdict", "reeval")}
    if not (collection / "collection.toml").is_file():
        return {}
    with Collection.open(collection, load_settings(config), mode="read") as col:
        return col.store.get_documents(sorted(ids))


def _trail_file(collection: Path, run: str, settings) -> Path:
    """A run's trail: in the collection's trails/, else where runs on it went while it was read-only here."""
    from tracerag.collection import private_root
    from tracerag.trail import trail_path

    if Path(run).suffix == ".jsonl":  # a file named as such (an absolute path cannot be globbed below)
        return trail_path(collection, run)
    folder = collection / "trails"
    private = private_root(collection, settings)
    mine = folder.is_dir() and any(folder.glob(f"{run}*.jsonl"))
    if mine or not (private / "trails").is_dir():
        return trail_path(collection, run)
    return trail_path(private, run)
