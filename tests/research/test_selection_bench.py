"""A researcher's selection scores retrieval runs (`tracerag eval --benchmark selection:QUESTION -c DIR`): on the
small real collection of the recorded agent run, a saved run with known expected values (accepted = relevant,
rejected = judged not relevant, undecided = unjudged), and the real bm25 run scored the same as its own ranking
says."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from tests.fixtures.record_trails import QUESTION
from tests.trail import small_collection
from tracerag.cli import app
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import ConfigError
from tracerag.eval.harness import run_evaluation
from tracerag.eval.selection_bench import QUERY_ID
from tracerag.eval.trec import write_run
from tracerag.research.selection import Decision, open_selections
from tracerag.retrieval import Retriever
from tracerag.retrieval.search import SearchRequest

FRENCH, HOSTILE, GAZETTE = "EXP-1888-08-03-a-i0030", "hostile-1", "gaz-1881-05-27"
UNJUDGED = ("lpj-1881-a", "10169_Poole1860")
UNDECIDED = "11614109_1886-06-22_5_67_001"


@pytest.fixture()
def col(tmp_path_factory, datasets_dir, tmp_path):
    path = tmp_path / "collection"
    shutil.copytree(small_collection(tmp_path_factory, datasets_dir).path, path)
    with open_selections(path, load_settings(), write=True) as store:
        for doc, decision in ((FRENCH, Decision.ACCEPTED), (GAZETTE, Decision.ACCEPTED),
                              (HOSTILE, Decision.REJECTED), (UNDECIDED, Decision.UNDECIDED)):  # fmt: skip
            store.decide(QUESTION, doc, decision, who="historian")
    return path


def test_a_saved_run_scores_its_known_values(col, tmp_path):
    # rejected, unjudged, accepted, unjudged, undecided, accepted
    ranking = [HOSTILE, UNJUDGED[0], FRENCH, UNJUDGED[1], UNDECIDED, GAZETTE]
    saved = tmp_path / "saved.trec"
    write_run(saved, {QUERY_ID: [(d, 1.0 / (i + 1)) for i, d in enumerate(ranking)]}, "saved")
    out = tmp_path / "report"
    evaluation = run_evaluation(
        "selection:Which newspapers", load_settings(), ["bm25"], out, run_files={"saved": saved}, collection=col
    )
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert evaluation.queries == 1 and summary["benchmark"] == f"selection:{QUESTION}"
    runs = summary["runs"]["saved"]
    assert runs["R@10"] == 1.0 and runs["R@1"] == 0.0
    assert runs["MRR@10"] == pytest.approx(1 / 3)
    assert runs["MAP"] == pytest.approx((1 / 3 + 2 / 6) / 2)
    against = summary["selection"]["saved"]
    assert against["judged@10"] == pytest.approx(3 / 6)  # hostile, French, Gazette; the undecided one is unjudged
    assert (against["accepted@10"], against["rejected@10"]) == (2, 1)
    # the condensed list: hostile (rejected), French, Gazette (the undecided and unjudged removed)
    assert against["MRR@10'"] == pytest.approx(1 / 2)
    assert against["P@10'"] == pytest.approx(2 / 10)
    assert against["MAP'"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert "Against the selection" in (out / "results.md").read_text(encoding="utf-8")
    assert summary["pvalues_vs_first"] == {}  # one question is one pair: no significance test


def test_the_bm25_run_is_scored_by_its_own_ranking(col, tmp_path):
    out = tmp_path / "report"
    run_evaluation(f"selection:{QUESTION}", load_settings(), ["bm25"], out, collection=col)
    summary = json.loads((out / "results.json").read_text(encoding="utf-8"))
    with Collection.open(col, load_settings(), mode="read") as opened:
        found = Retriever(opened).search(SearchRequest(QUESTION, k=100, channels=("bm25",))).doc_ids()
    ranks = [found.index(d) + 1 for d in (FRENCH, GAZETTE) if d in found]
    assert summary["runs"]["bm25"]["R@10"] == pytest.approx(sum(r <= 10 for r in ranks) / 2)
    assert summary["runs"]["bm25"]["MRR@10"] == pytest.approx(1 / min(ranks) if ranks and min(ranks) <= 10 else 0)
    judged = {FRENCH, GAZETTE, HOSTILE}
    top = found[:10]
    assert summary["selection"]["bm25"]["judged@10"] == pytest.approx(sum(d in judged for d in top) / len(top))


def test_the_cli_and_its_errors(col, tmp_path):
    runner = CliRunner()
    out = tmp_path / "report"
    result = runner.invoke(
        app, ["eval", "--benchmark", "selection:Which", "-c", str(col), "--runs", "bm25", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "judged@10" in result.stdout
    no_dir = runner.invoke(app, ["eval", "--benchmark", "selection:Which", "--runs", "bm25", "--out", str(out)])
    assert no_dir.exit_code == 2 and "pass -c DIR" in no_dir.output
    with pytest.raises(ConfigError, match="accepts no source yet"):
        with open_selections(col, load_settings(), write=True) as store:
            store.decide("Floods in 1910", HOSTILE, Decision.REJECTED, who="h")
        run_evaluation("selection:Floods", load_settings(), ["bm25"], out, collection=col)
