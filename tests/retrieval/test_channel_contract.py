"""The behaviour every channel owes fusion, as the engine has its contract: `ChannelContract` holds the tests, a
subclass per channel and corpus supplies how to run it and what it should and should not find.

Every channel returns its hits in rank order (ranks 1..n, scores not rising, each chunk once), at most k of
them (a shorter k is a prefix of a longer one), only chunks the filter admits (the same ones, in the same order,
as an unfiltered search keeps of them), the same answer twice, and nothing at all, rather than noise, when it
has nothing to say: an empty or punctuation-only query, words no chunk holds, no phrase (phrase), no usable
vector (dense), no date in the query or nothing to date (date), a filter that admits nothing.

Three corpora: the engine contract's hand-made fr/de/en chunks, with their 4-d vectors (so the dense channel runs,
its query vectors made by a toy encoder: the mean vector of the chunks holding a query word), the whole of
HIPE-2022 (the session collection, lexical: bm25, phrase and date), and three HIPE-2022 files with the entities
spaCy and the gazetteer predict (entity).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tests.engine.test_contract import CHUNKS, DIM, VECTORS
from tests.ingest.test_entities import french_entities  # noqa: F401  (the entity channel's collection)
from tracerag.engine import SearchEngine
from tracerag.engine.embedded import EmbeddedEngine
from tracerag.engine.points import corpus_path
from tracerag.model import Filter, Hit
from tracerag.retrieval.channels import Bm25Channel, DateChannel, DenseChannel, PhraseChannel
from tracerag.retrieval.entities import EntityChannel

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first

POOL_DEPTH = 100  # the date channel ranks the pool another channel found, this deep
HALF_LIFE_DAYS = 365.0
NOTHING = Filter(corpora=("no-such-corpus",))


class ChannelContract:
    """Subclass with `search`, `admits` and the queries below."""

    name: str
    found: tuple[str, ...]  # queries the channel has something to say about (at least 2 hits each)
    silent: tuple[str, ...]  # queries it has nothing to say about
    narrowing: Filter  # a filter that keeps some but not all of what `found[0]` finds

    def search(self, query: str, k: int, flt: Filter | None = None) -> list[Hit]:
        raise NotImplementedError

    def admits(self, hit: Hit, flt: Filter) -> bool:
        raise NotImplementedError

    def test_hits_come_in_rank_order(self):
        for query in self.found:
            hits = self.search(query, 50)
            assert len(hits) >= 2, query
            assert [h.rank for h in hits] == list(range(1, len(hits) + 1)), query
            assert {h.channel for h in hits} == {self.name}
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True), query
            assert len({h.chunk_id for h in hits}) == len(hits), query
            assert all(h.chunk_id.split("#")[0] == h.doc_id for h in hits)

    def test_k_is_respected_and_a_shorter_k_is_a_prefix(self):
        for query in self.found:
            longer = self.search(query, 50)
            for k in (1, 2):
                assert self.search(query, k) == longer[:k], (query, k)

    def test_the_filter_is_respected(self):
        query = self.found[0]
        everything = self.search(query, POOL_DEPTH)
        kept = self.search(query, POOL_DEPTH, self.narrowing)
        assert kept and len(kept) < len(everything)
        assert all(self.admits(h, self.narrowing) for h in kept)

        # filtering takes nothing away from what is admitted, and changes no order: what the unfiltered search
        # found and the filter admits is found again, in the same order (a deeper pool may add more between).
        # Hits with equal scores may come in either order (the engine does not promise one among ties).
        def in_order(hits: list[Hit]) -> list[tuple[float, str]]:
            return sorted((-h.score, h.chunk_id) for h in hits)

        admitted = [h for h in everything if self.admits(h, self.narrowing)]
        again = [h for h in kept if h.chunk_id in {a.chunk_id for a in admitted}]
        assert admitted and in_order(again) == in_order(admitted)
        assert [h.score for h in again] == [h.score for h in admitted]
        assert self.search(query, 10, NOTHING) == []

    def test_the_same_query_gives_the_same_answer(self):
        for query in self.found:
            assert self.search(query, 20) == self.search(query, 20)

    @pytest.mark.parametrize("degenerate", ["", "   ", " ?! ", "« »"])
    def test_an_empty_query_finds_nothing(self, degenerate):
        assert self.search(degenerate, 10) == []

    def test_nothing_to_say_is_nothing(self):
        for query in self.silent:
            assert self.search(query, 10) == [], query


# -- the hand-made corpus ---------------------------------------------------------------------------------

META = {c.chunk_id: c for c in CHUNKS}
DATES = {c.doc_id: (c.date_start, c.date_end) for c in CHUNKS if c.date_start}


@pytest.fixture(scope="module")
def fixture_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SearchEngine]:
    engine = EmbeddedEngine(tmp_path_factory.mktemp("channels") / "index", DIM, writer=True)
    engine.upsert(CHUNKS, VECTORS)
    engine.flush()
    yield engine
    engine.close()


def toy_vector(query: str) -> np.ndarray:
    """The mean vector of the chunks holding a word of the query (lowercased): zero when none does."""
    words = {w.strip(".,;:!?«»'\"").lower() for w in query.split()}
    rows = [i for i, c in enumerate(CHUNKS) if words & {w.strip(".,;:!?'").lower() for w in c.text.split()}]
    return VECTORS[rows].mean(axis=0) if rows else np.zeros(DIM, dtype=np.float32)


def fixture_admits(hit: Hit, flt: Filter) -> bool:
    chunk = META[hit.chunk_id]
    return (not flt.corpora or bool(set(flt.corpora) & set(corpus_path(chunk.corpus)))) and (
        not flt.languages or chunk.language in flt.languages
    )


class OnFixture(ChannelContract):
    @pytest.fixture(autouse=True)
    def _engine(self, fixture_engine: SearchEngine) -> None:
        self.engine = fixture_engine

    def admits(self, hit: Hit, flt: Filter) -> bool:
        return fixture_admits(hit, flt)


class TestBm25OnFixture(OnFixture):
    name = "bm25"
    found = ("ouvriers port grève", "grève strike Streik", '"ouvriers du port" maire')
    silent = ("zeppelin", "Zeppelin Luftschiff")
    narrowing = Filter(corpora=("b",))

    def search(self, query: str, k: int, flt: Filter | None = None) -> list[Hit]:
        return Bm25Channel(self.engine).run(query, k, flt)


class TestPhraseOnFixture(OnFixture):
    name = "phrase"
    # two quoted phrases, one per language: the phrase channel's only multi-hit case here
    found = ('"ouvriers du port" "strike at the docks" "les grévistes"',)
    silent = ("grève", "docks strike", "ouvriers port", "one two three four five six seven")
    narrowing = Filter(languages=("fr",))

    def search(self, query: str, k: int, flt: Filter | None = None) -> list[Hit]:
        return PhraseChannel(self.engine).run(query, k, flt)


class TestDenseOnFixture(OnFixture):
    name = "dense"
    found = ("grévistes", "strike Liverpool")
    silent = ("zeppelin",)  # no word the toy encoder knows: a zero vector, which points nowhere
    narrowing = Filter(corpora=("a",))

    def search(self, query: str, k: int, flt: Filter | None = None) -> list[Hit]:
        return DenseChannel(self.engine, toy_vector(query)).run(query, k, flt)

    def test_a_vector_that_is_not_a_number_finds_nothing(self):
        vector = np.full(DIM, np.nan, dtype=np.float32)
        assert DenseChannel(self.engine, vector).run("grévistes", 10, None) == []


class TestDateOnFixture(OnFixture):
    name = "date"
    found = ("grève strike ouvriers 1890", "strike docks 1911")
    silent = ("grève strike ouvriers", "zeppelin 1890", "Streik 1890")  # no date; nothing found; found undated
    narrowing = Filter(corpora=("a",))

    def search(self, query: str, k: int, flt: Filter | None = None) -> list[Hit]:
        channel = DateChannel.for_query(query, HALF_LIFE_DAYS)
        if channel is None:
            return []
        pool = Bm25Channel(self.engine).run(query, POOL_DEPTH, flt)
        return channel.rank(pool, {d: DATES[d] for d in {h.doc_id for h in pool} if d in DATES}, k)


# -- HIPE-2022 ----------------------------------------------------------------------------------------------


class OnHipe(ChannelContract):
    @pytest.fixture(autouse=True)
    def _collection(self, hipe_collection) -> None:
        self.collection = hipe_collection.collection
        self.engine = self.collection.engine

    def admits(self, hit: Hit, flt: Filter) -> bool:
        doc = self.collection.store.get_documents([hit.doc_id], text=False)[hit.doc_id]
        return (not flt.corpora or bool(set(flt.corpora) & set(corpus_path(doc.corpus)))) and (
            not flt.languages or doc.language in flt.languages
        )


class TestBm25OnHipe(OnHipe):
    name = "bm25"
    found = ("conseil fédéral", "Paris London Berlin", "Krieg Frieden")
    silent = ("qwxzvbnmk", "zzqqxv wvvjjk")
    narrowing = Filter(corpora=("letemps/gdl",))

    def search(self, query: str, k: int, flt: Filter | None = None) -> list[Hit]:
        return Bm25Channel(self.engine).run(query, k, flt)


class TestPhraseOnHipe(OnHipe):
    name = "phrase"
    found = ("conseil fédéral", '"Conseil d\'Etat" "Grand Conseil"')
    silent = ("conseil", "fédéral conseil le la des qwxzvbnmk")
    narrowing = Filter(corpora=("letemps/gdl",))

    def search(self, query: str, k: int, flt: Filter | None = None) -> list[Hit]:
        return PhraseChannel(self.engine).run(query, k, flt)


class TestDateOnHipe(OnHipe):
    name = "date"
    found = ("conseil fédéral 1890", "Krieg 1915")
    silent = ("conseil fédéral", "Krieg Frieden")  # no date (a year alone is a word bm25 finds in the pool)
    narrowing = Filter(corpora=("letemps/gdl",))

    def search(self, query: str, k: int, flt: Filter | None = None) -> list[Hit]:
        channel = DateChannel.for_query(query, HALF_LIFE_DAYS)
        if channel is None:
            return []
        pool = Bm25Channel(self.engine).run(query, POOL_DEPTH, flt)
        dates = self.collection.store.date_spans(sorted({h.doc_id for h in pool}))
        return channel.rank(pool, dates, k)


# -- HIPE-2022 French and German with their predicted entities (tests/ingest/test_entities.py) --------------------


class OnHipeEntities(ChannelContract):
    @pytest.fixture(autouse=True)
    def _collection(self, request: pytest.FixtureRequest) -> None:
        self.collection = request.getfixturevalue("french_entities").collection

    def admits(self, hit: Hit, flt: Filter) -> bool:
        return OnHipe.admits(self, hit, flt)  # type: ignore[arg-type]


class TestEntityOnHipe(OnHipeEntities):
    name = "entity"
    found = ("Lausanne", "Conseil fédéral", "Lausaune", "Paris Londres Berlin")  # Lausaune: an OCR misspelling
    silent = ("qwxzvbnmk", "le la des", "zzqqxv wvvjjk")
    narrowing = Filter(corpora=("letemps",))

    def search(self, query: str, k: int, flt: Filter | None = None) -> list[Hit]:
        return EntityChannel(self.collection.store).run(query, k, flt)


def test_every_channel_has_a_contract_here() -> None:
    """A channel added to retrieval without a subclass here fails this test."""
    from tracerag.retrieval.search import KNOWN_CHANNELS

    covered = {suite.name for corpus in ChannelContract.__subclasses__() for suite in corpus.__subclasses__()}
    assert covered == set(KNOWN_CHANNELS)
