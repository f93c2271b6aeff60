"""Shared fixtures: where the real evaluation data lives (read in place, never copied)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tracerag.collection import Collection, IngestReport
from tracerag.config import load_settings
from tracerag.ingest import read_documents

REPO = Path(__file__).resolve().parents[1]


def datasets_path() -> Path:
    return Path(os.environ.get("TRACERAG_DATASETS", REPO.parent / "shared" / "datasets"))


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    path = datasets_path()
    if not (path / "hipe2022").is_dir():
        pytest.fail(f"real evaluation data not found at {path}; set TRACERAG_DATASETS")
    return path


@pytest.fixture(scope="session")
def hipe_dir(datasets_dir: Path) -> Path:
    return datasets_dir / "hipe2022"


@dataclass
class BuiltCollection:
    collection: Collection
    report: IngestReport


@pytest.fixture(scope="session")
def hipe_collection(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltCollection]:
    """All of HIPE-2022 ingested once per session without embeddings (~15 s), default settings otherwise.

    Shared by the collection and search tests: tests must not change it.
    """
    path = tmp_path_factory.mktemp("hipe") / "collection"
    col = Collection.open(path, load_settings(), create=True)
    report = col.ingest(read_documents(hipe_dir, "hipe"), dense=False)
    yield BuiltCollection(col, report)
    col.close()
