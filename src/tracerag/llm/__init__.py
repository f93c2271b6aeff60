"""Language models behind one interface (`LLM.complete`), built from the `llm` settings.

`load_llm` returns None when no model is configured: callers say plainly that they ran without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tracerag.config import LLM_MODEL_FORMS, Settings
from tracerag.errors import ConfigError
from tracerag.llm.base import (
    LLM,
    Completion,
    Listener,
    Message,
    Provider,
    RawAnswer,
    StructuredLLM,
    Usage,
    extract_json,
    parse_answer,
    request_key,
    require,
)
from tracerag.llm.replay import RecordingProvider, ReplayProvider

__all__ = [
    "LLM",
    "Completion",
    "Message",
    "RawAnswer",
    "StructuredLLM",
    "Usage",
    "extract_json",
    "load_llm",
    "parse_answer",
    "request_key",
    "require",
]

LLM_FORMS = LLM_MODEL_FORMS  # one list of the forms, checked when settings are loaded


def load_llm(
    settings: Settings, *, listeners: Sequence[Listener] = (), record_to: Path | None = None
) -> StructuredLLM | None:
    """The configured model wrapped for structured output; None when `settings.llm.model` is unset."""
    spec = settings.llm.model
    if not spec:
        return None
    cfg = settings.llm
    provider: Provider
    kind, _, rest = spec.partition(":")
    if kind in ("openai", "replay") and not rest.strip():
        raise ConfigError(f"llm.model {spec!r}: {kind}: needs a {'model name' if kind == 'openai' else 'folder'}")
    if spec.startswith("openai:"):
        from tracerag.llm.openai_compat import OpenAICompatProvider

        provider = OpenAICompatProvider(
            spec.removeprefix("openai:"),
            cfg.base_url,
            api_key=cfg.api_key(),
            timeout_s=cfg.timeout_s,
            max_retries=cfg.max_retries,
            backoff_s=cfg.backoff_s,
            json_schema=cfg.json_schema,
        )
    elif spec == "local":
        from tracerag.llm.local import LocalProvider

        provider = LocalProvider(settings.cache_dir, threads=cfg.local_threads, context=cfg.local_context)
    elif spec.startswith("replay:"):
        provider = ReplayProvider.from_folder(Path(spec.removeprefix("replay:")))
    else:
        raise ConfigError(f"llm.model {spec!r}: expected {LLM_FORMS}")
    if record_to is not None:
        provider = RecordingProvider(provider, record_to)
    return StructuredLLM(
        provider, repair_rounds=cfg.repair_rounds, max_tokens=cfg.max_tokens, prices=cfg.prices, listeners=listeners
    )
