"""`Trail`: the one `emit()` every stage calls. Listeners get each validated event: the JSONL writer is one,
tests and the CLI's live view are others.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracerag.trail.events import KINDS, _Event

EventListener = Callable[[_Event], None]


def new_run_id() -> str:
    """Sortable and unique: UTC time to the second, then 6 random hex digits."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


class Trail:
    def __init__(self, run_id: str | None = None, listeners: Sequence[EventListener] = ()):
        self.run_id = run_id or new_run_id()
        self.listeners: list[EventListener] = list(listeners)
        self.seq = 0

    def emit(self, kind: str, **fields: Any) -> _Event:
        """Build, validate and send one event; a wrong field is a bug here, not a bad trail later."""
        cls = KINDS.get(kind)
        if cls is None:
            raise ValueError(f"unknown trail event kind {kind!r}; expected one of {', '.join(KINDS)}")
        event = cls(
            run_id=self.run_id, seq=self.seq, time=datetime.now(UTC).isoformat(timespec="milliseconds"), **fields
        )
        self.seq += 1
        for listener in self.listeners:
            listener(event)
        return event

    def emit_llm_call(self, completion: Any, messages: Sequence[Any], purpose: str, sq: int | None = None) -> _Event:
        """The `llm_call` event of one `tracerag.llm.Completion`: what was asked, answered, and what it cost."""
        return self.emit(
            "llm_call",
            sq=sq,
            purpose=purpose,
            provider=completion.provider,
            model=completion.model,
            messages=[m.to_dict() for m in messages],
            response=completion.text,
            parsed=completion.parsed.model_dump(mode="json") if completion.parsed is not None else None,
            attempts=completion.attempts,
            prompt_tokens=completion.usage.prompt_tokens,
            completion_tokens=completion.usage.completion_tokens,
            latency_s=round(completion.latency_s, 4),
            cost_usd=completion.cost_usd,
            error=completion.error,
        )


class JsonlWriter:
    """Appends each event as one line and flushes it, so a crashed run still leaves every step before the crash."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # backslashreplace: a lone surrogate in a model's answer is written as the JSON escape it came as,
        # so the trail reads back exactly instead of the run crashing on it.
        self._fh = self.path.open("a", encoding="utf-8", errors="backslashreplace")

    def __call__(self, event: _Event) -> None:
        self._fh.write(json.dumps(event.model_dump(mode="json"), ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


class MemoryListener(list):
    """Collects events in memory (tests, the eval harness)."""

    def __call__(self, event: _Event) -> None:
        self.append(event)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self if e.kind == kind]
