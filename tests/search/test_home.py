"""A plain search goes one way down the layers: the `search` package (services) imports nothing from the wings
(`research`, `agent`, `catalog`) or anything above them, and `tracerag search` runs, expansions and trail
included, without loading any of them. Each case runs in a fresh interpreter and reads its `sys.modules` (as
tests/cli/test_startup.py does): what an earlier test imported cannot hide an import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_layers import LAYERS, unit
from tracerag.cli.app import ExitCode

FIXTURES = Path(__file__).parents[1] / "fixtures"

_SERVICES = next(i for i, layer in enumerate(LAYERS) if "search" in layer.units)
# Everything above the services: the wings, measurement and the front doors (the CLI itself is the caller below).
ABOVE = {u for layer in LAYERS[_SERVICES + 1 :] for u in layer.units}

_LOADED = "import json, sys; print(json.dumps(sorted(m for m in sys.modules if m.startswith('tracerag.'))))"


def _above(modules: list[str], allowed: frozenset[str] = frozenset()) -> list[str]:
    return [m for m in modules if unit(m) in ABOVE - allowed]


def test_the_entry_point_imports_nothing_above_the_services() -> None:
    script = "import tracerag.search.report, tracerag.search.run, tracerag.search.expansions; " + _LOADED
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "tracerag.search.run" in loaded and "tracerag.trail" in loaded  # what a recorded search needs did load
    assert {"research", "agent", "catalog"} <= ABOVE
    assert _above(loaded) == []


@pytest.fixture(scope="module")
def lexical_collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from typer.testing import CliRunner

    from tracerag.cli import app

    path = tmp_path_factory.mktemp("plain") / "lexical"
    done = CliRunner().invoke(app, ["ingest", str(FIXTURES / "jsonl" / "good.jsonl"), "-c", str(path), "--no-dense"])
    assert done.exit_code == 0, done.output
    return path


# Runs `tracerag search ARGS` in this interpreter, then prints its JSON answer, its exit code and the modules loaded.
_SEARCH = """
import json, sys
from tracerag.cli import app
try:
    app(sys.argv[1:], prog_name="tracerag")
except SystemExit as exit:
    code = exit.code or 0
else:
    code = 0
print(json.dumps({"code": code, "loaded": sorted(m for m in sys.modules if m.startswith("tracerag."))}))
"""


@pytest.mark.parametrize("expand", [[], ["--expand", "vocab"]], ids=["plain", "expanded"])
def test_tracerag_search_loads_no_wing(lexical_collection: Path, expand: list[str]) -> None:
    """The search records its run (a run id and a trail file) and, asked to expand, says what it could not make;
    the wings, measurement and the server never load."""
    args = ["search", "incendie", "-c", str(lexical_collection), "--channels", "bm25", "--json", *expand]
    done = subprocess.run([sys.executable, "-c", _SEARCH, *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    answer_text, ran_line = done.stdout.strip().rsplit("\n", 1)
    answer, ran = json.loads(answer_text), json.loads(ran_line)
    loaded = ran["loaded"]
    assert ran["code"] == (ExitCode.PARTIAL if expand else 0)  # an expansion could not be made
    assert answer["results"] and answer["run_id"]
    assert list(lexical_collection.rglob(f"{answer['run_id']}.jsonl"))
    if expand:
        assert answer["failures"] and answer["failures"][0].startswith("vocabulary variants:")
    assert "tracerag.search.run" in loaded
    assert _above(loaded, allowed=frozenset({"cli"})) == []
