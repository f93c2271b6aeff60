"""Shared fixtures: where the real evaluation data lives (read in place, never copied)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
