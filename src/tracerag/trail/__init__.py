"""The audit trail: every query, ranking, verdict, LLM call and the final rank of a run, as JSONL events."""

from tracerag.trail.events import EVENT_ADAPTER, KINDS, RunStatus, Verdict, event_schema
from tracerag.trail.reader import list_trails, read_trail, trail_path
from tracerag.trail.writer import JsonlWriter, MemoryListener, Trail, new_run_id

__all__ = [
    "EVENT_ADAPTER",
    "KINDS",
    "JsonlWriter",
    "MemoryListener",
    "RunStatus",
    "Trail",
    "Verdict",
    "event_schema",
    "list_trails",
    "new_run_id",
    "read_trail",
    "trail_path",
]
