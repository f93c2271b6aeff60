"""The agent's tools: small classes whose docstring says what the tool does and whose argument model (in
agent/schemas.py) says what it takes. Both are what the model is shown: `tool_list()` renders each tool as
`name(arguments): docstring`, and the action answer's JSON Schema is built from the same argument models.

Each search runs the real retrieval (our channels, RRF k=60, max-pool to documents) restricted as the tool says,
and writes the query, each channel's ranking and the fusion to the trail. `review` and `finish` are decided by
the loop; they are listed here so the model sees one tool list.

Arguments are checked before anything runs: `Tool.arguments()` validates them against the tool's model with the
collection's sub-corpora as context and raises `MalformedArguments`, naming the tool and each problem, for the
loop to send back to the model or record as a guard. Nothing else from here is caught: a bug surfaces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeVar

from pydantic import ValidationError

from tracerag.agent.context import RunContext
from tracerag.agent.schemas import (
    ActionEnvelope,
    ArgumentContext,
    DateArgs,
    NoArgs,
    PhraseArgs,
    SearchArgs,
    ToolArgs,
    action_answer_model,
    preview,
)
from tracerag.model import Filter, Ranking
from tracerag.retrieval.search import SearchRequest
from tracerag.trail.events import SearchTool
from tracerag.trail.ranking import ranking_events


class MalformedArguments(Exception):
    """The model's arguments for a tool do not validate. Not a TraceError: it never leaves the agent's loop."""

    def __init__(self, tool: str, problems: list[str]):
        self.tool = tool
        self.problems = problems
        super().__init__(f"{tool}: " + "; ".join(problems))


@dataclass
class ToolCall:
    """A search as run: what was asked, the filter applied, how many documents, and a key to spot a repeat."""

    tool: SearchTool
    query: str
    channels: tuple[str, ...]
    filter: Filter
    k: int

    @property
    def key(self) -> tuple:
        """What makes two searches the same one: the tool, the query up to case and spacing, the filter and k (the
        one key the loop's repeat guard compares, the warm start's included)."""
        return (self.tool, " ".join(self.query.lower().split()), self.filter, self.k)


class Tool:
    name: ClassVar[str] = ""
    args: ClassVar[type[ToolArgs]] = NoArgs

    def describe(self) -> str:
        """`name(arguments): what it does`, the tool's own arguments before those it shares with other tools."""
        inherited = {n for base in self.args.__mro__[1:] for n in getattr(base, "model_fields", {})}
        names = sorted(self.args.model_fields, key=lambda n: n in inherited)
        signature = f"{self.name}({', '.join(names)})" if names else self.name
        return f"- {signature}: {' '.join((self.__doc__ or '').split())}"

    def arguments(self, action: ActionEnvelope, context: ArgumentContext) -> ToolArgs:
        """This tool's arguments from an action answer, validated; MalformedArguments says what is wrong."""
        if self.args is NoArgs:
            return NoArgs()  # the action is clear whatever else the answer holds
        try:
            return self.args.model_validate(action.arguments(), context=context)
        except ValidationError as exc:
            raise MalformedArguments(self.name, _problems(exc, self)) from None


A = TypeVar("A", bound=ToolArgs)


def own_args(tool: Tool, args: ToolArgs, kind: type[A]) -> A:
    """`args` as the tool's own argument model. The loop hands a tool only what its `arguments()` validated, so
    anything else is a programming error, said as such (a subclass cannot narrow `plan`'s parameter type)."""
    if not isinstance(args, kind):
        raise TypeError(f"{tool.name} was given {type(args).__name__}, not its {kind.__name__}")
    return args


class Search(Tool):
    name: ClassVar[SearchTool]
    channels: ClassVar[tuple[str, ...]] = ()
    args: ClassVar[type[ToolArgs]] = SearchArgs

    def plan(self, args: ToolArgs, fallback_query: str, base: Filter, k: int) -> ToolCall:
        own = own_args(self, args, SearchArgs)
        return ToolCall(self.name, own.query or fallback_query, self.channels, base, own.k or k)


class SearchBm25(Search):
    """keyword search (stemmed, accent-folded)."""

    name = SearchTool.BM25
    channels = ("bm25",)


class SearchSemantic(Search):
    """meaning search with embeddings, works across languages and OCR errors."""

    name = SearchTool.SEMANTIC
    channels = ("dense",)


class SearchPhrase(Search):
    """documents containing these exact words in order."""

    name = SearchTool.PHRASE
    channels = ("phrase",)
    args = PhraseArgs

    def plan(self, args: ToolArgs, fallback_query: str, base: Filter, k: int) -> ToolCall:
        own = own_args(self, args, PhraseArgs)
        phrase = (own.phrase or own.query or "").strip('"') or fallback_query
        return ToolCall(self.name, f'"{phrase}"', self.channels, base, own.k or k)


class SearchDate(Search):
    """search within a date range (date_from and/or date_to: years or ISO dates), or around centre ± days."""

    name = SearchTool.DATE
    channels = ("bm25", "dense", "date")
    args = DateArgs

    def plan(self, args: ToolArgs, fallback_query: str, base: Filter, k: int) -> ToolCall:
        own = own_args(self, args, DateArgs)
        start, end = own.window
        query = own.query or fallback_query
        return ToolCall(self.name, query, self.channels, base.narrowed(date_from=start, date_to=end), own.k or k)


class Review(Tool):
    """judge the next unreviewed documents found so far (accept / hold / reject with a quoted reason)."""

    name = "review"


class Finish(Tool):
    """stop this sub-question; refused until at least one document is accepted."""

    name = "finish"


TOOLS: dict[str, Tool] = {
    t.name: t for t in (SearchBm25(), SearchSemantic(), SearchDate(), SearchPhrase(), Review(), Finish())
}
SEARCH_TOOLS: dict[str, Search] = {n: t for n, t in TOOLS.items() if isinstance(t, Search)}
ActionAnswer = action_answer_model({t.name: t.args for t in TOOLS.values()})


def tool_list() -> str:
    return "Tools (choose one):\n" + "\n".join(t.describe() for t in TOOLS.values())


def _problems(exc: ValidationError, tool: Tool) -> list[str]:
    """Each validation error (the first four) as a short phrase naming the argument and its value, in words a model
    can act on."""
    out = []
    for error in exc.errors()[:4]:
        field = ".".join(str(p) for p in error["loc"])
        if error["type"] == "extra_forbidden":
            takes = ", ".join(tool.args.model_fields)
            out.append(f"{tool.name} takes no {field} (it takes {takes})")
        elif error["type"] == "value_error":
            message = str(error["ctx"]["error"])
            out.append(f"{field} {message}" if field else message)
        else:
            message = error["msg"][:1].lower() + error["msg"][1:]
            out.append(f"{field} {preview(error['input'])}: {message}")
    return out


def run_search(ctx: RunContext, call: ToolCall, sq: int, step: int) -> Ranking:
    """Run the retrieval for one tool call and record each channel's ranking and the fusion."""
    ranking = ctx.retriever.search(
        SearchRequest(call.query, k=call.k, filter=call.filter, channels=call.channels, windows="")
    )
    record_ranking(ctx, ranking, call.query, sq, step)
    return ranking


def record_ranking(ctx: RunContext, ranking: Ranking, query: str, sq: int | None, step: int) -> None:
    """Each channel's ranking (a lexical channel's per-field rankings with it), their fusion and the time windows,
    to the trail (`trail.ranking.ranking_events`, which a plain search records too)."""
    for event in ranking_events(ranking, query, step=step, sq=sq):
        ctx.trail.emit(event)
