"""`tracerag ask` and `tracerag trail`: the agent and its audit trail on the command line.

Registered on the main app by `cli.py`. Parse, build settings, call the library, print; errors that the user
can act on become one red line and exit code 2 (through `cli._friendly`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from tracerag.cli import CollectionOpt, ConfigOpt, _friendly, app, err, out
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import ConfigError

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
    k: Annotated[int, typer.Option("--k", "-k", help="Number of sources.")] = 10,
    llm: LlmOpt = None,
    base_url: Annotated[str | None, typer.Option(help="Endpoint of an openai: model.")] = None,
    replay_run: Annotated[
        str | None, typer.Option("--replay", help="Re-run a recorded run (id or trail file) from its LLM answers.")
    ] = None,
    record: Annotated[Path | None, typer.Option(help="Also save every model answer in this folder.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Find, judge and rank the sources for a question with the TRACE agent; every step goes to the trail."""
    from tracerag.agent import Agent
    from tracerag.agent.replay import replay
    from tracerag.llm import load_llm
    from tracerag.trail import trail_path

    overrides = {k_: v for k_, v in {"model": llm, "base_url": base_url}.items() if v}
    settings = load_settings(config, **({"llm": overrides} if overrides else {}))
    with Collection.open(collection, settings) as col:
        if replay_run:
            report = replay(col, trail_path(col.path, replay_run))
            _print_result(report.replayed, json_out)
            if report.same:
                err.print(f"[green]replay reproduced the recorded ranking of {replay_run}[/green]")
                return
            for line in report.differences():
                err.print(f"[red]{escape(line)}[/red]")
            raise typer.Exit(1)
        if not question:
            raise ConfigError("a question is required (or --replay RUN)")
        model = load_llm(settings, record_to=record)
        if model is None:
            err.print("[yellow]no language model configured: running the hybrid warm start only[/yellow]")
        else:
            err.print(f"agent with {model.name}:{escape(model.model)}")
        with err.status("the agent is working (each step goes to the trail)…"):
            result = Agent(col, model).run(question, k)
    _print_result(result, json_out)


def _print_result(result, json_out: bool) -> None:
    if json_out:
        payload = {
            "run_id": result.run_id,
            "status": str(result.status),
            "message": result.message,
            "trail": str(result.trail_path) if result.trail_path else None,
            "totals": result.totals,
            "ranking": [r.model_dump(mode="json") for r in result.ranking],
        }
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return
    if result.message:
        out.print(f"[yellow]{escape(result.message)}[/yellow]")
    table = Table("#", "document", "accepted by", "origin", "reason", show_lines=False)
    for r in result.ranking:
        subs = ",".join(str(s + 1) for s in r.accepted_by) or "-"
        flag = " (promoted from hold)" if r.promoted_from_hold else ""
        table.add_row(str(r.rank), escape(r.doc_id), subs, r.origin + flag, escape(r.reasons[0] if r.reasons else ""))
    out.print(table)
    t = result.totals
    out.print(
        f"status {result.status} · {int(t.get('llm_calls', 0))} LLM calls · "
        f"{int(t.get('prompt_tokens', 0) + t.get('completion_tokens', 0))} tokens · ${t.get('cost_usd', 0):.4f} · "
        f"{t.get('wall_s', 0):.1f} s\ntrail: {result.trail_path}  (tracerag trail show {result.run_id} -c ...)"
    )


@trail_app.command("list")
@_friendly
def trail_list(collection: CollectionOpt = Path(".")) -> None:
    """The runs recorded in a collection, newest last."""
    from tracerag.trail import list_trails, read_trail

    table = Table("run", "status", "question")
    for path in list_trails(collection):
        events = read_trail(path)
        result = next((e for e in reversed(events) if e.kind == "result"), None)
        table.add_row(path.stem, str(result.status) if result else "unfinished", escape(events[0].question))
    out.print(table)


@trail_app.command("show")
@_friendly
def trail_show(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix), or a trail .jsonl file.")],
    collection: CollectionOpt = Path("."),
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also show every LLM call.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Render a run's trail: plan, searches, verdicts with reasons, guards, re-evaluation, re-plan, final rank."""
    from tracerag.trail import read_trail, trail_path
    from tracerag.trail.show import render_trail

    events = read_trail(trail_path(collection, run))
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
    from tracerag.trail import read_trail, trail_path
    from tracerag.trail.export import export_sources

    events = read_trail(trail_path(collection, run))
    text = export_sources(events, _documents(collection, events, config), fmt)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
        err.print(f"wrote {output}")


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
    with Collection.open(collection, load_settings(config)) as col:
        return col.store.get_documents(sorted(ids))
