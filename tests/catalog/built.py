"""The real directories the catalog tests read, each built once per run (tests/built_once.py: one pytest-xdist
worker builds, the others wait) and handed to each asker as a copy of its own, so that a module that adds a
places file or records trails changes its copy only, as when it built the catalog itself."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.built_once import private_copy
from tests.conftest import REPO, require_datasets
from tracerag.catalog.ingest import build_catalog
from tracerag.config import load_settings

YOUTH_MAPPING = REPO / "examples" / "catalog" / "dcyf-youth-programs.toml"
SF_PLACES = REPO / "examples" / "catalog" / "sf-places.toml"


def _lexical(source: Path, **options: object):  # noqa: ANN202
    """A builder of the catalog of `source` (what build_catalog returns is not kept)."""

    def build(target: Path) -> None:
        build_catalog(source, target, load_settings(), dense=False, **options)  # type: ignore[arg-type]

    return build


def miami(factory: pytest.TempPathFactory) -> Path:
    """The Miami 211 catalog, lexical, default settings."""
    source = require_datasets("miami211") / "miami211"
    return private_copy(factory, "miami", "miami", _lexical(source))[0]


def sf211(factory: pytest.TempPathFactory) -> Path:
    """The San Francisco 211 export as a catalog, lexical, default settings, no places file."""
    source = require_datasets("sf-openreferral") / "sf-openreferral" / "211-sf.csv"
    return private_copy(factory, "sf211", "sf211", _lexical(source))[0]


def sfyouth(factory: pytest.TempPathFactory, *, places: bool = False) -> Path:
    """The DCYF youth programmes with the example mapping (and the example SF places file when `places`)."""
    source = require_datasets("sf-openreferral") / "sf-openreferral" / "dcyf-youth-programs.csv"
    mapping = tomllib.loads(YOUTH_MAPPING.read_text(encoding="utf-8"))
    build = _lexical(source, mapping=mapping, places=SF_PLACES if places else None)
    return private_copy(factory, "sfyouth-places" if places else "sfyouth", "sfyouth", build)[0]
