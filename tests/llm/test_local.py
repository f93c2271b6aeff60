"""The local model: joining its weight slices (checked by sha256), the provider's glue to llama-cpp-python (with
a stand-in module), and - only when asked for - the real model."""

from __future__ import annotations

import hashlib
import os
import sys
import types
from pathlib import Path

import pytest
from pydantic import BaseModel

from tracerag.config import load_settings
from tracerag.errors import LLMError
from tracerag.llm import Message, StructuredLLM, load_llm, local
from tracerag.llm.local import MODEL_NAME, LocalProvider, assemble

SLICES = [b"GGUF-head" * 100, b"\x00\x01middle" * 300, b"tail\xff" * 7]


@pytest.fixture
def parts(tmp_path: Path) -> list[Path]:
    paths = []
    for i, data in enumerate(SLICES, start=1):
        path = tmp_path / "parts" / f"part{i:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    return paths


RIGHT = hashlib.sha256(b"".join(SLICES)).hexdigest()


def test_assemble_joins_in_order_and_caches(tmp_path, parts):
    cache = tmp_path / "cache"
    path = assemble(cache, parts, RIGHT)
    assert path == cache / "models" / f"{MODEL_NAME}.gguf"
    assert path.read_bytes() == b"".join(SLICES)
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, f"{MODEL_NAME}.sha256"])
    # Joined once: a second call does not read the slices again.
    for part in parts:
        part.unlink()
    assert assemble(cache, parts, RIGHT) == path


def test_assemble_with_the_wrong_sha256_leaves_nothing(tmp_path, parts):
    cache = tmp_path / "cache"
    with pytest.raises(LLMError, match=rf"sha256 {RIGHT}, expected {'0' * 64}; reinstall"):
        assemble(cache, parts, "0" * 64)
    assert list((cache / "models").iterdir()) == []


def test_assemble_with_a_slice_out_of_order_fails(tmp_path, parts):
    with pytest.raises(LLMError, match="sha256"):
        assemble(tmp_path / "cache", [parts[1], parts[0], parts[2]], RIGHT)


def test_assemble_names_a_missing_slice(tmp_path, parts):
    parts[1].unlink()
    with pytest.raises(LLMError, match=r"part02\.bin is missing"):
        assemble(tmp_path / "cache", parts, RIGHT)
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def test_assemble_rejoins_when_the_stamp_is_for_another_file(tmp_path, parts):
    cache = tmp_path / "cache"
    path = assemble(cache, parts, RIGHT)
    path.write_bytes(b"stale")
    path.with_suffix(".sha256").write_text("f" * 64)
    assert assemble(cache, parts, RIGHT).read_bytes() == b"".join(SLICES)


def test_provider_without_llama_cpp_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(LLMError, match=r"llama-cpp-python: pip install 'tracerag\[local\]'"):
        LocalProvider(tmp_path)
    with pytest.raises(LLMError, match="llama-cpp-python"):
        load_llm(load_settings(llm={"model": "local"}, cache_dir=str(tmp_path)))


class FakeLlama:
    """Stands in for llama_cpp.Llama: records how it was built and asked."""

    instances: list[FakeLlama] = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls: list[dict] = []
        FakeLlama.instances.append(self)

    def create_chat_completion(self, **kwargs):
        self.calls.append(kwargs)
        if "too long" in kwargs["messages"][-1]["content"]:
            raise ValueError("Requested tokens (9000) exceed context window of 8192")
        return {
            "choices": [{"message": {"role": "assistant", "content": '{"answer": "yes"}'}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 4},
        }


@pytest.fixture
def fake_llama(monkeypatch, tmp_path):
    FakeLlama.instances = []
    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=FakeLlama))
    monkeypatch.setattr(local, "assemble", lambda cache_dir: tmp_path / "model.gguf")
    return FakeLlama


class Answer(BaseModel):
    answer: str


def test_provider_glue(fake_llama, tmp_path):
    provider = LocalProvider(tmp_path, threads=2, context=4096)
    (llama,) = fake_llama.instances
    assert llama.kwargs["model_path"] == str(tmp_path / "model.gguf")
    assert (llama.kwargs["n_ctx"], llama.kwargs["n_threads"], llama.kwargs["seed"]) == (4096, 2, 0)
    completion = StructuredLLM(provider).complete([Message("user", "Is it?")], Answer, max_tokens=20)
    assert completion.parsed == Answer(answer="yes")
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (12, 4)
    assert (completion.provider, completion.model) == ("local", MODEL_NAME)
    call = llama.calls[0]
    assert call["response_format"] == {"type": "json_object", "schema": Answer.model_json_schema()}
    assert (call["temperature"], call["max_tokens"]) == (0.0, 20)
    with pytest.raises(LLMError, match="local model: Requested tokens"):
        provider.generate([Message("user", "too long")], json_schema=None, temperature=0.0, max_tokens=5)
    assert "response_format" not in llama.calls[-1]


def test_a_file_llama_cpp_refuses_is_an_llm_error(monkeypatch, tmp_path):
    def refuse(**kwargs):
        raise ValueError("Failed to load model from file")

    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=refuse))
    monkeypatch.setattr(local, "assemble", lambda cache_dir: tmp_path / "model.gguf")
    with pytest.raises(LLMError, match="cannot be loaded: Failed to load model"):
        LocalProvider(tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("TRACERAG_TEST_LOCAL_LLM") != "1", reason="set TRACERAG_TEST_LOCAL_LLM=1")
def test_the_real_local_model_answers_in_json():
    pytest.importorskip("llama_cpp")
    llm = load_llm(load_settings(llm={"model": "local", "max_tokens": 60}))
    assert llm is not None
    completion = llm.complete(
        [Message("user", "Is Paris the capital of France? Answer yes or no in the field 'answer'.")], Answer
    )
    assert completion.ok, completion.error
    assert completion.parsed.answer.strip().lower().startswith("yes")
    assert completion.usage.completion_tokens > 0
