"""A command's options from its declaration in `tracerag.options`: `@declared(SearchOptions)` gives each parameter
the command names by a field (its own name, or the field's `Cli.param`) the field's flags, help, bounds and
default, as a `typer.Option` (or `typer.Argument`). The command keeps its parameters in its own order, typed as
the command line takes them (mypy reads those); a parameter whose type is not the field's command-line type, or
a field the command lacks, is refused when the module is imported.

A parameter given from the declaration is written `name: type = DECLARED` (one without a default is a required
field or a positional); the others (`-c`, `--config`, `--json`, ...) are the command's own, as before."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar, get_origin

import typer
from annotated_types import Ge, Le
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from tracerag.options import SAME, SearchOptions, cli_of

F = TypeVar("F", bound=Callable[..., Any])

DECLARED: Any = object()  # the default of a parameter given from the declaration: the field's (or its Cli's)


def cli_type(field: FieldInfo) -> Any:
    """The type the command line takes the field in: its `Cli.type`, else the field's, a list as `list[...] | None`."""
    cli = cli_of(field)
    if cli.type is not SAME:
        return cli.type
    annotation: Any = field.annotation
    return annotation | None if get_origin(annotation) is list else annotation


def cli_default(field: FieldInfo) -> Any:
    """The option's default: its `Cli.default`, else the field's (a list's is None: typer's way of saying none);
    `inspect.Parameter.empty` for a required field."""
    cli = cli_of(field)
    if cli.default is not SAME:
        return cli.default
    if field.is_required():
        return inspect.Parameter.empty
    return None if get_origin(field.annotation) is list else field.default


def cli_help(field: FieldInfo) -> str:
    """The option's help: its `Cli.help`, else the field's description (a list's ending "(repeatable).")."""
    cli = cli_of(field)
    if cli.help is not None:
        return cli.help
    text = field.description or ""
    if get_origin(field.annotation) is list:
        return text.removesuffix(".") + " (repeatable)."
    return text


def cli_bounds(field: FieldInfo) -> tuple[Any, Any]:
    """The option's (min, max): the field's numeric bounds, less those its `Cli` leaves to others."""
    cli = cli_of(field)
    low = next((m.ge for m in field.metadata if isinstance(m, Ge)), None) if cli.min else None
    high = next((m.le for m in field.metadata if isinstance(m, Le)), None) if cli.max else None
    return low, high


def cli_flags(name: str, field: FieldInfo) -> tuple[str, ...]:
    return cli_of(field).flags or ("--" + name.replace("_", "-"),)


def parameter_info(name: str, field: FieldInfo) -> Any:
    """The `typer.Option` (or `typer.Argument`) the field is on the command line."""
    cli = cli_of(field)
    if cli.argument:
        return typer.Argument(help=cli_help(field), metavar=cli.metavar)
    low, high = cli_bounds(field)
    return typer.Option(*cli_flags(name, field), metavar=cli.metavar, help=cli_help(field), min=low, max=high)


def option_of(schema: type[BaseModel], name: str) -> Any:
    """The declared field `name` alone, as its `typer.Option`: for a command that takes it without the rest."""
    return parameter_info(name, schema.model_fields[name])


# the IIIF base of a search's page regions, which the exports of its sources take too
IiifBaseOpt = Annotated[str | None, option_of(SearchOptions, "iiif_base")]


def by_parameter(schema: type[BaseModel]) -> dict[str, str]:
    """The command's parameter name → the field it takes."""
    fields = schema.model_fields.items()
    return {cli_of(field).param or name: name for name, field in fields if not cli_of(field).absent}


def declared(schema: type[BaseModel]) -> Callable[[F], F]:
    """The command `func` with the options `schema` declares (see the module's doc)."""

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        hints = typing.get_type_hints(func, include_extras=True)
        fields = by_parameter(schema)
        missing = sorted(set(fields) - set(signature.parameters))
        if missing:
            raise TypeError(f"{func.__name__} lacks the declared options {missing} of {schema.__name__}")
        params = []
        for param in signature.parameters.values():
            hint = hints.get(param.name, param.annotation)
            if param.name not in fields:
                params.append(param.replace(annotation=hint))
                continue
            name = fields[param.name]
            field = schema.model_fields[name]
            if hint != cli_type(field):
                raise TypeError(f"{func.__name__}({param.name}): typed {hint}, declared {cli_type(field)}")
            default = cli_default(field)
            if param.default is not (DECLARED if default is not inspect.Parameter.empty else default):
                raise TypeError(f"{func.__name__}({param.name}): its default is the declaration's (DECLARED)")
            annotated = Annotated[hint, parameter_info(name, field)]  # type: ignore[valid-type]
            params.append(param.replace(annotation=annotated, default=default))
        func.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        func.__annotations__ = {p.name: p.annotation for p in params} | {"return": hints.get("return")}
        return func

    return decorate
