"""`tracerag catalog ingest`, `catalog eval` and `tracerag chat`: the catalog assistant on the command line.

Catalog fields, replies and notes are data: printed as `Text` through `app.data_text`. `catalog ingest` exits 1
when records were skipped, 2 when a first ingest read none. The catalog group (`catalog_app`) is added to the app
in `tracerag.cli.__init__`.
"""

from __future__ import annotations

import dataclasses
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from tracerag.cli.app import (
    BaseUrlOpt,
    ConfigOpt,
    ExitCode,
    app,
    data_text,
    err,
    friendly,
    out,
    progress_bar,
    settings_with_llm,
    step_tracker,
    write_json,
    write_stdout,
)
from tracerag.cli.options import DECLARED, declared
from tracerag.errors import ConfigError, NothingIngestedError
from tracerag.options import TurnOptions

if TYPE_CHECKING:
    from tracerag.catalog.assistant import Turn
    from tracerag.config import Settings
    from tracerag.llm import StructuredLLM

catalog_app = typer.Typer(help="Build catalogs of public services for `tracerag chat`.", no_args_is_help=True)

# What a count of the report means where its name alone does not say it
NOTES = {
    "eligibility_unlinked": "of the {rows} eligibility rows, those without the id of a service read: tied to "
    "no service, so not used",
}
JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")  # what the mapped reader reads as JSON lines
CatalogOpt = Annotated[
    Path, typer.Option("--catalog", metavar="DIR", help="Catalog directory (made by `tracerag catalog ingest`).")
]
# catalog ingest writes the directory the other commands read: its own help says so, not "made by" itself
CatalogOutOpt = Annotated[
    Path,
    typer.Option("--catalog", metavar="DIR", help="Catalog directory to write (read by `chat --catalog`, `serve`)."),
]


@catalog_app.command("ingest")
@friendly
def catalog_ingest(
    source: Annotated[
        Path, typer.Argument(help="An HSDS datapackage folder, a 211 export CSV, or a CSV/JSONL file with --mapping.")
    ],
    catalog: CatalogOutOpt,
    fmt: Annotated[
        str,
        typer.Option("--format", metavar="FORMAT", help="auto (by the source's shape), hsds, 211-export or mapped."),
    ] = "auto",
    mapping: Annotated[
        Path | None,
        typer.Option(help="TOML mapping: which column fills which field, row filters, null markers, aliases."),
    ] = None,
    language: Annotated[
        str | None, typer.Option(help="ISO 639-1 language of the texts (default: the profile's, else en).")
    ] = None,
    help_line: Annotated[
        str | None, typer.Option("--help-line", help="What to call when nothing fits (e.g. 211); never guessed.")
    ] = None,
    name: Annotated[str | None, typer.Option(help="The directory's name as shown to people.")] = None,
    places: Annotated[
        Path | None,
        typer.Option(help="A places file (TOML: names people use → the catalog's places), copied beside the profile."),
    ] = None,
    encoding: Annotated[
        str | None,
        typer.Option(
            help="Encoding of a 211 export or a mapped file (utf-8, cp1252, ...; wins over the mapping's `encoding`); "
            "default: UTF-8, else detected. An HSDS datapackage is UTF-8."
        ),
    ] = None,
    dense: Annotated[bool, typer.Option("--dense/--no-dense", help="Also embed the service texts (slow).")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    config: ConfigOpt = None,
) -> ExitCode:
    """Read a directory's services into a catalog: exact fields in SQLite, free text in the hybrid index, and its
    profile (profile.toml: country, region, postal codes, language; editable). Exit 1 when records were skipped,
    2 (nothing written) when a first ingest read none."""
    from tracerag.catalog.ingest import build_catalog
    from tracerag.config import load_settings

    settings = load_settings(config)
    table = None
    if mapping is not None:
        try:
            table = tomllib.loads(mapping.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{mapping}: cannot read the mapping: {exc}") from None
    if encoding is not None:
        table = _with_encoding(source, table, encoding)
    try:
        report = build_catalog(
            source,
            catalog,
            settings,
            fmt=fmt,
            mapping=table,
            dense=dense,
            language=language,
            help_line=help_line,
            name=name,
            places=places,
        )
    except NothingIngestedError as exc:
        _print_report(exc.report, json_out)  # what was skipped, and why, before the error (exit 2)
        raise
    _print_report(report, json_out)
    return ExitCode.PARTIAL if report.skipped else ExitCode.OK


def _print_report(report: Any, json_out: bool) -> None:
    """The ingest's report, as JSON or a line per count (the skipped and warnings listed, 20 at most)."""
    summary = report.to_dict() if hasattr(report, "to_dict") else dataclasses.asdict(report)
    if json_out:
        write_json(summary, default=str)
        return
    for key, value in summary.items():
        if isinstance(value, list):
            out.print(data_text(f"{key}: {len(value)}"))
            for item in value[:20]:
                out.print(Text.assemble("  ", (data_text(item, "yellow"))))
        elif isinstance(value, dict):
            out.print(data_text(f"{key}: {sum(value.values()) if key == 'filtered' else len(value)}"))
            for item, detail in value.items():  # a kept place_aliases table reads as its pairs
                shown = ", ".join(f"{k} → {v}" for k, v in detail.items()) if isinstance(detail, dict) else detail
                out.print(Text.assemble("  ", data_text(f"{item}: {shown}")))
        else:
            said = f" ({NOTES[key].format(rows=summary.get('eligibility_rows'))})" if value and key in NOTES else ""
            out.print(data_text(f"{key}: {value}{said}"))


def _with_encoding(source: Path, mapping: dict[str, Any] | None, encoding: str) -> dict[str, Any] | None:
    """`--encoding` is the mapping's `encoding` key (which the readers' warnings tell to change): set on the
    mapping, or on an empty one for a 211 export read without a mapping. A file that needs a mapping and has none
    is left to `build_catalog`'s error, which says so."""
    from tracerag.catalog import export211
    from tracerag.ingest.encoding import asked_encoding

    try:
        asked_encoding(encoding)  # a codec Python does not know is refused before anything is read
    except ConfigError as exc:
        raise ConfigError(f"--encoding: {exc}") from None
    what = "an HSDS datapackage folder" if source.is_dir() else "JSON" if source.suffix.lower() in JSON_SUFFIXES else ""
    if what:  # their readers read UTF-8 only, as their standards say: refused, not ignored
        raise ConfigError(
            f"--encoding {encoding}: {source} is {what}, read as UTF-8; --encoding applies to a 211 export or a "
            "CSV file read with --mapping"
        )
    if mapping is None:
        return {"encoding": encoding} if source.is_file() and export211.sniff(source, encoding) else None
    return mapping | {"encoding": encoding}


@app.command()
@friendly
@declared(TurnOptions)
def chat(
    catalog: CatalogOpt,
    once: str | None = DECLARED,
    json_out: Annotated[bool, typer.Option("--json", help="With --once: print the turn as JSON.")] = False,
    variant: Annotated[
        str, typer.Option(help="Structured index used to find candidates: none, location, hours, location+hours.")
    ] = "location+hours",
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Services to recommend.")] = 5,
    llm: Annotated[
        str | None,
        typer.Option("--llm", metavar="MODEL", help="openai:MODEL, local or replay:DIR (default: settings llm.model)."),
    ] = None,
    base_url: BaseUrlOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Ask a public-service directory where to get help; only real catalog services that meet every constraint."""
    from tracerag.catalog.assistant import CatalogAssistant
    from tracerag.llm import load_llm

    if json_out and once is None:
        raise ConfigError("--json prints one turn: use it with --once TEXT")
    if once is not None and not once.strip():
        raise ConfigError("--once needs a request")
    settings = settings_with_llm(config, llm, base_url)
    with CatalogAssistant(catalog, settings, llm=load_llm(settings), variant=variant, k=k) as assistant:
        if once is not None:
            turn = assistant.ask(once)
            if json_out:
                write_json(turn.to_dict() | {"trail": str(assistant.trail_path)})
            else:
                _print_turn(turn)
            return
        out.print("Ask where to get help (empty line or Ctrl-D to quit).")
        while True:
            try:
                text = input("> ").strip()
            except EOFError:
                break
            if not text:
                break
            _print_turn(assistant.ask(text))
        err.print(data_text(f"trail: {assistant.trail_path}"))


def _print_turn(turn: Turn) -> None:
    out.print(data_text(turn.reply, block=True))
    for note in turn.notes:
        err.print(data_text(note, "dim"))
    for removed in turn.removed:
        err.print(data_text(f"removed from the generated reply: {removed}", "yellow"))


@catalog_app.command("eval")
@friendly
def catalog_eval(
    catalog: CatalogOpt,
    out_dir: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="Report folder (results.json, results.md).")
    ] = Path("reports/catalog"),
    queries: Annotated[int, typer.Option(min=1, help="Requests generated from the catalog.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the generator.")] = 0,
    variants: Annotated[str, typer.Option(help="Comma-separated structured-index variants.")] = (
        "none,location,hours,location+hours"
    ),
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Services recommended per request.")] = 5,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Evaluate N evenly spaced requests (all categories).")
    ] = None,
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            metavar="MODEL",
            help="Also run with this model (openai:MODEL, local; default: settings llm.model).",
        ),
    ] = None,
    base_url: BaseUrlOpt = None,
    requests: Annotated[
        Path | None,
        typer.Option(
            "--requests",
            help="People-written conversations (JSON lines, benchmarks/catalog_people/) to run instead of the "
            "generated requests; writes turns.jsonl too.",
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Template requests with gold sets by strict filtering: constraint satisfaction, out-of-catalog rate, recall
    of the gold set in the top k and the clarifying-question rate, per category and structured-index variant.
    With --requests: the people-written conversations of that file instead, scored turn by turn."""
    from tracerag.eval.catalog_bench import check_variants, run_benchmark
    from tracerag.eval.report import read_markdown
    from tracerag.llm import load_llm

    settings = settings_with_llm(config, llm, base_url)
    if requests is not None:
        _people_eval(catalog, requests, settings, out_dir, k, load_llm(settings))
        return
    names = [v.strip() for v in variants.split(",") if v.strip()]
    check_variants(names)
    with progress_bar() as progress:
        run_benchmark(
            catalog,
            settings,
            names,
            out_dir,
            queries=queries,
            seed=seed,
            k=k,
            limit=limit,
            llm=load_llm(settings),
            progress=step_tracker(progress),
        )
    write_stdout(read_markdown(out_dir) + f"\nreports in {out_dir}\n")


def _people_eval(
    catalog: Path, requests: Path, settings: Settings, out_dir: Path, k: int, llm: StructuredLLM | None
) -> None:
    """`catalog eval --requests`: the file's conversations on `catalog` (a file is written for one catalog),
    warnings and throughput on stderr, the tables on stdout."""
    from tracerag.eval.catalog_people import group_by_catalog, load_requests, run_people_eval
    from tracerag.eval.report import read_markdown

    names = list(group_by_catalog(load_requests(requests)))
    if len(names) > 1:
        raise ConfigError(f"{requests}: names catalogs {', '.join(names)}; run one --requests file per catalog")
    started = time.perf_counter()
    with progress_bar() as progress:
        summary = run_people_eval(
            {names[0]: catalog},
            requests,
            settings,
            out_dir,
            k=k,
            llm=llm,
            progress=step_tracker(progress),
            warn=lambda line: err.print(data_text(f"warning: {line}", "yellow")),
        )
    seconds = time.perf_counter() - started
    err.print(
        data_text(
            f"{summary['turns_asked']} turns of {summary['conversations']} conversations in {seconds:.1f} s "
            f"({summary['turns_asked'] / seconds:.1f} turns/s)"
        )
    )
    write_stdout(read_markdown(out_dir) + f"\nreports in {out_dir} (every scored turn in turns.jsonl)\n")
