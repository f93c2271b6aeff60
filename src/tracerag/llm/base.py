"""The one interface every language model sits behind, and the JSON handling they share.

A provider turns `messages` into text. Everything else (asking for JSON, validating it against a pydantic
schema, sending the validation error back once, counting tokens and cost) is the same for every provider and
lives here, so a hosted API, a local model and a replayed recording behave alike.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, overload, runtime_checkable

from pydantic import BaseModel, ValidationError

from tracerag.errors import LLMCallFailed, LLMError

Role = Literal["system", "user", "assistant"]
T = TypeVar("T", bound=BaseModel)
# The schema type of a completion; covariant so a Completion[PlanAnswer] is a Completion[BaseModel] to a listener.
T_co = TypeVar("T_co", bound=BaseModel, covariant=True)


@dataclass(frozen=True)
class Message:
    role: Role
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens, self.completion_tokens + other.completion_tokens)


@dataclass(frozen=True)
class RawAnswer:
    """What a provider returns for one request: the text and what it cost."""

    text: str
    usage: Usage = Usage()
    latency_s: float = 0.0
    model: str = ""


@dataclass
class Completion(Generic[T_co]):
    """One `complete()` call: the final text, the parsed object (when a schema was asked) and its whole cost.

    `parsed` is an instance of the schema asked for (`complete(messages, PlanAnswer)` gives a
    `Completion[PlanAnswer]`), so callers read its fields without casts; a call without a schema gives a
    `Completion[BaseModel]` whose `parsed` is always None. `attempts` lists every request made (the first and any
    repair rounds), each with its messages and text, so the trail can show exactly what was asked and answered.
    `error` is set when no attempt gave a valid object.
    """

    text: str
    parsed: T_co | None
    usage: Usage
    latency_s: float
    cost_usd: float
    provider: str
    model: str
    attempts: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Provider(Protocol):
    """A model behind some transport. `json_schema` is a hint the provider may use to constrain its output."""

    name: str
    model: str

    def generate(
        self, messages: Sequence[Message], *, json_schema: dict[str, Any] | None, temperature: float, max_tokens: int
    ) -> RawAnswer: ...


@runtime_checkable
class LLM(Protocol):
    name: str
    model: str

    @overload
    def complete(
        self, messages: Sequence[Message], schema: type[T], *, temperature: float = 0.0, max_tokens: int | None = None
    ) -> Completion[T]: ...
    @overload
    def complete(
        self,
        messages: Sequence[Message],
        schema: None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion[BaseModel]: ...


Listener = Callable[[Completion[BaseModel], Sequence[Message], type[BaseModel] | None], None]


def request_key(model: str, messages: Sequence[Message], schema: type[BaseModel] | dict | None) -> str:
    """Hash of what determines an answer at temperature 0: the model, the messages and the schema."""
    schema_json = schema if isinstance(schema, dict) or schema is None else schema.model_json_schema()
    payload = {"model": model, "messages": [m.to_dict() for m in messages], "schema": schema_json}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
_MAX_OBJECTS = 20  # balanced {...} spans tried, in order, before giving up


def extract_json(text: str) -> Any:
    """The JSON value in a model's answer: the whole text, a fenced block, or the first balanced {...} that parses.

    Small models wrap JSON in prose or code fences; this finds it without guessing at its content. Braces in
    the prose before the object ("I think {maybe} ...") are skipped; an object nested in a malformed one is not
    taken for the answer. Raises ValueError naming what was wrong.
    """
    stripped = text.strip()
    candidates = [stripped]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start = stripped.find("{")
    pos = start
    for _ in range(_MAX_OBJECTS):
        if pos < 0:
            break
        span = _balanced(stripped, pos)
        candidates.append(span)
        pos = stripped.find("{", pos + len(span))
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    raise ValueError("the answer holds no JSON object" if start < 0 else "the JSON object in the answer is malformed")


def _balanced(text: str, start: int) -> str:
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


def parse_answer(text: str, schema: type[T]) -> T:
    """Validate a model's answer against `schema`; ValueError with a message the model can act on."""
    try:
        data = extract_json(text)
    except ValueError as exc:
        raise ValueError(f"{exc}. Answer with one JSON object only.") from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'root'}: {e['msg']}" for e in exc.errors()[:6])
        raise ValueError(f"the JSON does not match the schema: {problems}") from None


def cost_of(usage: Usage, model: str, prices: dict[str, tuple[float, float]]) -> float:
    """USD for `usage` at the configured price of `model` (per million tokens); 0 when no price is known."""
    price = prices.get(model)
    if price is None:
        return 0.0
    return (usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1e6


def schema_instruction(schema: type[BaseModel]) -> str:
    """The text that asks for JSON: the schema without its titles, compactly (prompt tokens are what a small local
    model pays for; the descriptions stay, they are what tells the model what each field means)."""
    return "Answer with one JSON object and nothing else. It must validate against this JSON schema:\n" + json.dumps(
        _untitled(schema.model_json_schema()), ensure_ascii=False, separators=(",", ":")
    )


def _untitled(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _untitled(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_untitled(v) for v in node]
    return node


class StructuredLLM:
    """`complete()` over any provider: JSON instruction, validation, repair rounds with the error, accounting.

    An answer that still fails after `repair_rounds` is returned with `error` set and `parsed` None: the caller
    records the failure; it never becomes a verdict by default. Transport failures (after the provider's own
    retries) raise LLMError.
    """

    def __init__(
        self,
        provider: Provider,
        *,
        repair_rounds: int = 1,
        max_tokens: int = 700,
        prices: dict[str, tuple[float, float]] | None = None,
        listeners: Sequence[Listener] = (),
    ):
        if repair_rounds < 0:
            raise ValueError(f"repair_rounds must be >= 0, got {repair_rounds}")
        self.provider = provider
        self.name = provider.name
        self.model = provider.model
        self.repair_rounds = repair_rounds
        self.max_tokens = max_tokens
        self.prices = dict(prices or {})
        self.listeners: list[Listener] = list(listeners)

    @overload
    def complete(
        self, messages: Sequence[Message], schema: type[T], *, temperature: float = 0.0, max_tokens: int | None = None
    ) -> Completion[T]: ...
    @overload
    def complete(
        self,
        messages: Sequence[Message],
        schema: None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion[BaseModel]: ...

    def complete(
        self,
        messages: Sequence[Message],
        schema: type[T] | None = None,
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> Completion[T] | Completion[BaseModel]:
        limit = max_tokens or self.max_tokens
        convo = list(messages)
        if schema is not None:
            convo = _with_instruction(convo, schema_instruction(schema))
        json_schema = schema.model_json_schema() if schema is not None else None
        usage, latency = Usage(), 0.0
        attempts: list[dict[str, Any]] = []
        parsed: T | None = None
        error: str | None = None
        text = ""
        for attempt in range(self.repair_rounds + 1 if schema is not None else 1):
            started = time.perf_counter()
            try:
                answer = self.provider.generate(
                    convo, json_schema=json_schema, temperature=temperature, max_tokens=limit
                )
            except LLMError as exc:
                raise self._failed(messages, schema, convo, json_schema, attempts, usage, exc) from exc
            latency += answer.latency_s or (time.perf_counter() - started)
            usage = usage + answer.usage
            text = answer.text
            attempts.append(
                {
                    "key": request_key(self.model, convo, json_schema),
                    "messages": [m.to_dict() for m in convo],
                    "text": text,
                    "usage": asdict(answer.usage),
                }
            )
            if schema is None:
                break
            try:
                parsed, error = parse_answer(text, schema), None
                break
            except ValueError as exc:
                error = f"attempt {attempt + 1}: {exc}"
                convo = [*convo, Message("assistant", text), Message("user", f"Your answer was unusable: {exc}")]
        completion: Completion[T] = Completion(
            text=text,
            parsed=parsed,
            usage=usage,
            latency_s=latency,
            cost_usd=cost_of(usage, self.model, self.prices),
            provider=self.name,
            model=self.model,
            attempts=attempts,
            error=error,
        )
        for listener in self.listeners:
            listener(completion, messages, schema)
        return completion

    def _failed(
        self,
        messages: Sequence[Message],
        schema: type[BaseModel] | None,
        convo: list[Message],
        json_schema: dict[str, Any] | None,
        attempts: list[dict[str, Any]],
        usage: Usage,
        exc: LLMError,
    ) -> LLMCallFailed:
        """A call that got no answer: recorded like any other (listeners hear it, the error carries it), so the
        trail shows the attempt and its error rather than nothing."""
        attempts = [
            *attempts,
            {
                "key": request_key(self.model, convo, json_schema),
                "messages": [m.to_dict() for m in convo],
                "text": "",
                "usage": asdict(Usage()),
                "error": str(exc),
            },
        ]
        completion: Completion[BaseModel] = Completion(
            text="",
            parsed=None,
            usage=usage,
            latency_s=0.0,
            cost_usd=cost_of(usage, self.model, self.prices),
            provider=self.name,
            model=self.model,
            attempts=attempts,
            error=f"attempt {len(attempts)}: no answer: {exc}",
        )
        for listener in self.listeners:
            listener(completion, messages, schema)
        return LLMCallFailed(str(exc), completion)


def _with_instruction(messages: list[Message], instruction: str) -> list[Message]:
    if messages and messages[0].role == "system":
        return [Message("system", messages[0].content + "\n\n" + instruction), *messages[1:]]
    return [Message("system", instruction), *messages]


def require(completion: Completion[T], what: str) -> T:
    """The parsed object, or LLMError naming the step: for callers that cannot go on without it."""
    if completion.parsed is None:
        raise LLMError(f"{what}: the model gave no usable answer ({completion.error})")
    return completion.parsed
