"""Fusion over saved TREC runs (`eval/fuse.py`, `tracerag fuse`) and saved runs scored by `tracerag eval
--run-file`: hand-computed fusions with Pyserini's argument meanings, and on real data the RRF of a run's saved
channel rankings equal to the run fused in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.errors import ConfigError
from tracerag.eval.datasets import load_benchmark
from tracerag.eval.fuse import fuse_runs, parse_weights
from tracerag.eval.harness import evaluate_runs
from tracerag.eval.runner import RunSpec, select_queries, strictly_decreasing
from tracerag.eval.trec import Run, read_run, write_run
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.fusion import Method, max_pool

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first

runner = CliRunner()

# q1: run 1 ranks d1 d2 d3, run 2 ranks d3 d4 d1; q2 only in run 1, q3 only in run 2.
RUN1: Run = {"q1": [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)], "q2": [("d1", 1.0)]}
RUN2: Run = {"q1": [("d3", 1.0), ("d4", 0.75), ("d1", 0.5)], "q3": [("d5", 5.0)]}


def test_rrf_of_runs_by_hand_as_pyserini_computes_it():
    fused = fuse_runs([RUN1, RUN2])
    # q1: d1 1/61 + 1/63 = d3 1/63 + 1/61 (equal: written by doc id), d2 1/62 = d4 1/62
    assert fused == {
        "q1": [("d1", 1 / 61 + 1 / 63), ("d3", 1 / 61 + 1 / 63), ("d2", 1 / 62), ("d4", 1 / 62)],
        "q2": [("d1", 1 / 61)],  # a query of one run only is fused too
        "q3": [("d5", 1 / 61)],
    }


def test_depth_cuts_each_run_and_k_cuts_the_fused_list():
    # depth 2: d1 (1st in run 1) and d3 (1st in run 2) lose their 3rd-place votes
    assert fuse_runs([RUN1, RUN2], depth=2)["q1"] == [("d1", 1 / 61), ("d3", 1 / 61), ("d2", 1 / 62), ("d4", 1 / 62)]
    assert [d for d, _ in fuse_runs([RUN1, RUN2], k=2)["q1"]] == ["d1", "d3"]
    assert fuse_runs([RUN1, RUN2], rrf_k=10)["q1"][0] == ("d1", 1 / 11 + 1 / 13)


def test_equal_fused_scores_are_written_by_doc_id_as_pyserini_writes_them():
    # rrf k=2: "z" 1st in run 1 only scores 1/3; "a" 4th in both scores 1/6 + 1/6 = 1/3. The retrieval's own order
    # puts "z" first (better single rank); a TREC file, like Pyserini's, orders equal scores by doc id.
    one: Run = {"q": [("z", 4.0), ("f1", 3.0), ("f2", 2.0), ("a", 1.0)]}
    two: Run = {"q": [("g1", 4.0), ("g2", 3.0), ("g3", 2.0), ("a", 1.0)]}
    assert [d for d, _ in fuse_runs([one, two], rrf_k=2)["q"]] == ["a", "g1", "z", "f1", "g2", "f2", "g3"]


def test_comb_sum_and_comb_mnz_of_runs_by_hand():
    # min-max per run and query: run 1 d1 1, d2 .5, d3 0; run 2 d3 1, d4 .5, d1 0
    assert fuse_runs([RUN1, RUN2], Method.COMBSUM)["q1"] == [("d1", 1.0), ("d3", 1.0), ("d2", 0.5), ("d4", 0.5)]
    assert fuse_runs([RUN1, RUN2], Method.COMBMNZ)["q1"] == [("d1", 2.0), ("d3", 2.0), ("d2", 0.5), ("d4", 0.5)]
    # weights 1, 2: d3 0 + 2 × 1 = 2, d1 1 + 0 = 1, d4 2 × .5 = 1, d2 .5
    weighted = fuse_runs([RUN1, RUN2], Method.COMBSUM, weights=[1, 2])["q1"]
    assert weighted == [("d3", 2.0), ("d1", 1.0), ("d4", 1.0), ("d2", 0.5)]
    assert fuse_runs([RUN1, RUN2], Method.WRRF, weights=[1, 0.5])["q1"][0] == ("d1", 1 / 61 + 0.5 / 63)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fuse_runs([RUN1]), "at least 2 runs"),
        (lambda: fuse_runs([RUN1, RUN2], Method.WRRF, weights=[1.0]), "1 weights for 2 runs"),
        (lambda: fuse_runs([RUN1, RUN2], Method.RRF, weights=[1.0, 1.0]), "wrrf"),
        (lambda: fuse_runs([RUN1, RUN2], depth=0), "at least 1"),
        (lambda: parse_weights("1,x"), "'x' is not a number"),
        (lambda: parse_weights("1,-2"), "at least 0"),
    ],
)
def test_bad_fusion_arguments_are_config_errors_naming_them(call, message):
    with pytest.raises(ConfigError, match=message):
        call()


def test_a_channels_equal_scores_are_written_apart_in_the_channels_order(tmp_path: Path) -> None:
    # the date channel ranks equal dates by the pool's rank; a TREC reader would put "a" before "b"
    ordered = strictly_decreasing([("b", 0.5), ("a", 0.5), ("c", 0.25)])
    assert [d for d, _ in ordered] == ["b", "a", "c"]
    assert ordered[1][1] < 0.5 and ordered[1][1] == pytest.approx(0.5, rel=1e-15)
    write_run(tmp_path / "r.trec", {"q": ordered}, "t")
    assert [d for d, _ in read_run(tmp_path / "r.trec")["q"]] == ["b", "a", "c"]


def test_fuse_command_writes_the_fused_run(tmp_path: Path) -> None:
    write_run(tmp_path / "a.trec", RUN1, "a")
    write_run(tmp_path / "b.trec", RUN2, "b")
    out = tmp_path / "out" / "fused.trec"
    args = ["fuse", str(tmp_path / "a.trec"), str(tmp_path / "b.trec"), "--out", str(out)]
    result = runner.invoke(app, [*args, "--method", "combmnz", "--weights", "1,1"])
    assert result.exit_code == 0, result.output
    assert read_run(out) == fuse_runs([RUN1, RUN2], Method.COMBMNZ)
    assert out.read_text().splitlines()[0].split() == ["q1", "Q0", "d1", "1", "2.0", "combmnz_minmax"]
    result = runner.invoke(app, [*args, "--rrf.k", "10", "--depth", "2", "--k", "1", "--runtag", "mine"])
    assert result.exit_code == 0, result.output
    assert out.read_text().splitlines() == [
        f"q1 Q0 d1 1 {1 / 11!r} mine",
        f"q2 Q0 d1 1 {1 / 11!r} mine",
        f"q3 Q0 d5 1 {1 / 11!r} mine",
    ]


def test_fuse_command_errors_exit_2_naming_the_problem(tmp_path: Path) -> None:
    write_run(tmp_path / "a.trec", RUN1, "a")
    (tmp_path / "bad.trec").write_text("q1 Q0 d1 1 0.5 t\nq1 Q0 d2 one 0.4 t\n")
    out = str(tmp_path / "f.trec")
    cases = [
        ([str(tmp_path / "a.trec"), str(tmp_path / "missing.trec")], "missing.trec: no such run file"),
        ([str(tmp_path / "a.trec"), str(tmp_path / "bad.trec")], "bad.trec:2: rank 'one' is not an integer"),
        ([str(tmp_path / "a.trec")], "at least 2 runs"),
        ([str(tmp_path / "a.trec")] * 2 + ["--weights", "1,2"], "wrrf"),
    ]
    for args, message in cases:
        # wide: at 80 columns Rich folds the tmp path wherever its length puts the fold (inside "missing.trec")
        result = runner.invoke(app, ["fuse", *args, "--out", out], env={"COLUMNS": "400"})
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.split()), result.output
    assert not Path(out).exists()


def test_eval_run_file_errors(tmp_path: Path, datasets_dir: Path) -> None:
    write_run(tmp_path / "other.trec", {"not-a-cranfield-query": [("d", 1.0)]}, "x")
    base = ["eval", "--benchmark", "cranfield", "--data", str(datasets_dir), "--out", str(tmp_path / "r")]
    for extra, message in [
        (["--run-file", "nameless"], "expected NAME=PATH"),
        (["--run-file", f"x={tmp_path / 'nope.trec'}"], "no such file"),
        (["--run-file", f"x={tmp_path / 'other.trec'}"], "none of its queries is a query of cranfield"),
        (["--runs", "bm25", "--run-file", f"bm25={tmp_path / 'other.trec'}"], "also in --runs"),
    ]:
        result = runner.invoke(app, base + extra)
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.split()), result.output


def test_rrf_of_saved_channel_runs_is_the_in_process_fusion(tmp_path: Path, hipe_collection, datasets_dir: Path):
    """The dated entity queries make both bm25 and the date channel act: the harness saves each channel's own
    ranking beside the fused run, `tracerag fuse` rebuilds the fusion from those files alone, and `tracerag eval
    --run-file` scores both files without a collection: the same documents in the same order (ties apart), the same
    figures."""
    bench = load_benchmark("hipe-entities-dated", datasets_dir)
    queries = select_queries(bench, limit=60)
    report = tmp_path / "report"
    # the in-process fusion as plain RRF, which is what `tracerag fuse` does by default
    rrf_spec = RunSpec("bm25+date", ("bm25", "date"), fusion="rrf")
    evaluate_runs(bench, hipe_collection.collection, ["bm25+date"], {"bm25+date": rrf_spec}, queries, report)
    channels = sorted((report / "runs" / "channels").glob("*.trec"))
    assert [p.name for p in channels] == ["bm25+date.bm25.trec", "bm25+date.date.trec"]
    fused = tmp_path / "fused.trec"
    result = runner.invoke(app, ["fuse", *map(str, channels), "--k", "100", "--out", str(fused)])
    assert result.exit_code == 0, result.output
    in_process = read_run(report / "runs" / "bm25+date.trec")
    from_files = read_run(fused)
    assert len(in_process) == 60
    assert set(from_files) == set(in_process)
    for qid, ranking in in_process.items():
        # the same documents in the same order, except that two documents with equal fused scores are written by
        # doc id (as Pyserini writes them), where the search had put the one with the better single rank first
        score = dict(from_files[qid])
        assert [d for d, _ in from_files[qid]] == sorted((d for d, _ in ranking), key=lambda d: (-score[d], d))

    # a channel file carries the channel's own scores (each document's best chunk), in the channel's order
    first = queries[0]
    ranking = Retriever(hipe_collection.collection).search(
        SearchRequest(bench.queries[first].text, k=100, channels=("bm25", "date"), windows="")
    )
    for path, channel in zip(channels, ("bm25", "date"), strict=True):
        pooled = max_pool(ranking.channel_hits[channel])
        saved = read_run(path)[first]
        assert [d for d, _ in saved] == [e.doc_id for e in pooled]
        assert [s for _, s in saved] == pytest.approx([e.score for e in pooled], rel=1e-12)

    scored = tmp_path / "scored"
    files = {"in-process": report / "runs" / "bm25+date.trec", "fused": fused, "bm25": channels[0]}
    args = ["eval", "--benchmark", "hipe-entities-dated", "--limit", "60", "--data", str(datasets_dir)]
    args += [f"--run-file={name}={path}" for name, path in files.items()] + ["--out", str(scored)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((scored / "results.json").read_text())
    assert summary["collection"] is None  # saved runs only: nothing was built
    runs = summary["runs"]
    assert list(runs) == ["in-process", "fused", "bm25"]
    assert runs["fused"] == runs["in-process"]
    assert set(summary["pvalues_vs_first"]) == {"fused", "bm25"}
    # the year in these queries is what the date channel adds; measured 2026-12-01 (index version 3), 60 queries:
    # fused nDCG@10 0.6838, R@10 0.8667; the bm25 channel alone 0.5234, 0.7611
    assert runs["fused"]["nDCG@10"] >= 0.66
    assert runs["fused"]["R@10"] >= runs["bm25"]["R@10"] + 0.05
    assert "| fused |" in (scored / "results.md").read_text()
