"""`tracerag expand` and the expansion options of `tracerag search` on a small real collection (two HIPE-2022 French
files): the vocabulary model trained on demand and its neighbours shown with their frequencies; a search recorded
as a run (its id on stderr and in --json, its trail listed); chosen words, a synonym map and a boolean filter
applied; bad input exit 2 naming the place; an expansion that cannot be made exit 1, said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.ingest import read_documents
from tracerag.retrieval.boolean import matches, parse
from tracerag.trail import read_trail
from tracerag.trail.events import ExpansionEvent, ResultEvent, RunEvent, RunKind

runner = CliRunner()
FILES = ("HIPE-2022-v2.1-hipe2020-dev-fr.tsv", "HIPE-2022-v2.1-letemps-dev-fr.tsv")


@pytest.fixture(scope="module")
def collection(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("expand") / "collection"
    with Collection.open(path, load_settings(), mode="write", create=True) as col:
        for name in FILES:
            col.ingest(read_documents(hipe_dir / name, "hipe"), dense=False)
    return path


def invoke(*args: str):
    return runner.invoke(app, list(args))


@pytest.mark.needs_data("hipe2022")
def test_expand_needs_a_model_then_trains_one_and_shows_neighbours(collection):
    before = invoke("expand", "gouvernement", "-c", str(collection))
    assert before.exit_code == 2 and "tracerag expand --train" in before.output
    trained = invoke("expand", "--train", "gouvernement", "-n", "5", "-c", str(collection))
    assert trained.exit_code == 0, trained.output
    assert "gouvernement: 78 occurrences" in trained.output and "words/s" in trained.output
    shown = invoke("expand", "gouvernement", "Paris", "--json", "-c", str(collection))
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    assert data["stale"] is None and set(data["words"]) == {"gouvernement", "paris"}
    neighbours = data["words"]["gouvernement"]["neighbours"]
    assert len(neighbours) == load_settings().expansion.neighbours
    assert all(nb["count"] >= 3 and nb["word"] != "gouvernement" for nb in neighbours)


@pytest.mark.needs_data("hipe2022")
def test_a_search_is_a_recorded_run_with_its_additions_and_filter(collection, tmp_path):
    synonyms = tmp_path / "map.tsv"
    synonyms.write_text("gouvernement\tgouvernemens\n", encoding="utf-8")
    result = invoke(
        "search",
        "gouvernement",
        "-c",
        str(collection),
        "-k",
        "5",
        "--add",
        "ministère",
        "--synonyms",
        str(synonyms),
        "--filter",
        "NOT Paris AND date:1900..2000",
        "--json",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    run_id = data["run_id"]
    assert f"run {run_id}" in result.stderr
    assert data["expansion"]["searched"] == "gouvernement gouvernemens ministère"
    with Collection.open(collection, load_settings(), mode="read") as col:
        docs = col.store.get_documents([r["doc_id"] for r in data["results"]])
        assert data["results"] and all(matches(parse("NOT Paris AND date:1900..2000"), d) for d in docs.values())
        trail = col.trails_dir / f"{run_id}.jsonl"
    events = read_trail(trail)
    assert isinstance(events[0], RunEvent) and events[0].run is RunKind.SEARCH
    expansion = next(e for e in events if isinstance(e, ExpansionEvent))
    assert expansion.added == ["ministère"] and expansion.synonyms[0]["added"] == ["gouvernemens"]
    assert expansion.filter_expression == "NOT Paris AND date:1900..2000" and expansion.allowed
    assert isinstance(events[-1], ResultEvent)
    assert [r.doc_id for r in events[-1].ranking] == [r["doc_id"] for r in data["results"]]
    listed = invoke("trail", "list", "-c", str(collection))
    assert run_id in listed.output


@pytest.mark.needs_data("hipe2022")
def test_bad_input_is_exit_2_naming_the_place(collection, tmp_path):
    bad_filter = invoke("search", "gouvernement", "-c", str(collection), "--filter", "Paris AND (Lyon")
    assert bad_filter.exit_code == 2 and "at character 11" in bad_filter.output
    bad_map = tmp_path / "bad.tsv"
    bad_map.write_text("a\tb\nlonely\n", encoding="utf-8")
    mapped = invoke("search", "gouvernement", "-c", str(collection), "--synonyms", str(bad_map))
    assert mapped.exit_code == 2 and f"{bad_map}:2:" in mapped.output.replace("\n", "")
    unknown = invoke("search", "gouvernement", "-c", str(collection), "--expand", "magic")
    assert unknown.exit_code == 2 and "expected llm, translate or vocab" in unknown.output


@pytest.mark.needs_data("hipe2022")
def test_a_filter_no_document_satisfies_lists_nothing_and_says_so(collection):
    """Found by a new user: the listing (not --json) crashed on the empty search's missing parameters."""
    for expression in ("zzzqqqxx", "title:zzzqqqxx"):
        result = invoke("search", "gouvernement", "-c", str(collection), "--filter", expression)
        assert result.exit_code == 0, result.output
        assert "0 documents" in result.stdout and "Traceback" not in result.output


@pytest.mark.needs_data("hipe2022")
def test_an_expansion_that_cannot_be_made_is_exit_1_and_said(collection):
    result = invoke("search", "gouvernement", "-c", str(collection), "--expand", "llm", "--json")
    assert result.exit_code == 1, result.output
    assert "no language model is configured" in result.stderr
    data = json.loads(result.stdout)
    assert data["results"] and data["failures"]


@pytest.mark.needs_data("hipe2022")
def test_the_vocabulary_model_is_trained_at_ingest_when_the_settings_say_so(hipe_dir, tmp_path):
    config = tmp_path / "settings.toml"
    config.write_text("[expansion]\nvocabulary_at_ingest = true\n", encoding="utf-8")
    path = tmp_path / "collection"
    source = hipe_dir / FILES[0]
    result = invoke("ingest", str(source), "-c", str(path), "--format", "hipe", "--no-dense", "--config", str(config))
    assert result.exit_code == 0, result.output
    assert "vocabulary model trained" in result.stderr
    shown = invoke("expand", "conseil", "--json", "-c", str(path))
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["words"]["conseil"]["neighbours"]
    plain = invoke("ingest", str(source), "-c", str(tmp_path / "other"), "--format", "hipe", "--no-dense")
    assert plain.exit_code == 0 and not (tmp_path / "other" / "vocabulary").exists()
