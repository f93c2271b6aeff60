"""The recorded catalog conversation (tests/fixtures/trails/catalog.jsonl, written by
`python -m tests.fixtures.record_trails`, shown by tests/trail/test_show.py) is what the assistant records now,
on the catalog these tests build: the same events modulo run id, times and paths. A change to parsing, checking
or replying that alters the conversation fails here, naming the first event that differs; once the change is
wanted, regenerate the fixtures with that one command and review the diff. (Owned with the trail fixtures.)"""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.record_trails import record_catalog
from tests.trail import CATALOG_TRAIL, assert_records_the_fixture


def test_the_catalog_fixture_is_what_the_assistant_records_now(catalog: Path, tmp_path: Path):
    assert_records_the_fixture(record_catalog(catalog, tmp_path / "catalog.jsonl"), CATALOG_TRAIL)
