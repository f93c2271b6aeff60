"""Recorded answers: a run can be replayed offline and tests are deterministic.

An answer is stored under `request_key(model, messages, schema)`. `RecordingProvider` wraps a real provider and
writes each answer to a folder; `ReplayProvider` answers from such a folder or from the `llm_call` events of a
trail, and fails loudly (naming the key) on a request it has never seen: a replay that silently asked a real
model would prove nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tracerag.errors import LLMError
from tracerag.llm.base import Message, Provider, RawAnswer, Usage, request_key


def _key(model: str, messages: Sequence[Message], json_schema: dict[str, Any] | None) -> str:
    return request_key(model, messages, json_schema)


class RecordingProvider:
    """Passes requests to `inner` and saves each answer as `DIR/{key}.json`."""

    def __init__(self, inner: Provider, folder: Path):
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def generate(
        self, messages: Sequence[Message], *, json_schema: dict[str, Any] | None, temperature: float, max_tokens: int
    ) -> RawAnswer:
        answer = self.inner.generate(messages, json_schema=json_schema, temperature=temperature, max_tokens=max_tokens)
        key = _key(self.model, messages, json_schema)
        record = {"key": key, "model": self.model, "text": answer.text, "usage": asdict(answer.usage)}
        tmp = self.folder / f"{key}.json.tmp"
        tmp.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
        tmp.replace(self.folder / f"{key}.json")
        return answer


class ReplayProvider:
    name = "replay"

    def __init__(self, model: str, answers: dict[str, RawAnswer], source: str):
        self.model = model
        self.answers = answers
        self.source = source
        self.used = 0

    @classmethod
    def from_folder(cls, folder: Path, model: str | None = None) -> ReplayProvider:
        folder = Path(folder)
        if not folder.is_dir():
            raise LLMError(f"{folder}: no such folder of recorded answers")
        answers, models = {}, set()
        for path in sorted(folder.glob("*.json")):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
                answers[record["key"]] = RawAnswer(record["text"], Usage(**record.get("usage", {})))
                models.add(record["model"])
            except (ValueError, KeyError, TypeError) as exc:
                raise LLMError(f"{path}: not a recorded answer ({exc})") from None
        return cls(_one_model(model, models, str(folder)), answers, str(folder))

    @classmethod
    def from_calls(cls, calls: Iterable[dict[str, Any]], source: str, model: str | None = None) -> ReplayProvider:
        """From the `llm_call` events of a trail: every attempt carries its request key and text."""
        answers, models = {}, set()
        for call in calls:
            models.add(call["model"])
            for attempt in call.get("attempts", []):
                usage = Usage(**attempt.get("usage", {}))
                answers[attempt["key"]] = RawAnswer(attempt["text"], usage)
        return cls(_one_model(model, models, source), answers, source)

    def generate(
        self, messages: Sequence[Message], *, json_schema: dict[str, Any] | None, temperature: float, max_tokens: int
    ) -> RawAnswer:
        key = _key(self.model, messages, json_schema)
        answer = self.answers.get(key)
        if answer is None:
            raise LLMError(
                f"replay from {self.source}: request {key[:12]} was never recorded (the prompt, the model or the "
                "retrieval results differ from the recorded run)"
            )
        self.used += 1
        return RawAnswer(answer.text, answer.usage, 0.0, self.model)


def _one_model(asked: str | None, recorded: set[str], source: str) -> str:
    if asked:
        return asked
    if len(recorded) > 1:
        raise LLMError(f"{source}: answers of several models {sorted(recorded)}; name one")
    return next(iter(recorded), "unknown")
