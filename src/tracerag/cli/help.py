"""The help of every command and group, in one place: what to type for each option (`TEXT`, `PATH`, `N`, the
choices), flags without a value, the positionals by name (`QUERY`), and every description reflowed to the
terminal's width (at most 80 columns). Typer's own rich help showed `<bool>` for a flag that takes no value and
`{query}` for a required positional, and kept the docstrings' source line breaks.

`Command` and `Group` are the classes every command and group of `tracerag` is built with (`app.LazyGroup` sets
them); nothing here imports more than typer does, so `--help` stays fast."""

from __future__ import annotations

import enum
import inspect
import re
import shutil
import textwrap
from pathlib import PurePath
from typing import Any, get_args, get_origin

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

MAX_WIDTH = 80  # the CLI's output fits 80 columns, and help reads best no wider on a wide terminal
_LEFT_MAX = 30  # the widest option column before a description moves to the line below
_NARROW = 50  # below this width every description goes on the line below its option

# What to type for a value, by its Python type; an option's own `metavar` says more where it can (`DIR`, `URL`).
_BY_TYPE: dict[type, str] = {str: "TEXT", int: "N", float: "NUMBER"}


def help_width() -> int:
    """The terminal's width (COLUMNS when set, 80 when not a terminal), at most `MAX_WIDTH`."""
    return max(20, min(shutil.get_terminal_size((MAX_WIDTH, 24)).columns, MAX_WIDTH))


def metavar(param: Any) -> str:
    """What to type for `param`: its declared metavar, else one from its type; "" for a flag, which takes none."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    if param.metavar:
        return str(param.metavar)
    if isinstance(param, TyperArgument):
        return (param.name or "value").upper()
    return _type_label(param)


def _type_label(param: Any) -> str:
    desc = getattr(param, "type_descriptor", None)  # typer >= 0.24 keeps the annotation here
    if desc is None:
        return str(getattr(getattr(param, "type", None), "name", "value")).upper()
    choices = desc.choices
    if choices:
        return "|".join(str(c.value if isinstance(c, enum.Enum) else c) for c in choices)
    if desc.is_path:
        return "PATH"
    annotation = desc.annotation
    if get_origin(annotation) in (list, tuple):
        args = [a for a in get_args(annotation) if a is not Ellipsis]
        annotation = args[0] if args else str
    if isinstance(annotation, type) and issubclass(annotation, PurePath):
        return "PATH"
    return _BY_TYPE.get(annotation, "VALUE") if isinstance(annotation, type) else "VALUE"


def usage_piece(param: Any) -> str:
    """A positional in the usage line: `QUERY`, `[RUN]` when optional, `PATH...` when it takes several."""
    name = metavar(param) + ("..." if param.nargs != 1 else "")
    return name if param.required else f"[{name}]"


def reflow(text: str | None) -> str:
    """A docstring's paragraphs, each on one line (its source line breaks undone); a paragraph that opens with
    `\\b` (Click's mark), or whose lines are a list, keeps its lines. Text after a `\\f` line is not help."""
    text = inspect.cleandoc(text or "").partition("\f")[0]
    paragraphs = []
    for para in re.split(r"\n\s*\n", text.strip()):
        lines = para.splitlines()
        if para.startswith("\b") or sum(bool(re.match(r"\s*([-*•]|\d+\.)\s", line)) for line in lines) > 1:
            paragraphs.append(para)
        else:
            paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(p for p in paragraphs if p)


def first_sentence(text: str | None) -> str:
    """A command's line in its group's list: the first sentence of its help."""
    para = reflow(text).split("\n\n")[0]
    match = re.search(r"[.!?](?=\s+[A-Z`(\"'])", para)
    return para[: match.end()] if match else para


def _fill(text: str, width: int, indent: str, first: str | None = None) -> list[str]:
    lines = []
    for para in text.split("\n\n"):
        if para.startswith("\b"):
            lines += [indent + line for line in para.strip("\b\n").splitlines()]
        else:
            lines += textwrap.wrap(
                para,
                width,
                initial_indent=indent if first is None or lines else first,
                subsequent_indent=indent,
                break_long_words=True,
                break_on_hyphens=False,
            ) or [indent]
        lines.append("")
    return lines[:-1]


def _rows(rows: list[tuple[str, str]], width: int) -> list[str]:
    """Two columns, `left` then its text wrapped beside it; on a narrow terminal, or past a long `left`, the text
    goes on the lines below."""
    left = min(max((len(name) for name, _ in rows), default=0), _LEFT_MAX) + 4  # two spaces before, two after
    lines = []
    for name, text in rows:
        beside = width >= _NARROW and len(name) + 4 <= left
        if beside:
            lines += _fill(text, width, " " * left, first=f"  {name}".ljust(left)) if text else [f"  {name}"]
        else:
            lines += textwrap.wrap(f"  {name}", width, subsequent_indent="    ", break_on_hyphens=False)
            indent = " " * (left if width >= _NARROW else 6)  # under its column, or just indented when narrow
            lines += _fill(text, width, indent) if text else []
    return lines


def _extras(param: Any, ctx: Any) -> list[str]:
    """`[default: 10]`, `[at least 1]`, `[0 to 65535]`, `[required]`, `[repeatable]`: Click's notes, in words
    (Click's `x >= 1` reads as code)."""
    extras = []
    if getattr(param, "multiple", False):
        extras.append("repeatable")
    default = param.get_default(ctx, call=False)
    shown = getattr(param, "show_default", None)
    if isinstance(shown, str):
        extras.append(f"default: {shown}")
    elif (shown or ctx.show_default) and default not in (None, False, (), []) and not callable(default):
        value = default.value if isinstance(default, enum.Enum) else default
        extras.append(f"default: {value}")
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if not getattr(param, "count", False) and (low is not None or high is not None):
        extras.append(f"at least {low}" if high is None else f"at most {high}" if low is None else f"{low} to {high}")
    if param.required:
        extras.append("required")
    return extras


def _param_text(param: Any, ctx: Any) -> str:
    text = reflow(getattr(param, "help", None))
    extras = [e for e in _extras(param, ctx) if not (e == "repeatable" and "repeatable" in text)]
    return " ".join([text, *(f"[{e}]" for e in extras)]).strip()


def _option_name(param: Any) -> str:
    label = metavar(param)
    names = ", ".join(sorted(param.opts, key=lambda o: o.startswith("--")))  # `-c, --collection`
    if param.secondary_opts:
        names += " / " + ", ".join(param.secondary_opts)
    return f"{names} {label}" if label else names


def render_help(command: Any, ctx: Any, commands: list[tuple[str, Any]] | None = None) -> str:
    """The whole help of a command (or, with `commands`, a group): usage, description, arguments, options and
    the group's commands, at `help_width()`."""
    width = help_width()
    pieces = " ".join(command.collect_usage_pieces(ctx))
    lines = textwrap.wrap(f"Usage: {ctx.command_path} {pieces}", width, subsequent_indent="  ", break_on_hyphens=False)
    description = reflow(command.help)
    if command.deprecated:
        description = "(deprecated) " + description
    if description:
        lines += ["", *_fill(description, width, "  ")]
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    arguments = [(metavar(p), _param_text(p, ctx)) for p in params if isinstance(p, TyperArgument)]
    options = [(_option_name(p), _param_text(p, ctx)) for p in params if not isinstance(p, TyperArgument)]
    for title, rows in (("Arguments", arguments), ("Options", options)):
        if rows:
            lines += ["", f"{title}:", *_rows(rows, width)]
    if commands:
        listed = [(name, first_sentence(sub.help)) for name, sub in commands if not sub.hidden]
        lines += ["", "Commands:", *_rows(listed, width)]
    return "\n".join(line.rstrip() for line in lines) + "\n"


class _HelpFormat:
    """What `Command` and `Group` share: their usage line and their help."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces: list[str] = super().collect_usage_pieces(ctx)  # type: ignore[misc]
        # typer writes a required positional `{query}`: replace its pieces with `QUERY`
        arguments = [p for p in self.get_params(ctx) if isinstance(p, TyperArgument)]  # type: ignore[attr-defined]
        own = {piece for p in arguments for piece in p.get_usage_pieces(ctx)}
        return [piece for piece in pieces if piece not in own] + [usage_piece(p) for p in arguments]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        formatter.write(render_help(self, ctx, self._listed(ctx)))

    def _listed(self, ctx: Any) -> list[tuple[str, Any]] | None:
        return None


class Command(_HelpFormat, TyperCommand):
    """A `tracerag` command: its help as `render_help` writes it; its positionals named `QUERY` in errors too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperArgument) and not param.metavar:
                param.metavar = metavar(param)  # "Missing argument 'QUERY'"
            elif isinstance(param, TyperOption) and not param.metavar and metavar(param):
                param.metavar = metavar(param)


class Group(_HelpFormat, TyperGroup):
    """A `tracerag` group (and the top level): its help lists each command with the first sentence of its own."""

    def _listed(self, ctx: Any) -> list[tuple[str, Any]] | None:
        found = [(name, self.get_command(ctx, name)) for name in self.list_commands(ctx)]
        return [(name, command) for name, command in found if command is not None]
