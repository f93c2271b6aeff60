"""Without the real evaluation data the tests that need it are skipped with one reason, counted once; with CI set
they fail instead. Checked with real pytest runs in subprocesses, on a small test file and on real modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# One test per way a test reaches the data, and two that need none.
PROBE = """
import pytest
from tests.conftest import require_datasets

def test_fixture(datasets_dir):
    assert datasets_dir.is_dir()

def test_hipe(hipe_dir):
    assert hipe_dir.name == "hipe2022"

@pytest.mark.needs_data("miami211")
def test_marker():
    pass

def test_loader():
    require_datasets("cranfield")

def test_no_data():
    assert 1 + 1 == 2

@pytest.mark.parametrize("n", [1, 2])
def test_no_data_either(n):
    assert n
"""


def _pytest(args: list[str], datasets: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    env["TRACERAG_DATASETS"] = str(datasets)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _probe(tmp_path: Path) -> Path:
    probe = tmp_path / "probe" / "test_probe.py"
    probe.parent.mkdir(exist_ok=True)
    probe.write_text(PROBE, encoding="utf-8")
    return probe


def test_without_data_every_data_test_is_skipped_with_one_counted_reason(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _pytest(["-p", "tests.conftest", "-rs", str(_probe(tmp_path))], empty, None)
    assert result.returncode == 0, result.stdout + result.stderr
    reason = f"real evaluation data not found at {empty}; set TRACERAG_DATASETS"
    assert f"{reason} (4 tests skipped)" in result.stdout
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED [")]
    assert skipped and all(line.endswith(reason) for line in skipped), skipped  # -rs: one reason for all
    assert "3 passed, 4 skipped" in result.stdout


def test_a_missing_folder_and_a_partial_copy(tmp_path: Path) -> None:
    result = _pytest(["-p", "tests.conftest", str(_probe(tmp_path))], tmp_path / "nowhere", "0")  # CI=0: not CI
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"real evaluation data not found at {tmp_path / 'nowhere'}; set TRACERAG_DATASETS (4 tests" in (
        result.stdout
    )
    partial = tmp_path / "partial"
    (partial / "hipe2022").mkdir(parents=True)
    result = _pytest(["-p", "tests.conftest", str(_probe(tmp_path))], partial, None)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed, 3 skipped" in result.stdout  # the hipe2022 test runs
    assert f"not found at {partial} (lacks miami211); set TRACERAG_DATASETS (1 tests skipped)" in result.stdout
    assert "(lacks hipe-ocrepair2026, cranfield, piaf, miami211)" in result.stdout


def test_under_ci_the_data_tests_fail(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _pytest(["-p", "tests.conftest", str(_probe(tmp_path))], empty, "true")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "3 passed" in result.stdout and "skipped" not in result.stdout.splitlines()[-1]
    assert result.stdout.count("CI is set: the real-data tests must run") >= 4


def test_real_modules_skip_rather_than_fail_without_data(tmp_path: Path) -> None:
    """Modules that reach the data through fixtures, module loaders and the catalog's gazetteer."""
    empty = tmp_path / "empty"
    empty.mkdir()
    modules = ["tests/eval/test_datasets.py", "tests/ingest/test_hipe.py", "tests/catalog/test_parse.py"]
    result = _pytest(modules, empty, None)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert "failed" not in summary and "error" not in summary and " passed" in summary, summary
    assert "real evaluation data not found at" in result.stdout and "tests skipped)" in result.stdout
