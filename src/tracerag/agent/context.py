"""The run context every stage shares: the collection, the model, the trail, the ledger and the accounting.

`call()` is the only way the agent talks to the model, so every call lands in the trail with its purpose,
messages, answer, tokens, latency and cost, including calls that gave nothing usable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from tracerag.agent.state import Ledger
from tracerag.collection import Collection
from tracerag.config import AgentSettings
from tracerag.llm import Completion, Message, StructuredLLM
from tracerag.model import Document
from tracerag.retrieval.search import Retriever
from tracerag.trail import Trail


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
    _docs: dict[str, Document] = field(default_factory=dict)

    def call(
        self, purpose: str, messages: Sequence[Message], schema: type[BaseModel] | None, sq: int | None = None
    ) -> Completion:
        assert self.llm is not None, "the agent's stages run only with a model"
        completion = self.llm.complete(messages, schema)
        t = self.totals
        t.llm_calls += 1
        t.failed_calls += 0 if completion.ok else 1
        t.prompt_tokens += completion.usage.prompt_tokens
        t.completion_tokens += completion.usage.completion_tokens
        t.cost_usd += completion.cost_usd
        t.llm_latency_s += completion.latency_s
        self.trail.emit_llm_call(completion, messages, purpose, sq)
        return completion

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


_SPACE = re.compile(r"\s+")


def locate(quote: str, text: str, offset: int) -> tuple[int, int] | None:
    """The span of `quote` in `text` (+ offset): exact first, then ignoring case and runs of whitespace.

    A quote the model did not copy from the text gives None: the trail then shows a reason with no evidence span
    rather than a span that points at nothing.
    """
    quote = quote.strip().strip("\"“”«»'")
    if len(quote) < 3:
        return None
    at = text.find(quote)
    if at >= 0:
        return offset + at, offset + at + len(quote)
    pattern = r"\s+".join(re.escape(w) for w in _SPACE.split(quote) if w)
    match = re.search(pattern, text, flags=re.IGNORECASE)
    return (offset + match.start(), offset + match.end()) if match else None


MAX_QUOTE_CHARS = 300


def verify_accept(verdict: str, quote: str, span: tuple[int, int] | None) -> str | None:
    """Why an `accept` cannot stand, or None. An accepted source must quote its evidence: a short passage found
    in the document. A quote the model did not copy, or one that is the whole excerpt, is no evidence, and the
    chunk is held instead (re-evaluation gets another look) with the reason in the trail."""
    if verdict != "accept":
        return None
    if span is None:
        return "accept without a quote found in the document: held"
    if len(quote) > MAX_QUOTE_CHARS:
        return f"accept quoting {len(quote)} characters, not a passage: held"
    return None
