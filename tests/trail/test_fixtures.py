"""The recorded trail fixtures cannot drift from the code: the agent's run and the researcher's runs are recorded
again here, as `python -m tests.fixtures.record_trails` records them, and must give the same events as
tests/fixtures/trails/agent.jsonl and tests/fixtures/trails/research/*.jsonl, modulo run ids (the run's own and
those it names), times, replayed latencies and the machine's paths and versions. (The catalog conversation's twin
is tests/catalog/test_trail_fixture.py, on the catalog the catalog tests build.)

A change that alters what the agent, the research wing or the trail writes fails here, naming the first event
that differs; once the change is wanted, regenerate the fixtures with that one command and review the diff."""

from __future__ import annotations

from tests.fixtures.record_trails import agent_documents, build_collection, record_agent, record_research
from tests.trail import AGENT_TRAIL, RESEARCH_RUNS, RESEARCH_TRAILS, assert_records_the_fixture


def test_the_agent_fixture_is_what_the_code_records_now(tmp_path, datasets_dir):
    collection = build_collection(tmp_path / "collection", agent_documents(datasets_dir))
    assert_records_the_fixture(record_agent(collection, tmp_path / "agent.jsonl"), AGENT_TRAIL)


def test_the_research_fixtures_are_what_the_code_records_now(tmp_path, datasets_dir):
    """Search with model variants, a judge run over it, a keyed review of the judged candidates and a cited draft
    from what the review accepted: each run's trail against its fixture."""
    collection = build_collection(tmp_path / "collection", agent_documents(datasets_dir))
    fresh = record_research(collection, tmp_path / "research")
    assert list(fresh) == list(RESEARCH_RUNS)
    assert sorted(p.stem for p in RESEARCH_TRAILS.glob("*.jsonl")) == sorted(RESEARCH_RUNS)  # no stale fixture
    for name, path in fresh.items():
        assert_records_the_fixture(path, RESEARCH_TRAILS / f"{name}.jsonl")
