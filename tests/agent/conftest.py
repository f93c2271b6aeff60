"""A small real collection for the agent's tool tests: the demo's three HIPE-2022 files (fr, de, en; 79 documents
in 23 newspapers of three datasets), lexical only, built in well under a second once per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.demo_data import DEMO_FILES
from tracerag.ingest import read_documents


@pytest.fixture(scope="module")
def demo_collection(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collection]:
    path = tmp_path_factory.mktemp("demo") / "col"
    files = [next(hipe_dir.rglob(spec.name)) for spec in DEMO_FILES]
    with Collection.open(path, load_settings(), mode="write", create=True) as col:
        col.ingest((d for f in files for d in read_documents(f, "hipe")), dense=False)
    with Collection.open(path, load_settings(), mode="read") as col:
        yield col
