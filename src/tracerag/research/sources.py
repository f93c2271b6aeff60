"""Where the judge's candidates and the drafter's sources come from: a recorded run, or a saved selection.

A run is read through `tracerag.trail.read_trail` (every line validated): an ask run or a search run gives its
final ranking (`ResultEvent`), optionally only what the agent accepted; a judge run gives the candidates it judged.
A selection gives the sources the researcher accepted (`research/selection.py`). Each becomes a `SourceChunk`: the
chunk's exact text and offsets in its document, so a quote found in it is a span of the document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.errors import TrailError
from tracerag.research.selection import open_selections
from tracerag.store import StoredChunk
from tracerag.text import document_title
from tracerag.trail import Event
from tracerag.trail.events import JudgmentEvent, ResultEvent, RunEvent


@dataclass(frozen=True)
class SourceRef:
    """A source named by a run or a selection: the document, its chunk when known, its evidence span when known."""

    doc_id: str
    chunk_id: str | None = None
    span: tuple[int, int] | None = None
    rank: int | None = None
    score: float | None = None


@dataclass(frozen=True)
class SourceChunk:
    """A source's chunk with its original text and where that text starts in the document."""

    doc_id: str
    chunk_id: str
    text: str
    start: int
    title: str = ""
    date: str = ""
    language: str = ""
    rank: int | None = None
    score: float | None = None
    # what a page shows as its title (text.document_title: its own, else its first words, else its id); `title`
    # stays the document's own, which is what the model is shown
    shown_title: str = ""
    title_source: str = ""

    @property
    def end(self) -> int:
        return self.start + len(self.text)


def run_question(events: Sequence[Event]) -> str:
    first = events[0]
    return first.question if isinstance(first, RunEvent) else ""


def refs_from_run(events: Sequence[Event], *, accepted_only: bool = False, source: str = "run") -> list[SourceRef]:
    """The sources a recorded run names, best first: its final ranking (with `accepted_only`, only what the agent
    accepted), or, for a judge run, the candidates it judged."""
    result = next((e for e in reversed(events) if isinstance(e, ResultEvent)), None)
    if result is not None:
        accepted = set(result.accepted)
        return [
            SourceRef(r.doc_id, r.chunk_id, r.span, r.rank, r.score)
            for r in result.ranking
            if not accepted_only or (r.doc_id in accepted and r.origin == "agent")
        ]
    judged = [e for e in events if isinstance(e, JudgmentEvent)]
    if judged and not accepted_only:
        seen: dict[str, SourceRef] = {}
        for e in judged:
            seen.setdefault(e.chunk_id, SourceRef(e.doc_id, e.chunk_id, None, e.rank, e.retrieval_score))
        return list(seen.values())
    what = "no sources the agent accepted" if accepted_only else "no final ranking and no judgments"
    raise TrailError(f"{source}: {what}")


@dataclass(frozen=True)
class LoadedSources:
    chunks: list[SourceChunk]
    missing: list[str]  # documents the run or selection names that the collection no longer holds


def load_chunks(col: Collection, refs: Sequence[SourceRef]) -> LoadedSources:
    """Each reference's chunk from the collection's store: the chunk it names; else the chunk holding its span;
    else the document's first chunk. A document the collection no longer holds (removed since the run) is left
    out and named in `missing`, for the caller to report."""
    store = col.store
    docs = store.get_documents(sorted({r.doc_id for r in refs}))
    named = store.get_chunks([r.chunk_id for r in refs if r.chunk_id])
    by_doc: dict[str, list[StoredChunk]] = {}
    for stored in store.chunks_of(sorted({r.doc_id for r in refs if not r.chunk_id or r.chunk_id not in named})):
        by_doc.setdefault(stored.doc_id, []).append(stored)
    out: list[SourceChunk] = []
    missing: list[str] = []
    for ref in refs:
        doc = docs.get(ref.doc_id)
        chunk: StoredChunk | None = named.get(ref.chunk_id) if ref.chunk_id else None
        if chunk is None:
            chunks = by_doc.get(ref.doc_id, [])
            span = ref.span
            # chunks overlap: the first that holds the whole span, else the one it starts in
            holding = [c for c in chunks if span and c.start <= span[0] and span[1] <= c.end]
            holding = holding or [c for c in chunks if span and c.start <= span[0] < c.end]
            chunk = (holding or chunks)[0] if chunks else None
        if doc is None or chunk is None:
            missing.append(ref.doc_id)
            continue
        out.append(
            SourceChunk(
                ref.doc_id,
                chunk.id,
                doc.text[chunk.start : chunk.end],
                chunk.start,
                doc.title or "",
                doc.date or "",
                doc.language or "",
                ref.rank,
                ref.score,
                *document_title(doc.title, doc.text, ref.doc_id),
            )
        )
    return LoadedSources(out, missing)


def refs_from_selection(collection_dir: Path, settings: Settings, question: str) -> tuple[str, list[SourceRef]]:
    """The researcher's accepted sources for `question` (an exact question or a unique prefix): the question as
    the selection keys it, and each accepted source with the chunk and span shown when it was accepted."""
    with open_selections(collection_dir, settings) as selections:
        resolved = selections.resolve(question)
        entries = selections.accepted(resolved)
    return resolved, [SourceRef(e.doc_id, e.chunk_id, e.span, rank) for rank, e in enumerate(entries, start=1)]
