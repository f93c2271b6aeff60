"""Page regions at the front doors: `search --explain` / `--json` and the exports (RIS, CSL-JSON, CSV) give the
IIIF link to where a cited span lies on the scan; a collection ingested without boxes says it has none and
nothing breaks. The collection is the real BnL page head with coordinates (tests/fixtures/alto_regions)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.ingest.alto_regions import NO_BOXES
from tracerag.trail.reader import read_trail

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BASE = "https://iiif.example.org/iiif/{doc_id}/{page_id}"
REGION_URL = re.compile(
    r"https://iiif\.example\.org/iiif/bnl-1858-07-10-p1-head/P1/pct:[\d.]+,[\d.]+,[\d.]+,[\d.]+/max/0/default\.jpg"
)
DEMO_BNL = Path(__file__).resolve().parents[2] / "src/tracerag/data/demo/bnl"


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    return CliRunner()


def _ingest(runner: CliRunner, source: Path, path: Path) -> Path:
    result = runner.invoke(
        app, ["ingest", str(source), "-c", str(path), "--format", "alto", "--date", "1858-07-10", "--no-dense"]
    )
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture(scope="module")
def boxed(runner, tmp_path_factory) -> Path:
    return _ingest(runner, FIXTURES / "alto_regions", tmp_path_factory.mktemp("boxed") / "c")


def test_explain_and_json_give_the_region_url(runner, boxed):
    shown = runner.invoke(app, ["search", "Luxemburger Zeitung", "-c", str(boxed), "--explain", "--iiif-base", BASE])
    assert shown.exit_code == 0, shown.output
    text, unwrapped = " ".join(shown.output.split()), "".join(shown.output.split())  # rich wraps at 80 columns
    assert "page P1 (1): box 92,117,2300,695 mm10" in text and REGION_URL.search(unwrapped)
    assert "time windows (1y, auto:" in text  # where the results come from in time, beside the regions
    # and the search's trail has it as an event of its own
    [windows] = [e for t in (boxed / "trails").glob("*.jsonl") for e in read_trail(t) if e.kind == "windows"]
    assert (windows.window, windows.results, windows.searched) == ("1y", 1, 1)
    assert [(r.window, r.results, r.documents) for r in windows.rows] == [("1858", 1, 1)]
    data = json.loads(runner.invoke(app, ["search", "Luxemburger", "-c", str(boxed), "--json"]).stdout)
    [result] = data["results"]
    [region] = result["regions"]
    assert region["page_id"] == "P1" and region["unit"] == "mm10" and region["region"].startswith("pct:")
    assert region["url"] is None and "no IIIF base" in region["note"]  # no base given: the box, and why no link
    assert "regions" not in data["params"]
    bad = runner.invoke(app, ["search", "Luxemburger", "-c", str(boxed), "--iiif-base", "ftp://x/{page}"])
    assert bad.exit_code == 2


def test_a_collection_without_boxes_says_so_and_nothing_breaks(runner, tmp_path):
    plain = _ingest(runner, DEMO_BNL, tmp_path / "plain")
    data = json.loads(runner.invoke(app, ["search", "Luxemburger", "-c", str(plain), "--json"]).stdout)
    assert data["results"] and all(r["regions"] == [] for r in data["results"])
    assert data["params"]["regions"] == NO_BOXES
    shown = runner.invoke(app, ["search", "Luxemburger", "-c", str(plain), "--explain", "--iiif-base", BASE])
    assert shown.exit_code == 0 and "no page regions" in " ".join(shown.output.split())


def test_the_exports_carry_the_region(runner, boxed):
    asked = runner.invoke(app, ["ask", "Luxemburger Zeitung Journal", "-c", str(boxed), "--json"])
    assert asked.exit_code in (0, 1), asked.output  # without a model the run says so and still ranks the sources
    run_id = json.loads(asked.stdout)["run_id"]
    [trail] = (boxed / "trails").glob(f"*{run_id}*.jsonl")
    assert any(e.kind == "windows" for e in read_trail(trail))  # the run's searches say where they came from

    def export(fmt: str, *extra: str) -> str:
        result = runner.invoke(app, ["trail", "export", run_id, "-c", str(boxed), "--format", fmt, *extra])
        assert result.exit_code == 0, result.output
        return result.stdout

    ris = export("ris", "--iiif-base", BASE)
    assert any(REGION_URL.fullmatch(line.removeprefix("UR  - ")) for line in ris.splitlines())
    assert "Page region: page P1: https://" in " ".join(ris.split())
    [item] = json.loads(export("csl-json", "--iiif-base", BASE))
    assert REGION_URL.fullmatch(item["URL"]) and "Page region" in item["note"]
    [row] = list(csv.DictReader(io.StringIO(export("csv"))))
    # no base: the box and why there is no link, in the cell
    assert row["page_regions"].startswith("page P1: box ") and "no IIIF base" in row["page_regions"]


def test_the_selection_export_carries_the_region_of_each_accepted_span(runner, boxed):
    """A researcher's accepted source links to where its cited words lie on the scan, as a run's export does."""
    from tracerag.config import load_settings
    from tracerag.research.selection import Decision, open_selections

    doc_id = "bnl-1858-07-10-p1-head"
    searched = json.loads(runner.invoke(app, ["search", "Luxemburger Zeitung", "-c", str(boxed), "--json"]).stdout)
    [result] = [r for r in searched["results"] if r["doc_id"] == doc_id]
    span = (result["best_chunk"]["start"], result["best_chunk"]["end"])  # the cited chunk, as review keeps it
    with open_selections(boxed, load_settings(None), write=True) as selection:
        selection.decide("Where was the paper printed?", doc_id, Decision.ACCEPTED, span=span, who="t")

    def export(fmt: str, *extra: str) -> str:
        result = runner.invoke(app, ["selection", "export", "Where was", "-c", str(boxed), "--format", fmt, *extra])
        assert result.exit_code == 0, result.output
        return result.stdout

    [row] = list(csv.DictReader(io.StringIO(export("csv", "--iiif-base", BASE))))
    assert REGION_URL.search(row["page_regions"]), row["page_regions"]
    [item] = json.loads(export("csl-json", "--iiif-base", BASE))
    assert REGION_URL.fullmatch(item["URL"])
    [plain] = list(csv.DictReader(io.StringIO(export("csv"))))
    assert "no IIIF base" in plain["page_regions"]
    bad = runner.invoke(app, ["selection", "export", "Where was", "-c", str(boxed), "--iiif-base", "ftp://x"])
    assert bad.exit_code == 2
