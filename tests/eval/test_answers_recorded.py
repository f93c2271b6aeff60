"""The local model's graded answers, recorded once and replayed here as CI runs them: the answerable PIAF
questions as a selection (benchmarks/answers/piaf_selected.jsonl: each names its gold paragraph and two others),
drafted, citation-checked and judged by Qwen2.5-Coder-1.5B (`--llm local`), every call recorded under
benchmarks/results/answers-local/piaf-selected/recorded/llm. The replay must give the committed figures exactly.

A selection is not searched, so a collection of just the named paragraphs, read in place from the datasets folder
and ingested without vectors, gives the drafter the very text it was shown when the run was recorded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.eval.answers import read_questions
from tracerag.eval.datasets import piaf_corpus

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = REPO / "benchmarks" / "answers" / "piaf_selected.jsonl"
RECORDED_RUN = REPO / "benchmarks" / "results" / "answers-local" / "piaf-selected"


@pytest.mark.needs_data("piaf")
def test_the_local_model_s_recorded_answers_replay_to_its_committed_figures(datasets_dir, tmp_path):
    wanted = {doc_id for q in read_questions(QUESTIONS) for doc_id in q.sources or []}
    documents = [d for d in piaf_corpus(datasets_dir)[0] if d.id in wanted]
    assert {d.id for d in documents} == wanted
    collection = tmp_path / "piaf-selected"
    with Collection.open(collection, load_settings(), mode="write", create=True) as col:
        col.ingest(iter(documents), dense=False)
    out = tmp_path / "replayed"
    recorded = RECORDED_RUN / "recorded" / "llm"
    args = ["eval", "--answers", str(QUESTIONS), "-c", str(collection), "--llm", f"replay:{recorded}"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)])
    committed = json.loads((RECORDED_RUN / "results.json").read_text(encoding="utf-8"))
    replayed = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert result.exit_code == 0, result.output  # every call it makes was recorded
    assert [(r["id"], r["scores"]) for r in replayed["rows"]] == [(r["id"], r["scores"]) for r in committed["rows"]]
    assert replayed["aggregates"] == committed["aggregates"]
    assert [r["answer"] for r in replayed["rows"]] == [r["answer"] for r in committed["rows"]]
