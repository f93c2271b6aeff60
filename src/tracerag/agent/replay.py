"""Replaying a run from its trail: the same question, agent settings and the recorded model answers.

The model is replaced by the answers recorded in the trail's `llm_call` events, looked up by the hash of each
request; retrieval runs for real. If the collection, the retrieval settings or the prompts changed since the
recording, a request will not be found and the replay fails naming it, rather than asking a real model. A
successful replay writes a trail of its own (`replay_of` = the original run) and is compared rank by rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tracerag.agent.pipeline import Agent, AgentResult
from tracerag.collection import Collection
from tracerag.config import AgentSettings
from tracerag.errors import TrailError
from tracerag.llm import StructuredLLM
from tracerag.llm.replay import ReplayProvider
from tracerag.trail import read_trail
from tracerag.trail.events import LLMCallEvent, ResultEvent, RunEvent


@dataclass
class ReplayReport:
    original: list[str]
    replayed: AgentResult

    @property
    def same(self) -> bool:
        return self.original == [r.doc_id for r in self.replayed.ranking]

    def differences(self) -> list[str]:
        new = [r.doc_id for r in self.replayed.ranking]
        out = []
        for i in range(max(len(self.original), len(new))):
            a = self.original[i] if i < len(self.original) else "-"
            b = new[i] if i < len(new) else "-"
            if a != b:
                out.append(f"rank {i + 1}: recorded {a}, replayed {b}")
        return out


def replay(collection: Collection, trail_file: Path, trail_dir: Path | None = None) -> ReplayReport:
    events = read_trail(trail_file)
    run = events[0]
    assert isinstance(run, RunEvent)  # read_trail checks that a trail starts with its run
    results = [e for e in events if isinstance(e, ResultEvent)]
    if not results:
        raise TrailError(f"{trail_file}: the run never finished (no result event): nothing to compare")
    calls = [e.model_dump(mode="json") for e in events if isinstance(e, LLMCallEvent)]
    llm = None
    if run.llm is not None:
        provider = ReplayProvider.from_calls(calls, source=str(trail_file), model=run.llm["model"])
        repair = int(run.config.get("llm", {}).get("repair_rounds", 1))
        llm = StructuredLLM(provider, repair_rounds=repair)
    settings = AgentSettings(**run.config["agent"])
    agent = Agent(collection, llm, trail_dir=trail_dir, settings=settings)
    result = agent.run(run.question, run.k, replay_of=run.run_id)
    return ReplayReport([r.doc_id for r in results[-1].ranking], result)
