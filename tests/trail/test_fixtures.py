"""The recorded trail fixtures cannot drift from the code: the agent's run is recorded again here, as
`python -m tests.fixtures.record_trails` records it, and must give the same events as
tests/fixtures/trails/agent.jsonl, modulo run id, times and the machine's paths and versions. (The catalog
conversation's twin is tests/catalog/test_trail_fixture.py, on the catalog the catalog tests build.)

A change that alters what the agent or the trail writes fails here, naming the first event that differs; once
the change is wanted, regenerate the fixtures with that one command and review the diff."""

from __future__ import annotations

from tests.fixtures.record_trails import agent_documents, build_collection, record_agent
from tests.trail import AGENT_TRAIL, assert_records_the_fixture


def test_the_agent_fixture_is_what_the_code_records_now(tmp_path, datasets_dir):
    collection = build_collection(tmp_path / "collection", agent_documents(datasets_dir))
    assert_records_the_fixture(record_agent(collection, tmp_path / "agent.jsonl"), AGENT_TRAIL)
