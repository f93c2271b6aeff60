"""The eval report's time windows: each run's share of its top k per window against the qrels' and the corpus's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.eval.diagnostics import window_shares
from tracerag.eval.report import window_share_table

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first

runner = CliRunner()


def test_window_shares_against_qrels_and_corpus() -> None:
    dates = {"a": 1881, "b": 1889, "c": 1902, "d": None, "e": 1910}
    runs = {"r": {"q1": [("a", 3.0), ("c", 2.0)], "q2": [("b", 1.0), ("d", 1.0), ("zz", 0.5)]}}
    qrels = {"q1": {"c": 1, "a": 0}, "q2": {"e": 2}}
    out = window_shares(runs, qrels, dates, k=2, years=10)
    assert out["windows"] == ["1880-1889", "1900-1909", "1910-1919", "undated"]
    assert out["corpus"] == {"1880-1889": 0.4, "1900-1909": 0.2, "1910-1919": 0.2, "undated": 0.2}
    assert out["qrels"] == {"1880-1889": 0.0, "1900-1909": 0.5, "1910-1919": 0.5, "undated": 0.0}  # grade 0 is not
    # top 2: q1 a, c; q2 b, d (tie by id): the undated document counted as such
    assert out["runs"]["r"] == {"1880-1889": 0.5, "1900-1909": 0.25, "1910-1919": 0.0, "undated": 0.25}
    for shares in (out["corpus"], out["qrels"], out["runs"]["r"]):
        assert sum(shares.values()) == pytest.approx(1.0)
    table = window_share_table(out)
    assert "| window | corpus | qrels | r |" in table and "| 1910-1919 | 20.0% | 50.0% | 0.0% |" in table
    auto = window_shares(runs, qrels, dates, k=2)
    assert auto["window"] == "5y" and auto["chosen"].startswith("auto:")  # 1881-1910 in at most ten windows


def test_the_eval_report_shows_the_runs_pull_in_time(tmp_path: Path, datasets_dir: Path) -> None:
    out = tmp_path / "report"
    args = ["eval", "--benchmark", "hipe-entities-dated", "--runs", "bm25,hybrid+windows", "--no-dense"]
    args += ["--limit", "25", "--out", str(out), "--collections", str(tmp_path / "cols"), "--data", str(datasets_dir)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "results.json").read_text())
    windows = summary["diagnostics"]["time_windows"]
    assert set(windows["runs"]) == {"bm25", "hybrid+windows"}
    for shares in (windows["corpus"], windows["qrels"], *windows["runs"].values()):
        assert sum(shares.values()) == pytest.approx(1.0)
    assert windows["corpus"]["undated"] > 0  # HIPE's undated documents are a window, not dropped
    assert windows["qrels"]["undated"] == 0  # the dated queries' relevant documents all have a date
    assert "Where the top 10 come from in time" in (out / "results.md").read_text()
