"""A benchmark collection built lexically (`--no-dense`) and then evaluated with a dense run gets its vectors
computed then, rather than an error telling the user to run `tracerag embed` on a cache folder."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tracerag.cli import app

runner = CliRunner()


def test_a_dense_run_embeds_a_collection_built_lexically_before(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    docs = [
        {"_id": "d1", "title": "", "text": "La grève des mineurs de Carmaux."},
        {"_id": "d2", "title": "", "text": "Le budget de la ville de Lyon."},
    ]
    (beir / "corpus.jsonl").write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "grève des mineurs"}))
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    common = ["eval", "--benchmark", str(beir), "--collections", str(tmp_path / "cols")]
    lexical = runner.invoke(app, [*common, "--runs", "bm25", "--no-dense", "--out", str(tmp_path / "a")])
    assert lexical.exit_code == 0, lexical.output
    dense = runner.invoke(app, [*common, "--runs", "bm25,dense", "--out", str(tmp_path / "b")])
    assert dense.exit_code == 0, dense.output
    runs = json.loads((tmp_path / "b" / "results.json").read_text())["runs"]
    assert runs["dense"]["MRR@10"] == 1.0
