"""Trail events: one pydantic model per kind, one JSON object per line of a run's trail.

Every event carries the run id, its sequence number and a UTC timestamp; events about a sub-question carry its
index `sq`, events about a document its `doc_id` (and `chunk_id`), so a trail can be filtered and cited. The
union `Event` is the trail's schema: `event_schema()` exports it as JSON Schema, and every line is validated
against it when written and when read.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

SCHEMA_VERSION = 1


class Verdict(StrEnum):
    ACCEPT = "accept"
    HOLD = "hold"
    REJECT = "reject"


class RunStatus(StrEnum):
    COMPLETE = "complete"  # the agent ran to the end
    NO_LLM = "no_llm"  # only the hybrid warm start: no language model was configured
    TRUNCATED = "truncated"  # a limit ended it early; the result holds what was found
    FAILED = "failed"  # an exception ended it; the result holds the warm start


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    seq: int
    time: str
    sq: int | None = Field(None, description="Index of the sub-question this event belongs to.")


class RunEvent(_Event):
    kind: Literal["run"] = "run"
    schema_version: int = SCHEMA_VERSION
    question: str
    collection: str
    k: int
    config: dict[str, Any]
    llm: dict[str, str] | None = Field(None, description="Provider and model, or None when no LLM was configured.")
    versions: dict[str, str]
    replay_of: str | None = None


class SubQuestionRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    target_corpus: str | None = None
    key_entities: list[str] = []


class PlanEvent(_Event):
    kind: Literal["plan"] = "plan"
    analysis: str
    sub_questions: list[SubQuestionRecord]
    dates: list[str] = []
    fallback: str | None = Field(None, description="Why the plan fell back to the question itself, if it did.")


class SearchEvent(_Event):
    kind: Literal["search"] = "search"
    step: int
    tool: str
    args: dict[str, Any]
    filter: dict[str, Any]
    results: int
    new: int = Field(0, description="Documents not seen before in this sub-question.")
    skipped: str | None = Field(None, description="Why the search was not run (a guard), if it was not.")


class ChannelEvent(_Event):
    kind: Literal["channel"] = "channel"
    step: int
    channel: str
    query: str
    ranking: list[tuple[str, str, float]] = Field(description="(doc_id, chunk_id, score), best first.")


class FusionEvent(_Event):
    kind: Literal["fusion"] = "fusion"
    step: int
    method: str
    ranking: list[dict[str, Any]] = Field(description="doc_id, chunk_id, score, and each channel's rank.")


class ReviewEvent(_Event):
    kind: Literal["review"] = "review"
    step: int
    chunks: list[tuple[str, str]] = Field(description="(doc_id, chunk_id) shown to the model, in order.")


class VerdictEvent(_Event):
    kind: Literal["verdict"] = "verdict"
    step: int
    doc_id: str
    chunk_id: str
    verdict: Verdict
    reason: str
    span: tuple[int, int] | None = Field(None, description="Character span of the quoted evidence in the document.")
    failure: str | None = Field(None, description="Set when the model gave no usable verdict (the chunk is held).")
    carried_from: int | None = Field(
        None, description="The sub-question whose verdict on this same chunk was reused (no new model call)."
    )


class MemoryEvent(_Event):
    kind: Literal["memory"] = "memory"
    step: int
    memory: str
    delta: dict[str, Any]


class GuardEvent(_Event):
    kind: Literal["guard"] = "guard"
    step: int | None = None
    guard: str
    message: str


class ReevalEvent(_Event):
    kind: Literal["reeval"] = "reeval"
    doc_id: str
    chunk_id: str
    verdict: Verdict
    reason: str
    promoted_from_hold: bool
    span: tuple[int, int] | None = None
    failure: str | None = None


class BriefingEvent(_Event):
    kind: Literal["briefing"] = "briefing"
    summary: str
    key_facts: list[str] = []
    confirmed_dates: list[str] = []
    confirmed_entities: list[str] = []
    gaps: list[str] = []
    search_hints: list[str] = []
    failure: str | None = None


class ReplanEvent(_Event):
    kind: Literal["replan"] = "replan"
    before: list[SubQuestionRecord] = Field(description="The sub-questions still to come, before re-planning.")
    after: list[SubQuestionRecord] = Field(description="The sub-questions still to come, after re-planning.")
    failure: str | None = None


class RerankEvent(_Event):
    kind: Literal["rerank"] = "rerank"
    count: int = Field(description="How many sub-questions accepted the documents of this group.")
    method: str
    order: list[tuple[str, float]] = Field(description="(doc_id, score), best first.")


class LLMCallEvent(_Event):
    kind: Literal["llm_call"] = "llm_call"
    purpose: str
    provider: str
    model: str
    messages: list[dict[str, str]]
    response: str
    parsed: dict[str, Any] | None
    attempts: list[dict[str, Any]]
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cost_usd: float
    error: str | None = None


class RankedSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rank: int
    doc_id: str
    chunk_id: str | None
    origin: Literal["agent", "warm_start"]
    accepted_by: list[int] = Field(default=[], description="Sub-questions that accepted the document.")
    reasons: list[str] = []
    span: tuple[int, int] | None = None
    promoted_from_hold: bool = False
    score: float = 0.0


class ResultEvent(_Event):
    kind: Literal["result"] = "result"
    status: RunStatus
    message: str = ""
    ranking: list[RankedSource]
    accepted: list[str]
    held: list[str]
    rejected: list[str]
    totals: dict[str, float]


class CatalogParseEvent(_Event):
    """A catalog request parsed into constraints, and the dialogue state after merging it with earlier turns."""

    kind: Literal["catalog_parse"] = "catalog_parse"
    turn: int
    request: str
    method: str = Field(description="'rules', or 'llm+gazetteer' when a model proposed the parse.")
    constraints: dict[str, Any]
    state: dict[str, Any]
    notes: list[str] = []
    topic_match: dict[str, Any] | None = Field(
        None, description="Whether the catalog holds the state's topic: per-word evidence, passage, decision."
    )


class CatalogFilterEvent(_Event):
    kind: Literal["catalog_filter"] = "catalog_filter"
    turn: int
    variant: str
    sql_kinds: list[str]
    allowed: int = Field(description="Records left by the structured pre-filter (all records when none applied).")
    ranked: list[str] = Field(description="Candidate record ids in the order they are checked.")


class CatalogCheckEvent(_Event):
    kind: Literal["catalog_check"] = "catalog_check"
    turn: int
    record_id: str
    structural_ok: bool
    violations: list[str] = []
    semantic: list[dict[str, Any]] = Field(default=[], description="Per semantic constraint: passed, reason, span.")
    selected: bool


class CatalogReplyEvent(_Event):
    kind: Literal["catalog_reply"] = "catalog_reply"
    turn: int
    outcome: Literal["answer", "none_found", "no_match", "clarify"]  # no_match: the catalog holds no such service
    text: str
    recommended: list[str]
    removed: list[dict[str, Any]] = Field(default=[], description="Hallucinations removed from a generated reply.")
    generated: bool = False


Event = Annotated[
    RunEvent
    | PlanEvent
    | SearchEvent
    | ChannelEvent
    | FusionEvent
    | ReviewEvent
    | VerdictEvent
    | MemoryEvent
    | GuardEvent
    | ReevalEvent
    | BriefingEvent
    | ReplanEvent
    | RerankEvent
    | LLMCallEvent
    | ResultEvent
    | CatalogParseEvent
    | CatalogFilterEvent
    | CatalogCheckEvent
    | CatalogReplyEvent,
    Field(discriminator="kind"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
KINDS: dict[str, type[_Event]] = {
    cls.model_fields["kind"].default: cls
    for cls in (
        RunEvent,
        PlanEvent,
        SearchEvent,
        ChannelEvent,
        FusionEvent,
        ReviewEvent,
        VerdictEvent,
        MemoryEvent,
        GuardEvent,
        ReevalEvent,
        BriefingEvent,
        ReplanEvent,
        RerankEvent,
        LLMCallEvent,
        ResultEvent,
        CatalogParseEvent,
        CatalogFilterEvent,
        CatalogCheckEvent,
        CatalogReplyEvent,
    )
}


def event_schema() -> dict[str, Any]:
    """The JSON Schema every trail line validates against."""
    return EVENT_ADAPTER.json_schema()
