"""Things the suite builds once per run and every pytest-xdist worker shares: a collection or catalog ingested
from the real data takes seconds to minutes, and two workers would each build their own.

`built_once(factory, key, folder, build)` builds `key/folder` under the run's shared temporary folder (the
parent of each worker's own; the run's own folder without xdist), under an flock(2) lock: the first worker to
take the lock builds, the others wait for it and then find it built. A build that failed leaves no "done"
mark, so the next asker builds again (and fails with the real error). `private_copy` gives each asker its own
copy of such a build: it then holds what it held when it built its own, a folder no other process touches
(tests open these collections and catalogs for writing, or add files to them).
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def run_folder(factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole run: shared by the xdist workers (each has a `popen-gwN` inside it)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(
    factory: pytest.TempPathFactory, key: str, folder: str, build: Callable[[Path], Any]
) -> tuple[Path, Any]:
    """The folder `key/folder` built by `build(path)` once in this run, and what `build` returned (pickled, so
    that a worker that did not build it gets it too). `folder` is the name the tests see (a collection's name)."""
    root = run_folder(factory) / "built-once"
    root.mkdir(exist_ok=True)
    target, done = root / key / folder, root / f"{key}.done"
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when its holder dies
        if not done.exists():
            shutil.rmtree(root / key, ignore_errors=True)  # what a failed build left
            target.parent.mkdir()
            result = build(target)
            done.write_bytes(pickle.dumps(result))
        return target, pickle.loads(done.read_bytes())


def private_copy(
    factory: pytest.TempPathFactory, key: str, folder: str, build: Callable[[Path], Any]
) -> tuple[Path, Any]:
    """This worker's own copy of `built_once(factory, key, folder, build)`, under the same folder name."""
    shared, result = built_once(factory, key, folder, build)
    mine = factory.mktemp(key) / folder
    shutil.copytree(shared, mine, symlinks=True)
    return mine, result
