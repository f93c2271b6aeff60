"""Any OpenAI-compatible chat endpoint (hosted APIs, vLLM, Ollama, llama.cpp's server) over httpx.

Transport only: bounded retries with exponential backoff on 429, 5xx, timeouts and dropped connections; a
`Retry-After` header is honoured up to the backoff cap. JSON-schema output is asked for with `response_format`
when enabled; a server that rejects that field (400/422) is asked again without it, and remembered once that
works.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import httpx

from tracerag.errors import LLMError
from tracerag.llm.base import Message, RawAnswer, Usage

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
_REJECTED_STATUS = {400, 422}  # what servers answer to a field they do not support
_MAX_SLEEP_S = 30.0


class OpenAICompatProvider:
    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        backoff_s: float = 1.0,
        json_schema: bool = True,
        transport: httpx.BaseTransport | None = None,
    ):
        if not model:
            raise LLMError("an OpenAI-compatible model needs a name: --llm openai:MODEL")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.use_json_schema = json_schema
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout_s, headers=headers, transport=transport)

    def generate(
        self, messages: Sequence[Message], *, json_schema: dict[str, Any] | None, temperature: float, max_tokens: int
    ) -> RawAnswer:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if json_schema is not None and self.use_json_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": _schema_name(json_schema), "schema": json_schema},
            }
        started = time.perf_counter()
        response = self._post(body)
        if response.status_code in _REJECTED_STATUS and "response_format" in body:
            # The server may not support schema-constrained output: ask again with JSON-in-text + validation, and
            # remember that only if the request then succeeds (a 400 can also mean e.g. an over-long prompt).
            del body["response_format"]
            response = self._post(body)
            if response.status_code < 400:
                self.use_json_schema = False
        if response.status_code >= 400:
            raise LLMError(f"{self.base_url}: HTTP {response.status_code}: {response.text[:300]}")
        try:
            data = response.json()
            text = data["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"{self.base_url}: not a chat completion ({exc!r}): {response.text[:300]}") from None
        usage = data.get("usage") or {}
        return RawAnswer(
            text=text,
            usage=Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)),
            latency_s=time.perf_counter() - started,
            model=str(data.get("model") or self.model),
        )

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client.post(url, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code not in _RETRY_STATUS:
                    return response
                last = f"HTTP {response.status_code}"
                retry_after = _retry_after(response)
                if retry_after is not None and attempt < self.max_retries:
                    time.sleep(min(retry_after, _MAX_SLEEP_S))
                    continue
            if attempt < self.max_retries:
                time.sleep(min(self.backoff_s * 2**attempt, _MAX_SLEEP_S))
        raise LLMError(f"{url}: no answer after {self.max_retries + 1} attempts ({last})")

    def close(self) -> None:
        self._client.close()


def _schema_name(json_schema: dict[str, Any]) -> str:
    """The schema's title as the API requires a `json_schema.name`: [a-zA-Z0-9_-], at most 64 characters."""
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", str(json_schema.get("title") or "answer")).strip("_")
    return name[:64] or "answer"


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None
