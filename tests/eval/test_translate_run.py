"""The eval run hybrid+translate (`eval/runner.py`): it needs a model, and with one it searches the query's
translations into the collection's language beside the query, on a small BEIR folder of French documents asked
in English."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tracerag.config import load_settings
from tracerag.errors import ConfigError
from tracerag.eval.datasets import beir
from tracerag.eval.runner import RUNS, build_collection, search_all
from tracerag.llm import RawAnswer, StructuredLLM, Usage

CHANNELS = ("bm25", "date", "phrase")  # a lexical collection: the run's channels without the dense one


class Translator:
    name = "scripted"
    model = "scripted-translator"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def generate(self, messages, *, json_schema, temperature, max_tokens) -> RawAnswer:
        self.asked.append(messages[1].content)
        answer = {"fr": "verriers en grève"}
        return RawAnswer(json.dumps(answer), Usage(60, 20))


def test_hybrid_translate_needs_a_model_and_searches_the_translation(tmp_path: Path) -> None:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    docs = [
        {"_id": "d1", "title": "", "text": "La grève des mineurs de Carmaux.", "language": "fr"},
        {"_id": "d2", "title": "", "text": "Le budget de la ville de Lyon.", "language": "fr"},
        {"_id": "d3", "title": "", "text": "Les ouvriers verriers en grève.", "language": "fr"},
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "glassworkers on strike"}))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td3\t1\n")
    bench = beir(folder)
    col, _ = build_collection(bench, tmp_path / "cols", load_settings(), dense=False)
    spec = RUNS["hybrid+translate"]
    assert spec.expand == ("translate",)
    lexical = replace(spec, channels=CHANNELS)
    with col:
        with pytest.raises(ConfigError, match="give one"):
            search_all(col, bench, ["q1"], lexical)
        translator = Translator()
        run = search_all(col, bench, ["q1"], lexical, llm=StructuredLLM(translator))
        plain = search_all(col, bench, ["q1"], replace(RUNS["hybrid"], channels=CHANNELS))
    assert len(translator.asked) == 1 and "The languages: fr." in translator.asked[0]
    assert plain["q1"] == []  # the English finds nothing in French
    assert [doc for doc, _ in run["q1"]][:2] == ["d3", "d1"]  # the translation finds the glassworkers first
