"""The docs site documents every command, option, setting, API operation and exit code (as Datasette checks its
docs), and builds with `mkdocs build --strict` (no dead internal link, no page missing from it); the README stays a
two-minute read whose set-up lines are the ones a newcomer runs (../shared/tools/newcomer.sh reads them)."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REPO
from tracerag.cli import ExitCode, app
from tracerag.cli.app import LazyGroup

DOCS = REPO / "docs"
README = (REPO / "README.md").read_text(encoding="utf-8")
README_MAX_LINES = 150  # a newcomer reads it in two minutes; the rest is the site's
MAX_LINE = 120  # prose lines; code blocks and tables may be wider


def _hooks() -> ModuleType:
    """docs/hooks/reference.py, the renderers the site's generated pages come from."""
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build(out: Path) -> Path:
    """The site, built as CI builds it: strict, so a dead link, a bad anchor or a page that fails to render fails."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", **os.environ},
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def _text(page: Path) -> str:
    """A built page's text, tags dropped and entities read (`&lt;` is `<`)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def _prose(markdown: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside code blocks, tables and images (an image's alt text is one line)."""
    lines, fence = [], False
    for number, line in enumerate(markdown.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence and not line.lstrip().startswith(("|", "![")):
            lines.append((number, line))
    return lines


def test_the_exit_code_table_is_exit_code():
    """`ExitCode` is the one definition: the reference's table lists its codes, no more and no fewer."""
    page = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
    table = page.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    listed = [int(code) for code in re.findall(r"^\| (\d+) \|", table, flags=re.M)]
    assert listed == sorted(int(code) for code in ExitCode), listed


def test_every_command_is_in_the_commands_table():
    page = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
    names = [c.name or c.callback.__name__ for c in app.registered_commands] + list(LazyGroup.modules)
    missing = [n for n in names if f"`tracerag {n}" not in page]
    assert not missing, f"commands missing from docs/reference/commands.md: {missing}"


def _cli_gaps(site: Path) -> list[str]:
    """The generated page holds each command's help: its name, and every option and argument it takes."""
    import typer

    text = _text(site / "reference" / "cli.html")
    root = typer.main.get_command(app)
    ctx = root.context_class(root, info_name="tracerag")
    missing = []
    for name in LazyGroup.modules:
        command = root.get_command(ctx, name)
        commands = [(f"tracerag {name}", command)]
        if hasattr(command, "commands"):  # a group: its commands too
            commands += [(f"tracerag {name} {sub}", c) for sub, c in command.commands.items()]
        for path, each in commands:
            if path not in text:
                missing.append(path)
            for param in each.params:
                if getattr(param, "hidden", False):
                    continue
                shown = param.opts[0] if param.param_type_name == "option" else (param.metavar or param.name.upper())
                if shown not in text:
                    missing.append(f"{path} {shown}")
    return [f"CLI reference lacks {m}" for m in missing]


def _settings_gaps(site: Path) -> list[str]:
    text = _text(site / "reference" / "settings.html")
    hooks = _hooks()
    names = hooks.setting_names()
    assert "retrieval.rrf_k" in names and "cache_dir" in names, names
    gaps = [f"settings page lacks {n}" for n in names if n not in text]
    unexplained = [name for name, field in hooks._settings() if not (field.description or "").strip()]
    return gaps + [f"{n} has no description in config.py (the settings page's meaning)" for n in unexplained]


def _api_gaps(site: Path) -> list[str]:
    text = _text(site / "reference" / "api.html")
    schema = _hooks().openapi_schema()
    operations = [f"{method.upper()} {path}" for path, methods in schema["paths"].items() for method in methods]
    assert "POST /api/collections/{name}/search" in operations or len(operations) > 10, operations
    models = list(schema["components"]["schemas"])
    return [f"API reference lacks {item}" for item in operations + models if item not in text]


def _mcp_gaps(site: Path) -> list[str]:
    """The assistants guide holds every tool, in its own section each of its arguments and its answer's fields (as
    `tools/list` shows them) in a table row, each model they name with its anchor, every resource, and what a
    client needs to connect."""
    page = (site / "guide" / "assistants.html").read_text(encoding="utf-8")
    hooks = _hooks()
    tools = hooks.mcp_tools()
    heads = [f'id="{hooks._anchor(tool.name, "mcp-tool-")}"' for tool, _ in tools] + ['id="models-the-tools-name"']
    missing = [h for h in heads if h not in page]
    if missing:
        return [f"guide/assistants.md lacks the section {h}" for h in missing]
    for (tool, shown), head, following in zip(tools, heads, heads[1:], strict=False):
        section = page[page.index(head) : page.index(following)]
        for schema in (shown.input_schema, shown.output_schema or {}):
            missing += [
                f"{tool.name}'s {f}" for f in schema.get("properties", {}) if f"<td><code>{f}</code>" not in section
            ]
            missing += [
                f"the model {n}" for n in schema.get("$defs", {}) if f'id="{hooks._anchor(n, "mcp-")}"' not in page
            ]
    text = _text(site / "guide" / "assistants.html")
    listed, templates = hooks.mcp_resources()
    missing += [a for a in [str(r.uri) for r in listed] + [t.uri_template for t in templates] if a not in text]
    client = ['"mcpServers"', '"args": ["mcp", "-c"', "--read-only", "--http", "/mcp", "Authorization: Bearer"]
    missing += [c for c in client if c not in text]
    return [f"guide/assistants.md lacks {m}" for m in sorted(set(missing))]


def _benchmark_gaps(site: Path) -> list[str]:
    results = sorted((REPO / "benchmarks" / "results").glob("*.md"))
    assert results
    built = site / "benchmarks" / "results"
    return [f"no page for benchmarks/results/{r.name}" for r in results if not (built / f"{r.stem}.html").exists()]


def test_the_readme_is_a_two_minute_read():
    lines = README.split("\n")
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    for heading in ("## Set-up", "## What it prints", "## Next"):
        assert f"\n{heading}\n" in README, heading
    assert "![" in README, "a screenshot"


def test_the_readme_set_up_is_what_a_newcomer_runs():
    """The first code block under '## Set-up', line by line, as ../shared/tools/newcomer.sh reads and runs it."""
    section = README.split("\n## Set-up\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1].split("\n", 1)[1]
    commands = [line for line in block.split("\n") if line.strip()]
    assert [c.split("#")[0].strip() for c in commands] == [
        "pip install -e '.[dev]' && tracerag demo",
        "python -m pytest -q",
    ], commands


def test_the_readme_links_resolve():
    targets = re.findall(r"\]\(([^)#\s]+)[^)]*\)", README)
    assert targets
    dead = [t for t in targets if "://" not in t and not (REPO / t).exists()]
    assert not dead, f"README links to missing files: {dead}"


# docs/architecture.md is the other helpers' map of the modules (tests/test_architecture.py), kept as it was written
WRITTEN = sorted(str(p.relative_to(REPO)) for p in DOCS.rglob("*.md") if p.name != "architecture.md")


@pytest.mark.parametrize("path", ["README.md", *WRITTEN])
def test_prose_lines_fit(path: str):
    long = [n for n, line in _prose((REPO / path).read_text(encoding="utf-8")) if len(line) > MAX_LINE]
    assert not long, f"{path}: lines over {MAX_LINE} characters outside code and tables: {long}"


def _remote_loads(site: Path) -> list[str]:
    """Read offline: no script, stylesheet, font or image comes from elsewhere (links to other sites are fine)."""
    loads = re.compile(r"""<(?:script|img|link)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I)
    pages = [p for p in site.rglob("*.html") if loads.search(p.read_text(encoding="utf-8"))]
    return [f"{p.relative_to(site)} loads from the network" for p in pages]


def test_the_site_builds_strict_and_documents_everything(tmp_path: Path):
    """One build (the slow part, ~10 s) for every check of what it holds: every command and option, setting with
    its meaning, API operation and schema, MCP tool and resource, benchmark result; and nothing loaded from the
    network."""
    site = _build(tmp_path / "site")
    gaps = _cli_gaps(site) + _settings_gaps(site) + _api_gaps(site) + _mcp_gaps(site) + _benchmark_gaps(site)
    gaps += _remote_loads(site)
    assert not gaps, "\n".join(gaps)


RUN_ID = re.compile(r"\d{8}T\d{6}-[0-9a-f]{6}")


def _requests(transcript: str) -> list[str]:
    """The requests (`→` lines) of a session transcript, run ids masked."""
    return [RUN_ID.sub("RUN", line) for line in transcript.split("\n") if line.startswith("→")]


def test_the_assistants_session_is_what_its_script_prints(tmp_path: Path):
    """The session on the assistants guide is docs/hooks/mcp_transcript.py's, pasted whole: run again (over stdio,
    on the packaged sample without vectors), it makes the same requests in the same order as the same client, and
    the trail keeps the client's name on the search's run and on the decision."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.demo_data import sample_source

    collection = tmp_path / "demo"  # the name the page's session shows
    with Collection.open(collection, load_settings(), mode="write", create=True) as col:
        col.ingest(sample_source().documents(), dense=False)
    script = DOCS / "hooks" / "mcp_transcript.py"
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # this venv's `tracerag`
    done = subprocess.run(
        [sys.executable, str(script), "--collection", str(collection)],
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if k != "TRACERAG_SELECTION__USER"}, "PATH": path},
    )
    assert done.returncode == 0, done.stderr
    page = (DOCS / "guide" / "assistants.md").read_text(encoding="utf-8")
    pasted = page.split("\n## A session\n", 1)[1].split("```text\n", 1)[1].split("\n```", 1)[0]
    assert _requests(done.stdout) == _requests(pasted), "re-run the script and paste its output into the page"
    assert len(_requests(pasted)) == 7 and "resources/read tracerag://trails/demo/RUN" in _requests(pasted)[-1]
    for said in ('"client": "mcp: docs-transcript 1.0"', '"who": "researcher via mcp: docs-transcript 1.0"'):
        assert said in done.stdout and said in pasted, said


def test_every_api_operation_parameter_and_field_is_described():
    """The API page is generated from the OpenAPI schema: an operation without a summary and description, or a
    parameter or model field without a description, would show a bare row there (what a new user found: 390 of 767)."""
    from fastapi.routing import APIRoute

    from tracerag.config import Settings
    from tracerag.server.app import create_app
    from tracerag.server.state import ServerConfig

    api = create_app(ServerConfig(collections=(), settings=Settings()))
    schema = api.openapi()
    missing = []
    for route in api.routes:  # an explicit summary: FastAPI's own is the function's name ("List Collections")
        if isinstance(route, APIRoute) and route.include_in_schema and not route.summary:
            missing.append(f"summary of {sorted(route.methods)} {route.path}")
    for path, methods in schema["paths"].items():
        for method, op in methods.items():
            if not op.get("description", "").strip():
                missing.append(f"description of {method.upper()} {path}")
            for param in op.get("parameters", []):
                if not param.get("description", "").strip():
                    missing.append(f"parameter {param['in']}:{param['name']} of {method.upper()} {path}")
    for name, model in schema.get("components", {}).get("schemas", {}).items():
        for field, spec in model.get("properties", {}).items():
            if not spec.get("description", "").strip():
                missing.append(f"field {name}.{field}")
    assert not missing, f"{len(missing)} undescribed in the OpenAPI schema:\n" + "\n".join(missing)


def test_every_cli_option_has_help():
    """Every option and argument of every command says what it is in --help (the CLI reference is that help)."""
    import typer

    root = typer.main.get_command(app)
    missing = []

    def walk(command: Any, path: str, parent: Any) -> None:  # typer's own Context in newer typer (docs/hooks)
        ctx = command.context_class(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
        for param in command.params:
            if getattr(param, "hidden", False) or param.name == "help":
                continue
            if not (getattr(param, "help", None) or "").strip():
                missing.append(f"{path} {param.opts[0]}")
        if hasattr(command, "list_commands"):  # a group
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, f"{path} {name}", ctx)

    walk(root, "tracerag", None)
    assert not missing, "options and arguments without help:\n" + "\n".join(missing)
