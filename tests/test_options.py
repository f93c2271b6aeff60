"""The options of `search`, `ask`, `chat` and `judge` are declared once (`tracerag.options`): the command built
by typer and the request body in the served OpenAPI schema both show each declared field with the same name, type,
default, bounds and description, except where the field's `Cli` declares a difference; and each command's `--help`
prints the descriptions the OpenAPI schema gives. Read from what a user sees: the built command, its help text and
the app's OpenAPI document, not from the declaration's own helpers alone."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, get_args, get_origin

import pytest
import typer.main
from typer.testing import CliRunner

from tracerag.catalog.assistant import CatalogAssistant
from tracerag.cli import app
from tracerag.cli.options import by_parameter, cli_bounds, cli_default, cli_flags, cli_help
from tracerag.config import Settings
from tracerag.options import MODELS, SAME, cli_of
from tracerag.server import ServerConfig, create_app
from tracerag.server.api.ask import AskRequest
from tracerag.server.api.catalog import TurnRequest
from tracerag.server.api.research import JudgeIn
from tracerag.server.api.search import SearchBody

# each command's request body and route
API = {
    "search": (SearchBody, "/api/collections/{name}/search"),
    "ask": (AskRequest, "/api/collections/{name}/ask"),
    "chat": (TurnRequest, "/api/catalog/conversations/{conversation_id}/turns"),
    "judge": (JudgeIn, "/api/collections/{name}/judge"),
}
# the options only the command line has (a new one is a decision: the command line's alone, or a request field?)
OWN = {
    "search": {"collection", "llm", "base_url", "json_out", "config"},
    "ask": {"collection", "llm", "base_url", "replay_run", "record", "trail_dir", "json_out", "config"},
    "chat": {"catalog", "json_out", "variant", "k", "llm", "base_url", "config"},
    "judge": {"collection", "llm", "base_url", "compare", "trail_dir", "json_out", "config"},
}
# what a request cannot choose, it gets as the command line's default: a conversation's assistant is opened with its
# own defaults (server/api/catalog.py), which are `chat`'s
FIXED = {"chat": {"variant": CatalogAssistant, "k": CatalogAssistant}}
JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "string", dict: "object"}


def _json_type(kind: Any) -> str:
    """A Python type's JSON type (`X | None` as X's)."""
    args = [a for a in get_args(kind) if a is not type(None)]
    if args and get_origin(kind) is not list and get_origin(kind) is not dict:
        return _json_type(args[0])
    if get_origin(kind) is list:
        return "array"
    return JSON_TYPES[get_origin(kind) or kind]


def _value(prop: dict[str, Any]) -> dict[str, Any]:
    """A property's schema for a value (of `X | None`, X's)."""
    return next(p for p in prop.get("anyOf", [prop]) if p.get("type") != "null")


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    return create_app(ServerConfig(collections=(), settings=Settings())).openapi()


@pytest.mark.parametrize("command", sorted(MODELS))
def test_the_command_and_the_request_show_the_same_options(command: str, openapi: dict[str, Any]) -> None:
    schema = MODELS[command]
    body, path = API[command]
    # the route takes the body, and the body is the declaration (plus its validators)
    assert issubclass(body, schema) and set(body.model_fields) == set(schema.model_fields)
    ref = openapi["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert ref == f"#/components/schemas/{body.__name__}"
    component = openapi["components"]["schemas"][body.__name__]
    api = component["properties"]
    assert list(api) == list(schema.model_fields)
    assert set(component.get("required", [])) == {n for n, f in schema.model_fields.items() if f.is_required()}

    group = typer.main.get_command(app)
    built = group.get_command(group.make_context("tracerag", [command], resilient_parsing=True), command)
    cli = {p.name: p for p in built.params}
    params = by_parameter(schema)
    assert set(cli) - set(params) == OWN[command]
    shown = _words(CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"}).output)

    for param, name in params.items():
        field = schema.model_fields[name]
        option, prop, declared = cli[param], api[name], cli_of(field)
        # the API shows the field as declared
        assert prop.get("description") == field.description, name
        low = next((m.ge for m in field.metadata if hasattr(m, "ge")), None)
        high = next((m.le for m in field.metadata if hasattr(m, "le")), None)
        assert (_value(prop).get("minimum"), _value(prop).get("maximum")) == (low, high), name
        assert prop.get("default", field.default) == field.default, name  # shown where pydantic shows one
        # the command line shows it as declared: flags, help, default, bounds
        assert option.opts == ([param] if declared.argument else list(cli_flags(name, field))), name
        assert option.help == cli_help(field), name
        assert option.required == (cli_default(field) is inspect.Parameter.empty), name
        if not option.required:
            assert option.default == cli_default(field), name
        assert (getattr(option, "min", None), getattr(option, "max", None)) == cli_bounds(field), name
        # ... and the same as the API, unless declared otherwise
        cli_type = option.type_descriptor.annotation
        if declared.type is SAME:
            assert _json_type(list[cli_type] if option.multiple else cli_type) == _value(prop)["type"], name
        if declared.default is SAME and not field.is_required():
            assert option.default == (None if option.multiple else field.default), name
        if declared.min:
            assert getattr(option, "min", None) == low, name
        if declared.max:
            assert getattr(option, "max", None) == high, name
        if declared.help is None:
            ending = " (repeatable)." if option.multiple else "."
            assert option.help == field.description.removesuffix(".") + ending, name  # type: ignore[union-attr]
        # --help prints what the OpenAPI schema says (and a declared help, where the command line says otherwise)
        assert _words(declared.help or prop["description"].removesuffix(".")) in shown, name

    for param, where in FIXED.get(command, {}).items():
        assert inspect.signature(where).parameters[param].default == cli[param].default, param
