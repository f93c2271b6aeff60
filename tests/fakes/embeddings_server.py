"""A small in-process OpenAI-compatible `/v1/embeddings` server for tests and benchmarks: real HTTP on 127.0.0.1,
no network, deterministic vectors.

A text's vector is a hashed bag of its lowercased words (each word adds +-1 to one of `dim` buckets), so texts
that share words are near and a search through it finds what shares the query's words; a small constant keeps
an empty text from being a zero vector. Answers come out of order on purpose (clients must sort by `index`).

Switches (attributes, changeable while it runs):

* `latency_s`: sleep before each answer (the round trip of a remote GPU box);
* `dim`: the dimension served (change it to play a server that now serves another model);
* `models`: the model names served; another name gets a 404 with an OpenAI-style error body;
* `fail(*faults)`: the next requests get these faults, one each, in order: "429" (with `Retry-After:
  retry_after`), "500", "503", "drop" (the connection closed without an answer), "slow" (answers after
  `slow_s`: a client timeout), and malformed answers "short" (one vector missing), "index" (an index twice),
  "nan" (a NaN in a vector), "ragged" (one vector one number short), "zero" (a zero vector), "text" (not JSON).

Records: `requests` (each request body), `inputs` (every text embedded), `max_in_flight` (most requests answered
at once: concurrency seen by the server).

    with FakeEmbeddings(dim=32, latency_s=0.02) as fake:
        emb = OpenAIEmbedder("fake-embed", fake.base_url)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FAULTS", "FakeEmbeddings", "hashed_vector"]

FAULTS = ("429", "500", "503", "drop", "slow", "short", "index", "nan", "ragged", "zero", "text")
_WORD = re.compile(r"\w+")


def hashed_vector(text: str, dim: int) -> list[float]:
    """The fake model: a signed hashed bag of words, plus a small constant in the first bucket."""
    vector = [0.0] * dim
    vector[0] = 0.01
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "little") % dim
        vector[bucket] += 1.0 if digest[4] & 1 else -1.0
    return vector


class FakeEmbeddings:
    def __init__(
        self, *, dim: int = 32, latency_s: float = 0.0, models: tuple[str, ...] = ("fake-embed", "other-embed")
    ):
        self.dim = dim
        self.latency_s = latency_s
        self.models = set(models)
        self.retry_after = "0.05"
        self.slow_s = 2.0
        self.requests: list[dict[str, Any]] = []
        self.inputs: list[str] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._faults: deque[str] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "use FakeEmbeddings in a `with` block"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def fail(self, *faults: str) -> None:
        unknown = set(faults) - set(FAULTS)
        assert not unknown, f"unknown faults {unknown}: expected {FAULTS}"
        with self._lock:
            self._faults.extend(faults)

    def __enter__(self) -> FakeEmbeddings:
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- request threads ----------------------------------------------------------------------------------

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes | None]:
        """(status, headers, body); body None: drop the connection."""
        with self._lock:
            self.requests.append(body)
            fault = self._faults.popleft() if self._faults else None
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            delay = self.slow_s if fault == "slow" else self.latency_s
            if delay and self._stopping.wait(delay):
                return 503, {}, b"stopping"
            return self._reply(body, fault)
        finally:
            with self._lock:
                self._in_flight -= 1

    def _reply(self, body: dict[str, Any], fault: str | None) -> tuple[int, dict[str, str], bytes | None]:
        if fault == "drop":
            return 0, {}, None
        if fault == "429":
            return 429, {"Retry-After": self.retry_after}, _error("rate limit reached, slow down")
        if fault in ("500", "503"):
            return int(fault), {}, _error("the model worker crashed")
        model, texts = body.get("model"), body.get("input")
        if model not in self.models:
            return 404, {}, _error(f"model '{model}' not found")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return 422, {}, _error("input must be a string or a list of strings")
        with self._lock:
            self.inputs.extend(texts)
        if fault == "text":
            return 200, {"Content-Type": "text/html"}, b"<html>proxy error</html>"
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_vector(t, self.dim)} for i, t in enumerate(texts)
        ]
        if fault == "short":
            data = data[:-1]
        elif fault == "index" and len(data) > 1:
            data[1]["index"] = 0
        elif fault == "nan":
            data[0]["embedding"][0] = float("nan")
        elif fault == "ragged":
            data[-1]["embedding"] = data[-1]["embedding"][:-1]
        elif fault == "zero":
            data[0]["embedding"] = [0.0] * self.dim
        payload = {
            "object": "list",
            "data": data[::-1],
            "model": model,
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }
        # json.dumps writes NaN as the bare token NaN, as some servers do
        return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def _error(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and left is expected


def _handler(fake: FakeEmbeddings) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.path.rstrip("/") != "/v1/embeddings":
                status, headers, data = 404, {}, _error(f"no route {self.path}")
            else:
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = None
                status, headers, data = (400, {}, _error("not JSON")) if body is None else fake.answer(body)
            if data is None:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(2)
                return
            with contextlib.suppress(OSError):
                self.send_response(status)
                headers = {"Content-Type": "application/json", **headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

    return Handler
