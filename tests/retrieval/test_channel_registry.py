"""The retriever knows its channels only through the registry: a channel registered here, in a test, with no
other edit, is searched, fused, explained and recorded in the trail like the built-in ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tracerag.collection import Collection
from tracerag.config import CHANNELS, load_settings
from tracerag.errors import ConfigError
from tracerag.model import Document, Filter, Hit
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.explain import explain
from tracerag.retrieval.registry import (
    ChannelKind,
    ChannelRanking,
    Need,
    Prepared,
    QueryContext,
    Reading,
    kinds,
    names,
    registered,
    run_order,
)
from tracerag.trail import EVENT_ADAPTER
from tracerag.trail.events import ChannelEvent, FusionEvent
from tracerag.trail.ranking import ranking_events

DOCS = [
    Document("apple-1", "An apple a day keeps the doctor away.", title="Apples"),
    Document("apple-2", "The apple harvest was late this year.", title="Harvest"),
    Document("zebra-1", "A zebra crossed the road near the orchard.", title="Zebra"),
    Document("other-1", "Nothing here but stones and water.", title="Stones"),
]


@dataclass(frozen=True)
class Zebras:
    """A toy channel: whatever the query, the chunks that mention zebras (through the engine's BM25)."""

    collection: Collection
    name: str = "zebra"

    def search(self, query: str, flt: Filter, k: int, earlier: Mapping[str, Sequence[Hit]]) -> ChannelRanking:
        found = [h for hits in self.collection.engine.bm25("zebra", k, flt).values() for h in hits]
        return ChannelRanking([Hit(h.chunk_id, h.doc_id, self.name, i + 1, h.score) for i, h in enumerate(found)])


def _prepare(ctx: QueryContext) -> Prepared:
    return Prepared(Zebras(ctx.collection), Reading(True, "zebras, whatever was asked"))


ZEBRA = ChannelKind("zebra", frozenset({Need.TEXT}), _prepare)


@pytest.fixture(scope="module")
def col(tmp_path_factory: pytest.TempPathFactory):
    path: Path = tmp_path_factory.mktemp("registry") / "collection"
    collection = Collection.open(path, load_settings(embed={"model": "none"}), mode="write", create=True)
    collection.ingest(DOCS, dense=False)
    yield collection
    collection.close()


def test_the_built_in_channels_run_in_their_order():
    assert names() == CHANNELS  # the settings' channels, in their order
    assert [k.name for k in run_order(kinds())] == ["bm25", "dense", "phrase", "entity", "date"]  # date: their pool
    assert all(k.needs for k in kinds())


def test_a_registered_channel_is_searched_fused_explained_and_recorded(col):
    retriever = Retriever(col)
    with registered(ZEBRA):
        ranking = retriever.search(SearchRequest("apple", k=10, channels=("bm25", "zebra")))
    assert [h.doc_id for h in ranking.channel_hits["zebra"]] == ["zebra-1"]
    assert set(ranking.doc_ids()) == {"apple-1", "apple-2", "zebra-1"}  # fused with what BM25 found
    zebra = next(d for d in ranking.documents if d.doc_id == "zebra-1")
    assert [e.channel for e in zebra.channels] == ["zebra"]
    assert ranking.params["active_channels"] == ["bm25", "zebra"]
    assert ranking.params["channel_readings"]["zebra"] == {"acts": True, "why": "zebras, whatever was asked"}
    assert ranking.params["fusion"]["normalisation"]["zebra"] == "max"  # the calibrated fusion, its registered scale

    events = ranking_events(ranking, "apple", step=1)
    channels = {e.channel: e for e in events if isinstance(e, ChannelEvent)}
    assert [r[0] for r in channels["zebra"].ranking] == ["zebra-1"]
    assert channels["zebra"].reading == "zebras, whatever was asked"
    fusion = next(e for e in events if isinstance(e, FusionEvent))
    assert {"zebra": 1} in [r["channels"] for r in fusion.ranking]
    for event in events:  # each line validates as the trail writes and reads it
        line = event.model_dump_json()
        assert EVENT_ADAPTER.validate_json(line) == event

    assert "zebra" in str(explain(ranking, col))


def test_an_unregistered_channel_is_refused(col):
    retriever = Retriever(col)
    with registered(ZEBRA):
        pass
    with pytest.raises(ConfigError, match=r"unknown channels \['zebra'\]"):
        retriever.search(SearchRequest("apple", channels=("zebra",)))


def test_a_name_is_registered_once():
    with registered(ZEBRA), pytest.raises(ValueError, match="registered already"), registered(ZEBRA):
        pass
