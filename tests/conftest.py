"""Shared fixtures. Real evaluation data is read in place from the datasets folder (TRACERAG_DATASETS, else
../shared/datasets beside the repository), never copied.

Every test that needs it goes through `require_datasets` (the `datasets_dir` and `hipe_dir` fixtures, the
`needs_data("name", ...)` marker, or a direct call in a module's loader): without the data such a test is skipped
with one reason, counted once at the end of the run, so that a newcomer sees skips and not hundreds of failures.
When the CI variable is set the same test fails instead: CI must never skip the real-data tests silently.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.built_once import private_copy
from tracerag.collection import Collection, IngestReport
from tracerag.config import load_settings
from tracerag.ingest import read_documents

REPO = Path(__file__).resolve().parents[1]

# The datasets the suite reads; `datasets_dir` wants them all (a partial copy names what it lacks).
SUITE_DATASETS = ("hipe2022", "hipe-ocrepair2026", "cranfield", "piaf", "miami211")
MISSING_PREFIX = "real evaluation data not found at "


def datasets_path() -> Path:
    return Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))


def in_ci() -> bool:
    """CI systems set CI (to "true", "1", ...); "", "0" and "false" mean a developer's machine."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_datasets(*names: str) -> Path:
    """The datasets folder, holding every dataset in `names` (default: all the suite reads). Without them the
    calling test is skipped, or fails when CI is set."""
    root = datasets_path()
    wanted = names or SUITE_DATASETS
    missing = [n for n in wanted if not (root / n).is_dir()]
    if missing:
        # One reason for every test when the data is not there at all; a partial copy says what it lacks.
        partial = any((root / n).is_dir() for n in SUITE_DATASETS)
        lacking = f" (lacks {', '.join(missing)})" if partial else ""
        reason = f"{MISSING_PREFIX}{root}{lacking}; set TRACERAG_DATASETS"
        if in_ci():
            pytest.fail(f"{reason} (CI is set: the real-data tests must run)", pytrace=False)
        pytest.skip(reason)
    return root


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs_data(*names): reads these datasets in place (skipped without them, failed under CI)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files marked `heavy` first (subprocess ingests, real-data builds: 20-45 s a test). With whole files per
    worker (`--dist loadfile`), files are handed out in this order, and a heavy one handed out last keeps one worker
    busy while the other idles: a run in collection order reached 95% in 10 of its 18 minutes at 133% CPU. A
    stable sort, so the order within each group is the collection's."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` (pyproject's addopts): a worker per CPU this process may run on, at most 4, since each worker
    holds its own models and collections (~1.5 GB). PYTEST_XDIST_AUTO_NUM_WORKERS, when set, decides instead."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist's own reading of it
    return max(1, min(len(os.sched_getaffinity(0)), 4))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: object) -> None:
    """Once imported (pdb imports it), readline sets COLUMNS=80 and LINES=24 in the process's C environment,
    unseen by os.environ but inherited by the workers, whose CLI output Rich would then wrap at 80 columns where
    a run without workers does not. What the caller set (os.environ holds it) stays."""
    for name in ("COLUMNS", "LINES"):
        if name not in os.environ:
            os.unsetenv(name)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs_data"):
        require_datasets(*mark.args)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """One line for all the tests skipped for want of the data, whatever their number."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(MISSING_PREFIX):
            reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in reasons.items():
        terminalreporter.write_line(f"{reason} ({count} tests skipped)", yellow=True)


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    return require_datasets()


@pytest.fixture(scope="session")
def hipe_dir() -> Path:
    return require_datasets("hipe2022") / "hipe2022"


@dataclass
class BuiltCollection:
    collection: Collection
    report: IngestReport


@pytest.fixture(scope="session")
def hipe_collection(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltCollection]:
    """All of HIPE-2022 ingested once per run without embeddings (~15 s), default settings otherwise.

    Shared by the collection and search tests: tests must not change it. Under pytest-xdist one worker ingests
    and each worker opens its own copy of the result, as it would have opened the one it built.
    """

    def build(path: Path) -> IngestReport:
        with Collection.open(path, load_settings(), mode="write", create=True) as col:
            return col.ingest(read_documents(hipe_dir, "hipe"), dense=False)

    path, report = private_copy(tmp_path_factory, "hipe", "collection", build)
    col = Collection.open(path, load_settings(), mode="write")
    yield BuiltCollection(col, report)
    col.close()
