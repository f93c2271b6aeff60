"""The recorded catalog conversation (tests/fixtures/trails/catalog.jsonl, written by
`python -m tests.fixtures.record_trails`, shown by tests/trail/test_show.py) is what the assistant records now,
on the catalog these tests build: the same events modulo run id, times and paths. A change to parsing, checking
or replying that alters the conversation fails here, naming the first event that differs; once the change is
wanted, regenerate the fixtures with that one command and review the diff. (Owned with the trail fixtures.)"""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.record_trails import record_catalog
from tests.trail import CATALOG_TRAIL, assert_records_the_fixture
from tracerag.catalog.model import ConstraintKind
from tracerag.trail import read_trail
from tracerag.trail.events import CatalogFilterEvent, CatalogOutcome, CatalogReplyEvent, CatalogVariant


def test_the_catalog_fixture_is_what_the_assistant_records_now(catalog: Path, tmp_path: Path):
    assert_records_the_fixture(record_catalog(catalog, tmp_path / "catalog.jsonl"), CATALOG_TRAIL)


def test_the_catalogs_closed_sets_are_typed_end_to_end():
    """Outcome, variant and pre-filtered kinds are the trail's enums when read back, not free strings (the catalog
    once kept its own string copies of them and converted at the emit)."""
    events = read_trail(CATALOG_TRAIL)
    filters = [e for e in events if isinstance(e, CatalogFilterEvent)]
    replies = [e for e in events if isinstance(e, CatalogReplyEvent)]
    assert filters and replies
    assert all(isinstance(e.variant, CatalogVariant) for e in filters)
    kinds = [k for e in filters for k in e.sql_kinds]
    assert kinds and all(isinstance(k, ConstraintKind) for k in kinds)
    assert all(isinstance(e.outcome, CatalogOutcome) for e in replies)
