"""The OpenAI-compatible transport over real HTTP to a scripted local server: retries, backoff, timeouts,
response_format fallback, and `load_llm` end to end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from pydantic import BaseModel

from tests.fakes.openai_server import FakeOpenAI, Reply, json_reply, scripted
from tracerag.config import load_settings
from tracerag.errors import ConfigError, LLMError
from tracerag.llm import Message, StructuredLLM, load_llm
from tracerag.llm.openai_compat import OpenAICompatProvider


class Answer(BaseModel):
    title: str
    year: int


ASK = [Message("user", "Which book?")]


@contextmanager
def provider(fake: FakeOpenAI, **kwargs) -> Iterator[OpenAICompatProvider]:
    options = {"timeout_s": 2.0, "max_retries": 2, "backoff_s": 0.01} | kwargs
    p = OpenAICompatProvider("m", fake.base_url, **options)
    try:
        yield p
    finally:
        p.close()


def generate(p: OpenAICompatProvider, schema: dict | None = None):
    return p.generate(ASK, json_schema=schema, temperature=0.0, max_tokens=50)


def test_plain_request_shape_usage_and_auth_header():
    with FakeOpenAI(scripted(Reply(content="hello", usage=(7, 3)))) as fake, provider(fake, api_key="sk-x") as p:
        answer = generate(p)
    assert answer.text == "hello"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (7, 3)
    assert answer.model == "m"
    body = fake.requests[0]
    assert body["model"] == "m"
    assert body["messages"] == [{"role": "user", "content": "Which book?"}]
    assert body["temperature"] == 0.0 and body["max_tokens"] == 50
    assert "response_format" not in body
    assert fake.request_headers[0]["Authorization"] == "Bearer sk-x"


def test_response_format_carries_the_schema():
    schema = Answer.model_json_schema()
    with FakeOpenAI(scripted(json_reply({"title": "t", "year": 1}))) as fake, provider(fake) as p:
        generate(p, schema)
    fmt = fake.requests[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "Answer"
    assert fmt["json_schema"]["schema"] == schema


def test_schema_name_is_sanitised_for_the_api():
    class Odd(BaseModel):
        model_config = {"title": "Verdict of a document (v2)"}
        x: int

    with FakeOpenAI(scripted('{"x": 1}')) as fake, provider(fake) as p:
        generate(p, Odd.model_json_schema())
    name = fake.requests[0]["response_format"]["json_schema"]["name"]
    assert name.replace("_", "").replace("-", "").isalnum() and len(name) <= 64


def test_400_to_response_format_falls_back_to_text_once_and_remembers():
    replies = scripted(
        Reply(400, "response_format json_schema is not supported"),
        json_reply({"title": "t", "year": 1}),
        json_reply({"title": "u", "year": 2}),
    )
    with FakeOpenAI(replies) as fake, provider(fake) as p:
        llm = StructuredLLM(p)
        first = llm.complete(ASK, Answer)
        second = llm.complete(ASK, Answer)
    assert first.parsed == Answer(title="t", year=1) and second.parsed == Answer(title="u", year=2)
    assert "response_format" in fake.requests[0]
    assert "response_format" not in fake.requests[1]
    assert "response_format" not in fake.requests[2]  # remembered
    # Without the constraint the JSON is asked for in the text and validated.
    assert "JSON schema" in fake.requests[1]["messages"][0]["content"]


def test_a_400_that_is_not_about_response_format_does_not_switch_it_off():
    replies = scripted(
        Reply(400, "maximum context length exceeded"),
        Reply(400, "maximum context length exceeded"),
        json_reply({"title": "t", "year": 1}),
    )
    with FakeOpenAI(replies) as fake, provider(fake) as p:
        with pytest.raises(LLMError, match="HTTP 400.*context length"):
            generate(p, Answer.model_json_schema())
        generate(p, Answer.model_json_schema())
    assert "response_format" in fake.requests[2]


def test_429_then_200_is_one_retry():
    with FakeOpenAI(scripted(Reply(429, "slow down"), "ok")) as fake, provider(fake) as p:
        assert generate(p).text == "ok"
    assert len(fake.requests) == 2


def test_retry_after_header_is_honoured():
    replies = scripted(Reply(429, headers={"Retry-After": "0.3"}), "ok")
    with FakeOpenAI(replies) as fake, provider(fake, backoff_s=0.0) as p:
        started = time.perf_counter()
        assert generate(p).text == "ok"
        waited = time.perf_counter() - started
    assert len(fake.requests) == 2
    assert waited >= 0.3


def test_retry_after_is_capped_by_the_backoff_cap(monkeypatch):
    import tracerag.llm.openai_compat as oc

    monkeypatch.setattr(oc, "_MAX_SLEEP_S", 0.05)
    replies = scripted(Reply(503, headers={"Retry-After": "3600"}), "ok")
    with FakeOpenAI(replies) as fake, provider(fake) as p:
        started = time.perf_counter()
        assert generate(p).text == "ok"
        assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("max_retries", [0, 2])
def test_500_forever_raises_after_max_retries_plus_one_attempts(max_retries):
    expected = rf"no answer after {max_retries + 1} attempts \(HTTP 500\)"
    with (
        FakeOpenAI(lambda body, n: Reply(500, "boom")) as fake,
        provider(fake, max_retries=max_retries) as p,
        pytest.raises(LLMError, match=expected),
    ):
        generate(p)
    assert len(fake.requests) == max_retries + 1


def test_client_errors_are_not_retried():
    with (
        FakeOpenAI(lambda body, n: Reply(401, "bad key")) as fake,
        provider(fake) as p,
        pytest.raises(LLMError, match="HTTP 401.*bad key"),
    ):
        generate(p)
    assert len(fake.requests) == 1


def test_timeout_is_retried_then_named():
    with (
        FakeOpenAI(lambda body, n: Reply(content="late", delay_s=1.0)) as fake,
        provider(fake, timeout_s=0.3, max_retries=1) as p,
    ):
        started = time.perf_counter()
        with pytest.raises(LLMError, match="2 attempts.*Timeout"):
            generate(p)
        assert time.perf_counter() - started < 1.5
    assert len(fake.requests) == 2


def test_timeout_then_answer_succeeds():
    replies = scripted(Reply(content="late", delay_s=1.0), "on time")
    with FakeOpenAI(replies) as fake, provider(fake, timeout_s=0.3) as p:
        assert generate(p).text == "on time"
    assert len(fake.requests) == 2


def test_connection_refused_is_retried_then_named():
    with FakeOpenAI(scripted()) as fake:
        url = fake.base_url
    p = OpenAICompatProvider("m", url, timeout_s=0.5, max_retries=1, backoff_s=0.01)
    with pytest.raises(LLMError, match="2 attempts.*ConnectError"):
        generate(p)


@pytest.mark.parametrize(
    "raw",
    ["not json at all", {"choices": []}, {"error": {"message": "x"}}, {"choices": [{"message": None}]}],
)
def test_a_200_that_is_not_a_chat_completion_is_an_error(raw):
    with (
        FakeOpenAI(scripted(Reply(raw_body=raw))) as fake,
        provider(fake) as p,
        pytest.raises(LLMError, match="not a chat completion"),
    ):
        generate(p)


def test_null_content_and_missing_usage_are_tolerated():
    with FakeOpenAI(scripted(Reply(content=None, usage=None))) as fake, provider(fake) as p:
        answer = generate(p)
    assert answer.text == ""
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (0, 0)


def test_empty_model_name_is_refused():
    with pytest.raises(LLMError, match="needs a name"):
        OpenAICompatProvider("", "http://127.0.0.1:1/v1")


# -- load_llm --------------------------------------------------------------------------------------------------


def test_load_llm_end_to_end():
    replies = scripted(json_reply({"title": "Candide", "year": 1759}, usage=(1000, 200)))
    with FakeOpenAI(replies) as fake:
        settings = load_settings(
            llm={"model": "openai:m", "base_url": fake.base_url, "prices": {"m": (1.0, 2.0)}, "backoff_s": 0.01}
        )
        llm = load_llm(settings)
        assert isinstance(llm, StructuredLLM)
        completion = llm.complete(ASK, Answer)
    assert completion.ok and completion.parsed == Answer(title="Candide", year=1759)
    assert (completion.provider, completion.model) == ("openai", "m")
    assert completion.cost_usd == pytest.approx((1000 * 1.0 + 200 * 2.0) / 1e6)
    assert fake.requests[0]["model"] == "m"
    assert fake.requests[0]["max_tokens"] == settings.llm.max_tokens


def test_load_llm_without_a_model_is_none():
    assert load_llm(load_settings()) is None


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "replay:", "local:x", "ollama:m"])
def test_load_llm_bad_spec_is_a_config_error(spec):
    with pytest.raises(ConfigError, match="llm.model"):
        load_llm(load_settings(llm={"model": spec}))
