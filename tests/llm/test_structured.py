"""StructuredLLM over the real OpenAI-compatible client and a scripted local server: schema output, repair
rounds, failures recorded (never raised), accounting; and the JSON extraction it relies on."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from tests.fakes.openai_server import FakeOpenAI, Reply, json_reply, scripted
from tracerag.errors import LLMError
from tracerag.llm import Completion, Message, StructuredLLM, extract_json, parse_answer, request_key, require
from tracerag.llm.openai_compat import OpenAICompatProvider


class Verdict(BaseModel):
    doc_id: str
    relevant: bool
    score: int


GOOD = {"doc_id": "d1", "relevant": True, "score": 3}
ASK = [Message("system", "You judge documents."), Message("user", "Is d1 relevant?")]
PRICES = {"m": (2.0, 8.0)}


@pytest.fixture
def serve() -> Iterator:
    """serve(handler, **llm_kwargs) -> (fake server, StructuredLLM on it); both closed after the test."""
    opened: list = []

    def start(handler, **kwargs):
        fake = FakeOpenAI(handler).start()
        provider = OpenAICompatProvider("m", fake.base_url, timeout_s=2.0, max_retries=1, backoff_s=0.01)
        opened.append((fake, provider))
        return fake, StructuredLLM(provider, prices=PRICES, **kwargs)

    yield start
    for fake, provider in opened:
        provider.close()
        fake.stop()
        assert not fake.errors, fake.errors


def test_schema_output_is_parsed_with_usage_and_cost(serve):
    fake, llm = serve(scripted(json_reply(GOOD, usage=(1200, 300))))
    completion = llm.complete(ASK, Verdict)
    assert completion.ok and completion.error is None
    assert completion.parsed == Verdict(**GOOD)
    assert completion.text == json.dumps(GOOD)
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (1200, 300)
    assert completion.cost_usd == pytest.approx((1200 * 2.0 + 300 * 8.0) / 1e6)
    assert (completion.provider, completion.model) == ("openai", "m")
    assert completion.latency_s > 0
    assert len(completion.attempts) == 1
    body = fake.requests[0]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == Verdict.model_json_schema()
    # The instruction joins the caller's system message instead of adding a second one.
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"].startswith("You judge documents.")
    assert "JSON schema" in body["messages"][0]["content"]


def test_unknown_model_costs_nothing(serve):
    fake, llm = serve(scripted(json_reply(GOOD)))
    llm.prices = {}
    assert llm.complete(ASK, Verdict).cost_usd == 0.0


def test_400_to_response_format_then_json_in_prose_is_validated(serve):
    prose = "Sure! Here is my verdict:\n```json\n" + json.dumps(GOOD) + "\n```\nHope this helps."
    fake, llm = serve(scripted(Reply(400, "Unknown field response_format"), prose))
    completion = llm.complete(ASK, Verdict)
    assert completion.parsed == Verdict(**GOOD)
    assert "response_format" in fake.requests[0] and "response_format" not in fake.requests[1]
    assert len(completion.attempts) == 1  # the fallback is transport, not a repair round


def test_repair_round_feeds_the_error_back(serve):
    wrong = {"doc_id": "d1", "relevant": True, "score": "high"}
    fake, llm = serve(scripted(json_reply(wrong, usage=(100, 10)), json_reply(GOOD, usage=(150, 12))))
    completion = llm.complete(ASK, Verdict)
    assert completion.ok and completion.parsed == Verdict(**GOOD)
    assert len(completion.attempts) == 2 and len(fake.requests) == 2
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (250, 22)
    assert completion.cost_usd == pytest.approx((250 * 2.0 + 22 * 8.0) / 1e6)
    second = fake.requests[1]["messages"]
    assert second[:2] == fake.requests[0]["messages"]
    assert second[-2] == {"role": "assistant", "content": json.dumps(wrong)}
    assert second[-1]["role"] == "user"
    assert "score" in second[-1]["content"] and "valid integer" in second[-1]["content"]
    # Each attempt records what was asked and answered, with the key a replay would look up.
    first, repair = completion.attempts
    assert first["text"] == json.dumps(wrong) and repair["text"] == json.dumps(GOOD)
    assert repair["messages"] == second
    assert repair["key"] == request_key("m", [Message(**m) for m in second], Verdict.model_json_schema())
    assert first["usage"] == {"prompt_tokens": 100, "completion_tokens": 10}
    json.dumps(completion.attempts)  # goes into the trail as is
    first["usage"]["prompt_tokens"] = 0  # a copy, not the provider's Usage
    assert completion.usage.prompt_tokens == 250


def test_garbage_twice_is_recorded_not_raised(serve):
    fake, llm = serve(scripted("I cannot answer that.", "Still no JSON, sorry."))
    completion = llm.complete(ASK, Verdict)
    assert completion.parsed is None and not completion.ok
    assert completion.error is not None and completion.error.startswith("attempt 2:")
    assert "no JSON object" in completion.error
    assert completion.text == "Still no JSON, sorry."
    assert len(completion.attempts) == 2 and len(fake.requests) == 2
    with pytest.raises(LLMError, match="review: the model gave no usable answer"):
        require(completion, "review")


def test_no_repair_rounds_means_one_attempt(serve):
    fake, llm = serve(scripted("nope"), repair_rounds=0)
    completion = llm.complete(ASK, Verdict)
    assert completion.error is not None and len(fake.requests) == 1


def test_without_schema_text_is_returned_as_is(serve):
    fake, llm = serve(scripted(Reply(content="plain words", usage=(5, 2))))
    completion = llm.complete(ASK, max_tokens=33)
    assert completion.ok and completion.parsed is None and completion.text == "plain words"
    assert "response_format" not in fake.requests[0]
    assert fake.requests[0]["messages"] == [m.to_dict() for m in ASK]
    assert fake.requests[0]["max_tokens"] == 33


def test_listeners_see_every_completion(serve):
    seen: list[tuple[Completion, list, type | None]] = []
    fake, llm = serve(scripted(json_reply(GOOD)), listeners=[lambda c, m, s: seen.append((c, list(m), s))])
    completion = llm.complete(ASK, Verdict)
    assert seen == [(completion, ASK, Verdict)]


def test_transport_failure_raises(serve):
    fake, llm = serve(lambda body, n: Reply(503))
    with pytest.raises(LLMError, match="2 attempts"):
        llm.complete(ASK, Verdict)


def test_negative_repair_rounds_is_refused():
    with pytest.raises(ValueError, match="repair_rounds"):
        StructuredLLM(OpenAICompatProvider("m", "http://127.0.0.1:1/v1"), repair_rounds=-1)


# -- extract_json / parse_answer --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  \n{"a": 1}\n', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('```JSON\n{"a": 1}\n```', {"a": 1}),
        ('Here you go:\n```json\n{"a": [1, 2]}\n```\nDone.', {"a": [1, 2]}),
        ('The answer is {"a": 1} as asked.', {"a": 1}),
        ('Sure. {"a": {"b": {"c": 2}}} trailing', {"a": {"b": {"c": 2}}}),
        ('x {"q": "a } brace and { another", "n": 1} y', {"q": "a } brace and { another", "n": 1}),
        ('{"q": "escaped \\" quote }", "n": 2} tail', {"q": 'escaped " quote }', "n": 2}),
        ('I think {maybe} the answer is {"a": 1}.', {"a": 1}),
        ('{"a": 1} and then {"b": 2}', {"a": 1}),
        ("[1, 2]", [1, 2]),
    ],
)
def test_extract_json(text, expected):
    assert extract_json(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no json here", "no JSON object"),
        ('{"a": 1,', "malformed"),
        ("", "no JSON object"),
        ('{"a": {"b": 1}, oops}', "malformed"),  # the inner object is not taken for the answer
    ],
)
def test_extract_json_failures(text, message):
    with pytest.raises(ValueError, match=message):
        extract_json(text)


def test_parse_answer_names_the_fields():
    with pytest.raises(ValueError, match=r"score: .*integer.*relevant: Field required|relevant.*score"):
        parse_answer('{"doc_id": "d", "score": "x"}', Verdict)
    assert parse_answer("```json\n" + json.dumps(GOOD) + "\n```", Verdict) == Verdict(**GOOD)
