"""tests/built_once.py, which the pytest-xdist workers share builds through: however many processes ask at once,
one builds and all get the build and what it returned; a failed build is built again by the next asker."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.built_once import built_once, private_copy


class Factory:
    """The one method of pytest's TempPathFactory that built_once reads, as a worker's factory answers it."""

    def __init__(self, base: Path):
        self.base = base

    def getbasetemp(self) -> Path:
        return self.base

    def mktemp(self, name: str) -> Path:
        path = self.base / f"{name}-copy"
        path.mkdir()
        return path


def _build(target: Path) -> int:
    target.mkdir()
    time.sleep(0.5)  # a build takes a while: the other askers arrive during it
    (target / "data").write_text("built", encoding="utf-8")
    with (target.parent.parent / "builds.log").open("a", encoding="utf-8") as log:
        log.write("one build\n")
    return 42


def _ask(base: str, worker: str, start: Any) -> None:
    os.environ["PYTEST_XDIST_WORKER"] = worker
    start.wait()  # all ask at once
    path, result = built_once(Factory(Path(base) / f"popen-{worker}"), "thing", "name", _build)  # type: ignore[arg-type]
    assert result == 42 and (path / "data").read_text(encoding="utf-8") == "built"


def test_workers_asking_at_once_share_one_build(tmp_path: Path) -> None:
    for worker in ("gw0", "gw1", "gw2", "gw3"):
        (tmp_path / f"popen-{worker}").mkdir()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(4)
    procs = [context.Process(target=_ask, args=(str(tmp_path), f"gw{i}", start)) for i in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
    assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
    assert (tmp_path / "built-once" / "builds.log").read_text(encoding="utf-8") == "one build\n"
    assert (tmp_path / "built-once" / "thing" / "name" / "data").exists()


def test_a_failed_build_is_built_again_and_a_copy_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # without xdist: the run's own folder

    def broken(target: Path) -> None:
        target.mkdir()
        raise RuntimeError("half-built")

    with pytest.raises(RuntimeError, match="half-built"):
        built_once(Factory(tmp_path), "thing", "name", broken)  # type: ignore[arg-type]
    mine, result = private_copy(Factory(tmp_path), "thing", "name", _build)  # type: ignore[arg-type]
    assert result == 42 and mine == tmp_path / "thing-copy" / "name"
    (mine / "data").write_text("changed", encoding="utf-8")
    shared = tmp_path / "built-once" / "thing" / "name" / "data"
    assert shared.read_text(encoding="utf-8") == "built"
