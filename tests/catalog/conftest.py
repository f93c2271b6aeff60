"""The real Miami 211 catalog and the SF 211 export, built once per run (lexical) for the assistant's tests
(tests/catalog/built.py: each pytest-xdist worker gets a copy of its own)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.catalog import built


@pytest.fixture(scope="session")
def catalog(datasets_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built.miami(tmp_path_factory)


@pytest.fixture(scope="session")
def sf211_catalog(datasets_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The San Francisco 211 export as a catalog, without a places file (shared by the modules that read it as is)."""
    return built.sf211(tmp_path_factory)
