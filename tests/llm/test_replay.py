"""Recording real answers (over HTTP from a scripted server) and replaying them offline, from a folder or from
the attempts a trail keeps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.fakes.openai_server import FakeOpenAI, json_reply, scripted
from tracerag.config import load_settings
from tracerag.errors import LLMError
from tracerag.llm import Message, StructuredLLM, load_llm, request_key
from tracerag.llm.openai_compat import OpenAICompatProvider
from tracerag.llm.replay import RecordingProvider, ReplayProvider


class Verdict(BaseModel):
    doc_id: str
    relevant: bool


GOOD = {"doc_id": "d1", "relevant": True}
ASK = [Message("user", "Is d1 relevant?")]


def record(folder: Path, *replies) -> tuple[StructuredLLM, list]:
    """Answers to ASK (schema Verdict) recorded into `folder` from a live fake server."""
    with FakeOpenAI(scripted(*replies)) as fake:
        inner = OpenAICompatProvider("m", fake.base_url, timeout_s=2.0, max_retries=0)
        llm = StructuredLLM(RecordingProvider(inner, folder))
        completion = llm.complete(ASK, Verdict)
        inner.close()
    return completion, fake.requests


def test_recording_writes_one_file_per_request(tmp_path):
    completion, requests = record(tmp_path / "rec", json_reply(GOOD, usage=(40, 8)))
    files = sorted((tmp_path / "rec").iterdir())
    assert [f.suffix for f in files] == [".json"]  # no temporary file left
    saved = json.loads(files[0].read_text(encoding="utf-8"))
    assert saved["key"] == files[0].stem == completion.attempts[0]["key"]
    assert saved == {
        "key": saved["key"],
        "model": "m",
        "text": json.dumps(GOOD),
        "usage": {"prompt_tokens": 40, "completion_tokens": 8},
    }
    assert saved["key"] == request_key(
        "m", [Message(**m) for m in requests[0]["messages"]], Verdict.model_json_schema()
    )


def test_replay_from_folder_gives_the_same_completion(tmp_path):
    wrong = {"doc_id": "d1", "relevant": "perhaps"}
    live, _ = record(tmp_path / "rec", json_reply(wrong, usage=(30, 5)), json_reply(GOOD, usage=(50, 6)))
    assert len(list((tmp_path / "rec").glob("*.json"))) == 2  # the repair round is recorded too

    provider = ReplayProvider.from_folder(tmp_path / "rec")
    assert provider.model == "m"
    replayed = StructuredLLM(provider, prices={"m": (1.0, 1.0)}).complete(ASK, Verdict)
    assert provider.used == 2
    assert replayed.parsed == live.parsed == Verdict(**GOOD)
    assert replayed.text == live.text and replayed.usage == live.usage and replayed.error is None
    assert [a["key"] for a in replayed.attempts] == [a["key"] for a in live.attempts]
    assert [a["messages"] for a in replayed.attempts] == [a["messages"] for a in live.attempts]
    assert replayed.provider == "replay" and replayed.model == "m"
    assert replayed.cost_usd == pytest.approx(91 / 1e6)


def test_replay_of_an_unseen_request_names_its_key(tmp_path):
    record(tmp_path / "rec", json_reply(GOOD))
    llm = StructuredLLM(ReplayProvider.from_folder(tmp_path / "rec"))
    other = [Message("user", "Is d2 relevant?")]
    key = request_key("m", other, None)
    with pytest.raises(LLMError, match=rf"request {key[:12]} was never recorded"):
        llm.complete(other)
    with pytest.raises(LLMError, match="never recorded"):
        llm.complete(ASK)  # the same messages without the schema are another request


def test_replay_through_load_llm(tmp_path):
    record(tmp_path / "rec", json_reply(GOOD))
    llm = load_llm(load_settings(llm={"model": f"replay:{tmp_path / 'rec'}"}))
    assert llm is not None and llm.complete(ASK, Verdict).parsed == Verdict(**GOOD)


def test_replay_folder_errors(tmp_path):
    with pytest.raises(LLMError, match="no such folder"):
        ReplayProvider.from_folder(tmp_path / "absent")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.json").write_text('{"nokey": 1}')
    with pytest.raises(LLMError, match=r"x\.json: not a recorded answer"):
        ReplayProvider.from_folder(tmp_path / "bad")
    (tmp_path / "two").mkdir()
    for i, model in enumerate(["a", "b"]):
        (tmp_path / "two" / f"{i}.json").write_text(json.dumps({"key": str(i), "model": model, "text": ""}))
    with pytest.raises(LLMError, match="several models"):
        ReplayProvider.from_folder(tmp_path / "two")
    assert ReplayProvider.from_folder(tmp_path / "two", model="a").model == "a"


def test_replay_from_calls_as_a_trail_keeps_them(tmp_path):
    wrong = {"doc_id": "d1"}
    live, _ = record(tmp_path / "rec", json_reply(wrong, usage=(3, 1)), json_reply(GOOD, usage=(4, 2)))
    # What a trail's llm_call event keeps, through JSON as the trail file would.
    calls = json.loads(json.dumps([{"model": live.model, "attempts": live.attempts, "purpose": "review"}]))
    for attempt in calls[0]["attempts"]:
        assert set(attempt) == {"key", "messages", "text", "usage"}

    provider = ReplayProvider.from_calls(calls, source="trail.jsonl")
    replayed = StructuredLLM(provider).complete(ASK, Verdict)
    assert replayed.parsed == Verdict(**GOOD)
    assert replayed.usage == live.usage and len(replayed.attempts) == 2
    with pytest.raises(LLMError, match="replay from trail.jsonl: request .* was never recorded"):
        StructuredLLM(provider).complete([Message("user", "something else")], Verdict)


def test_replay_from_calls_written_by_hand():
    messages = [Message("user", "hi")]
    key = request_key("tiny", messages, None)
    calls = [
        {
            "model": "tiny",
            "attempts": [{"key": key, "messages": [m.to_dict() for m in messages], "text": "hello", "usage": {}}],
        }
    ]
    completion = StructuredLLM(ReplayProvider.from_calls(calls, "hand")).complete(messages)
    assert completion.text == "hello" and completion.model == "tiny"
    with pytest.raises(LLMError, match="several models"):
        ReplayProvider.from_calls([*calls, {"model": "other", "attempts": []}], "hand")
