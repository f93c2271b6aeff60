"""The app module of `tracerag`: the Typer app, the two consoles, the options shared by several commands, the one
error edge (`friendly`: outcomes become exit codes, `ExitCode`) and the safe-output helpers. The command modules
import this module and never each other; this module names none of them: `tracerag.cli.__init__` tells `LazyGroup`
which module holds each command, and it imports that module when the command runs.

Everything printed that comes from a document, a file, a model or a catalog is data: it reaches the terminal as
a `rich.text.Text` made with `tracerag.text.safe_line`/`safe_block` (controls shown as escapes), never inside a
markup string, and the consoles parse no emoji codes and highlight nothing.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from difflib import get_close_matches
from enum import IntEnum
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, ParamSpec

import typer
from rich.console import Console
from rich.text import Text
from typer.core import TyperCommand
from typer.models import CommandInfo, TyperInfo

from tracerag import __version__
from tracerag.cli.help import Command, Group
from tracerag.errors import CollectionBusyError, ConfigError, TraceError, disk_full
from tracerag.text import json_dumps, safe_block, safe_line

# The settings model (pydantic-settings) and the progress bars load when a command uses them: `tracerag --help`
# and every command's `--help` import only the CLI's own modules, typer and rich (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from rich.progress import Progress
    from rich.table import Table

    from tracerag.config import Settings


class LazyGroup(Group):
    """The top-level group: a command's module is imported, and the command built, only when that command runs or
    shows its help. `tracerag --help` lists every command from what its module registers on `app` (its help text,
    the docstring, stays the one definition), without building its options; nothing else is imported for it."""

    modules: ClassVar[dict[str, str]] = {}  # command or group -> "module" or "module:sub_app" of tracerag.cli
    _listing = False

    # `ctx` and `formatter` are typer's Context and HelpFormatter: Click's in older typer, typer's own copy in newer.
    def list_commands(self, ctx: Any) -> list[str]:
        return [*self.modules, *(name for name in self.commands if name not in self.modules)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands or cmd_name not in self.modules:
            return super().get_command(ctx, cmd_name)
        found = _registered(cmd_name, self.modules[cmd_name])
        if self._listing:  # its name and help text, which is all a list shows
            return _outline(cmd_name, found)
        wrapper = typer.Typer(add_completion=False, rich_markup_mode=app.rich_markup_mode)
        if isinstance(found, CommandInfo):
            wrapper.registered_commands.append(found)
            command = typer.main.get_command(wrapper)  # one command: built as itself
        else:
            wrapper.registered_groups.append(found)
            command = typer.main.get_group(wrapper).commands[cmd_name]
        self.commands[cmd_name] = command
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # typer suggests from the commands built so far, which here are none: suggest from every name instead
        typo = args[0] if args else ""
        if typo and not typo.startswith("-") and self.get_command(ctx, typo) is None and not ctx.resilient_parsing:
            close = get_close_matches(typo, self.list_commands(ctx))
            if close and self.suggest_commands:
                ctx.fail(f"No such command {typo!r}. Did you mean {', '.join(repr(name) for name in close)}?")
        return super().resolve_command(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def register_lazily(modules: dict[str, str]) -> None:
    """Name the module of every command and group (`tracerag.cli.__init__`), in the order the help lists them."""
    LazyGroup.modules = dict(modules)


def _registered(name: str, where: str) -> CommandInfo | TyperInfo:
    """The command or group `name` as its module registers it on `app` (importing the module, once)."""
    module, _, sub_app = where.partition(":")
    loaded = importlib.import_module(f"tracerag.cli.{module}")
    if sub_app:  # a group: it and its commands built with the help of `cli/help.py`
        group = getattr(loaded, sub_app)
        for info in group.registered_commands:
            _with_help(info)
        return TyperInfo(group, name=name, cls=Group)
    for info in app.registered_commands:
        if info.callback is not None and (info.name or info.callback.__name__.replace("_", "-")) == name:
            return _with_help(info)
    raise LookupError(f"tracerag.cli.{module} registers no command {name!r}")


def _with_help(info: CommandInfo) -> CommandInfo:
    """A command built as `cli/help.Command` (typer's default class otherwise): its help says what to type."""
    if info.cls is None or info.cls is TyperCommand:
        info.cls = Command
    return info


def _outline(name: str, found: CommandInfo | TyperInfo) -> Command | Group:
    """A command or group with the name and help text `typer` would give it, and no options (a list's row)."""
    if isinstance(found, CommandInfo):
        assert found.callback is not None
        helped = inspect.getdoc(found.callback) if found.help is None else inspect.cleandoc(found.help)
        return Command(
            name=name,
            help=helped,
            short_help=found.short_help,
            hidden=found.hidden,
            deprecated=found.deprecated,
            rich_help_panel=found.rich_help_panel,
        )
    info = found.typer_instance.info if found.typer_instance else found
    return Group(name=name, help=info.help, hidden=info.hidden, deprecated=info.deprecated)


class _Typer(typer.Typer):
    """The app: its commands built as `cli/help.Command` (typer's `TyperCommand` otherwise), whether `LazyGroup`
    builds one or typer does (a command whose module was imported before the group was made)."""

    def command(self, *args: Any, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Any:
        return super().command(*args, cls=cls or Command, **kwargs)


app = _Typer(
    cls=LazyGroup,
    help="TRACE: accountable source discovery over noisy historical collections.",
    no_args_is_help=True,
)


class _Console(Console):
    """A console that leaves a closed pipe to `friendly`: Rich's own handler exits 1, which means partial here."""

    def on_broken_pipe(self) -> None:
        self.quiet = True  # print nothing more
        raise BrokenPipeError


# No emoji codes (":smile:" stays text) and no highlighting of numbers or paths in data. Markup stays on for the
# styles written in this code; data never goes into a markup string (see `data_text`).
out = _Console(emoji=False, highlight=False)
err = _Console(stderr=True, emoji=False, highlight=False)

CollectionOpt = Annotated[Path, typer.Option("--collection", "-c", metavar="DIR", help="Collection directory.")]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", metavar="FILE", help="Settings TOML file (or TRACERAG_CONFIG).")
]
WaitOpt = Annotated[
    bool,
    typer.Option("--wait", help="When another process is writing the collection, wait for it (else exit 3 at once)."),
]
BaseUrlOpt = Annotated[str | None, typer.Option(metavar="URL", help="Endpoint of an openai: model.")]
# where a collection's index lives: embedded, or a Qdrant server (settings engine.*)
EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        metavar="tantivy|qdrant",
        help="Where a new collection's index lives: tantivy (embedded) or qdrant (a server).",
    ),
]
UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url", metavar="URL", help="The Qdrant server (REST, e.g. http://qdrant:6333); implies --engine qdrant."
    ),
]
ApiKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key", metavar="KEY", help="The Qdrant server's key (never written; QDRANT_API_KEY keeps it out of `ps`)."
    ),
]
QdrantCollectionOpt = Annotated[
    str | None,
    typer.Option(
        "--qdrant-collection", metavar="NAME", help="Server collection to make (default: tracerag_<folder>_<id>)."
    ),
]
ExportFormatOpt = Annotated[str, typer.Option("--format", metavar="csv|ris|csl-json", help="What to write.")]
ExportOutOpt = Annotated[
    Path | None, typer.Option("--out", "-o", metavar="FILE", help="File to write (default: stdout).")
]
# where `tracerag serve` (and `demo --serve`) listens; the defaults are the settings' server.host / server.port
HostOpt = Annotated[
    str | None,
    typer.Option(
        "--host", metavar="ADDRESS", help="Address to listen on (default 127.0.0.1; any other needs a token)."
    ),
]
PortOpt = Annotated[int | None, typer.Option("--port", min=0, max=65535, help="Port (default 8765; 0: any free).")]
TokenOpt = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="TRACERAG_TOKEN",
        help="Token asked of every client (or TRACERAG_TOKEN; generated beyond loopback).",
    ),
]


class ExitCode(IntEnum):
    """What a script can rely on (docs/reference/commands.md, "Exit codes"). A command returns PARTIAL;
    `friendly` maps the rest."""

    OK = 0
    PARTIAL = 1  # it ran, but not everything: records skipped, runs failed or truncated, a replay that differs
    USAGE = 2  # bad usage or bad input: every TraceError (Typer's own usage errors are 2 as well)
    BUSY = 3  # another process holds the collection (CollectionBusyError): retry, or pass --wait
    NO_SPACE = 4  # a disk it writes to is full (DiskFullError, or any error from below that says so): free space
    INTERRUPTED = 130  # Ctrl-C, as shells report SIGINT (Click would say 1, which means partial here)


P = ParamSpec("P")


def friendly(fn: Callable[P, ExitCode | None]) -> Callable[P, None]:
    """The one place where outcomes become exit codes: a command's returned `ExitCode`, `CollectionBusyError`
    (3), a full disk (4: `DiskFullError`, or an error from any library below that says the disk is full), any
    other `TraceError` (2, one red line), a reader that closed the pipe (0, quietly). Bugs still show their
    traceback."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        outcome = None
        try:
            outcome = fn(*args, **kwargs)
            sys.stdout.flush()  # what is still buffered meets a closed pipe here, not after the exit code is set
        except BrokenPipeError:
            _quiet_stdout()
            raise typer.Exit(int(outcome or ExitCode.OK)) from None  # the command's own outcome, if it got one
        except CollectionBusyError as exc:
            _print_error(exc)
            raise typer.Exit(ExitCode.BUSY) from None
        except TraceError as exc:
            full = disk_full(exc)  # a DiskFullError, or an error of ours raised from a full disk
            _print_error(full or exc)
            raise typer.Exit(ExitCode.NO_SPACE if full else ExitCode.USAGE) from None
        except KeyboardInterrupt:
            err.print("[red]interrupted[/red]")
            raise typer.Exit(ExitCode.INTERRUPTED) from None
        except Exception as exc:  # a full disk met where no folder was known to name it (else a bug: re-raised)
            full = disk_full(exc)
            if full is None:
                raise
            _print_error(full)
            raise typer.Exit(ExitCode.NO_SPACE) from None
        if outcome:
            raise typer.Exit(int(outcome))

    return wrapper


def _quiet_stdout() -> None:
    """After `tracerag search … | head -3`: the reader took what it wanted and closed the pipe, which is no
    failure (Click would exit 1). Point stdout at devnull so that the flush at exit does not fail again (Python's
    docs, signal module, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # a stdout without a file descriptor (a test runner's buffer): nothing to flush
        pass


def _print_error(exc: TraceError) -> None:
    # An error message may quote a file name or a field value: it is data.
    err.print(Text.assemble(("error:", "red"), " ", safe_block(str(exc))))


def settings_with_llm(config: Path | None, llm: str | None, base_url: str | None, **sections: Any) -> Settings:
    """The settings of a command that can use a model: the file and environment, with `--llm` / `--base-url` only
    when given, so that a model named in the settings (`llm.model`, TRACERAG_LLM__MODEL) is used without them."""
    from tracerag.config import load_settings

    overrides = {key: value for key, value in {"model": llm, "base_url": base_url}.items() if value}
    return load_settings(config, **sections, **({"llm": overrides} if overrides else {}))


def data_text(value: object, style: str = "", *, block: bool = False) -> Text:
    """Untrusted text as a literal, styled `Text` for a console: one line (a cell, a title) or, with `block`, a
    paragraph. The only way data is printed by the CLI modules."""
    return Text(safe_block(value) if block else safe_line(value), style=style)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 document`, `2 documents`: a count with its noun, singular where the count is 1 (English, as the CLI's
    own words are)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


_NARROWEST_COLUMN = 8  # a table with a column narrower than this (and than its content) prints one block per row


def print_table(table: Table, console: Console | None = None) -> None:
    """A table that keeps every column at any width, where Rich would drop the columns past the terminal's edge:
    cells wrap and a word longer than its column folds rather than being cut; a table that does not fit as made
    loses its outer border first, then the widths its columns asked for (`min_width`: a name kept on one line
    folds instead); one whose columns would still not fit, or be too narrow to read, prints each row as a block
    of `header: value` lines."""
    from rich import box
    from rich.measure import Measurement
    from rich.segment import Segment
    from rich.table import Table

    console = console or out

    def fits() -> bool:
        """Rendered uncropped no wider than the console (a table whose columns cannot shrink enough is wider), and
        no column narrower than its content or `_NARROWEST_COLUMN`, whichever is less (Rich's private sizing)."""
        lines = Segment.split_lines(console.render(table, console.options))
        if max((Segment.get_line_length(line) for line in lines), default=0) > console.width:
            return False
        options = console.options.update_width(console.width - table._extra_width)
        widths = table._calculate_column_widths(console, options)
        for i, (column, width) in enumerate(zip(table.columns, widths, strict=True)):
            content = max(Measurement.get(console, options, cell).maximum for cell in [column.header, *column.cells])
            if width - table._get_padding_width(i) < min(content, _NARROWEST_COLUMN):
                return False
        return True

    for column in table.columns:  # a column that asked for its width keeps it while the others wrap (Rich would
        column.overflow = "fold"  # narrow the widest column first, whatever it asked for)
        column.no_wrap = column.min_width is not None
    made = (table.box, table.show_edge, table.pad_edge)
    if not fits():
        table.box, table.show_edge, table.pad_edge = box.SIMPLE_HEAD, False, False
    if not fits():
        table.box, table.show_edge, table.pad_edge = made
        for column in table.columns:
            column.min_width, column.no_wrap = None, False
    if fits():
        console.print(table)
        return
    if table.title:
        console.print(table.title, style="bold")
    for i in range(table.row_count):
        block = Table.grid(padding=(0, 1))
        block.add_column(style="bold", overflow="fold", max_width=max(8, console.width // 3))
        block.add_column(overflow="fold")
        for column in table.columns:
            header = column.header if isinstance(column.header, (str, Text)) else ""
            block.add_row(Text.assemble(header, ":"), list(column.cells)[i])
        console.print(block)
        if i < table.row_count - 1:
            console.print()


def write_stdout(text: str) -> None:
    """Raw output (CSV, RIS, a Markdown report) to stdout, exact when it goes to a file or a pipe; on a terminal
    with its controls shown as escapes, since it is printed, not stored."""
    sys.stdout.write(safe_block(text) if sys.stdout.isatty() else text)


def write_export(text: str, output: Path | None) -> None:
    """An export (CSV, RIS, CSL-JSON) to the file `output`, or to stdout when None. Exact in a file or a pipe (what
    a spreadsheet or a reference manager imports); on a terminal, stdout or a device `--out` names (`/dev/tty`),
    with control characters shown as escapes, as every other command prints data (`write_stdout`)."""
    if output is None:
        write_stdout(text)
        return
    with output.open("w", encoding="utf-8") as fh:
        fh.write(safe_block(text) if fh.isatty() else text)


def write_json(value: object, **options: Any) -> None:
    """One JSON document on stdout: strings decode to the exact text, and nothing in it acts on a terminal."""
    sys.stdout.write(json_dumps(value, indent=2, **options) + "\n")


def progress_bar(console: Console = err) -> Progress:
    """The progress display of long work: what, how far, a free `extra` field (throughput), time elapsed."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),  # descriptions name benchmarks and folders: data
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[extra]}", markup=False),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def step_tracker(progress: Progress) -> Callable[[str, int], Callable[[], None]]:
    """A library's `progress(label, total)` hook: one bar per label, advanced once per step."""

    def tracker(label: str, total: int) -> Callable[[], None]:
        task = progress.add_task(label, total=total, extra="")
        return lambda: progress.advance(task)

    return tracker


def count_tracker(progress: Progress) -> Callable[[str, int], Callable[[int], None]]:
    """A library's `progress(label, total)` hook that returns a callback told how many are done so far."""

    def tracker(label: str, total: int) -> Callable[[int], None]:
        task = progress.add_task(label, total=total, extra="")
        return lambda done: progress.update(task, completed=done)

    return tracker


@app.callback(invoke_without_command=True)
def main(version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False) -> None:
    if version:
        out.print(f"tracerag {__version__}")
        raise typer.Exit()


def checked_sources(collection: list[Path] | None, catalog: Path | None) -> None:
    """Something to serve, each a collection or catalog (a ConfigError naming the option that is not)."""
    from tracerag.collection import Collection

    if not collection and catalog is None:
        raise ConfigError("nothing to serve: give a collection (-c DIR, repeatable) or a catalog (--catalog DIR)")
    for path in collection or []:
        if not Collection.exists(path):
            raise ConfigError(f"-c {path}: not a TRACE collection (no collection.toml); see `tracerag ingest`")
    if catalog is not None:
        from tracerag.catalog.store import check_catalog_dir

        try:
            check_catalog_dir(catalog)
        except ConfigError as exc:
            raise ConfigError(f"--catalog {exc}") from None
