"""The profile inferred at `catalog ingest`: from the real directories, from small synthetic ones of other
countries, and merged with what a person edited on a re-ingest."""

from __future__ import annotations

import csv
import tomllib
from pathlib import Path

import pytest
import tomli_w
from typer.testing import CliRunner

from tests.catalog.test_export211 import sf_read
from tests.catalog.test_hsds import real_read
from tracerag.catalog.ingest import build_catalog, inferred_values
from tracerag.catalog.model import ServiceRecord
from tracerag.catalog.profile import PROFILE_FILE, CatalogProfile
from tracerag.catalog.profile_inference import (
    INFERRED_FILE,
    Inference,
    infer,
    infer_place_aliases,
    infer_postal_codes,
    infer_region,
    phone_country,
)
from tracerag.cli import app
from tracerag.config import load_settings
from tracerag.errors import ConfigError


def test_the_miami_profile_comes_from_its_phones_states_and_zips() -> None:
    records, _, stats = real_read()
    inference = infer(records, stats.countries)  # 1 of 4,089 addresses names a country: the phones decide
    assert inference.values == {
        "country": "US",
        "region": "Florida",
        "region_aliases": ("FL",),
        "postal_code_pattern": r"\d{5}(?:-\d{4})?",
        "postal_code_prefix": 5,
        # the country's numbers, from its word file (words/country-us.toml)
        "emergency_numbers": [{"label": "Emergency (police, fire, ambulance)", "number": "911"}],
        "crisis_numbers": [{"label": "988 Suicide & Crisis Lifeline (call or text)", "number": "988"}],
    }
    assert inference.how["country"].startswith("phone numbers")


def test_the_sf_profile_comes_from_its_addresses() -> None:
    records, _, stats = sf_read()
    inference = infer(list(records.values()), stats.countries)
    assert inference.values["country"] == "US" and inference.how["country"] == "addresses: 1,629 of 1,629 records"
    assert (inference.values["region"], inference.values["region_aliases"]) == ("California", ("CA",))
    assert inference.values["postal_code_pattern"] == r"\d{5}(?:\d{4})?"  # ZIP+4 written without its hyphen


def test_other_countries_plans_and_shapes() -> None:
    assert phone_country(["020 7946 0018", "020 7946 0019", "0161 496 0000", "+44 131 496 0001"])[0] == "GB"
    assert phone_country(["(613) 555-0199", "+1 416 555 0123", "604-555-0101"])[0] == "CA"
    assert phone_country(["211", "n/a"]) == (None, "no phone numbers")
    pattern, prefix, _ = infer_postal_codes(["K1A 0B1", "M5V 2T6", "H2X1Y4", "H2X 1Y4", "K1A 0B1", "M5V2T6"])
    assert (pattern, prefix) == (r"[A-Z]\d[A-Z] ?\d[A-Z]\d", None)
    pattern, prefix, _ = infer_postal_codes(["75001", "75002", "75011", "7501"])  # one typo: noise
    assert (pattern, prefix) == (r"\d{5}", None)
    assert infer_region(["ON", "ON", "QC"], "CA")[:2] == ("Ontario", ("ON",))
    assert infer_region(["Ontario", "Ontario"], "CA")[:2] == ("Ontario", ("ON",))
    assert infer_region(["ON", "QC"], "CA") is None  # no majority: no region


def test_place_aliases_come_from_hyphenated_places_by_rule() -> None:
    # "Lake-Dale": "Lake" is a city of the catalog, so "Dale" alone names the county (so does "Port" for
    # "Port-Riverton": a rule, not judgement; the profile is editable); not "Opa-Locka" (neither side is a
    # place), nor "Lake-Springs" ("Springs" is part of another name)
    aliases = infer_place_aliases(
        ["Lake", "Riverton", "Opa-Locka", "Palm Springs"], ["Lake-Dale", "Port-Riverton", "Lake-Springs", ""]
    )
    assert aliases == {"Dale": "Lake-Dale", "Port": "Port-Riverton"}


def write_programs(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["ID", "Program", "City", "Province", "Postal", "Phone"])
        writer.writerows(rows)
    return path


MAPPING = {"id": "ID", "name": "Program", "city": "City", "state": "Province", "zip": "Postal", "phones": "Phone"}


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    return write_programs(
        tmp_path / "programs.csv",
        [
            ["1", "Food bank", "Ottawa", "ON", "K1A 0B1", "(613) 555-0199"],
            ["2", "Clinic", "Ottawa", "ON", "K2P 1L4", "613-555-0142"],
            ["3", "Shelter", "Toronto", "ON", "M5V 2T6", "+1 416 555 0123"],
        ],
    )


def test_a_re_ingest_keeps_what_a_person_edited(programs: Path, tmp_path: Path) -> None:
    target = tmp_path / "catalog"
    settings = load_settings()
    report = build_catalog(programs, target, settings, mapping=MAPPING, help_line="211")
    assert report.profile == str(target / PROFILE_FILE) and report.profile_kept == {}
    profile = CatalogProfile.load(target)
    assert (profile.country, profile.region, profile.region_aliases) == ("CA", "Ontario", ("ON",))
    assert (profile.help_line, profile.language) == ("211", "en")
    assert tomllib.loads((target / INFERRED_FILE).read_text(encoding="utf-8"))["region"] == "Ontario"

    text = (target / PROFILE_FILE).read_text(encoding="utf-8")  # a person edits the region, deletes the pattern
    text = text.replace('region = "Ontario"', 'region = "Eastern Ontario"')
    text = "\n".join(line for line in text.splitlines() if not line.startswith("postal_code_pattern"))
    (target / PROFILE_FILE).write_text(text, encoding="utf-8")
    write_programs(
        programs,
        [
            ["4", "Legal aid", "Montreal", "QC", "H2X 1Y4", "514-555-0100"],
            ["5", "Food bank", "Montreal", "QC", "H3B 2Y5", "514-555-0101"],
        ],
    )
    report = build_catalog(programs, target, settings, mapping=MAPPING, language="fr")
    profile = CatalogProfile.load(target)
    # the edit wins; the help line given once is a value a person set too
    assert profile.region == "Eastern Ontario" and report.profile_kept == {
        "region": "Eastern Ontario",
        "help_line": "211",
    }
    assert profile.postal_code_pattern == r"[A-Z]\d[A-Z] ?\d[A-Z]\d"  # deleted: inferred again
    assert profile.region_aliases == ("QC",)  # not edited: follows the data
    assert (profile.help_line, profile.language) == ("211", "fr")  # given once, kept; given again, replaced


def test_every_value_a_person_set_is_kept_and_reported(tmp_path: Path) -> None:
    """The walkthrough's edits of profile.toml (a name, a help line, the postal-code prefix, a place alias): a
    re-ingest keeps all four and says so, whether the data infers the field or not."""
    path = write_programs(
        tmp_path / "zips.csv",
        [
            [str(i), f"Program {i}", "Ottawa", "ON", f"3312{i}" + "-1966" * (i % 2), "(613) 555-0199"]
            for i in range(1, 5)
        ],
    )
    target = tmp_path / "c"
    build_catalog(path, target, load_settings(), mapping=MAPPING)
    assert CatalogProfile.load(target).postal_code_prefix == 5
    edits = {"name": "Lakeside 211", "help_line": "211", "postal_code_prefix": 3, "place_aliases": {"Bytown": "Ottawa"}}
    edited = tomllib.loads((target / PROFILE_FILE).read_text(encoding="utf-8")) | edits
    (target / PROFILE_FILE).write_text(tomli_w.dumps(edited), encoding="utf-8")
    report = build_catalog(path, target, load_settings(), mapping=MAPPING)
    assert report.profile_kept == edits, report.profile_kept
    profile = CatalogProfile.load(target)
    assert (profile.name, profile.help_line, profile.postal_code_prefix) == ("Lakeside 211", "211", 3)
    assert profile.place_aliases == {"Bytown": "Ottawa"}


def test_the_help_line_and_name_are_never_guessed(tmp_path: Path) -> None:
    """Records that all say "call 211" and list 211 as a phone still give no help line: only --help-line sets it."""
    path = write_programs(
        tmp_path / "helpline.csv",
        [
            ["1", "Riverton 211 Helpline", "Riverton", "ON", "K1A 0B1", "211"],
            ["2", "Food bank (call 211 after hours)", "Riverton", "ON", "K1A 0B2", "211"],
        ],
    )
    build_catalog(path, tmp_path / "c", load_settings(), mapping=MAPPING)
    profile = CatalogProfile.load(tmp_path / "c")
    assert profile.help_line is None and profile.name == ""
    assert "help_line" not in tomllib.loads((tmp_path / "c" / INFERRED_FILE).read_text(encoding="utf-8"))


def test_a_bad_language_is_refused_before_anything_is_written(programs: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--language 'english'"):
        build_catalog(programs, tmp_path / "c", load_settings(), mapping=MAPPING, language="english")
    assert not (tmp_path / "c").exists()


def test_the_ingest_command_prints_the_profile_path(programs: Path, tmp_path: Path) -> None:
    mapping = tmp_path / "mapping.toml"
    mapping.write_text(
        "\n".join(f'{k} = "{v}"' for k, v in MAPPING.items()) + "\n",
        encoding="utf-8",
    )
    target = tmp_path / "c"
    result = CliRunner().invoke(
        app,
        ["catalog", "ingest", str(programs), "--catalog", str(target), "--mapping", str(mapping), "--help-line", "211"],
        env={"COLUMNS": "400"},  # at 80 columns Rich folds the tmp path wherever its length puts the fold
    )
    assert result.exit_code == 0, result.output
    assert f"profile: {target / PROFILE_FILE}" in " ".join(result.output.split())
    assert "country: CA (phone numbers: 3 of 3 sampled are valid there)" in result.output
    assert "region: Ontario, also ON (state/province of 3 of 3 records)" in result.output
    assert CatalogProfile.load(target).help_line == "211"


def test_the_report_shows_the_numbers_as_a_person_reads_them() -> None:
    """Found by a new user: the crisis numbers were printed as Python dict text ({'label': ..., 'number': ...})."""
    inference = Inference(
        values={
            "crisis_numbers": [
                {"label": "Crisis Line, call or text", "number": "988"},
                {"label": "Kids", "number": "1"},
            ],
            "region": "Ontario",
        },
        how={"crisis_numbers": "from the country's file", "region": "state/province of 3 of 3 records"},
    )
    shown = inferred_values(inference)
    assert shown["crisis_numbers"] == "988: Crisis Line, call or text; 1: Kids (from the country's file)"
    assert shown["region"] == "Ontario (state/province of 3 of 3 records)"


def test_records_without_anything_regional_give_an_empty_profile() -> None:
    assert infer([ServiceRecord(id="1", service_id="1", name="x")]).values == {}
