"""The cluster engine's dealings with a server that fails, over real HTTP (`tests/fakes/qdrant_server.py`): which
failures are retried and how long it waits between tries, when it gives up and what the error says, what it
refuses to create or open, and what its requests carry (the key, the write ordering, the collection's shape). The
`engine.*` settings are checked when loaded. The search behaviour itself is the contract's
(tests/engine/test_contract.py)."""

from __future__ import annotations

import random
import socket

import pytest

pytest.importorskip("qdrant_client", reason="qdrant-client is not installed (pip install 'tracerag[qdrant]')")

from tests.engine.test_contract import CHUNKS, VECTORS  # noqa: E402
from tests.fakes.qdrant_server import FakeQdrant  # noqa: E402
from tracerag.config import EngineSettings, load_settings  # noqa: E402
from tracerag.engine.qdrant_server import (  # noqa: E402
    QdrantServerEngine,
    client_settings,
    connect,
    server_collection_name,
)
from tracerag.errors import CollectionError, ConfigError, EngineError  # noqa: E402

UPSERT = "PUT /collections/c/points"
pytestmark = pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")


@pytest.fixture
def fake():
    with FakeQdrant() as server:
        yield server


def engine(fake: FakeQdrant, *, create: bool = True, key: str | None = None, dim: int | None = 4, **settings):
    """An engine on collection "c" of `fake`, recording the delays it would sleep (and not sleeping them)."""
    waited: list[float] = []
    made = QdrantServerEngine(
        connect(fake.url, key, settings.pop("timeout_s", 10)),
        "c",
        dim,
        settings=EngineSettings(**settings),
        url=fake.url,
        create=create,
        sleep=waited.append,
        rng=random.Random(7),
    )
    made.waited = waited  # type: ignore[attr-defined]
    return made


def tries(fake: FakeQdrant, said: str) -> int:
    return sum(r.split("?")[0] == said for r in fake.requests)


def test_writes_go_in_batches_and_a_failing_batch_is_retried_with_a_jittered_doubling_delay(fake):
    e = engine(fake, batch_points=3, backoff_s=0.2)
    fake.fail("503", "502", on=UPSERT)
    e.upsert(CHUNKS, VECTORS)
    assert e.count() == len(CHUNKS)  # nothing lost, nothing twice
    assert tries(fake, UPSERT) == 3 + 2  # 7 points, 3 a request; the first request failed twice
    first, second = e.waited
    assert 0.1 <= first <= 0.2 and 0.2 <= second <= 0.4  # backoff x 2^attempt x [0.5, 1]
    assert len({round(first / 0.2, 6), round(second / 0.4, 6)}) == 2  # jittered: not the same fraction twice


def test_a_server_asking_to_wait_is_waited_for(fake):
    e = engine(fake, backoff_s=5.0)
    fake.retry_after = "2"  # whole seconds: what qdrant-client reads (a server sends no other)
    fake.fail("429", on=UPSERT)
    e.upsert(CHUNKS, VECTORS)
    assert e.waited == [2.0]  # Retry-After wins over the backoff
    assert e.count() == len(CHUNKS)


def test_a_dropped_connection_and_a_timeout_are_retried(fake):
    e = engine(fake, timeout_s=1, backoff_s=0.0)
    fake.slow_s = 3.0
    fake.fail("drop", "slow", on="POST /collections/c/points/count")
    assert e.count() == 0
    assert tries(fake, "POST /collections/c/points/count") == 3
    assert len(e.waited) == 2


def test_it_gives_up_after_the_retries_naming_the_server_the_status_and_what_to_do(fake):
    e = engine(fake, retries=2, key="s3cret-key")
    fake.fail("503", "503", "503", on=UPSERT)
    with pytest.raises(EngineError) as caught:
        e.upsert(CHUNKS, VECTORS)
    message = str(caught.value)
    assert fake.url in message and "collection c" in message
    assert "503" in message and "after 2 retries" in message and "a replica is down" in message  # the server's word
    assert "engine.retries" in message and "run the command again" in message
    assert "s3cret-key" not in message
    assert tries(fake, UPSERT) == 3


def test_a_refused_key_is_not_retried_and_says_where_the_key_comes_from(fake):
    e = engine(fake)
    fake.fail("401", on=UPSERT)
    with pytest.raises(EngineError, match=r"401 .*API key.*QDRANT_API_KEY.*--api-key"):
        e.upsert(CHUNKS, VECTORS)
    assert tries(fake, UPSERT) == 1 and e.waited == []


def test_the_key_goes_with_every_request(fake):
    e = engine(fake, key="s3cret-key")
    e.upsert(CHUNKS, VECTORS)
    e.bm25("grève", 10)
    assert set(fake.api_keys) == {"s3cret-key"}


def test_a_server_that_is_not_there(fake):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    waited: list[float] = []
    with pytest.raises(EngineError) as caught:
        QdrantServerEngine(
            connect(url, None, 5), "c", 4, settings=EngineSettings(retries=2), url=url, create=True, sleep=waited.append
        )
    assert url in str(caught.value) and "no answer after 3 tries" in str(caught.value)
    assert "REST port" in str(caught.value)
    assert len(waited) == 2


def test_opening_a_collection_the_server_does_not_have(fake):
    with pytest.raises(EngineError, match=r"404 .*has no collection c.*collection.toml"):
        engine(fake, create=False)


def test_creating_over_a_collection_that_holds_points_is_refused(fake):
    engine(fake).upsert(CHUNKS, VECTORS)
    with pytest.raises(CollectionError, match=r"already holds 7 points"):
        engine(fake)


def test_an_existing_collection_of_another_dimension_is_refused(fake):
    engine(fake, dim=4)
    with pytest.raises(CollectionError, match=r"4-d dense vectors, the collection's model 8-d"):
        engine(fake, create=False, dim=8)
    with pytest.raises(CollectionError, match=r"4-d dense vectors, the collection's model 8-d"):
        engine(fake, create=True, dim=8)  # empty, so it would be taken: not with other vectors
    assert engine(fake, create=True, dim=4).count() == 0  # an empty one that fits is taken as it is


def test_a_creation_whose_answer_was_lost_is_not_an_error(fake):
    fake.fail("lost", on="PUT /collections/c")
    e = engine(fake, backoff_s=0.0)
    assert tries(fake, "PUT /collections/c") == 2  # done, answer lost, retried: "already exists"
    e.upsert(CHUNKS, VECTORS)
    assert e.count() == len(CHUNKS)


def test_the_new_collections_shape_and_each_writes_ordering_go_to_the_server(fake):
    e = engine(fake, shard_number=6, replication_factor=3, write_consistency_factor=2, write_ordering="strong")
    e.upsert(CHUNKS, VECTORS)
    e.delete(["fr1"])
    e.set_vectors(["fr2#0"], VECTORS[:1])
    created = fake.created["c"]
    assert (created["shard_number"], created["replication_factor"], created["write_consistency_factor"]) == (6, 3, 2)
    assert e.shape() == {"shard_number": 6, "replication_factor": 3, "write_consistency_factor": 2}
    writes = [
        r for r in fake.requests if r.startswith(("PUT /collections/c/points", "POST /collections/c/points/delete"))
    ]
    assert len(writes) == 3 and all("wait=true" in r and "ordering=strong" in r for r in writes)


def test_text_indexes_are_made_with_edges_analysers_for_the_languages_present(fake):
    e = engine(fake)
    e.upsert(CHUNKS, VECTORS)
    schemas = fake._schemas["c"]
    assert sorted(k for k in schemas if k.startswith("text_")) == ["text_de", "text_en", "text_fr"]
    fr = schemas["text_fr"]
    assert (fr.tokenizer, fr.lowercase, fr.ascii_folding, fr.phrase_matching, fr.scoring) == (
        "word",
        True,
        True,
        True,
        True,
    )
    assert fr.stemmer.language == "french" and fr.stopwords.languages is None and fr.enable_hnsw is False
    assert {k: type(v).__name__ for k, v in schemas.items() if not k.startswith("text_")} == {
        "doc_id": "KeywordIndexParams",
        "corpus": "KeywordIndexParams",
        "language": "KeywordIndexParams",
        "date_start": "DatetimeIndexParams",
        "date_end": "DatetimeIndexParams",
    }
    # reopened, it knows its text indexes and makes none again
    before = tries(fake, "PUT /collections/c/index")
    engine(fake, create=False).upsert(CHUNKS, VECTORS)
    assert tries(fake, "PUT /collections/c/index") == before


def test_server_collection_names():
    assert server_collection_name("hipe", "0123456789abcdef") == "tracerag_hipe_0123456789ab"
    assert server_collection_name("Mes archives/été 1887", "ab") == "tracerag_Mes_archives_t_1887_ab"
    assert server_collection_name("///", "ab") == "tracerag_collection_ab"


# -- settings ----------------------------------------------------------------------------------------------


def test_the_recorded_client_settings_hold_unless_others_are_given():
    record = {"url": "http://q:6333", "collection": "c", "batch_points": 64, "retries": 9, "timeout_s": 120.0}
    record["write_ordering"] = "strong"
    used = client_settings(record, EngineSettings())
    assert (used.batch_points, used.retries, used.timeout_s, used.write_ordering) == (64, 9, 120.0, "strong")
    used = client_settings(record, EngineSettings(batch_points=500, backoff_s=2.0))
    assert (used.batch_points, used.backoff_s, used.retries) == (500, 2.0, 9)  # given: wins; not given: recorded
    with pytest.raises(CollectionError, match=r"collection.toml \[qdrant\]: .*retries"):
        client_settings({**record, "retries": -1}, EngineSettings())


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ({"kind": "qdrant"}, "engine.kind = 'qdrant' needs engine.url"),
        ({"kind": "cluster"}, "engine.kind = 'cluster': Input should be 'tantivy' or 'qdrant'"),
        ({"url": "qdrant:6333"}, "engine.url = 'qdrant:6333': expected an http:// or https:// URL"),
        ({"collection": "my/coll"}, "engine.collection = 'my/coll': expected a server collection name"),
        ({"shard_number": 0}, "engine.shard_number = 0: Input should be greater than or equal to 1"),
        ({"replication_factor": 2, "write_consistency_factor": 3}, "write_consistency_factor = 3 is more than the 2"),
        ({"write_consistency_factor": 2}, "is more than the 1 replicas"),
        ({"write_ordering": "eventual"}, "engine.write_ordering = 'eventual'"),
        ({"batch_points": 0}, "engine.batch_points = 0"),
        ({"retries": True}, "engine.retries = True: expected a number, not true/false"),
        ({"timeout_s": 0}, "engine.timeout_s = 0"),
        ({"api_key": "x"}, "unknown key 'engine.api_key'"),  # the key is never a setting
    ],
)
def test_engine_settings_are_checked_when_loaded(section, problem):
    with pytest.raises(ConfigError) as caught:
        load_settings(engine=section)
    assert problem in str(caught.value)


def test_engine_settings_from_the_environment(monkeypatch):
    monkeypatch.setenv("TRACERAG_ENGINE__KIND", "qdrant")
    monkeypatch.setenv("TRACERAG_ENGINE__URL", "https://qdrant.example.org:6333/")
    monkeypatch.setenv("TRACERAG_ENGINE__SHARD_NUMBER", "4")
    monkeypatch.setenv("QDRANT_API_KEY", "from-env")
    engine_settings = load_settings().engine
    assert (engine_settings.kind, engine_settings.url, engine_settings.shard_number) == (
        "qdrant",
        "https://qdrant.example.org:6333",
        4,
    )
    assert engine_settings.api_key() == "from-env"
    monkeypatch.setenv("TRACERAG_ENGINE__API_KEY_ENV", "MY_QDRANT_KEY")
    monkeypatch.setenv("MY_QDRANT_KEY", "other")
    assert load_settings().engine.api_key() == "other"


def test_a_429_whose_retry_after_is_not_seconds_is_retried_with_the_backoff(fake):
    e = engine(fake, backoff_s=0.2)
    fake.retry_after = "Wed, 21 Oct 2026 07:28:00 GMT"  # an HTTP date: qdrant-client cannot read it
    fake.fail("429", on=UPSERT)
    e.upsert(CHUNKS, VECTORS)
    assert len(e.waited) == 1 and 0.1 <= e.waited[0] <= 0.2
    assert e.count() == len(CHUNKS)
