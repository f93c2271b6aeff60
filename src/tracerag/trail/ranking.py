"""A search's ranking as trail events: each channel's ranking (a lexical channel's per-field rankings with it),
their fusion, and where the results come from in time. One builder, so that the agent's searches and a plain
`tracerag search` record the same events: the two wings may not import each other."""

from __future__ import annotations

from tracerag.model import Hit, Ranking
from tracerag.trail.events import (
    ChannelEvent,
    FusionEvent,
    FusionMethod,
    RankedChunk,
    TrailEvent,
    WindowShareEvent,
)

TRAIL_DEPTH = 50  # hits kept per channel (and per field) in the trail: more than any search shows


def ranking_events(ranking: Ranking, query: str, *, step: int, sq: int | None = None) -> list[TrailEvent]:
    """The events of one search, in the order a trail holds them: channels, fusion, time windows."""
    readings = ranking.params.get("channel_readings", {})
    fusion = ranking.params.get("fusion", {})
    # a date or phrase channel that stayed silent has no hits, yet its reason belongs in the trail
    silent: dict[str, list[Hit]] = {name: [] for name in readings if name not in ranking.channel_hits}
    events: list[TrailEvent] = []
    for channel, hits in (ranking.channel_hits | silent).items():
        fields = ranking.field_hits.get(channel, {})
        events.append(
            ChannelEvent(
                sq=sq,
                step=step,
                channel=channel,
                query=query,
                ranking=ranked(hits),
                fields={name: ranked(field_hits) for name, field_hits in fields.items()},
                field_merge=ranking.params.get("field_merge") if fields else None,
                reading=readings[channel]["why"] if channel in readings else None,
            )
        )
    if "rrf_k" not in ranking.params:  # nothing was searched (a filter no document satisfies): nothing fused
        return events
    events.append(
        FusionEvent(
            sq=sq,
            step=step,
            method=FusionMethod(fusion.get("method", "rrf")),
            rrf_k=ranking.params["rrf_k"],
            normalisation=fusion.get("normalisation"),
            weights=fusion.get("weights"),
            why=fusion.get("why"),
            per_query=fusion.get("per_query"),
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
    )
    if ranking.params.get("time_windows"):  # where the results come from in time, against the documents searched
        events.append(WindowShareEvent(sq=sq, step=step, **ranking.params["time_windows"]))
    return events


def ranked(hits: list[Hit]) -> list[RankedChunk]:
    """A channel's hits as the trail keeps them: the first TRAIL_DEPTH, scores rounded."""
    return [(h.doc_id, h.chunk_id, round(h.score, 6)) for h in hits[:TRAIL_DEPTH]]
