"""A pytest plugin that writes each test's wall and CPU seconds as it ends, one JSON line per test, so that the
cost of the suite can be read per test on a shared machine (CPU seconds barely move with the load; wall seconds
do) and from a run stopped half-way. Used for benchmarks/results/test_suite_speed.md:

    PYTHONPATH=benchmarks TRACE_SUITE_TIMES=/tmp/times python -m pytest -q -p suite_timer

Each process (each pytest-xdist worker too) writes TRACE_SUITE_TIMES/<worker or "main">.jsonl. A test's time
covers its whole protocol: the setup of the fixtures it is the first to need, its call, and the teardown of
those that end with it. `cpu` is the process's own CPU; `child_cpu` that of subprocesses that ended meanwhile.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

_OUT: dict[str, IO[str]] = {}
_OUTCOME: dict[str, str] = {}  # a test's worst phase so far: "passed", "skipped", "failed" (call) or "error" (setup)


def _file() -> IO[str] | None:
    folder = os.environ.get("TRACE_SUITE_TIMES")
    if not folder:
        return None
    if "f" not in _OUT:
        Path(folder).mkdir(parents=True, exist_ok=True)
        name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _OUT["f"] = open(Path(folder) / f"{name}.jsonl", "a", encoding="utf-8")  # noqa: SIM115 (kept open)
    return _OUT["f"]


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _write(record: dict[str, Any]) -> None:
    out = _file()
    if out is not None:
        out.write(json.dumps(record) + "\n")
        out.flush()


def pytest_collection_finish(session: pytest.Session) -> None:
    _write({"event": "collected", "n": len(session.items), "cpu": time.process_time(), "t": time.time()})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        _OUTCOME[report.nodeid] = "failed" if report.when == "call" else "error"
    elif report.skipped and report.nodeid not in _OUTCOME:
        _OUTCOME[report.nodeid] = "skipped"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    wall, cpu, child = time.perf_counter(), time.process_time(), _children()
    yield
    _write(
        {
            "test": item.nodeid,
            "outcome": _OUTCOME.pop(item.nodeid, "passed"),
            "wall": round(time.perf_counter() - wall, 3),
            "cpu": round(time.process_time() - cpu, 3),
            "child_cpu": round(_children() - child, 3),
            "t": time.time(),
        }
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    _write({"event": "finished", "cpu": time.process_time(), "child_cpu": _children(), "t": time.time()})
