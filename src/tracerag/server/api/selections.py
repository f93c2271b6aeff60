"""The researcher's selections over HTTP: list them, show one as a review board (a run's candidates with their
cited spans, the agent's reasons and verdict, the judge's score, and the decision on each), decide, undo, export.

The deciding is `research.review.ReviewSession`'s, as in `tracerag review`: each decision is written to
`selections.sqlite` at once and recorded as a `decision` event of a `review` run. A review session lives in this
server process between requests (its undo list is the session's, as at a terminal); each request gives it this
thread's own selections connection. A selection is named in a URL by its id (`selection_id`: a question may hold
any character, '/' too), by its question or a unique beginning of it, or by a run id: the board of that run's
candidates for its question. Run ids from a request are only compared with the names of trails
(`trails_by_run`), never made into a path.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import Response
from pydantic import BaseModel, Field

from tracerag.collection import Collection, trail_roots
from tracerag.errors import SelectionError, TrailError
from tracerag.model import Document
from tracerag.research.review import (
    Candidate,
    ReviewSession,
    RunCandidates,
    chunk_spans,
    reviewable_runs,
    run_candidates,
    start_review_trail,
    with_chunk_spans,
)
from tracerag.research.selection import (
    Decision,
    SelectionEntry,
    SelectionStore,
    default_user,
    open_selections,
    question_key,
    selection_id,
)
from tracerag.research.selection_export import export_accepted
from tracerag.retrieval.kwic import snippet
from tracerag.server.deps import CollectionName, State
from tracerag.server.schemas import ERRORS
from tracerag.server.state import NotFoundError, ServerState
from tracerag.text import document_title
from tracerag.trail import JsonlWriter, Trail, read_trail, trails_by_run
from tracerag.trail.events import EVENT_ADAPTER, DecisionEvent, Event, JudgmentEvent, ResultEvent, RunKind

router = APIRouter(tags=["selections"], responses=ERRORS)

CONTEXT_CHARS = 240  # of the document either side of a cited span, shown on the board
QUOTE_CHARS = 1500  # of a cited span shown on the board (and of a document's opening, when nothing is cited)
SNIPPET_CHARS = 480  # of a hit's chunk shown when it cites no span: enough to judge by, four cards a screen
SESSIONS_KEPT = 200  # review sessions kept in memory; the oldest is forgotten (its undo list with it)

DecisionName = Literal["accept", "reject", "undecided"]
_DECISION: dict[str, Decision] = {
    "accept": Decision.ACCEPTED,
    "reject": Decision.REJECTED,
    "undecided": Decision.UNDECIDED,
}
_NAME: dict[Decision, DecisionName] = {decision: name for name, decision in _DECISION.items()}  # type: ignore[misc]
EXPORT_TYPES = {"csv": "text/csv", "ris": "application/x-research-info-systems", "csl-json": "application/json"}
EXPORT_SUFFIX = {"csv": "csv", "ris": "ris", "csl-json": "json"}


# -- bodies --------------------------------------------------------------------------------------------------------


class SelectionSummaryOut(BaseModel):
    id: str = Field(description="The selection's id in URLs.")
    question: str = Field(description="The research question the selection is for.")
    accepted: int = Field(description="Sources accepted.")
    rejected: int = Field(description="Sources rejected.")
    undecided: int = Field(description="Sources seen and left undecided.")
    last_change: str = Field(description="When the last decision was made (UTC, ISO 8601).")


class RunOut(BaseModel):
    run_id: str = Field(description="The run's id (its trail).")
    kind: str = Field(description="search, ask or judge.")
    question: str = Field(description="The question or query of the run.")
    started: str = Field("", description="When the run started (UTC, ISO 8601).")
    results: int | None = Field(
        None, description="Its candidates: the ranking's length (search, ask), the documents judged (judge); None "
        "when the trail has no result (a run still going, or stopped)."
    )  # fmt: skip


def run_results(path: Path, kind: RunKind) -> int | None:
    """How many candidates a run has, cheaply: a search or ask run's result is its trail's last line (read from
    the end: an ask trail may be megabytes); a judge run's are its judgment lines."""
    if kind is RunKind.JUDGE:
        try:
            return sum(1 for e in read_trail(path) if isinstance(e, JudgmentEvent))
        except TrailError:
            return None
    try:
        event = EVENT_ADAPTER.validate_json(last_line(path))
    except (OSError, ValueError):
        return None
    return len(event.ranking) if isinstance(event, ResultEvent) else None


def last_line(path: Path, block: int = 1 << 16) -> bytes:
    """The file's last non-empty line, read back from its end a block at a time."""
    with path.open("rb") as fh:
        end = fh.seek(0, 2)
        tail = b""
        while end > 0:
            start = max(0, end - block)
            fh.seek(start)
            tail = fh.read(end - start) + tail
            end = start
            lines = tail.rstrip(b"\r\n").split(b"\n")
            if len(lines) > 1 or end == 0:
                return lines[-1]
    return b""


class SelectionsOut(BaseModel):
    selections: list[SelectionSummaryOut] = Field(description="Every question with a selection, last changed first.")
    runs: list[RunOut] = Field(description="The runs whose candidates can be reviewed, newest first.")


class JudgeNoteOut(BaseModel):
    score: int | None = Field(description="0-10; None when the judgment failed.")
    reasoning: str = Field(description="The judge model's reasoning.")
    failure: str | None = Field(description="Why the judgment has no score.")
    model: str = Field(description="The judge model's name.")
    run_id: str = Field(description="The judge run.")


class EntryOut(BaseModel):
    doc_id: str = Field(description="The document's id in the collection.")
    decision: DecisionName = Field(description="accept, reject or undecided.")
    note: str = Field(description="The researcher's note.")
    who: str = Field(description="Who decided.")
    when: str = Field(description="When (UTC, ISO 8601).")
    chunk_id: str | None = Field(description="The chunk decided on, if one was named.")
    span: tuple[int, int] | None = Field(description="The cited evidence's character span in the document.")
    run_id: str | None = Field(description="The run the source was reviewed from.")


class SegmentOut(BaseModel):
    text: str = Field(description="A piece of the passage's text.")
    mark: bool = Field(description="Cited words, or the question's words matched.")


class CandidateOut(BaseModel):
    rank: int = Field(description="Its place in the run's ranking, from 1.")
    doc_id: str = Field(description="The document's id in the collection.")
    chunk_id: str | None = Field(description="The candidate's chunk (None: none recorded).")
    title: str = Field(description="The document's title, else its first words, else its id (`title_source`).")
    title_source: str = Field("document", description="document, text or doc_id.")
    date: str | None = Field(
        description="The document's date (ISO 8601, may be partial: 1848, 1848-03); None when undated."
    )
    corpus: str | None = Field(
        description="The sub-corpus the document belongs to (None: not in the collection any more)."
    )
    language: str | None = Field(None, description="The document's language (ISO 639-1), when known.")
    present: bool = Field(description="False when the collection no longer holds the document.")
    span: tuple[int, int] | None = Field(description="The cited span (a search hit cites its chunk).")
    cited: bool = Field(description="True: the span is the agent's cited evidence; False: the candidate's chunk.")
    passage: list[SegmentOut] = Field(
        description="What the board shows: the cited span marked in its context, or, for a hit that cites no span, "
        "the window of its chunk holding most of the question's words, those words marked."
    )
    passage_start: int | None = Field(description="Where the passage starts in the document's text.")
    cut_before: bool = Field(description="The document's text goes on before the passage.")
    cut_after: bool = Field(description="The document's text goes on after the passage.")
    score: float | None = Field(description="The run's score of the candidate.")
    origin: str = Field(description="agent, warm_start, search or judge.")
    reasons: list[str] = Field(description="The agent's reasons.")
    verdict: str | None = Field(description="The agent's final verdict (ask runs): accept, hold or reject.")
    judge: JudgeNoteOut | None = Field(description="The criteria judge's reasoning and score, where judged.")
    decision: EntryOut | None = Field(description="The current decision on it for this question, if any.")
    document_url: str = Field(description="The document view, the cited span highlighted.")


class CountsOut(BaseModel):
    accepted: int = Field(description="Accepted sources of the whole selection.")
    rejected: int = Field(description="Rejected sources of the whole selection.")
    undecided: int = Field(description="Undecided sources of the whole selection.")
    candidates: int = Field(description="Candidates of the board's run.")
    open: int = Field(description="Candidates of the run neither accepted nor rejected yet.")


class SelectionOut(BaseModel):
    id: str = Field(description="The selection's id in URLs.")
    question: str = Field(description="The research question the selection is for.")
    run_id: str | None = Field(description="The run whose candidates are shown (None: a selection without one).")
    judge_run: str | None = Field(description="The judge run whose scores are shown (None: none).")
    candidates: list[CandidateOut] = Field(description="The run's candidates, in its order.")
    others: list[EntryOut] = Field(description="Decisions on sources that are not candidates of this run.")
    counts: CountsOut = Field(description="How many sources are decided, and how many candidates are open.")
    exports: dict[str, str] = Field(description="The export of the accepted sources, by format.")
    warnings: list[str] = Field(description="What could not be shown (a run or judge run not found...).")


class DecisionIn(BaseModel):
    doc_id: str = Field(min_length=1, max_length=500, description="The candidate decided on.")
    decision: DecisionName = Field(description="accept, reject, or undecided (seen, decided later).")
    note: str | None = Field(None, max_length=5000, description="A note on it; None keeps the note it had.")
    who: str | None = Field(None, max_length=200, description="Who decides (default: the server's selection.user).")
    run: str | None = Field(None, max_length=200, description="The run the candidate is from (default: the board's).")
    judge: str | None = Field(None, max_length=200, description="A judge run over the same candidates.")
    review_run: str | None = Field(
        None, max_length=200, description="The review session to record it in (from an earlier answer); a new one "
        "is started when absent or unknown here.",
    )  # fmt: skip


class DecisionOut(BaseModel):
    entry: EntryOut = Field(description="The decision as recorded.")
    review_run: str = Field(description="The review run recording this session's decisions: send it back.")
    counts: CountsOut = Field(description="The counts after it.")


class UndoIn(BaseModel):
    review_run: str | None = Field(None, max_length=200, description="The review session whose last decision to undo.")


class UndoOut(BaseModel):
    undone: bool = Field(description="False when the session has nothing to undo.")
    message: str = Field(description="What the undo did, in words.")
    doc_id: str | None = Field(description="The source the undo put back.")
    entry: EntryOut | None = Field(description="Its decision now (None: no decision, as before the first).")
    review_run: str | None = Field(description="The review run (None: no session).")
    counts: CountsOut = Field(description="The counts after it.")


# -- what a board is -----------------------------------------------------------------------------------------------


@dataclass
class Board:
    """What a selection's page shows: the question, and the run whose candidates are reviewed for it."""

    question: str
    found: RunCandidates | None
    judge_run: str | None


@contextmanager
def selections(state: ServerState, name: str, *, write: bool = False) -> Iterator[SelectionStore]:
    store = open_selections(state.path_of(name), state.settings, write=write)
    try:
        yield store
    finally:
        store.close()


def run_events(state: ServerState, name: str, run_id: str) -> list[Event]:
    """A run's trail by its exact id (NotFoundError for any other string: ids are looked up, never globbed)."""
    path = trails_by_run(trail_roots(state.path_of(name), state.settings)).get(run_id)
    if path is None:
        raise NotFoundError(f"run {run_id!r}: no such run in collection {name!r}")
    return read_trail(path)


def board_of(
    state: ServerState, name: str, store: SelectionStore, selection: str, run: str | None, judge: str | None
) -> Board:
    """The board `selection` names: a selection id, a run id, or a question (or its unique beginning); `run`
    picks the run whose candidates are shown (default: the run named, else the one the latest decision came
    from)."""
    question: str | None = next((s.question for s in store.questions() if selection_id(s.question) == selection), None)
    runs = trails_by_run(trail_roots(state.path_of(name), state.settings))
    if question is None and selection in runs:
        run = run or selection
    elif question is None:
        try:
            question = store.resolve(selection)
        except SelectionError as exc:
            raise NotFoundError(f"selection {selection!r}: neither a selection nor a run here ({exc})") from None
    if run is None and question is not None:
        run = next((e.run_id for e in reversed(store.entries(question)) if e.run_id in runs), None)
    found = None
    if run is not None:
        judged = run_events(state, name, judge) if judge else []
        found = run_candidates(run_events(state, name, run), judged, find=lambda rid: run_events(state, name, rid))
        question = question or found.question
    assert question is not None
    return Board(question_key(question), found, judge)


def entry_out(e: SelectionEntry) -> EntryOut:
    return EntryOut(
        doc_id=e.doc_id, decision=_NAME[e.decision], note=e.note, who=e.who, when=e.when, chunk_id=e.chunk_id,
        span=e.span, run_id=e.run_id,
    )  # fmt: skip


def document_url(name: str, doc_id: str, span: tuple[int, int] | None = None) -> str:
    """The document view of `doc_id` (the cited span highlighted and scrolled to)."""
    url = f"/collections/{quote(name, safe='')}/documents/{quote(doc_id, safe='')}"
    return f"{url}?start={span[0]}&end={span[1]}" if span else url


def _passage(text: str, start: int, marks: Sequence[tuple[int, int]], end: int) -> list[SegmentOut]:
    """`text` (the document's, from `start` to `end`) cut into plain and marked segments (`marks`: document
    offsets, sorted, not overlapping)."""
    out, at = [], start
    for lo, hi in marks:
        if lo > at:
            out.append(SegmentOut(text=text[at:lo], mark=False))
        out.append(SegmentOut(text=text[lo:hi], mark=True))
        at = hi
    if end > at:
        out.append(SegmentOut(text=text[at:end], mark=False))
    return [seg for seg in out if seg.text]


def _shown(c: Candidate, cited: bool, doc: Document, question: str) -> tuple[list[SegmentOut], int, bool, bool]:
    text = doc.text
    if c.span is None or not 0 <= c.span[0] <= c.span[1] <= len(text):
        lo, hi = 0, min(len(text), QUOTE_CHARS)
        return _passage(text, lo, [], hi), lo, False, hi < len(text)
    start, end = c.span
    if cited:  # the agent's evidence, marked, in its context
        end = min(end, start + QUOTE_CHARS)
        lo, hi = max(0, start - CONTEXT_CHARS), min(len(text), end + CONTEXT_CHARS)
        return _passage(text, lo, [(start, end)], hi), lo, lo > 0, hi < len(text)
    # a hit that cites no span (a search's, a judge's): its chunk's window with the question's words marked
    snip = snippet(text[start:end], [question], doc.language, width=SNIPPET_CHARS, offset=start)
    marks = [(snip.start + lo, snip.start + hi) for lo, hi in snip.spans]
    return _passage(text, snip.start, marks, snip.end), snip.start, snip.start > 0, snip.end < len(text)


def _candidate(
    name: str, c: Candidate, cited: bool, doc: Document | None, entry: SelectionEntry | None, question: str
) -> CandidateOut:
    passage: list[SegmentOut] = []
    passage_start, cut_before, cut_after = None, False, False
    if doc is not None:
        passage, passage_start, cut_before, cut_after = _shown(c, cited, doc, question)
    judge = c.judge
    title, title_source = document_title(doc.title, doc.text, c.doc_id) if doc else (c.doc_id, "doc_id")
    return CandidateOut(
        rank=c.rank, doc_id=c.doc_id, chunk_id=c.chunk_id, title=title, title_source=title_source,
        date=doc.date if doc else None, corpus=doc.corpus if doc else None,
        language=doc.language if doc else None, present=doc is not None, span=c.span,
        cited=cited, passage=passage, passage_start=passage_start, cut_before=cut_before, cut_after=cut_after,
        score=c.score, origin=c.origin, reasons=list(c.reasons), verdict=c.verdict,
        judge=JudgeNoteOut(score=judge.score, reasoning=judge.reasoning, failure=judge.failure, model=judge.model,
                           run_id=judge.run_id) if judge else None,
        decision=entry_out(entry) if entry else None, document_url=document_url(name, c.doc_id, c.span),
    )  # fmt: skip


def counts(store: SelectionStore, question: str, candidates: Sequence[Candidate]) -> CountsOut:
    entries = {e.doc_id: e for e in store.entries(question)}
    tally = dict.fromkeys(Decision, 0)
    for e in entries.values():
        tally[e.decision] += 1
    closed = (Decision.ACCEPTED, Decision.REJECTED)
    still_open = sum(1 for c in candidates if c.doc_id not in entries or entries[c.doc_id].decision not in closed)
    return CountsOut(
        accepted=tally[Decision.ACCEPTED], rejected=tally[Decision.REJECTED], undecided=tally[Decision.UNDECIDED],
        candidates=len(candidates), open=still_open,
    )  # fmt: skip


def _with_spans(col: Collection, board: Board) -> list[Candidate]:
    if board.found is None:
        return []
    return with_chunk_spans(board.found.candidates, chunk_spans(col, board.found.candidates))


def selection_view(
    state: ServerState, name: str, selection: str, run: str | None = None, judge: str | None = None
) -> SelectionOut:
    """A selection as its review board shows it (the API's answer and the page's content)."""
    with state.reading(name) as col, selections(state, name) as store:
        board = board_of(state, name, store, selection, run, judge)
        candidates = _with_spans(col, board)
        documents = col.store.get_documents(sorted({c.doc_id for c in candidates}))
        entries = {e.doc_id: e for e in store.entries(board.question)}
        shown = {c.doc_id for c in candidates}
        question = board.found.question if board.found else board.question  # the words the run searched
        return SelectionOut(
            id=selection_id(board.question),
            question=board.question,
            run_id=board.found.from_run if board.found else None,
            judge_run=board.judge_run,
            candidates=[
                _candidate(name, c, raw.span is not None, documents.get(c.doc_id), entries.get(c.doc_id), question)
                for c, raw in zip(candidates, board.found.candidates if board.found else [], strict=True)
            ],
            others=[entry_out(e) for doc_id, e in entries.items() if doc_id not in shown],
            counts=counts(store, board.question, candidates),
            exports={
                fmt: f"/api/collections/{quote(name, safe='')}/selections/{selection_id(board.question)}/export"
                f"?format={fmt}"
                for fmt in EXPORT_TYPES
            },
            warnings=list(board.found.warnings) if board.found else [],
        )


def selection_list(state: ServerState, name: str) -> SelectionsOut:
    with selections(state, name) as store:
        summaries = store.questions()
    roots = trail_roots(state.path_of(name), state.settings)
    runs = reviewable_runs(roots)
    paths = trails_by_run(roots)
    return SelectionsOut(
        selections=[
            SelectionSummaryOut(
                id=selection_id(s.question),
                question=s.question,
                accepted=s.accepted or 0,
                rejected=s.rejected or 0,
                undecided=s.undecided or 0,
                last_change=s.last_change,
            )
            for s in summaries
        ],
        runs=[
            RunOut(
                run_id=r.run_id,
                kind=r.run.value,
                question=r.question,
                started=r.time,
                results=run_results(paths[r.run_id], r.run),
            )
            for r in sorted(runs, key=lambda r: (r.time, r.run_id), reverse=True)  # newest first, to the microsecond
        ],
    )


# -- review sessions -------------------------------------------------------------------------------------------


@dataclass
class ReviewBoard:
    """One review session: the library's session, and its `review` run's trail."""

    collection: str
    session: ReviewSession
    trail: Trail
    lock: threading.Lock


def _recorder(trail: Trail, path: Path) -> Callable[[DecisionEvent], None]:
    """A session's `emit`: each decision appended to its review trail, the file opened for that line only (no
    file stays open between requests)."""

    def record(event: DecisionEvent) -> None:
        writer = JsonlWriter(path)
        trail.listeners.append(writer)
        try:
            trail.emit(event)
        finally:
            trail.listeners.remove(writer)
            writer.close()

    return record


class ReviewSessions:
    """The review sessions of this server process, by review run id; the oldest beyond SESSIONS_KEPT forgotten."""

    def __init__(self) -> None:
        self._boards: OrderedDict[str, ReviewBoard] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, review_run: str | None) -> ReviewBoard | None:
        with self._lock:
            return self._boards.get(review_run) if review_run else None

    def add(self, board: ReviewBoard) -> None:
        with self._lock:
            self._boards[board.trail.run_id] = board
            while len(self._boards) > SESSIONS_KEPT:
                self._boards.popitem(last=False)


_SESSIONS_LOCK = threading.Lock()


def sessions_of(request: Request) -> ReviewSessions:
    with _SESSIONS_LOCK:
        found: ReviewSessions | None = getattr(request.app.state, "review_sessions", None)
        if found is None:
            found = ReviewSessions()
            request.app.state.review_sessions = found
        return found


def _session(
    request: Request, name: str, col: Collection, store: SelectionStore, board: Board, who: str, review_run: str | None
) -> ReviewBoard:
    """The review session `review_run` names when it reviews the same run for the same question, else a new one
    with its `review` run started."""
    if board.found is None:
        raise SelectionError(f"the selection {board.question!r} names no run to review: give `run`")
    sessions = sessions_of(request)
    known = sessions.get(review_run)
    if (
        known is not None
        and known.collection == name
        and known.session.question == board.question
        and known.session.from_run == board.found.from_run
    ):
        return known
    candidates = _with_spans(col, board)
    trail, path = start_review_trail(
        col, board.question, board.found.from_run, who=who, candidates=len(candidates), judge_run=board.judge_run
    )
    session = ReviewSession(board.question, candidates, store, who, board.found.from_run, emit=_recorder(trail, path))
    review = ReviewBoard(name, session, trail, threading.Lock())
    sessions.add(review)
    return review


# -- routes ----------------------------------------------------------------------------------------------------

SelectionPath = Annotated[
    str, PathParam(max_length=1000, description="A selection id, a question (or its unique beginning), or a run id.")
]
RunQuery = Annotated[str | None, Query(max_length=200, description="The run whose candidates to show.")]
JudgeQuery = Annotated[str | None, Query(max_length=200, description="A judge run over the same candidates.")]


@router.get(
    "/collections/{name}/selections", summary="List the selections and reviewable runs", response_model=SelectionsOut
)
def list_selections(name: CollectionName, state: State) -> SelectionsOut:
    """Every question's selection with its counts, and the runs one can review."""
    return selection_list(state, name)


@router.get(
    "/collections/{name}/selections/{selection}", summary="A selection's review board", response_model=SelectionOut
)
def get_selection(
    name: CollectionName, selection: SelectionPath, state: State, run: RunQuery = None, judge: JudgeQuery = None
) -> SelectionOut:
    """A selection's board: the run's candidates (span, the agent's reasons and verdict, the judge's score) with
    the current decision and note on each, and the decisions on other sources."""
    return selection_view(state, name, selection, run, judge)


@router.post(
    "/collections/{name}/selections/{selection}/decisions",
    summary="Decide on one candidate",
    response_model=DecisionOut,
)
def decide(
    name: CollectionName, selection: SelectionPath, body: DecisionIn, state: State, request: Request
) -> DecisionOut:
    """Accept, reject or leave undecided one candidate (with a note): written to the selection at once and
    recorded as a `decision` event of this session's `review` run, as `tracerag review` does."""
    who = body.who or default_user(state.settings)
    with state.reading(name) as col, selections(state, name, write=True) as store:
        board = board_of(state, name, store, selection, body.run, body.judge)
        review = _session(request, name, col, store, board, who, body.review_run)
        with review.lock:
            session = review.session
            index = next((i for i, c in enumerate(session.candidates) if c.doc_id == body.doc_id), None)
            if index is None:
                raise NotFoundError(f"doc_id {body.doc_id!r}: not a candidate of run {session.from_run}")
            # the session decides through this request's own connection (SQLite connections belong to a thread)
            session.store, session.who, session.index, session.finished = store, who, index, False
            entry = session.decide(_DECISION[body.decision], body.note, advance=False)
        return DecisionOut(
            entry=entry_out(entry),
            review_run=review.trail.run_id,
            counts=counts(store, board.question, session.candidates),
        )


@router.post(
    "/collections/{name}/selections/{selection}/undo",
    summary="Undo the review session's last decision",
    response_model=UndoOut,
)
def undo(name: CollectionName, selection: SelectionPath, body: UndoIn, state: State, request: Request) -> UndoOut:
    """Take back the review session's last decision: the source goes back to what it was before it."""
    review = sessions_of(request).get(body.review_run)
    with selections(state, name, write=True) as store:
        if review is None or review.collection != name:
            board = board_of(state, name, store, selection, None, None)
            candidates = board.found.candidates if board.found else []
            message = "nothing to undo in this session"
            return UndoOut(undone=False, message=message, doc_id=None, entry=None, review_run=None,
                           counts=counts(store, board.question, candidates))  # fmt: skip
        with review.lock:
            session = review.session
            before = len(session.done)
            last = session.done[-1] if session.done else None
            session.store = store
            session.undo()
            undone = len(session.done) < before and last is not None
            doc_id = session.candidates[last.index].doc_id if undone and last is not None else None
            now = store.get(session.question, doc_id) if doc_id else None
            return UndoOut(
                undone=undone, message=session.message, doc_id=doc_id, entry=entry_out(now) if now else None,
                review_run=review.trail.run_id, counts=counts(store, session.question, session.candidates),
            )  # fmt: skip


@router.get(
    "/collections/{name}/selections/{selection}/export",
    summary="Export a selection's accepted sources",
    response_class=Response,
    responses={200: {"content": {t: {} for t in EXPORT_TYPES.values()}, "description": "The accepted sources."}},
)
def export(
    name: CollectionName,
    selection: SelectionPath,
    state: State,
    format: Annotated[Literal["csv", "ris", "csl-json"], Query(description="csv, ris or csl-json.")] = "csv",
) -> Response:
    """The accepted sources, in the order they were accepted, with their cited spans and the decisions (the
    writers of `tracerag selection export`: RIS and CSL-JSON import into Zotero)."""
    with state.reading(name) as col, selections(state, name) as store:
        board = board_of(state, name, store, selection, None, None)
        text = export_accepted(store.accepted(board.question), col, format)
    filename = f"selection-{selection_id(board.question)}.{EXPORT_SUFFIX[format]}"
    return Response(
        text,
        media_type=EXPORT_TYPES[format],
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
