"""What the model is asked to answer at each step, as pydantic models: their JSON Schema is what the model sees
(and what a server that supports it is constrained to); their validation is what makes an answer usable.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tracerag.trail.events import Verdict


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")  # small models add keys; ignoring them loses nothing we asked for


class PlannedSubQuestion(_Answer):
    question: str = Field(min_length=3, description="A self-contained sub-question, proper nouns as written.")
    target_corpus: str | None = Field(None, description="One sub-corpus name from the list, or null for all.")
    key_entities: list[str] = Field(default_factory=list, description="Names, places, organisations as written.")


class PlanAnswer(_Answer):
    analysis: str = Field(description="One or two sentences: what the question needs.")
    sub_questions: list[PlannedSubQuestion] = Field(min_length=1)
    dates: list[str] = Field(default_factory=list, description="Dates or periods the question implies (ISO).")


ToolName = Literal["search_bm25", "search_semantic", "search_date", "search_phrase", "review", "finish"]


class ActionAnswer(_Answer):
    thought: str = Field("", description="One short sentence: why this tool now.")
    tool: ToolName
    query: str | None = Field(None, description="Search text (search_bm25, search_semantic, search_date).")
    phrase: str | None = Field(None, description="Exact words to find (search_phrase).")
    corpus: str | None = Field(None, description="Restrict a search to one sub-corpus (optional).")
    date_from: str | None = Field(None, description="search_date: start of the range (ISO date or year).")
    date_to: str | None = Field(None, description="search_date: end of the range (ISO date or year).")
    centre: str | None = Field(None, description="search_date: a date to search around (with days).")
    days: int | None = Field(None, description="search_date: half-width of the window around centre, in days.")


class MemoryDelta(_Answer):
    findings: list[str] = Field(default_factory=list, description="New facts established (short).")
    evidence: list[str] = Field(default_factory=list, description="Document ids with what they show.")
    gaps: list[str] = Field(default_factory=list, description="What is still missing.")
    next_steps: list[str] = Field(default_factory=list, description="What to search next.")


class DocumentVerdict(_Answer):
    id: str = Field(description="The document label shown, e.g. D3.")
    verdict: Verdict
    reason: str = Field(description="At most ~120 characters: why, against the ORIGINAL question.")
    quote: str = Field("", description="Exact words copied from the document that support the verdict.")


class ReviewAnswer(_Answer):
    verdicts: list[DocumentVerdict]
    memory: MemoryDelta = Field(default_factory=MemoryDelta)


class ReevalVerdict(_Answer):
    id: str
    verdict: Literal["accept", "hold", "reject"]
    reason: str
    quote: str = ""


class ReevalAnswer(_Answer):
    verdicts: list[ReevalVerdict]


class BriefingAnswer(_Answer):
    summary: str
    key_facts: list[str] = Field(default_factory=list)
    confirmed_dates: list[str] = Field(default_factory=list)
    confirmed_entities: list[str] = Field(default_factory=list)
    gaps: list[str] = Field(default_factory=list)
    search_hints: list[str] = Field(default_factory=list)
    remaining_sub_questions: list[PlannedSubQuestion] = Field(
        default_factory=list, description="The sub-questions still to search, rewritten or new (may be empty)."
    )


class OrderAnswer(_Answer):
    order: list[str] = Field(description="Document labels, most relevant first.")
