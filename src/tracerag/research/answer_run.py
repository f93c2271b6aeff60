"""One `tracerag answer` as a recorded run: its accepted sources (a selection's, or what the agent accepted in a
run), the cited draft (research/answer.py) and its citation check (research/citecheck.py), in a trail of kind
`answer`. The CLI and the web app both call `answer_sources` and `answer_run`, so the same question over the same
sources drafts and checks the same way from either."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tracerag import __version__
from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.errors import ConfigError
from tracerag.llm import StructuredLLM
from tracerag.research.answer import Draft, draft
from tracerag.research.citecheck import CitationCheck, check, withdraw
from tracerag.research.selection import SELECTION_SOURCE
from tracerag.research.sources import LoadedSources, load_chunks, refs_from_run, refs_from_selection
from tracerag.trail import Event, JsonlWriter, Trail, new_run_id
from tracerag.trail.events import RunEvent, RunKind


@dataclass(frozen=True)
class AnswerSources:
    """The accepted sources to draft from, and where they came from (`selection:QUESTION` or a run id)."""

    source: str
    loaded: LoadedSources


def answer_sources(
    col: Collection,
    settings: Settings,
    *,
    selection: str | None = None,
    run: tuple[str, Sequence[Event]] | None = None,
) -> AnswerSources:
    """The researcher's accepted sources for `selection` (a question or a unique beginning of one), or the sources
    the agent accepted in `run` (its id and events). Only the agent accepts sources: a search or judge run is
    refused, saying how to accept its candidates instead."""
    if (selection is None) == (run is None):
        raise ConfigError("give one of --selection QUESTION or --from RUN --agent-accepted")
    if selection is not None:
        resolved, refs = refs_from_selection(col.path, settings, selection)
        return AnswerSources(f"{SELECTION_SOURCE}{resolved}", load_chunks(col, refs))
    assert run is not None
    run_id, events = run
    refs = refs_from_run(events, accepted_only=True, source=run_id)
    first = events[0] if events else None
    if not refs and isinstance(first, RunEvent) and first.run is not RunKind.ASK:
        raise ConfigError(
            f"run {run_id} is a {first.run.value} run: only the agent accepts sources (tracerag ask); for this "
            f"run's candidates, accept them with `tracerag review {run_id}` and draft with --selection QUESTION"
        )
    return AnswerSources(run_id, load_chunks(col, refs))


@dataclass(frozen=True)
class AnswerRun:
    run_id: str
    trail_path: Path
    draft: Draft
    checks: list[CitationCheck]
    missing: list[str]  # accepted sources the collection no longer holds: left out of the draft, named
    withdrawn: str | None = None  # why the draft is withdrawn (no citation held up): then it answers nothing

    @property
    def flagged(self) -> list[CitationCheck]:
        return [c for c in self.checks if c.flagged]


def _share(col: Collection, sources: AnswerSources) -> float | None:
    """The evidence check's share for these sources: none for a person's selection (a researcher who accepted a
    source has judged that it bears on the question, in words a word count cannot see: "which papers of 1881
    report fires" holds few of a fire report's words), the setting's for what a model accepted."""
    return None if sources.source.startswith(SELECTION_SOURCE) else col.settings.answer.evidence_share


def answer_run(
    col: Collection,
    question: str,
    sources: AnswerSources,
    model: StructuredLLM | None,
    *,
    language: str | None = None,
    trail_dir: Path | None = None,
) -> AnswerRun:
    """Draft `question` from `sources` (with `model`, or extractively without one), check every citation, and
    record both in a new `answer` run's trail."""
    if not question.strip():
        raise ConfigError("a question is required")
    loaded = sources.loaded
    run_id = new_run_id()
    trail_path = (trail_dir or col.trails_dir) / f"{run_id}.jsonl"
    writer = JsonlWriter(trail_path)
    try:
        trail = Trail(run_id, [writer])
        trail.emit(
            RunEvent(
                question=question,
                collection=str(col.path),
                k=len(loaded.chunks),
                config={"from": sources.source, "language": language, "missing": loaded.missing},
                llm={"provider": model.name, "model": model.model} if model else None,
                versions={"tracerag": __version__},
                run=RunKind.ANSWER,
            )
        )
        result = draft(question, loaded.chunks, model, trail, language=language, evidence_share=_share(col, sources))
        checks = check(result, model, trail)
        withdrawn = withdraw(result, checks, trail)
    finally:
        writer.close()
    return AnswerRun(run_id, trail_path, result, checks, loaded.missing, withdrawn)
