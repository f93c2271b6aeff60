"""The audit trail: every query, ranking, verdict, LLM call and the final rank of a run, as JSONL events.

Emit: `trail.emit(VerdictEvent(...))` (events and their closed sets in `tracerag.trail.events`); read:
`read_trail(path)` gives the typed events back."""

from tracerag.trail.events import EVENT_ADAPTER, KINDS, SCHEMA_VERSION, Event, TrailEvent, event_schema
from tracerag.trail.ranking import ranking_events
from tracerag.trail.reader import find_trail, list_trails, read_trail, trail_path, trails_by_run
from tracerag.trail.writer import EventListener, JsonlWriter, MemoryListener, Trail, asked_by, new_run_id

__all__ = [
    "EVENT_ADAPTER",
    "KINDS",
    "SCHEMA_VERSION",
    "Event",
    "EventListener",
    "JsonlWriter",
    "MemoryListener",
    "Trail",
    "TrailEvent",
    "event_schema",
    "find_trail",
    "list_trails",
    "asked_by",
    "new_run_id",
    "ranking_events",
    "read_trail",
    "trail_path",
    "trails_by_run",
]
