"""The catalog benchmark: generated requests carry gold sets computed by strict filtering, and the eval command
writes its tables."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from tracerag.catalog import filters
from tracerag.catalog.store import CatalogStore
from tracerag.cli import app
from tracerag.eval import catalog_bench


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
    summary = json.loads((out / "results.json").read_text())
    for variant in ("none", "location+hours"):
        overall = summary["results"][variant]["all"]
        assert overall["out_of_catalog"] == 0
        assert overall["clarify_rate"] == 1.0
        assert overall["satisfied_city"] == 1.0
    assert "| location+hours | all |" in (out / "results.md").read_text()
