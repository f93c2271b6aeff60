"""A catalog's profile round-trips through its editable TOML file, and a bad one is refused naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.catalog.profile import PROFILE_FILE, CatalogProfile
from tracerag.errors import ConfigError


def test_a_profile_round_trips_and_none_stays_out_of_the_file(tmp_path: Path) -> None:
    profile = CatalogProfile(
        name="A directory",
        country="CA",
        region="Ontario",
        region_aliases=("ON",),
        postal_code_pattern=r"[A-Z]\d[A-Z] ?\d[A-Z]\d",
        help_line="211",
    )
    path = profile.save(tmp_path)
    assert path.name == PROFILE_FILE
    assert "postal_code_prefix" not in path.read_text(encoding="utf-8")
    assert CatalogProfile.load(tmp_path) == profile


def test_a_catalog_without_a_profile_knows_no_place(tmp_path: Path) -> None:
    profile = CatalogProfile.load(tmp_path)
    assert (profile.country, profile.region, profile.help_line, profile.place_aliases) == (None, None, None, {})


def test_a_bad_profile_is_refused_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / PROFILE_FILE).write_text('country = "US"\nhelpline = "211"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="helpline"):
        CatalogProfile.load(tmp_path)
