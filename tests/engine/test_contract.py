"""The behaviour every search engine owes retrieval. `EngineContract` holds the tests; a subclass per engine
supplies `make_engine(path, dim)` and must pass as is: the embedded engine (tantivy + faiss) always; the cluster
engine (`engine/qdrant_server.py`) on qdrant-client's local mode (`QdrantClient(":memory:")`) always, and against
a real Qdrant server whenever QDRANT_URL is set (QDRANT_API_KEY for its key), skipped with that reason otherwise.

The corpus is a handful of fr/de/en chunks with tiny hand-made 4-d vectors, so every expected answer can be
read off the table below.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest

from tracerag.config import EngineSettings
from tracerag.engine import EngineHit, FieldHits, IndexedChunk, SearchEngine
from tracerag.engine.embedded import EmbeddedEngine
from tracerag.model import Filter

try:
    from qdrant_client import QdrantClient

    from tracerag.engine.qdrant_server import QdrantServerEngine, connect
except ImportError:  # the `qdrant` extra (in `dev`): without it only the embedded engine is tested
    QdrantClient = None  # type: ignore[assignment,misc]
needs_client = pytest.mark.skipif(
    QdrantClient is None, reason="qdrant-client is not installed (pip install 'tracerag[qdrant]')"
)

DIM = 4


def chunk(cid: str, text: str, corpus: str, lang: str, dates: tuple[str, str] | None, **fields) -> IndexedChunk:
    return IndexedChunk(cid, cid.split("#")[0], text, corpus, lang, *(dates or (None, None)), fields)


CHUNKS = [
    chunk("fr1#0", "La grève des ouvriers du port continue.", "a/x", "fr", ("1887-05-17",) * 2, genre="news"),
    chunk("fr1#1", "Le maire a reçu les délégués à l'hôtel de ville.", "a/x", "fr", ("1887-05-17",) * 2, genre="news"),
    # a partial date, "1887": the whole year
    chunk(
        "fr2#0",
        "Les grévistes ont manifesté devant la mairie.",
        "a/y",
        "fr",
        ("1887-01-01", "1887-12-31"),
        genre="letter",
    ),
    chunk("fr3#0", "Au port, les ouvriers sont calmes.", "b", "fr", ("1890-01-01", "1890-12-31")),
    chunk("de1#0", "Der Streik der Arbeiter in Berlin dauert an.", "a/x", "de", None, genre="news"),  # undated
    chunk("en1#0", "The strike at the docks ended today.", "b", "en", ("1912-03-01", "1912-03-31")),
    chunk(
        "en2#0", "Dockers' strikes spread to Liverpool and Hull.", "b", "en", ("1911-08-01", "1911-08-31"), genre="news"
    ),
]

VECTORS = np.array(
    [
        [1.0, 0.0, 0.0, 0.0],  # fr1#0
        [0.9, 0.1, 0.0, 0.0],  # fr1#1
        [0.0, 1.0, 0.0, 0.0],  # fr2#0
        [0.0, 0.0, 1.0, 0.0],  # fr3#0
        [0.0, 0.0, 0.0, 1.0],  # de1#0
        [0.0, 0.7, 0.7, 0.0],  # en1#0
        [0.5, 0.5, 0.5, 0.5],  # en2#0
    ],
    dtype=np.float32,
)

ALL = {c.chunk_id for c in CHUNKS}


def hits_of(found: FieldHits | list[EngineHit]) -> list[EngineHit]:
    """A dense search's hits, or every field's hits of a lexical search by score (the fields share no chunk)."""
    if isinstance(found, dict):
        return sorted((h for hits in found.values() for h in hits), key=lambda h: (-h.score, h.chunk_id))
    return list(found)


def ids(found: FieldHits | list[EngineHit]) -> list[str]:
    return [h.chunk_id for h in hits_of(found)]


LANGUAGE = {c.chunk_id: c.language for c in CHUNKS}


class EngineContract:
    """Subclass with `make_engine(path, dim)` returning an empty (or, for an existing path, reopened) engine."""

    def make_engine(self, path: Path, dim: int | None) -> SearchEngine:
        raise NotImplementedError

    def build(self, path: Path, *, vectors: bool = True) -> SearchEngine:
        engine = self.make_engine(path, DIM)
        engine.upsert(CHUNKS, VECTORS if vectors else None)
        engine.flush()
        return engine

    @pytest.fixture(scope="class")
    @classmethod
    def reader(cls, tmp_path_factory):
        """One engine for the tests that only read (building one takes a few hundred ms)."""
        engine = cls().build(tmp_path_factory.mktemp("engine") / "index")
        yield engine
        engine.close()

    @pytest.fixture
    def engine(self, tmp_path):
        """A fresh engine for the tests that write."""
        engine = self.build(tmp_path / "index")
        yield engine
        engine.close()

    def everything(self, engine: SearchEngine, flt: Filter | None = None) -> set[str]:
        """Every chunk a filter admits, by the dense channel (every chunk has a vector)."""
        return set(ids(engine.dense(np.ones(DIM, dtype=np.float32), 100, flt)))

    # -- counts and lexical search --------------------------------------------------------------------

    def test_count(self, reader):
        assert reader.count() == len(CHUNKS)

    def test_bm25_ranks_the_matching_chunk_first(self, reader):
        found = reader.bm25("maire délégués", 10)
        assert list(found) == ["fr"]
        assert ids(found["fr"])[0] == "fr1#1"
        assert found["fr"][0].doc_id == "fr1"
        assert list(reader.bm25("Liverpool", 10)) == ["en"]
        assert ids(reader.bm25("Liverpool", 10)) == ["en2#0"]
        assert ids(reader.bm25("Berlin", 10)) == ["de1#0"]

    def test_bm25_scores_descend_and_respect_k(self, reader):
        found = reader.bm25("ouvriers port grève", 10)["fr"]
        assert len(found) >= 2
        scores = [h.score for h in found]
        assert scores == sorted(scores, reverse=True)
        assert len(reader.bm25("ouvriers port grève", 1)["fr"]) == 1

    def test_bm25_counts_a_repeated_query_word(self, reader):
        # as Lucene and bm25s score: a word twice adds its part of the score twice (linear query term frequency)
        def en(query: str) -> dict[str, float]:
            return {h.chunk_id: h.score for h in reader.bm25(query, 10)["en"]}

        once, twice, alone = en("Liverpool strike"), en("Liverpool Liverpool strike"), en("Liverpool")
        assert twice["en1#0"] == pytest.approx(once["en1#0"])  # no Liverpool in en1: nothing more
        assert twice["en2#0"] == pytest.approx(once["en2#0"] + alone["en2#0"])
        # repeats are counted after stemming: "strikes" and "strike" are one English word
        assert en("Liverpool strikes strike")["en1#0"] == pytest.approx(2 * en("strike")["en1#0"])

    def test_field_stats_give_each_fields_size_and_the_query_terms_frequencies(self, reader):
        stats = reader.field_stats("grève strike strikes Streik")
        assert sorted(stats) == ["de", "en", "fr"]  # every field that holds a chunk
        assert {field: s.chunks for field, s in stats.items()} == {"de": 1, "en": 2, "fr": 4}
        # terms as each field analyses them, in order of first occurrence: "strikes" is English "strike" again,
        # counted twice (the contract's engines count repeats); document frequencies are the field's own
        en = [(t.term, t.counted, t.chunks) for t in stats["en"].terms]
        assert en == [("grève", 1, 0), ("strike", 2, 2), ("Streik", 1, 0)]
        fr = {t.term: t.chunks for t in stats["fr"].terms}
        assert fr["grève"] == 1  # fr1#0; "grévistes" is another French stem
        assert {t.term: t.chunks for t in stats["de"].terms}["Streik"] == 1
        assert all(not s.terms for s in reader.field_stats(" ?! ").values())
        assert {t.chunks for s in reader.field_stats("zeppelin").values() for t in s.terms} == {0}

    def test_bm25_without_a_match_is_empty(self, reader):
        assert reader.bm25("zeppelin", 10) == {}
        assert reader.bm25("", 10) == {}
        assert reader.bm25(" ?! ", 10) == {}

    # -- per-field rankings: the engine merges nothing ------------------------------------------------

    def test_bm25_returns_each_language_fields_own_ranking(self, reader):
        found = reader.bm25("grève strike Streik", 10)
        # one ranking per language index that found something, each holding that language's chunks only
        assert sorted(found) == ["de", "en", "fr"]
        for field, hits in found.items():
            assert hits and all(LANGUAGE[h.chunk_id] == field for h in hits)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert ids(found["de"]) == ["de1#0"] and ids(found["fr"]) == ["fr1#0"]
        assert set(ids(found["en"])) == {"en1#0", "en2#0"}
        # each field answers as if searched alone: its scores are its own index's, whatever else was asked
        assert found["de"] == reader.bm25("Streik", 10)["de"]

    def test_k_holds_per_field(self, reader):
        found = reader.bm25("grève ouvriers strike Streik", 1)
        assert sorted(found) == ["de", "en", "fr"]
        assert all(len(hits) == 1 for hits in found.values())

    def test_phrase_returns_each_language_fields_own_ranking(self, reader):
        assert list(reader.phrase("strike at the docks", 10)) == ["en"]
        assert list(reader.phrase("ouvriers du port", 10)) == ["fr"]
        assert reader.phrase("docks strike", 10) == {}

    def test_accent_folding(self, reader):
        accented = ids(reader.bm25("grève", 10))
        assert "fr1#0" in accented
        assert ids(reader.bm25("greve", 10)) == accented
        assert ids(reader.bm25("GRÈVE", 10)) == accented
        assert ids(reader.bm25("delegues", 10)) == ids(reader.bm25("délégués", 10)) == ["fr1#1"]

    def test_stemming_french(self, reader):
        # grève / grèves share a stem, gréviste / grévistes another
        assert "fr1#0" in ids(reader.bm25("grèves", 10))
        assert ids(reader.bm25("gréviste", 10)) == ["fr2#0"]
        assert "fr2#0" in ids(reader.bm25("manifester", 10))

    def test_stemming_english_and_german(self, reader):
        assert "en1#0" in ids(reader.bm25("strikes", 10))  # text says "strike"
        assert "en2#0" in ids(reader.bm25("strike", 10))  # text says "strikes"
        assert ids(reader.bm25("Streiks", 10)) == ["de1#0"]

    def test_phrase_finds_only_words_in_order(self, reader):
        # fr3 has both words, in the other order ("port ... ouvriers"): bm25 finds it, phrase must not
        assert {"fr1#0", "fr3#0"} <= set(ids(reader.bm25("ouvriers du port", 10)))
        assert ids(reader.phrase("ouvriers du port", 10)) == ["fr1#0"]
        assert ids(reader.phrase("port, les ouvriers", 10)) == ["fr3#0"]
        # every word counts (no stopword list): "ouvriers port" is not "ouvriers du port"
        assert ids(reader.phrase("ouvriers port", 10)) == []
        assert ids(reader.phrase("les ouvriers du port", 10)) == []

    def test_phrase_is_folded_too(self, reader):
        assert ids(reader.phrase("greve des ouvriers", 10)) == ["fr1#0"]
        assert ids(reader.phrase("grève des ouvriers", 10)) == ["fr1#0"]

    def test_phrase_across_languages(self, reader):
        assert ids(reader.phrase("strike at the docks", 10)) == ["en1#0"]
        assert reader.phrase("docks strike", 10) == {}

    # -- dense ----------------------------------------------------------------------------------------

    def test_dense_nearest(self, reader):
        found = reader.dense(np.array([0.1, 1.0, 0.0, 0.0], dtype=np.float32), 3)
        # cosines with the query: fr2 0.995, en1 0.704, en2 0.547, fr1#1 0.209, fr1#0 0.100, fr3 0, de1 0
        assert ids(found) == ["fr2#0", "en1#0", "en2#0"]
        assert found[0].doc_id == "fr2"
        assert found[0].score == pytest.approx(1 / np.linalg.norm([0.1, 1.0]), abs=1e-4)
        assert ids(reader.dense(np.array([0.0, 0.0, 0.0, 2.0], dtype=np.float32), 1)) == ["de1#0"]

    def test_dense_returns_all_when_k_is_large(self, reader):
        assert self.everything(reader) == ALL

    # -- filters --------------------------------------------------------------------------------------

    @pytest.mark.parametrize(
        ("flt", "expected"),
        [
            (Filter(corpora=("a",)), {"fr1#0", "fr1#1", "fr2#0", "de1#0"}),  # parent matches a/x and a/y
            (Filter(corpora=("a/x",)), {"fr1#0", "fr1#1", "de1#0"}),
            (Filter(corpora=("a/y", "b")), {"fr2#0", "fr3#0", "en1#0", "en2#0"}),
            (Filter(corpora=("x",)), set()),  # a child name alone is not a corpus
            # dates: a document matches when its own range overlaps [from, to]
            (Filter(date_from="1887-06-01", date_to="1887-06-30"), {"fr2#0"}),  # inside fr2's "1887"
            (Filter(date_from="1887-05-17", date_to="1887-05-17"), {"fr1#0", "fr1#1", "fr2#0"}),
            (Filter(date_to="1889-12-31"), {"fr1#0", "fr1#1", "fr2#0"}),
            (Filter(date_from="1890-12-31"), {"fr3#0", "en1#0", "en2#0"}),  # last day of fr3's year
            (Filter(date_from="1911-08-31", date_to="1912-03-01"), {"en1#0", "en2#0"}),  # both edges touch
            (Filter(date_from="1913-01-01"), set()),
            (Filter(languages=("de",)), {"de1#0"}),
            (Filter(languages=("fr", "en")), ALL - {"de1#0"}),
            (Filter(fields=(("genre", "news"),)), {"fr1#0", "fr1#1", "de1#0", "en2#0"}),
            (Filter(fields=(("genre", "letter"),)), {"fr2#0"}),
            (Filter(fields=(("genre", "poem"),)), set()),
            (Filter(doc_ids=("fr1", "en1")), {"fr1#0", "fr1#1", "en1#0"}),
            (Filter(corpora=("a",), languages=("fr",), fields=(("genre", "news"),)), {"fr1#0", "fr1#1"}),
            (Filter(corpora=("b",), date_from="1912-01-01"), {"en1#0"}),
            (Filter(), ALL),
        ],
    )
    def test_filter_admits_exactly_the_matching_chunks(self, reader, flt, expected):
        assert self.everything(reader, flt) == expected
        assert reader.count(flt) == len(expected)

    def test_undated_chunks_never_match_a_date_filter(self, reader):
        assert "de1#0" not in self.everything(reader, Filter(date_from="1000-01-01", date_to="2999-12-31"))
        assert "de1#0" in self.everything(reader, Filter())

    def test_filters_apply_to_bm25_and_phrase(self, reader):
        assert "fr1#0" in ids(reader.bm25("ouvriers", 10))
        assert ids(reader.bm25("ouvriers", 10, Filter(corpora=("b",)))) == ["fr3#0"]
        assert ids(reader.bm25("strike", 10, Filter(date_to="1911-12-31"))) == ["en2#0"]
        assert ids(reader.bm25("grève grévistes", 10, Filter(fields=(("genre", "letter"),)))) == ["fr2#0"]
        assert reader.phrase("ouvriers du port", 10, Filter(languages=("en",))) == {}
        assert ids(reader.phrase("ouvriers du port", 10, Filter(doc_ids=("fr1",)))) == ["fr1#0"]

    # -- writes ---------------------------------------------------------------------------------------

    def test_delete_by_document(self, engine):
        engine.delete(["fr1", "en2"])
        engine.flush()
        assert engine.count() == len(CHUNKS) - 3
        assert engine.count(Filter(doc_ids=("fr1", "en2"))) == 0
        assert engine.bm25("délégués", 10) == {}
        assert "fr1#0" not in ids(engine.bm25("grève", 10))
        assert self.everything(engine) == ALL - {"fr1#0", "fr1#1", "en2#0"}
        engine.delete([])  # nothing to do
        engine.delete(["no-such-doc"])
        assert engine.count() == len(CHUNKS) - 3

    def test_field_stats_follow_writes(self, engine):
        """The statistics are those the engine's BM25 scores with: a deleted chunk may still count there until a
        merge drops it (tantivy, like Lucene), but never more than was written, and a field with no live chunk
        is gone (tests/engine/test_field_stats.py holds the embedded engine to its scores exactly)."""

        def strike() -> tuple[int, int]:
            en = engine.field_stats("strike")["en"]
            return en.chunks, en.terms[0].chunks

        assert strike() == (2, 2)
        engine.delete(["en2"])
        chunks, holding = strike()
        assert 1 <= holding <= chunks <= 2
        engine.upsert(CHUNKS[6:], VECTORS[6:])
        assert strike()[1] >= 2
        engine.delete(["en1", "en2"])
        assert "en" not in engine.field_stats("strike")

    def test_upsert_twice_is_idempotent(self, engine):
        before = ids(engine.bm25("grève ouvriers", 10))
        engine.upsert(CHUNKS, VECTORS)
        engine.upsert(CHUNKS, VECTORS)
        engine.flush()
        assert engine.count() == len(CHUNKS)
        assert ids(engine.bm25("grève ouvriers", 10)) == before

    def test_upsert_replaces_a_chunk_with_the_same_id(self, engine):
        old = CHUNKS[5]
        new = IndexedChunk(old.chunk_id, old.doc_id, "A zeppelin landed in the park.", "c", "en", None, None, {})
        engine.upsert([new], VECTORS[5:6])
        engine.flush()
        assert engine.count() == len(CHUNKS)
        assert "en1#0" not in ids(engine.bm25("strike docks", 10))
        assert ids(engine.bm25("zeppelin", 10)) == ["en1#0"]
        assert engine.count(Filter(corpora=("b",))) == 2  # fr3, en2: en1 moved to "c"
        assert engine.count(Filter(corpora=("c",))) == 1

    def test_upsert_rejects_vectors_of_another_length(self, engine):
        with pytest.raises(ValueError):
            engine.upsert(CHUNKS[:2], VECTORS[:1])

    def test_set_vectors_adds_dense_later(self, tmp_path):
        engine = self.build(tmp_path / "index", vectors=False)
        try:
            assert engine.count() == len(CHUNKS)
            assert engine.dense(np.ones(DIM, dtype=np.float32), 10) == []
            assert ids(engine.bm25("Liverpool", 10)) == ["en2#0"]
            engine.set_vectors(["fr2#0", "de1#0"], VECTORS[[2, 4]])
            engine.flush()
            assert ids(engine.dense(np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32), 10)) == ["fr2#0", "de1#0"]
            engine.set_vectors([c.chunk_id for c in CHUNKS], VECTORS)
            engine.flush()
            assert self.everything(engine) == ALL
            assert engine.count() == len(CHUNKS)  # vectors are added to points, not new points
            assert ids(engine.bm25("Liverpool", 10)) == ["en2#0"]  # payload kept
        finally:
            engine.close()

    def test_lexical_only_engine(self, tmp_path):
        engine = self.make_engine(tmp_path / "index", None)
        try:
            engine.upsert(CHUNKS, None)
            engine.flush()
            assert engine.count() == len(CHUNKS)
            assert ids(engine.bm25("Liverpool", 10)) == ["en2#0"]
            assert engine.dense(np.ones(DIM, dtype=np.float32), 10) == []
        finally:
            engine.close()

    @pytest.mark.parametrize("language", ["la", "fr-ch", "pl"])
    def test_languages_outside_the_stemmed_ones_are_searchable(self, tmp_path, language):
        # Only chunks of that language: nothing else makes its text field look populated.
        path = tmp_path / "index"
        other = IndexedChunk("o#0", "o", "Gallia est omnis divisa in partes tres.", "c", language, None, None, {})
        engine = self.make_engine(path, DIM)
        try:
            engine.upsert([other], VECTORS[:1])
            engine.flush()
            assert ids(engine.bm25("Gallia partes", 10)) == ["o#0"]
            assert ids(engine.phrase("omnis divisa", 10)) == ["o#0"]
            assert list(engine.bm25("Gallia partes", 10)) == ["fr" if language == "fr-ch" else "xx"]
            assert engine.count(Filter(languages=(language,))) == 1
        finally:
            engine.close()
        engine = self.make_engine(path, DIM)
        try:
            assert ids(engine.bm25("Gallia partes", 10)) == ["o#0"]
        finally:
            engine.close()

    def test_reopen_from_disk_keeps_everything(self, tmp_path):
        path = tmp_path / "index"
        engine = self.build(path)
        engine.delete(["en2"])
        engine.optimize()
        queries = ["grève", "ouvriers du port", "strike", "Streik"]
        bm25 = {q: ids(engine.bm25(q, 10)) for q in queries}
        phrase = ids(engine.phrase("ouvriers du port", 10))
        dense = ids(engine.dense(np.array([0.1, 1.0, 0.0, 0.0], dtype=np.float32), 10))
        engine.flush()
        engine.close()

        engine = self.make_engine(path, DIM)
        try:
            assert engine.count() == len(CHUNKS) - 1
            assert {q: ids(engine.bm25(q, 10)) for q in queries} == bm25
            assert ids(engine.phrase("ouvriers du port", 10)) == phrase
            assert ids(engine.dense(np.array([0.1, 1.0, 0.0, 0.0], dtype=np.float32), 10)) == dense
            assert self.everything(engine, Filter(corpora=("a",))) == {"fr1#0", "fr1#1", "fr2#0", "de1#0"}
            assert self.everything(engine, Filter(date_from="1887-06-01", date_to="1887-06-30")) == {"fr2#0"}
            assert self.everything(engine, Filter(fields=(("genre", "news"),))) == {"fr1#0", "fr1#1", "de1#0"}
            # and it still takes writes
            engine.upsert(CHUNKS[6:], VECTORS[6:])
            engine.flush()
            assert engine.count() == len(CHUNKS)
            assert ids(engine.bm25("Liverpool", 10)) == ["en2#0"]
        finally:
            engine.close()


class TestEmbeddedEngine(EngineContract):
    def make_engine(self, path: Path, dim: int | None) -> SearchEngine:
        return EmbeddedEngine(path, dim, query_tf=True, writer=True)  # the contract covers counting too


@needs_client
class TestQdrantLocalMode(EngineContract):
    """The cluster engine on qdrant-client's local mode. Local mode scores a text query only over a text index
    with the default analysis, so the engine gives it text analysed by Edge's own analyser (see
    `engine/qdrant_server.py`): every case of the contract runs, none is skipped. An engine reopened on the same
    path gets the same in-memory client (it is not the engine's to close)."""

    clients: dict[Path, QdrantClient] = {}

    def make_engine(self, path: Path, dim: int | None) -> SearchEngine:
        client = self.clients.get(path)
        create = client is None
        if client is None:
            client = self.clients[path] = QdrantClient(":memory:")
        settings = EngineSettings()
        return QdrantServerEngine(
            client, "contract", dim, settings=settings, url=":memory:", query_tf=True, create=create, owns_client=False
        )


@needs_client
class TestQdrantOverHttp(EngineContract):
    """The cluster engine over real HTTP, against `tests/fakes/qdrant_server.py`: every request as a server gets it
    (REST, JSON from qdrant-client's models, parsed back by them), the server's analysers played by Edge's. What it
    adds to local mode: the engine's server path (text indexes with folding and stemmers, raw text, payload indexes,
    retries) and its requests' wire form."""

    made: set[str] = set()

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _server(cls):
        from tests.fakes.qdrant_server import FakeQdrant

        with FakeQdrant() as fake:
            cls.fake = fake
            yield

    def make_engine(self, path: Path, dim: int | None) -> SearchEngine:
        name = "contract_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
        create = name not in self.made
        self.made.add(name)
        url = self.fake.url
        return QdrantServerEngine(
            connect(url, None, 10), name, dim, settings=EngineSettings(), url=url, query_tf=True, create=create
        )


@needs_client
@pytest.mark.skipif(
    not os.environ.get("QDRANT_URL"),
    reason="no Qdrant server to test against: set QDRANT_URL (and QDRANT_API_KEY if it asks for one)",
)
class TestQdrantServer(EngineContract):
    """The cluster engine against a real Qdrant server: one server collection per engine path, deleted after."""

    made: set[str] = set()

    def make_engine(self, path: Path, dim: int | None) -> SearchEngine:
        url = os.environ["QDRANT_URL"]
        name = "tracerag_contract_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
        client = connect(url, os.environ.get("QDRANT_API_KEY"), 30)
        create = name not in self.made
        if create and client.collection_exists(name):
            client.delete_collection(name)
        self.made.add(name)
        return QdrantServerEngine(client, name, dim, settings=EngineSettings(), url=url, query_tf=True, create=create)

    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def _drop_collections(cls):
        yield
        client = connect(os.environ["QDRANT_URL"], os.environ.get("QDRANT_API_KEY"), 30)
        for name in cls.made:
            client.delete_collection(name)
        client.close()
