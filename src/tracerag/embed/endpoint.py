"""An OpenAI-compatible `/embeddings` endpoint (TEI, vLLM, Ollama, llama.cpp's server, a hosted API) that a
collection of 10^6 chunks can rely on.

Texts go in batches of `endpoint_batch_size`, up to `endpoint_concurrency` requests in flight, vectors back in the
order of the texts. A timeout, a dropped connection, 429 (its Retry-After honoured) or a 5xx is retried with
exponential backoff a bounded number of times; any other 4xx is said at once (a wrong model name is not going to
get better). Every answer is checked - one vector per input, `index` values a permutation, one dimension
throughout and the collection's, finite numbers, not all zero - and a bad one is an `EmbeddingError` naming what
was wrong: a vector is never made up. The dimension is probed with one request only when nobody knows it (a
collection being created); a collection passes the dimension it was built at, and the first answer is checked
against it.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import numpy as np

from tracerag.errors import EmbeddingError, ModelMismatchError

# What an endpoint's vectors depend on is the model it serves, not where it runs: a GPU box that moves keeps its
# collections. (Collections made before this recorded the base URL here; their version is not compared.)
ENDPOINT_VERSION = "openai-compatible"
_RETRY_STATUS = {408, 429}  # and every 5xx
_MAX_SLEEP_S = 60.0


class OpenAIEmbedder:
    """Embeds through `base_url`/embeddings. `dim` given: the collection's, checked on the first answer."""

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        *,
        dim: int | None = None,
        batch_size: int = 64,
        concurrency: int = 4,
        timeout_s: float = 60.0,
        retries: int = 5,
        backoff_s: float = 0.5,
        query_prefix: str = "",
        passage_prefix: str = "",
    ):
        if not model:
            raise EmbeddingError("an endpoint embedding model needs a name: --embed-model openai:MODEL")
        self.url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self.name = f"openai/{model}"
        self.version = ENDPOINT_VERSION
        self.runtime = "openai-compatible endpoint"  # what serves the model is not known from here
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.retries = retries
        self.backoff_s = backoff_s
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.requests = 0  # requests sent, retries included (for reports and tests)
        self.retried = 0
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._client = httpx.Client(
            timeout=timeout_s,
            headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )
        self._known_dim = dim is not None  # the collection's: a different answer is a model mismatch
        self.dim = dim if dim is not None else int(self._request([passage_prefix + "dimension probe"]).shape[1])

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.passage_prefix + t for t in texts])

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed([self.query_prefix + t for t in texts])

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._client.close()

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        batches = [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]
        if len(batches) == 1 or self.concurrency == 1:
            parts = [self._request(batch) for batch in batches]
        else:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="embed-endpoint")
            parts = list(self._pool.map(self._request, batches))  # map keeps the order of the batches
        return np.concatenate(parts)

    def _request(self, texts: list[str]) -> np.ndarray:
        response = self._post({"model": self._model, "input": texts})
        return self._vectors(response, len(texts))

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        last = ""
        for attempt in range(self.retries + 1):
            wait: float | None = None
            with self._lock:
                self.requests += 1
            try:
                response = self._client.post(self.url, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                status = response.status_code
                if status < 400:
                    return response
                if status not in _RETRY_STATUS and status < 500:
                    raise EmbeddingError(f"embedding endpoint {self.url}: HTTP {status}: {_message(response)}")
                last = f"HTTP {status}: {_message(response)}"
                wait = _retry_after(response)
            if attempt == self.retries:
                break
            with self._lock:
                self.retried += 1
            if wait is None:  # jittered so that concurrent requests refused together do not come back together
                wait = self.backoff_s * 2**attempt * random.uniform(0.5, 1.0)
            time.sleep(min(wait, _MAX_SLEEP_S))
        raise EmbeddingError(f"embedding endpoint {self.url}: no answer after {self.retries + 1} attempts ({last})")

    def _vectors(self, response: httpx.Response, n: int) -> np.ndarray:
        """The answer's vectors in input order, unit length, or an error saying what is wrong with it."""

        def bad(problem: str) -> EmbeddingError:
            return EmbeddingError(f"embedding endpoint {self.url} answered badly for {n} texts: {problem}")

        try:
            payload = response.json()
        except ValueError:
            raise bad(f"not JSON: {response.text[:200]!r}") from None
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise bad("no 'data' list")
        if len(data) != n:
            raise bad(f"{len(data)} vectors")
        rows: list[Any] = [None] * n
        for position, item in enumerate(data):
            index = item.get("index") if isinstance(item, dict) else None
            if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
                raise bad(f"data[{position}] has index {index!r}, expected 0..{n - 1}")
            if rows[index] is not None:
                raise bad(f"index {index} appears twice")
            embedding = item.get("embedding")
            if not isinstance(embedding, list) or not embedding:
                raise bad(f"data[{position}].embedding is not a list of numbers")
            rows[index] = embedding
        dims = {len(row) for row in rows}
        if len(dims) > 1:
            raise bad(f"vectors of different dimensions {sorted(dims)}")
        try:
            vectors = np.array(rows, dtype=np.float64)
        except (TypeError, ValueError):
            raise bad("an embedding holds something other than numbers") from None
        if not np.isfinite(vectors).all():
            row = int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])
            raise bad(f"vector {row} holds NaN or infinity")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if (norms == 0).any():
            raise bad(f"vector {int(np.flatnonzero(norms[:, 0] == 0)[0])} is all zeros")
        dim = vectors.shape[1]
        if hasattr(self, "dim") and dim != self.dim:
            if self._known_dim:
                raise ModelMismatchError(
                    f"embedding endpoint {self.url} answers {dim}-d vectors for {self._model!r}; the collection was "
                    f"built with {self.dim}-d ones. Serve the model that built it, or ingest into a new collection."
                )
            raise bad(f"{dim}-d vectors after {self.dim}-d ones")
        return (vectors / norms).astype(np.float32)


def _message(response: httpx.Response) -> str:
    """The error message of an OpenAI-style error body (`{"error": {"message": ...}}`), else the body's start."""
    try:
        payload = response.json()
    except ValueError:
        return response.text[:300].strip() or "(empty body)"
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            error = error.get("message") or error.get("detail") or error
        return str(error)[:300]
    return str(payload)[:300]


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds: a number or an HTTP date (RFC 9110)."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None
