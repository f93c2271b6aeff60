"""`tracerag eval` end to end on a real benchmark (a few queries) and on a BEIR folder."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.eval.trec import read_run

runner = CliRunner()


def test_eval_cranfield_writes_results_table_and_trec_runs(tmp_path: Path, datasets_dir: Path) -> None:
    out = tmp_path / "report"
    args = [
        "eval",
        "--benchmark",
        "cranfield",
        "--runs",
        "bm25,hybrid",
        "--no-dense",
        "--limit",
        "20",
        "--out",
        str(out),
        "--collections",
        str(tmp_path / "cols"),
        "--data",
        str(datasets_dir),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "results.json").read_text())
    assert summary["benchmark"] == "cranfield" and summary["queries"] == 20 and summary["documents"] == 1400
    assert set(summary["runs"]) == {"bm25", "hybrid"}
    for metrics in summary["runs"].values():
        # the first 20 queries, lexical (hybrid equals bm25 on them: no date, no query short enough for a phrase);
        # measured 2026-12-01, index version 3
        assert metrics["nDCG@10"] >= 0.32  # measured 0.3377
        assert metrics["R@100"] >= 0.74  # measured 0.7639
        assert metrics["MRR@10"] >= 0.51  # measured 0.5371
    table = (out / "results.md").read_text()
    assert "| bm25 |" in table and "nDCG@10" in table
    assert (out / "plots" / "recall_at_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    run = read_run(out / "runs" / "bm25.trec")
    assert len(run) == 20 and all(len(ranking) == 100 for ranking in run.values())
    # the collection is built once: a second eval reuses it (nothing added)
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert json.loads((out / "results.json").read_text())["ingest"]["added"] == 0


def test_eval_on_a_beir_folder(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    docs = [
        {"_id": "d1", "title": "", "text": "La grève des mineurs de Carmaux."},
        {"_id": "d2", "title": "", "text": "Le budget de la ville de Lyon."},
        {"_id": "d3", "title": "", "text": "Les ouvriers verriers en grève."},
    ]
    (beir / "corpus.jsonl").write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "grève mineurs"}))
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    out = tmp_path / "report"
    result = runner.invoke(
        app,
        [
            "eval",
            "--benchmark",
            str(beir),
            "--runs",
            "bm25",
            "--no-dense",
            "--out",
            str(out),
            "--collections",
            str(tmp_path / "cols"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads((out / "results.json").read_text())["runs"]["bm25"]["MRR@10"] == 1.0


def test_eval_list_and_errors(tmp_path: Path) -> None:
    listed = runner.invoke(app, ["eval", "--list"])
    assert listed.exit_code == 0
    for name in ("hipe-entities", "ocr-known-item", "cranfield", "piaf-fr", "xling-piaf", "miami211-services"):
        assert name in listed.output
    unknown = runner.invoke(app, ["eval", "--benchmark", "nope", "--out", str(tmp_path)])
    assert unknown.exit_code == 2 and "unknown benchmark" in unknown.output
    bad_run = runner.invoke(app, ["eval", "--benchmark", "cranfield", "--runs", "bm26"])
    assert bad_run.exit_code == 2 and "unknown run" in bad_run.output


def test_named_run_configurations_from_a_file(tmp_path: Path, datasets_dir: Path) -> None:
    config = tmp_path / "runs.toml"
    config.write_text(
        '[runs.lexical]\nchannels = ["bm25", "phrase"]\nfusion = "rrf"\n\n'
        '[runs.bm25-10y]\nchannels = ["bm25"]\nwindows = "10y"\n'
    )
    out = tmp_path / "report"
    args = [
        "eval",
        "--benchmark",
        "cranfield",
        "--runs",
        "bm25,lexical,bm25-10y,hybrid,hybrid-rrf",
        "--run-config",
        str(config),
        "--no-dense",
        "--limit",
        "5",
        "--out",
        str(out),
        "--collections",
        str(tmp_path / "cols"),
        "--data",
        str(datasets_dir),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert set(json.loads((out / "results.json").read_text())["runs"]) == {
        "bm25",
        "lexical",
        "bm25-10y",
        "hybrid",
        "hybrid-rrf",
    }
    # the eval calibrated its collection as an ingest does (Cranfield: 1,400 documents), and said how it fused
    (collection,) = (tmp_path / "cols").iterdir()
    assert (collection / "calibration.json").is_file()
    config.write_text('[runs.bad]\nchannels = ["bm26"]\n')
    bad = runner.invoke(app, args)
    assert bad.exit_code == 2 and "runs.bad.channels" in bad.output
    config.write_text('[runs.bad]\nchannels = ["bm25"]\nfusion = "borda"\n')
    bad = runner.invoke(app, args)
    assert bad.exit_code == 2 and "runs.bad.fusion must be one of calibrated, rrf" in bad.output


def test_a_benchmark_collection_takes_the_vectors_of_another_benchmark_holding_the_same_texts(tmp_path: Path) -> None:
    """hipe-entities-dated holds hipe-entities' corpus: built second, it embeds nothing (any benchmark collection
    of the same model lends the vectors of the texts both hold)."""
    from tracerag.config import load_settings
    from tracerag.eval.datasets import Benchmark
    from tracerag.eval.runner import build_collection
    from tracerag.model import Document

    docs = [Document("d0", "La grève des mineurs de Carmaux continue."), Document("d1", "Die Arbeiter streiken.")]
    first = Benchmark("first", "", docs, {}, {})
    second = Benchmark("second", "", [*docs, Document("d2", "A third text, new here.")], {}, {})
    col, report = build_collection(first, tmp_path, load_settings(), dense=True)
    col.close()
    assert report.embedded == 2
    col, report = build_collection(second, tmp_path, load_settings(), dense=True)
    col.close()
    assert report.embedded == 1  # only the text the first benchmark did not hold
