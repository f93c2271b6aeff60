"""A scripted stand-in for a language model that answers by reading the prompt, deterministically.

It makes the agent's behaviour checkable on real data: a document is accepted when its text contains one of the
`accept` words, held when it contains a `hold` word, rejected otherwise. The plan, actions and briefings follow
a script. It is a provider (text in, text out), so everything above it (JSON validation, repair rounds, the
trail, replay) runs for real; `tests/fakes/openai_server.py` serves the same policy over HTTP. The trail
fixtures are recorded with it (`python -m tests.fixtures.record_trails`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracerag.llm import Message, RawAnswer, Usage


@dataclass
class Policy:
    sub_questions: list[dict] = field(default_factory=lambda: [{"question": "Gambetta", "target_corpus": None}])
    accept: tuple[str, ...] = ("gambetta",)
    hold: tuple[str, ...] = ()
    actions: list[dict] = field(default_factory=lambda: [{"tool": "review"}, {"tool": "finish"}])
    replan: list[dict] | None = None  # remaining sub-questions a briefing proposes (None: keep them)
    replans: Sequence[list[dict] | None] = ()  # per briefing, in order (then `replan`)
    reeval: str = "accept"  # what re-evaluation decides for held documents
    reevals: Sequence[str] = ()  # per re-evaluation, in order (then `reeval`)
    garbage_for: tuple[str, ...] = ()  # purposes answered with unusable text
    garbage_at: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # purpose -> its requests (0-based)
    invented_quote: bool = False  # quote words that are not in the document
    quote_words: int = 4  # the quote: the document's first words
    reason: str = "{verdict}: {words} words"  # also {head}: the document's first five words
    calls: list[str] = field(default_factory=list)
    _action_i: int = 0

    def answer(self, messages: Sequence[Message]) -> str:
        system, user = messages[0].content, messages[-1].content if len(messages) > 1 else ""
        purpose = _purpose(system)
        nth = self.calls.count(purpose)
        self.calls.append(purpose)
        if purpose in self.garbage_for or nth in self.garbage_at.get(purpose, ()):
            return "I am not sure what you want."
        if purpose == "plan":
            return json.dumps({"analysis": "scripted", "sub_questions": self.sub_questions, "dates": []})
        if purpose == "action":
            action = self.actions[min(self._action_i, len(self.actions) - 1)]
            self._action_i += 1
            return json.dumps(action)
        if purpose in ("review", "reeval"):
            return json.dumps(self._verdicts(user, purpose))
        if purpose == "briefing":
            briefings = self.calls.count("briefing") - 1
            replan = self.replans[briefings] if briefings < len(self.replans) else self.replan
            remaining = replan if replan is not None else _remaining(user)
            return json.dumps({"summary": "scripted briefing", "gaps": ["more"], "remaining_sub_questions": remaining})
        if purpose == "order":
            return json.dumps({"order": sorted(re.findall(r'"id": "(A\d+)"', user), reverse=True)})
        raise AssertionError(f"unexpected prompt: {system[:80]}")

    def _verdicts(self, user: str, purpose: str) -> dict[str, Any]:
        verdicts = []
        reevals = self.calls.count("reeval") - 1
        for item in _fenced(user, "documents"):
            text = item["text"].lower()
            words = text.split()
            first = item["text"].split()
            quote = "words the document never says" if self.invented_quote else " ".join(first[: self.quote_words])
            if purpose == "reeval":
                verdict = self.reevals[reevals] if reevals < len(self.reevals) else self.reeval
            elif any(w in text for w in self.accept):
                verdict = "accept"
            elif any(w in text for w in self.hold):
                verdict = "hold"
            else:
                verdict = "reject"
            reason = self.reason.format(verdict=verdict, words=len(words), head=" ".join(first[:5]))
            verdicts.append({"id": item["id"], "verdict": verdict, "reason": reason, "quote": quote})
        return {"verdicts": verdicts, "memory": {"findings": [f"{len(verdicts)} judged"], "gaps": [], "next_steps": []}}


def _purpose(system: str) -> str:
    if system.startswith("You plan searches"):
        return "plan"
    if system.startswith("You search an archive"):
        return "action"
    if system.startswith("You judge whether"):
        return "review"
    if system.startswith("Some documents were held"):
        return "reeval"
    if system.startswith("Summarise what the search found"):
        return "briefing"
    if system.startswith("Order the accepted"):
        return "order"
    return "unknown"


def _fenced(user: str, tag: str) -> list[dict]:
    """The JSON objects of a prompt's <tag> fence, one a line (agent/prompts.py writes them so)."""
    found = re.search(f"<{tag}>\n(.*?)\n</{tag}>", user, re.DOTALL)
    return [json.loads(line) for line in found.group(1).splitlines()] if found else []


def _remaining(user: str) -> list[dict]:
    notes = {name: value for item in _fenced(user, "notes") for name, value in item.items()}
    return notes.get("remaining_sub_questions", [])  # none in a repair round's message: as before, none kept


class PolicyProvider:
    name = "policy"
    model = "scripted-policy"

    def __init__(self, policy: Policy, latency_s: float = 0.0):
        self.policy = policy
        self.latency_s = latency_s  # 0: the time actually taken; set, a recorded trail does not vary with it

    def generate(self, messages, *, json_schema, temperature, max_tokens) -> RawAnswer:
        text = self.policy.answer(messages)
        prompt = sum(len(m.content.split()) for m in messages)
        return RawAnswer(text, Usage(prompt, len(text.split())), self.latency_s, self.model)
