"""A named benchmark whose data is not where the settings say: one line naming what is missing and how to point
at the data (exit 2), never a traceback or a misleading 'no judged query selected'."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.errors import DataUnavailableError
from tracerag.eval.datasets import load_benchmark

runner = CliRunner()


@pytest.mark.parametrize(
    ("benchmark", "says"),
    [("hipe-entities", "no documents found under"), ("cranfield", "cran.all.1400 is missing")],
)
def test_a_benchmark_without_its_data_names_what_is_missing(tmp_path: Path, benchmark: str, says: str) -> None:
    with pytest.raises(DataUnavailableError, match=says):
        load_benchmark(benchmark, tmp_path)
    with pytest.raises(DataUnavailableError, match="does not exist; pass --data DIR or set TRACERAG_DATASETS"):
        load_benchmark(benchmark, tmp_path / "nowhere")
    result = runner.invoke(
        app, ["eval", "--benchmark", benchmark, "--runs", "bm25", "--no-dense", "--data", str(tmp_path)]
    )
    assert result.exit_code == 2 and says.replace(" ", "") in "".join(result.output.split())  # wrapped lines
