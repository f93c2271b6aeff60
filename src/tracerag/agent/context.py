"""The run context every stage shares: the collection, the model, the trail, the ledger and the accounting.

`call()` is the only way the agent talks to the model, so every call lands in the trail with its purpose,
messages, answer, tokens, latency and cost, including calls that gave nothing usable.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from tracerag.agent.state import Ledger
from tracerag.collection import Collection
from tracerag.config import AgentSettings
from tracerag.errors import LLMCallFailed
from tracerag.llm import Completion, Message, StructuredLLM
from tracerag.model import Document
from tracerag.retrieval.search import Retriever
from tracerag.trail import Trail
from tracerag.trail.events import LLMCallEvent, LLMPurpose

T = TypeVar("T", bound=BaseModel)


@dataclass
class Totals:
    llm_calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    llm_latency_s: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in vars(self).items()}


@dataclass
class RunContext:
    question: str
    collection: Collection
    retriever: Retriever
    llm: StructuredLLM | None
    trail: Trail
    settings: AgentSettings
    ledger: Ledger = field(default_factory=Ledger)
    totals: Totals = field(default_factory=Totals)
    stop: threading.Event = field(default_factory=threading.Event)  # set by whoever asked: end the run early
    _docs: dict[str, Document] = field(default_factory=dict)

    def call(
        self, purpose: LLMPurpose, messages: Sequence[Message], schema: type[T], sq: int | None = None
    ) -> Completion[T]:
        assert self.llm is not None, "the agent's stages run only with a model"
        try:
            completion = self.llm.complete(messages, schema)
        except LLMCallFailed as failed:  # no answer at all: recorded as a failed call, then the run ends
            self._record(failed.completion, messages, purpose, sq)
            raise
        self._record(completion, messages, purpose, sq)
        return completion

    def _record(
        self, completion: Completion[Any], messages: Sequence[Message], purpose: LLMPurpose, sq: int | None
    ) -> None:
        t = self.totals
        t.llm_calls += 1
        t.failed_calls += 0 if completion.ok else 1
        t.prompt_tokens += completion.usage.prompt_tokens
        t.completion_tokens += completion.usage.completion_tokens
        t.cost_usd += completion.cost_usd
        t.llm_latency_s += completion.latency_s
        self.trail.emit(LLMCallEvent.of(completion, messages, purpose, sq))

    def documents(self, doc_ids: Sequence[str]) -> dict[str, Document]:
        missing = [d for d in doc_ids if d not in self._docs]
        if missing:
            self._docs.update(self.collection.store.get_documents(missing))
        return {d: self._docs[d] for d in doc_ids if d in self._docs}

    def chunk_text(self, chunk_id: str) -> tuple[str, int]:
        """The original text of a chunk and its start offset in its document."""
        chunk = self.collection.store.get_chunks([chunk_id])[chunk_id]
        doc = self.documents([chunk.doc_id])[chunk.doc_id]
        return doc.text[chunk.start : chunk.end], chunk.start
