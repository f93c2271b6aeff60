"""Help that says what to type (`cli/help.py`): for every command and group, `--help` fits the terminal (80
columns, and 40), names what each option takes (`TEXT`, `PATH`, `N`, `DIR`, the choices) and the positionals
(`QUERY`), shows a flag without a value, and every flag it shows so works without one."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.cli.app import LazyGroup
from tracerag.cli.help import metavar, reflow

runner = CliRunner()


def _commands() -> dict[tuple[str, ...], Any]:
    """Every command and group of `tracerag`, by its path (the top level is `()`), built as `tracerag` builds it."""
    root = typer.main.get_command(app)
    ctx = typer.Context(root, info_name="tracerag")
    found: dict[tuple[str, ...], Any] = {(): root}
    for name in LazyGroup.modules:
        command = root.get_command(ctx, name)
        found[(name,)] = command
        for sub, subcommand in getattr(command, "commands", {}).items():
            found[(name, sub)] = subcommand
    return found


COMMANDS = _commands()
PATHS = sorted(COMMANDS)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "tracerag")
@pytest.mark.parametrize("columns", [80, 40])
def test_help_fits_and_says_what_to_type(path: tuple[str, ...], columns: int) -> None:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= columns, result.output
    for typer_label in ("<bool>", "<str>", "<path>", "<int", "<float", "<list", "<text>"):
        assert typer_label not in result.output, (typer_label, result.output)
    assert not re.search(r"\bx [<>]=|<= x\b", result.output), result.output  # a range in words ("0 to 65535")
    usage = result.output.split("\n\n")[0]
    assert usage.startswith("Usage: ") and "{" not in usage, usage
    command = COMMANDS[path]
    for param in command.params:
        if isinstance(param, typer.core.TyperArgument):
            assert metavar(param) in usage and metavar(param).isupper(), (metavar(param), usage)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "tracerag")
def test_every_flag_is_shown_and_taken_without_a_value(path: tuple[str, ...]) -> None:
    command = COMMANDS[path]
    text = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}).output
    flags = [p for p in command.params if getattr(p, "is_flag", False) and not p.secondary_opts]
    for param in flags:
        long = max(param.opts, key=len)
        if long == "--help":
            continue
        # in the list, the flag is followed by its description (or nothing), never by a metavar
        assert re.search(rf"^  (-\w, )?{re.escape(long)}( {{2,}}|$)", text, re.M), (long, text)
        if long in ("--install-completion", "--show-completion"):
            continue  # they act while parsing (they print and exit)
        ctx = command.make_context(" ".join(("tracerag", *path)), [long], resilient_parsing=True)
        assert ctx.params[param.name] is True, (path, long)


def test_options_name_what_they_take() -> None:
    """A sample of what the help says to type: the shared options' own names, the types' defaults, choices."""
    text = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "80"}).output
    for shown in ("-c, --collection DIR", "-k, --k N", "--from DATE", "--min-ocr NUMBER", "--synonyms FILE", "QUERY"):
        assert shown in text, (shown, text)
    assert "--channels CHANNELS" in text and "(bm25,dense,date,phrase,entity)" in text  # whole, never cut
    fuse = runner.invoke(app, ["fuse", "--help"], env={"COLUMNS": "80"}).output
    assert "--method rrf|wrrf|combsum|combmnz" in fuse and "RUNS..." in fuse
    flag = runner.invoke(app, ["search", "x", "-c", ".", "--json", "true"])
    assert flag.exit_code == 2  # a flag takes no value: "true" is a second QUERY, refused as such


def test_descriptions_are_reflowed_but_lists_keep_their_lines() -> None:
    assert reflow("One line\n    goes on here.\n\nSecond\nparagraph.") == "One line goes on here.\n\nSecond paragraph."
    listed = "Keys:\n- a accept\n- r reject"
    assert reflow(listed) == listed
    assert reflow("Shown.\n\f\nNot help.") == "Shown."


def test_a_command_whose_module_was_imported_first_has_the_same_help() -> None:
    """typer builds at once the commands already registered when the app is made (a test, or a library user,
    that imported `tracerag.cli.demo` first): they too are built with this help. In a fresh interpreter, since
    this one has built every command already."""
    code = (
        "import tracerag.cli.demo\n"
        "from typer.testing import CliRunner\n"
        "from tracerag.cli import app\n"
        "print(CliRunner().invoke(app, ['demo', '--help']).output)"
    )
    env = {**os.environ, "COLUMNS": "80"}
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert "<bool>" not in shown and re.search(r"^  --download {2,}Fetch", shown, re.M), shown
