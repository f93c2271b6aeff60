"""The docs site's generated pages (an mkdocs hook, `mkdocs.yml`): the CLI reference from the Typer app, the HTTP
API reference from the FastAPI app's OpenAPI schema, the settings from the `Settings` model, the MCP tools and
resources from `tracerag.mcp` (the JSON schemas a client is shown), and the benchmark results from `benchmarks/`.
Each is rendered at build time from the one definition in the code, so the site cannot drift from it; nothing is
fetched (no CDN, no network). A written page asks for a generated part with a marker line such as
`<!-- generated: cli -->`; tests/test_docs.py calls the same functions.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.M)
HELP_COLUMNS = "80"  # the CLI's help as an 80-column terminal shows it


# ---- the CLI: every command's --help, as `tracerag CMD --help` prints it (cli/help.py's formatter) ----


def cli_commands() -> list[tuple[str, str]]:
    """(`tracerag CMD ...`, its help text) for the app and every command and group under it, in help order."""
    import typer

    from tracerag.cli import app

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        root = typer.main.get_command(app)
        return list(_walk(root, "tracerag", None))
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


def _walk(command: Any, path: str, parent: Any) -> Iterator[tuple[str, str]]:
    # typer's own Context in newer typer (Click's in older): the command's class names it
    ctx = command.context_class(command, info_name=path.rsplit(" ", 1)[-1], parent=parent, max_content_width=80)
    yield path, command.get_help(ctx)
    if hasattr(command, "list_commands"):  # a group
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _walk(sub, f"{path} {name}", ctx)


def render_cli() -> str:
    parts = []
    for path, text in cli_commands():
        level = "##" if path.count(" ") <= 1 else "###"
        parts.append(f"{level} `{path}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(parts)


# ---- the HTTP API: the OpenAPI schema of the app `tracerag serve` runs ----


def openapi_schema() -> dict[str, Any]:
    """The schema of an app serving nothing: the routes and models do not depend on what is served."""
    from tracerag.config import Settings
    from tracerag.server.app import create_app
    from tracerag.server.state import ServerConfig

    schema: dict[str, Any] = create_app(ServerConfig(collections=(), settings=Settings())).openapi()
    return schema


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _type(schema: dict[str, Any], prefix: str = "schema-") -> str:
    """A short name for a JSON Schema: `Model`, `string`, `array of integer`, `string or null`; a model links to
    its anchor on the page (`prefix` + its name)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[`{name}`](#{_anchor(name, prefix)})"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " or ".join(_type(s, prefix) for s in schema[key])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}), prefix)}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type(schema['additionalProperties'], prefix)}"
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    return str(kind)


def _anchor(name: str, prefix: str = "schema-") -> str:
    return prefix + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def render_api(schema: dict[str, Any] | None = None) -> str:
    schema = schema or openapi_schema()
    out = [f"Schema version: OpenAPI {schema['openapi']}, {schema['info']['title']} {schema['info']['version']}.\n"]
    out.append("## Operations\n")
    for path, methods in schema["paths"].items():
        for method, op in methods.items():
            out.append(f"### `{method.upper()} {path}`\n")
            if op.get("summary"):
                out.append(f"**{_cell(op['summary'])}**\n")
            if op.get("description"):
                out.append(op["description"].strip() + "\n")
            params = op.get("parameters", [])
            if params:
                out.append("| parameter | in | type | required | description |\n|---|---|---|---|---|")
                for p in params:
                    out.append(
                        f"| `{p['name']}` | {p['in']} | {_type(p.get('schema', {}))} | "
                        f"{'yes' if p.get('required') else 'no'} | {_cell(p.get('description', ''))} |"
                    )
                out.append("")
            body = op.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                out.append(f"Request body ({media}): {_type(content.get('schema', {}))}\n")
            responses = op.get("responses", {})
            if responses:
                out.append("| status | meaning | body |\n|---|---|---|")
                errors: dict[str, list[str]] = {}  # body -> statuses: the error answers share one body
                for status, answer in responses.items():
                    kinds = answer.get("content", {})
                    shown = ", ".join(f"{_type(c.get('schema', {}))} ({m})" for m, c in kinds.items())
                    if status.startswith(("4", "5")):
                        errors.setdefault(shown, []).append(status)
                    else:
                        out.append(f"| {status} | {_cell(answer.get('description', ''))} | {shown} |")
                for shown, statuses in errors.items():
                    out.append(f"| {', '.join(statuses)} | an error | {shown} |")
                out.append("")
    out.append("## Schemas\n")
    for name, model in sorted(schema.get("components", {}).get("schemas", {}).items()):
        out.append(f"### `{name}` {{ #{_anchor(name)} }}\n")
        if model.get("description"):
            out.append(_cell(model["description"]) + "\n")
        props = model.get("properties", {})
        if props:
            required = set(model.get("required", []))
            out.append("| field | type | required | default | description |\n|---|---|---|---|---|")
            for field, spec in props.items():
                default = f"`{json.dumps(spec['default'])}`" if "default" in spec else ""
                out.append(
                    f"| `{field}` | {_type(spec)} | {'yes' if field in required else 'no'} | {default} | "
                    f"{_cell(spec.get('description', ''))} |"
                )
            out.append("")
        elif "enum" in model:
            out.append(f"One of {_type(model)}.\n")
    return "\n".join(out)


# ---- the settings: every field of `Settings`, by section ----


def setting_names(model: Any = None, prefix: str = "") -> list[str]:
    """Every setting as written in a TOML file: `retrieval.rrf_k`, `cache_dir`."""
    return [name for name, _ in _settings(model, prefix)]


def _settings(model: Any = None, prefix: str = "") -> Iterator[tuple[str, Any]]:
    from pydantic import BaseModel

    from tracerag.config import Settings

    for name, field in (model or Settings).model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield from _settings(kind, f"{prefix}{name}.")
        else:
            yield prefix + name, field


def _annotation(kind: Any) -> str:
    """A type as a reader says it: `int`, `Path` or none, one of `a`, `b` (no `|`, which a table cell would split)."""
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(f"`{v}`" for v in get_args(kind))
    if get_origin(kind) in (Union, UnionType):
        named = [_annotation(a) for a in get_args(kind) if a is not type(None)]
        return " or ".join(named) + (" or none" if type(None) in get_args(kind) else "")
    text = getattr(kind, "__name__", None) if get_origin(kind) is None else None
    text = text or str(kind).replace("typing.", "")
    text = re.sub(r"\b(?:[a-z_]+\.)+([A-Za-z_]+)", r"\1", text)  # pathlib.Path -> Path
    return f"`{text}`".replace("|", "or")


def _default(field: Any) -> str:
    from pydantic_core import PydanticUndefined

    value = field.default
    if value is PydanticUndefined and field.default_factory is not None:
        value = field.default_factory()
    if value is None:
        return "none"
    if isinstance(value, Path):
        value = str(value).replace(str(Path.home()), "~")
    elif hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    if isinstance(value, bool | tuple | list | dict):  # as TOML and JSON write them: true, ["fr"], {}
        value = json.dumps(value if not isinstance(value, tuple) else list(value), ensure_ascii=False)
    return f"`{value}`".replace("|", "\\|")


def render_settings() -> str:
    """A table per section (`[retrieval]` in a TOML file, `TRACERAG_RETRIEVAL__*` in the environment), then the
    top-level settings."""
    from tracerag.config import Settings

    sections: dict[str, list[str]] = {}
    for name, field in _settings():
        section = name.split(".", 1)[0] if "." in name else ""
        sections.setdefault(section, []).append(
            f"| `{name}` | {_annotation(field.annotation)} | {_default(field)} | {_cell(field.description or '')} |"
        )
    out = []
    for section, rows in sections.items():
        if section:
            about = Settings.model_fields[section].description or ""
            out.append(
                f"## `{section}`\n\n{about} In a TOML file `[{section}]`; in the environment "
                f"`TRACERAG_{section.upper()}__KEY`.\n"
            )
        else:
            out.append("## Top level\n\nIn a TOML file before any section; in the environment `TRACERAG_KEY`.\n")
        out.append("| setting | type | default | meaning |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(out)


# ---- the MCP tool server: each tool's input and output schema as `tracerag mcp` shows them, and its resources ----

MCP_ANCHOR = "mcp-"  # the models' anchors on the page that shows them (guide/assistants.md)


def _empty_state() -> Any:
    """A server state serving nothing: the tools' schemas and the resources' kinds do not depend on what is served."""
    from tracerag.config import Settings
    from tracerag.server.state import ServerConfig, ServerState

    return ServerState(ServerConfig(collections=(), settings=Settings()))


def mcp_tools() -> list[tuple[Any, Any]]:
    """(the tool's spec, the tool as `tools/list` shows it: its input and output schemas) for every tool, made by
    the server's own code (every tool offered, as when a collection and a catalog are served)."""
    from tracerag.mcp.server import ToolServer
    from tracerag.mcp.tools import TOOLS

    server = ToolServer(_empty_state())
    try:
        server.tools = {t.name: t for t in TOOLS}
        return list(zip(TOOLS, server.tool_list(), strict=True))
    finally:
        server.close()


def _limits(spec: dict[str, Any]) -> str:
    """A field's bounds as a reader says them: `1-4000 characters`, `1-500`, `at least 0`."""
    for each in [spec, *spec.get("anyOf", [])]:
        low, high = each.get("minimum", each.get("minLength")), each.get("maximum", each.get("maxLength"))
        unit = " characters" if "minLength" in each or "maxLength" in each else ""
        if low is not None and high is not None:
            return f"{low}-{high}{unit}"
        if high is not None:
            return f"at most {high}{unit}"
        if low is not None:
            return f"at least {low}{unit}"
    return ""


def _fields_table(model: dict[str, Any], inputs: bool) -> str:
    """A model's fields: for an input, whether it is required, its default and bounds; an output's are always
    there (`null` where the type says so)."""
    props = model.get("properties", {})
    required = set(model.get("required", []))
    if inputs:
        rows = ["| field | type | required | default | limits | description |", "|---|---|---|---|---|---|"]
    else:
        rows = ["| field | type | description |", "|---|---|---|"]
    for name, spec in props.items():
        kind, about = _type(spec, MCP_ANCHOR), _cell(spec.get("description", ""))
        if inputs:
            default = f"`{json.dumps(spec['default'])}`" if "default" in spec else ""
            needed = "yes" if name in required else "no"
            rows.append(f"| `{name}` | {kind} | {needed} | {default} | {_limits(spec)} | {about} |")
        else:
            rows.append(f"| `{name}` | {kind} | {about} |")
    return "\n".join(rows) + "\n"


def _offered_when(tool: Any) -> str:
    said = []
    if tool.catalog and not tool.collections:
        said.append("offered when a catalog is served (`--catalog DIR`)")
    elif tool.collections:
        said.append("offered when a collection is served (`-c DIR`)")
    said.append("writes: left out with `--read-only`" if tool.writes else "read-only (it writes only the trail)")
    return "; ".join(said)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def render_mcp_tools() -> str:
    """Each tool: its name and title, its description as the client reads it, when it is offered, its input's
    fields (the arguments) and its output's (`structuredContent`); then the models they name."""
    out: list[str] = []
    models: dict[str, dict[str, Any]] = {}
    tools = mcp_tools()
    out.append("| tool | title | required arguments | offered with | writes |\n|---|---|---|---|---|")
    for tool, shown in tools:
        needed = ", ".join(f"`{n}`" for n in shown.input_schema.get("required", [])) or "none"
        served = "`--catalog DIR`" if tool.catalog and not tool.collections else "`-c DIR`"
        writes = "yes: left out with `--read-only`" if tool.writes else "no (only the trail)"
        out.append(f"| [`{tool.name}`](#{_anchor(tool.name, 'mcp-tool-')}) | {_cell(shown.title)} | {needed} | "
                   f"{served} | {writes} |")  # fmt: skip
    out.append("")
    for tool, shown in tools:
        given, answered = shown.input_schema, shown.output_schema or {}
        out.append(f"### `{shown.name}`: {shown.title} {{ #{_anchor(shown.name, 'mcp-tool-')} }}\n")
        out.append(f"{shown.description}\n\n*{_capital(_offered_when(tool))}.*\n")
        out.append(f"**Arguments** (`{given.get('title', tool.input.__name__)}`):\n")
        out.append(_fields_table(given, inputs=True))
        out.append(f"**Answer** (`{answered.get('title', tool.output.__name__)}`, as `structuredContent`):\n")
        out.append(_fields_table(answered, inputs=False))
        for schema in (given, answered):
            for name, model in schema.get("$defs", {}).items():
                if models.setdefault(name, model) != model:  # one anchor per name: two meanings would be one row
                    raise ValueError(f"two tools' schemas define {name} differently")
    out.append("### Models the tools name\n")
    for name, model in sorted(models.items()):
        out.append(f"#### `{name}` {{ #{_anchor(name, MCP_ANCHOR)} }}\n")
        if model.get("description"):
            out.append(_cell(model["description"]) + "\n")
        if model.get("properties"):
            out.append(_fields_table(model, inputs=False))
        elif "enum" in model:
            out.append(f"One of {_type(model, MCP_ANCHOR)}.\n")
    return "\n".join(out)


def mcp_resources() -> tuple[list[Any], list[Any]]:
    """(the resources a server lists before any run, the resource templates): from a server serving nothing, since
    what is served changes only which runs are listed."""
    from tracerag.mcp import resources

    state = _empty_state()
    try:
        return resources.listed(state), list(resources.TEMPLATES)
    finally:
        state.close()


def render_mcp_resources() -> str:
    from tracerag.mcp.resources import LISTED_RUNS

    listed, templates = mcp_resources()
    out = ["| address | name | what it holds |", "|---|---|---|"]
    for r in listed:
        out.append(f"| `{r.uri}` | {_cell(r.title or r.name)} | {_cell(r.description or '')} |")
    for t in templates:
        out.append(f"| `{t.uri_template}` | {_cell(t.title or t.name)} | {_cell(t.description or '')} |")
    out.append(
        f"\nEach is JSON (`{listed[0].mime_type}`). `resources/list` also lists each collection's newest "
        f"{LISTED_RUNS} runs as `tracerag://trails/...` addresses; any other run is read by its address.\n"
    )
    return "\n".join(out)


# ---- benchmarks: benchmarks/README.md (the method) and each results/*.md, as pages of their own ----


def benchmark_pages() -> dict[str, Path]:
    """Site path -> file: the method page and each result with the images they show."""
    pages = {"benchmarks/method.md": BENCHMARKS / "README.md"}
    for path in sorted((BENCHMARKS / "results").iterdir()):
        if path.suffix in (".md", ".png"):
            pages[f"benchmarks/results/{path.name}"] = path
    return pages


def render_benchmark_list() -> str:
    lines = []
    for site_path, path in benchmark_pages().items():
        if site_path.startswith("benchmarks/results/") and path.suffix == ".md":
            first = path.read_text(encoding="utf-8").lstrip().split("\n", 1)[0].lstrip("# ").strip()
            lines.append(f"- [{first or path.stem}](results/{path.name}) (`{path.stem}`)")
    return "\n".join(lines) + "\n"


RENDERERS = {
    "cli": render_cli,
    "api": render_api,
    "settings": render_settings,
    "mcp-tools": render_mcp_tools,
    "mcp-resources": render_mcp_resources,
    "benchmark-results": render_benchmark_list,
}


# ---- mkdocs events ----


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for site_path, path in benchmark_pages().items():
        files.append(File.generated(config, site_path, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    return MARKER.sub(lambda m: RENDERERS[m.group(1)](), markdown)
