"""The TRACE agent: planner, search-and-review loop with verdicts, re-evaluation, re-planning, final rank."""

from tracerag.agent.pipeline import NO_LLM_MESSAGE, Agent, AgentResult

__all__ = ["NO_LLM_MESSAGE", "Agent", "AgentResult"]
