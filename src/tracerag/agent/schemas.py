"""What the model is asked to answer at each step, as pydantic models: their JSON Schema is what the model sees
(and what a server that supports it is constrained to); their validation is what makes an answer usable.

A step's action answer is built from the tools' argument models (`action_answer_model`, used by agent/tools.py),
so a tool's arguments are written once: their types, bounds and descriptions are both the schema the model is
shown and the validation its answer meets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    WithJsonSchema,
    create_model,
    field_validator,
    model_validator,
)

from tracerag.dates import parse_partial_date
from tracerag.model import SubQuestion, Verdict


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")  # small models add keys; ignoring them loses nothing we asked for

    @model_validator(mode="before")
    @classmethod
    def _encodable(cls, data: Any) -> Any:
        # JSON's "\ud800" decodes to half a UTF-16 pair, which the trail's UTF-8 writer cannot encode: such an
        # answer is unusable (and sent back), not a crash when its llm_call is written
        if has_lone_surrogate(data):
            raise ValueError("the answer holds a character that is not valid Unicode text (a lone surrogate)")
        return data


class PlannedSubQuestion(_Answer):
    # A sub-question as the model writes it (plan and re-plan); `to_sub_question()` gives the domain's noun.
    # (No docstring: it would become the schema's description, and every answer schema is part of the prompt.)
    question: str = Field(min_length=3, description="A self-contained sub-question, proper nouns as written.")
    target_corpus: str | None = Field(None, description="One sub-corpus name from the list, or null for all.")
    key_entities: list[str] = Field(default_factory=list, description="Names, places, organisations as written.")

    def to_sub_question(self) -> SubQuestion:
        """Trimmed; a blank corpus is none."""
        return SubQuestion(self.question.strip(), self.target_corpus or None, tuple(self.key_entities))


class PlanAnswer(_Answer):
    analysis: str = Field(description="One or two sentences: what the question needs.")
    sub_questions: list[PlannedSubQuestion] = Field(min_length=1)
    dates: list[str] = Field(default_factory=list, description="Dates or periods the question implies (ISO).")


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


# -- tool arguments ---------------------------------------------------------------------------------------------

MAX_SEARCH_K = 50  # six review batches: more than a loop of at most 15 steps reviews, and the trail keeps 50 a channel
MAX_QUERY_WORDS = 50  # longer is a pasted passage or a runaway answer, not a search the model chose
MAX_PHRASE_WORDS = 20  # an exact phrase longer than a sentence is almost never found word for word in OCR text
MAX_TEXT_CHARS = 500  # a query or phrase of one endless "word" (junk, a base64 blob) is no search either
MAX_DAYS = 36_525  # a century either side of a centre: wider is no date restriction at all
DEFAULT_DAYS = 365  # centre without days: a year either side


@dataclass(frozen=True)
class ArgumentContext:
    """What checking a tool's arguments needs from the collection, passed as pydantic's validation context:
    the sub-corpus names a search may name (full names and their parents) and the ones the model is shown."""

    corpora: frozenset[str]
    shown: tuple[str, ...] = ()


class ToolArgs(BaseModel):
    """A tool's arguments. An argument the tool does not take is an error, not ignored: a model that passes
    `date_from` to `search_bm25` believes its search was restricted, and must hear that it was not."""

    model_config = ConfigDict(extra="forbid")


class NoArgs(ToolArgs):
    """`review` and `finish` take no arguments (search arguments sent with them are not looked at)."""


class SearchArgs(ToolArgs):
    query: str | None = Field(None, description="Words to search for; left out, the current sub-question is searched.")
    corpus: str | None = Field(None, description="Restrict the search to one sub-corpus from the list (optional).")
    k: int | None = Field(
        None, ge=1, le=MAX_SEARCH_K, description=f"How many documents to fetch, 1 to {MAX_SEARCH_K} (optional)."
    )

    @field_validator("query", "corpus", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return as_text(value)

    @field_validator("k", mode="before")
    @classmethod
    def _whole_number(cls, value: Any) -> Any:
        if isinstance(value, bool):  # pydantic would read true as 1
            raise ValueError(f"{value!r} is not a number of documents")
        return value

    @field_validator("query")
    @classmethod
    def _searchable(cls, value: str | None) -> str | None:
        return searchable(value, MAX_QUERY_WORDS)

    @field_validator("corpus")
    @classmethod
    def _known_corpus(cls, value: str | None, info: ValidationInfo) -> str | None:
        context = info.context
        if value is None or not isinstance(context, ArgumentContext) or value in context.corpora:
            return value
        names = ", ".join(context.shown or sorted(context.corpora)) or "none"
        raise ValueError(f"{value!r} is not a sub-corpus of this collection (use one of: {names}; or leave it out)")


class PhraseArgs(SearchArgs):
    phrase: str | None = Field(None, description="The exact words to find, in order; left out, the query.")

    @field_validator("phrase", mode="before")
    @classmethod
    def _phrase_text(cls, value: Any) -> Any:
        return as_text(value)

    @field_validator("phrase")
    @classmethod
    def _phrase(cls, value: str | None) -> str | None:
        unquoted = value.strip('"').strip() if value else None  # the tool quotes it itself
        return searchable(unquoted, MAX_PHRASE_WORDS) if unquoted else None


class DateArgs(SearchArgs):
    date_from: str | None = Field(None, description="Start of the range: a year, YYYY-MM or YYYY-MM-DD.")
    date_to: str | None = Field(None, description="End of the range: a year, YYYY-MM or YYYY-MM-DD.")
    centre: str | None = Field(None, description="Instead of a range: a date to search around (with days).")
    days: int | None = Field(
        None, ge=1, le=MAX_DAYS, description=f"Half-width of the window around centre in days (default {DEFAULT_DAYS})."
    )
    _window: tuple[str | None, str | None] = PrivateAttr((None, None))

    @field_validator("date_from", "date_to", "centre", mode="before")
    @classmethod
    def _date_text(cls, value: Any) -> Any:
        return as_text(value)

    @field_validator("date_from", "date_to", "centre")
    @classmethod
    def _date(cls, value: str | None) -> str | None:
        if value is not None:
            date_range(value)
        return value

    @field_validator("days", mode="before")
    @classmethod
    def _whole_days(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a number of days")
        return value

    @model_validator(mode="after")
    def _window_of_dates(self) -> DateArgs:
        if self.centre is not None:
            start, end = date_range(self.centre)
            days = self.days or DEFAULT_DAYS
            try:
                self._window = ((start - timedelta(days)).isoformat(), (end + timedelta(days)).isoformat())
            except OverflowError:
                raise ValueError(f"centre {self.centre!r} ± {days} days leaves the calendar") from None
            return self
        if self.date_from is None and self.date_to is None:
            raise ValueError("give date_from and/or date_to, or centre (with days)")
        first = date_range(self.date_from)[0] if self.date_from is not None else None
        last = date_range(self.date_to)[1] if self.date_to is not None else None
        if first is not None and last is not None and first > last:
            raise ValueError(f"date_from {self.date_from!r} is after date_to {self.date_to!r}")
        self._window = (first.isoformat() if first else None, last.isoformat() if last else None)
        return self

    @property
    def window(self) -> tuple[str | None, str | None]:
        """Inclusive ISO bounds: partial dates widen to the range they cover; centre ± days."""
        return self._window


def as_text(value: Any) -> Any:
    """A text argument as given, stripped. A year written as a JSON number is read as that year; a list, an
    object, a boolean or a fraction is not text."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f"must be text, not {_json_type(value)}")
    if has_lone_surrogate(value):
        raise ValueError("holds a character that is not valid Unicode text (a lone surrogate)")
    return value.strip() or None


def searchable(value: str | None, max_words: int) -> str | None:
    """A query or phrase that can find something: a letter or digit in it, and not a whole passage."""
    if value is None:
        return None
    if not any(c.isalnum() for c in value):
        raise ValueError(f"{preview(value)} has no letter or digit to search for")
    words = len(value.split())
    if words > max_words:
        raise ValueError(f"has {words} words; at most {max_words}")
    if len(value) > MAX_TEXT_CHARS:
        raise ValueError(f"has {len(value)} characters; at most {MAX_TEXT_CHARS}")
    return value


def date_range(value: str) -> tuple[date, date]:
    """The days a partial date covers (`1887`, `1887-05`, `1887-05-17`; a time after `T` is dropped)."""
    try:
        covered = parse_partial_date(value.split("T", 1)[0])
        return date.fromisoformat(covered.start), date.fromisoformat(covered.end)
    except ValueError:  # a malformed date, or year 0, which the calendar lacks
        raise ValueError(f"{preview(value)} is not a date (expected YYYY, YYYY-MM or YYYY-MM-DD)") from None


def has_lone_surrogate(value: Any) -> bool:
    """True when a string anywhere in `value` holds half a UTF-16 pair: JSON's `\\ud800` decodes to one, and
    no UTF-8 writer (the trail, the engine) can encode it."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, Mapping):
        return any(has_lone_surrogate(k) or has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(has_lone_surrogate(v) for v in value)
    return False


def preview(value: Any, width: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _json_type(value: Any) -> str:
    for kind, name in ((bool, "true/false"), (float, "a fraction"), (list, "a list"), (dict, "an object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


class ActionEnvelope(_Answer):
    """The shape every action answer has: a thought, a tool, and that tool's arguments side by side (one flat
    object, as models write it). The arguments are taken as given here and checked by the chosen tool's own
    model (`arguments()`), so every argument problem is reported the same way, naming the tool."""

    thought: str = Field("", description="One short sentence: why this tool now.")
    tool: str
    argument_names: ClassVar[tuple[str, ...]] = ()

    def arguments(self) -> dict[str, Any]:
        """The arguments the model gave: a null or blank value is no argument (models fill every field)."""
        out = {}
        for name in self.argument_names:
            value = getattr(self, name)
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            out[name] = value
        return out


def action_answer_model(tools: Mapping[str, type[ToolArgs]]) -> type[ActionEnvelope]:
    """The action answer for these tools: `tool` is one of their names, and each argument any of them takes is a
    field whose JSON Schema (type, bounds, description) is the argument model's own, its description prefixed with
    the tools that take it when not all do."""
    takers: dict[str, list[str]] = {}
    schemas: dict[str, dict[str, Any]] = {}
    for name, args in tools.items():
        properties = args.model_json_schema()["properties"] if args.model_fields else {}
        for field, schema in properties.items():
            takers.setdefault(field, []).append(name)
            schemas.setdefault(field, schema)
    with_arguments = [name for name, args in tools.items() if args.model_fields]
    fields: dict[str, Any] = {"tool": (Literal[tuple(tools)], ...)}
    for field, schema in schemas.items():
        schema = {k: v for k, v in schema.items() if k != "title"}
        if takers[field] != with_arguments:
            described = schema.get("description", "")
            schema["description"] = f"{', '.join(takers[field])}: {described[:1].lower()}{described[1:]}"
        fields[field] = (Annotated[Any, WithJsonSchema(schema)], None)
    model = create_model("ActionAnswer", __base__=ActionEnvelope, **fields)
    model.argument_names = tuple(schemas)
    return model
