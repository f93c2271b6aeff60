"""The server's language model: its provider built once per server (the in-process model loads 2 GB; an HTTP
client keeps its connections), each run given its own `StructuredLLM` (its own accounting, listeners and trail),
and the in-process model called by one thread at a time (llama.cpp is not thread-safe; an HTTP endpoint is)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from tracerag.config import Settings
from tracerag.llm import Message, Provider, RawAnswer, StructuredLLM, load_llm


class OneAtATime:
    """A provider called by one thread at a time."""

    def __init__(self, provider: Provider):
        self._provider = provider
        self._lock = threading.Lock()
        self.name: str = provider.name
        self.model: str = provider.model

    def generate(
        self, messages: Sequence[Message], *, json_schema: dict[str, Any] | None, temperature: float, max_tokens: int
    ) -> RawAnswer:
        with self._lock:
            return self._provider.generate(
                messages, json_schema=json_schema, temperature=temperature, max_tokens=max_tokens
            )


class SharedModel:
    """`llm()` gives a fresh `StructuredLLM` over the one provider, or None when no model is configured. The
    provider is built on first use, so that a bad model spec is refused by the first request that needs it."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._lock = threading.Lock()
        self._base: StructuredLLM | None = None
        self._provider: Provider | None = None

    def llm(self) -> StructuredLLM | None:
        with self._lock:
            if self._base is None and self.settings.llm.model:
                self._base = load_llm(self.settings)
                if self._base is not None:
                    provider = self._base.provider
                    self._provider = OneAtATime(provider) if provider.name == "local" else provider
            if self._base is None or self._provider is None:
                return None
            return StructuredLLM(
                self._provider,
                repair_rounds=self._base.repair_rounds,
                max_tokens=self._base.max_tokens,
                prices=self._base.prices,
            )
