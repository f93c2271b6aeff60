"""The real Miami 211 catalog and the SF 211 export, built once per session (lexical) for the assistant's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.catalog.ingest import build_catalog
from tracerag.config import load_settings


@pytest.fixture(scope="session")
def catalog(datasets_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("catalog") / "miami"
    build_catalog(datasets_dir / "miami211", target, load_settings(), dense=False)
    return target


@pytest.fixture(scope="session")
def sf211_catalog(datasets_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The San Francisco 211 export as a catalog, without a places file (shared by the modules that read it as is)."""
    target = tmp_path_factory.mktemp("catalog") / "sf211"
    build_catalog(datasets_dir / "sf-openreferral" / "211-sf.csv", target, load_settings(), dense=False)
    return target
