"""`tracerag demo` end to end on the real HIPE sample, as CI's smoke test (dense channel included)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerag.cli import app

runner = CliRunner()


@pytest.mark.slow
def test_demo_runs_explained_searches_on_local_data(hipe_dir: Path, tmp_path: Path) -> None:
    collection = tmp_path / "demo"
    result = runner.invoke(app, ["demo", "--data", str(hipe_dir), "--collection", str(collection), "--per-file", "3"])
    assert result.exit_code == 0, result.output
    assert "read 9 · added 9" in result.output
    # every demo query is shown with its explanation: fused score, channel rows and the cited span
    assert result.output.count("--explain") == 5  # 4 searches + the closing hint
    assert "RRF" in result.output and "chars " in result.output
    assert "dense " in result.output and "bm25 " in result.output
    # a second run finds everything unchanged (idempotent ingest)
    again = runner.invoke(app, ["demo", "--data", str(hipe_dir), "--collection", str(collection), "--per-file", "3"])
    assert again.exit_code == 0, again.output
    assert "unchanged 9" in again.output


def test_demo_offline_without_data_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACERAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRACERAG_DEMO_DATA", raising=False)
    result = runner.invoke(app, ["demo", "--offline", "--collection", str(tmp_path / "demo")])
    assert result.exit_code == 2, result.output
    assert "--data" in result.output
    assert not (tmp_path / "demo").exists()
