"""The catalog benchmark: generated requests carry gold sets computed by strict filtering, and the eval command
writes its tables."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.catalog import built
from tracerag.catalog import filters
from tracerag.catalog.assistant import CatalogAssistant
from tracerag.catalog.ingest import build_catalog
from tracerag.catalog.store import CatalogStore
from tracerag.cli import app
from tracerag.config import load_settings
from tracerag.eval import catalog_bench
from tracerag.text import fold_key

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first


def test_generated_requests_have_strict_gold_sets(catalog: Path):
    store = CatalogStore.open(catalog / "catalog.sqlite")
    try:
        queries = catalog_bench.generate(store, 120, seed=3)
        again = catalog_bench.generate(store, 120, seed=3)
        assert [q.text for q in queries] == [q.text for q in again]  # reproducible
        assert len(queries) == 120 and set(Counter(q.category for q in queries)) == set(catalog_bench.CATEGORIES)
        records = store.get(store.all_ids())
        for q in queries:
            if q.category == "no_location":
                assert not q.gold and not any(s.kind.value in ("city", "zip") for s in q.structural)
                continue
            if q.category == "not_in_catalog":
                assert not q.gold and q.topic in q.text  # checked below
                continue
            assert q.gold, q.text
            assert all(filters.satisfies(records[g], q.structural) for g in q.gold)
            if q.category != "named":  # the gold set is every record meeting the constraints, nothing less
                assert set(q.gold) == {r.id for r in records.values() if filters.satisfies(r, q.structural)}
            assert not any(t.startswith("Y") for s in q.structural if s.kind.value == "service_type" for t in s.values)
    finally:
        store.close()


def test_catalog_eval_command_writes_results(catalog: Path, tmp_path: Path):
    out = tmp_path / "report"
    result = CliRunner().invoke(
        app,
        [
            "catalog",
            "eval",
            "--catalog",
            str(catalog),
            "--queries",
            "36",
            "--variants",
            "none,location+hours",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output

    def no_nan(constant: str) -> None:
        raise AssertionError(f"results.json holds {constant}, which is not JSON")

    summary = json.loads((out / "results.json").read_text(), parse_constant=no_nan)
    for variant in ("none", "location+hours"):
        assert next(iter(summary["results"][variant])) == "all"  # the pooled row first, then the categories
        assert summary["results"][variant]["location"]["clarify_rate"] is None  # no request to ask it on
        assert summary["results"][variant]["no_location"]["constraint_satisfaction"] is None  # nothing recommended
        overall = summary["results"][variant]["all"]
        assert overall["constraint_satisfaction_parsed"] == 1.0  # every recommendation checked on its own fields
        assert overall["out_of_catalog"] == 0
        assert overall["clarify_rate"] == 1.0
        assert overall["satisfied_city"] == 1.0
        assert overall["not_held_correct"] == 1.0 and overall["false_refusal"] == 0.0
    assert "piano tuning" in summary["not_in_catalog_topics"]["kept"]
    report = (out / "results.md").read_text()
    assert "| location+hours | all | 1.000 / " in report and "Not-in-catalog topics verified absent: " in report
    assert "| constraint satisfaction (parsed / intended) |" in report
    assert "nan" not in report and re.search(r"\| location \|[^\n]*\| – \|", report)  # a rate over no request
    rows = [line.split(" | ")[1] for line in report.splitlines() if line.startswith("| none | ")]
    assert rows[0] == "all" and "location" in rows[1:]


def test_not_in_catalog_topics_are_verified_absent_when_the_benchmark_runs(catalog: Path):
    with CatalogStore.open(catalog / "catalog.sqlite") as store:
        check = catalog_bench.verify_topics(store)
        planted = catalog_bench.verify_topics(store, ["food pantry", "bowling alley", "piano tuning"])
    assert {"piano tuning", "helicopter rental", "yacht charter"} <= set(check.kept)
    assert ("dog grooming", "record 'OUTREACH MISSION'") in check.dropped  # "dog" and "grooming" in one record
    assert planted.kept == ("piano tuning",)
    assert dict(planted.dropped)["bowling alley"] == "taxonomy term 'Bowling'"  # names a term of the catalog
    assert dict(planted.dropped)["food pantry"].startswith(("taxonomy term", "record"))


def test_not_in_catalog_requests_name_real_places_of_the_catalog_some_misspelt(catalog: Path):
    with CatalogStore.open(catalog / "catalog.sqlite") as store:
        queries = [q for q in catalog_bench.generate(store, 350, seed=5) if q.category == "not_in_catalog"]
        kept = set(catalog_bench.verify_topics(store).kept)
        gazetteer = store.gazetteer()
    cities = set(gazetteer.cities.values())
    assert len(queries) == 50 and {q.topic for q in queries} <= kept
    kinds = Counter()
    for q in queries:
        if not q.place:
            kinds["nowhere"] += 1
        elif q.place in gazetteer.zips:
            kinds["zip"] += 1
            assert q.place in q.text
        else:
            assert q.place in cities
            kinds["city" if q.place in q.text else "misspelt"] += 1
            if q.place not in q.text:  # one letter dropped, and no other city of the catalog
                said = q.text.removesuffix("?").rsplit(" in ", 1)[1]
                assert len(said) == len(q.place) - 1 and fold_key(said) not in {fold_key(c) for c in cities}
    assert min(kinds.values()) >= 3 and set(kinds) == {"nowhere", "zip", "city", "misspelt"}, kinds


def test_not_held_requests_are_refused_and_held_ones_are_not(catalog: Path, tmp_path: Path):
    """Quality floors under the rates measured on 1,000 requests (not held: 1.000 said nothing matches; false
    refusals: 0.000): here 280 requests, 40 per category."""
    with CatalogStore.open(catalog / "catalog.sqlite") as store:
        queries = catalog_bench.generate(store, 280, seed=11)
        with CatalogAssistant(catalog, load_settings(), trail_dir=tmp_path) as assistant:
            answer = catalog_bench.answer_with(assistant)
            table = catalog_bench.summarise(catalog_bench.evaluate(queries, store, answer, 5))
    assert table["not_in_catalog"]["queries"] == 40
    assert table["not_in_catalog"]["not_held_correct"] >= 0.95
    assert table["all"]["false_refusal"] <= 0.01
    assert table["named"]["recall_at_k"] >= 0.7  # held names are found, not refused (measured 0.78 on 1,000)


# ------------------------------------------------------------------------------------- other directories


@pytest.fixture(scope="module")
def sf_catalogs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two San Francisco directories, built as the README says (~6 s together)."""
    # built once per run (lexical, as build_catalog's default); this module's own copies
    return {"sf211": built.sf211(tmp_path_factory), "sfyouth": built.sfyouth(tmp_path_factory)}


@pytest.fixture
def plain_catalog(tmp_path: Path) -> Path:
    """A directory with names, cities and zips only: no taxonomy, no hours, no languages."""
    source = tmp_path / "plain.csv"
    rows = [["ID", "Name", "City", "Zip"]] + [
        [str(i), f"{kind} number {i}", city, f"1234{i % 3}"]
        for i, (kind, city) in enumerate([("Pantry", "Riverton"), ("Clinic", "Lakeview")] * 10)
    ]
    source.write_text("\n".join(",".join(r) for r in rows) + "\n", encoding="utf-8")
    target = tmp_path / "plain"
    build_catalog(source, target, load_settings(), mapping={"id": "ID", "name": "Name", "city": "City", "zip": "Zip"})
    return target


def test_a_catalog_gets_the_categories_it_can_support_and_says_why(plain_catalog: Path, tmp_path: Path) -> None:
    with CatalogStore.open(plain_catalog / "catalog.sqlite") as store:
        skipped = catalog_bench.unsupported_categories(store)
        queries = catalog_bench.generate(store, 40, seed=1)
    assert set(skipped) == {"location", "eligibility", "hours", "combination", "no_location"}
    assert skipped["hours"].startswith("no taxonomy") and skipped["location"].startswith("no taxonomy")
    assert len(queries) == 40 and {q.category for q in queries} == {"named", "not_in_catalog"}
    out = tmp_path / "report"
    result = CliRunner().invoke(
        app,
        [
            "catalog",
            "eval",
            "--catalog",
            str(plain_catalog),
            "--queries",
            "20",
            "--variants",
            "none",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "results.json").read_text())
    assert summary["skipped_categories"] == skipped and summary["by_category"]["hours"] == 0
    assert "Skipped category hours: no taxonomy" in (out / "results.md").read_text()


def test_the_sf_youth_programs_lack_hours_and_the_benchmark_says_so(sf_catalogs: dict[str, Path]) -> None:
    with CatalogStore.open(sf_catalogs["sfyouth"] / "catalog.sqlite") as store:
        assert catalog_bench.unsupported_categories(store) == {
            "hours": "no opening hours: no record has a schedule that could be read",
            "no_location": "one place: a request naming none is answered for the profile's home_place 'San Francisco'",
        }
        queries = catalog_bench.generate(store, 120, seed=2)
    combined = [q for q in queries if q.category == "combination"]
    assert combined and all(
        {s.kind.value for s in q.structural} == {"city", "service_type", "language"} for q in combined
    )
    assert not any(s.kind.value == "weekday" for q in queries for s in q.structural)


@pytest.mark.parametrize(("name", "recall"), [("sf211", 0.80), ("sfyouth", 0.80)])
def test_the_sf_directories_meet_their_floors(sf_catalogs: dict[str, Path], tmp_path: Path, name: str, recall: float):
    """Floors under the rates measured on 210 requests (seed 11, location+hours): sf211 R@5 0.887, sfyouth 0.899;
    not held said nothing matches 1.000 on both; false refusals 0.000 and 0.011."""
    catalog = sf_catalogs[name]
    with CatalogStore.open(catalog / "catalog.sqlite") as store:
        queries = catalog_bench.generate(store, 210, seed=11)
        with CatalogAssistant(catalog, load_settings(), trail_dir=tmp_path) as assistant:
            answer = catalog_bench.answer_with(assistant)
            table = catalog_bench.summarise(catalog_bench.evaluate(queries, store, answer, 5))
    overall = table["all"]
    assert overall["out_of_catalog"] == 0 and overall["clarify_rate"] is None  # one place: nothing to ask
    assert overall["not_held_correct"] >= 0.95 and overall["false_refusal"] <= 0.03
    assert overall["recall_at_k"] >= recall
