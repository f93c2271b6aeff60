"""The real Miami 211 catalog, built once per session (lexical, ~16 s) for the assistant and its benchmark."""

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
