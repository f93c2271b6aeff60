"""The agent's search tools: small classes whose docstring is what the model is told the tool does.

Each search runs the real retrieval (our channels, RRF k=60, max-pool to documents) restricted as the tool says,
and writes the query, each channel's ranking and the fusion to the trail. `review` and `finish` are decided by
the loop; they are listed here so the model sees one tool list.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from tracerag.agent.context import RunContext
from tracerag.agent.schemas import ActionAnswer
from tracerag.errors import ConfigError
from tracerag.ingest.dates import parse_partial_date
from tracerag.model import Filter, Ranking
from tracerag.retrieval.search import SearchRequest


@dataclass
class ToolCall:
    """A search as run: what was asked, the filter applied, and a key to spot an identical repeat."""

    tool: str
    query: str
    channels: tuple[str, ...]
    filter: Filter

    @property
    def key(self) -> tuple:
        return (self.tool, " ".join(self.query.lower().split()), self.filter)


class SearchTool:
    name = ""
    channels: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"- {self.name}: {' '.join((self.__doc__ or '').split())}"

    def plan(self, action: ActionAnswer, fallback_query: str, base: Filter) -> ToolCall:
        query = (action.query or "").strip() or fallback_query
        return ToolCall(self.name, query, self.channels, base)


class SearchBm25(SearchTool):
    """keyword search (stemmed, accent-folded); give query, optional corpus."""

    name = "search_bm25"
    channels = ("bm25",)


class SearchSemantic(SearchTool):
    """meaning search with embeddings, works across languages and OCR errors; give query, optional corpus."""

    name = "search_semantic"
    channels = ("dense",)


class SearchPhrase(SearchTool):
    """documents containing these exact words in order; give phrase, optional corpus."""

    name = "search_phrase"
    channels = ("phrase",)

    def plan(self, action: ActionAnswer, fallback_query: str, base: Filter) -> ToolCall:
        phrase = (action.phrase or action.query or "").strip().strip('"') or fallback_query
        return ToolCall(self.name, f'"{phrase}"', self.channels, base)


class SearchDate(SearchTool):
    """search within a date range; give query and date_from/date_to (years or ISO dates), or centre and days."""

    name = "search_date"
    channels = ("bm25", "dense", "date")

    def plan(self, action: ActionAnswer, fallback_query: str, base: Filter) -> ToolCall:
        start, end = date_window(action)
        query = (action.query or "").strip() or fallback_query
        return ToolCall(self.name, query, self.channels, base.narrowed(date_from=start, date_to=end))


class Review:
    """judge the next unreviewed documents found so far (accept / hold / reject with a quoted reason)."""

    name = "review"


class Finish:
    """stop this sub-question; refused until at least one document is accepted."""

    name = "finish"


SEARCH_TOOLS: dict[str, SearchTool] = {
    t.name: t for t in (SearchBm25(), SearchSemantic(), SearchDate(), SearchPhrase())
}


def tool_list() -> str:
    lines = [t.describe() for t in SEARCH_TOOLS.values()]
    lines += [f"- {t.name}: {' '.join((t.__doc__ or '').split())}" for t in (Review, Finish)]
    return "Tools (choose one):\n" + "\n".join(lines)


def date_window(action: ActionAnswer) -> tuple[str | None, str | None]:
    """ISO bounds from date_from/date_to (partial dates widen to the range they cover) or centre ± days."""
    if action.centre:
        centre = parse_partial_date(action.centre)
        if centre is None:
            raise ConfigError(f"search_date: cannot read centre {action.centre!r} as a date")
        days = timedelta(days=abs(action.days or 365))
        return (
            (date.fromisoformat(centre.start) - days).isoformat(),
            (date.fromisoformat(centre.end) + days).isoformat(),
        )
    start = parse_partial_date(action.date_from) if action.date_from else None
    end = parse_partial_date(action.date_to) if action.date_to else None
    if start is None and end is None:
        raise ConfigError("search_date needs date_from/date_to or centre")
    return (start.start if start else None, end.end if end else None)


def run_search(ctx: RunContext, call: ToolCall, k: int, sq: int, step: int) -> Ranking:
    """Run the retrieval for one tool call and record each channel's ranking and the fusion."""
    ranking = ctx.retriever.search(
        SearchRequest(call.query, k=k, filter=call.filter, channels=call.channels, windows="")
    )
    record_ranking(ctx, ranking, call.query, sq, step)
    return ranking


def record_ranking(ctx: RunContext, ranking: Ranking, query: str, sq: int | None, step: int) -> None:
    for channel, hits in ranking.channel_hits.items():
        ctx.trail.emit(
            "channel",
            sq=sq,
            step=step,
            channel=channel,
            query=query,
            ranking=[(h.doc_id, h.chunk_id, round(h.score, 6)) for h in hits[:50]],
        )
    ctx.trail.emit(
        "fusion",
        sq=sq,
        step=step,
        method=f"rrf(k={ranking.params.get('rrf_k')}) over max-pooled channels",
        ranking=[
            {
                "doc_id": d.doc_id,
                "chunk_id": d.best_chunk_id,
                "score": round(d.score, 6),
                "channels": {e.channel: e.rank for e in d.channels},
            }
            for d in ranking.documents
        ],
    )
