"""The endpoint embedder against the fake OpenAI-compatible server: batching, concurrency, retries, checks of
every answer, and the collection's model and dimension held to what built it."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fakes.embeddings_server import FakeEmbeddings, hashed_vector
from tracerag.embed.endpoint import OpenAIEmbedder
from tracerag.errors import EmbeddingError, ModelMismatchError


def unit(texts: list[str], dim: int) -> np.ndarray:
    v = np.array([hashed_vector(t, dim) for t in texts])
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_batches_in_order_with_concurrency_and_prefixes() -> None:
    texts = [f"text number {i} about {i % 7}" for i in range(200)]
    # Answers slow enough (0.25 s) that the 4 requests overlap even when a loaded machine starts them late.
    with FakeEmbeddings(dim=16, latency_s=0.25) as fake:
        emb = OpenAIEmbedder("fake-embed", fake.base_url, batch_size=16, concurrency=4, passage_prefix="passage: ")
        assert emb.dim == 16 and len(fake.requests) == 1  # one probe when the dimension is unknown
        vectors = emb.encode_documents(texts)
        assert len(fake.requests) == 1 + 13 and fake.max_in_flight == 4
        assert np.allclose(vectors, unit(["passage: " + t for t in texts], 16), atol=1e-6)
        known = OpenAIEmbedder("fake-embed", fake.base_url, dim=16, query_prefix="query: ")
        assert len(fake.requests) == 14  # the collection knows the dimension: no probe
        known.encode_queries(["q"])
        assert fake.inputs[-1] == "query: q"


def test_retries_429_and_5xx_then_names_endpoint_status_and_message() -> None:
    with FakeEmbeddings(dim=8) as fake:
        emb = OpenAIEmbedder("fake-embed", fake.base_url, dim=8, retries=3, backoff_s=0.01, timeout_s=0.5)
        fake.fail("429", "500", "drop")
        assert emb.encode_documents(["a b"]).shape == (1, 8) and emb.retried == 3
        fake.fail("503", "503", "503", "503")
        with pytest.raises(EmbeddingError, match=r"/v1/embeddings: no answer after 4 attempts \(HTTP 503: the model"):
            emb.encode_documents(["a"])
        fake.fail("slow")
        assert emb.encode_documents(["a"]).shape == (1, 8)  # the timeout retried
        bad = OpenAIEmbedder("no-such-model", fake.base_url, dim=8, retries=3)
        before = len(fake.requests)
        with pytest.raises(EmbeddingError, match="HTTP 404: model 'no-such-model' not found"):
            bad.encode_documents(["a"])
        assert len(fake.requests) == before + 1  # a 4xx is not retried


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("short", "1 vectors"),
        ("index", "index 0 appears twice"),
        ("nan", "vector 0 holds NaN"),
        ("ragged", "different dimensions"),
        ("zero", "vector 0 is all zeros"),
        ("text", "not JSON"),
    ],
)
def test_a_malformed_answer_is_an_error_saying_what(fault: str, said: str) -> None:
    with FakeEmbeddings(dim=8) as fake:
        emb = OpenAIEmbedder("fake-embed", fake.base_url, dim=8, retries=0)
        fake.fail(fault)
        with pytest.raises(EmbeddingError, match=said):
            emb.encode_documents(["one", "two"])


def test_another_dimension_than_the_collection_is_a_model_mismatch() -> None:
    with FakeEmbeddings(dim=8) as fake:
        emb = OpenAIEmbedder("fake-embed", fake.base_url, dim=16)
        with pytest.raises(ModelMismatchError, match="answers 8-d vectors .* built with 16-d"):
            emb.encode_queries(["q"])
