"""Reviewing a run's candidates: what the researcher is shown for each, and what each key does.

`candidates_of` reads a run's trail (an ask run's final rank with the agent's reasons and cited spans, a search
run's ranking, a judge run's judgments) into `Candidate`s, with the judge's reasoning and score beside them when a
judge run is given or is the run itself. `ReviewSession` is the review without a terminal: `handle(key)` accepts,
rejects, skips, notes, goes back or undoes, writes each decision to the selection at once (quitting keeps
everything decided) and records it as a `DecisionEvent` of a `review` run. The terminal front (cli/review.py)
only draws `ReviewSession.current` and feeds it keys, so a test drives the same session with a key script.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from tracerag import __version__
from tracerag.collection import Collection
from tracerag.errors import SelectionError, TrailError
from tracerag.research.selection import SELECTION_SOURCE, Decision, SelectionEntry, SelectionStore, question_key
from tracerag.trail import EVENT_ADAPTER, JsonlWriter, Trail, trails_by_run
from tracerag.trail.events import (
    DecisionEvent,
    Event,
    JudgmentEvent,
    ResultEvent,
    RunEvent,
    RunKind,
)


@dataclass(frozen=True, slots=True)
class JudgeNote:
    """What the criteria judge said of a candidate: its reasoning and score, or why it has none."""

    score: int | None
    reasoning: str
    failure: str | None
    model: str
    run_id: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """One source to decide on, as the run found it."""

    rank: int
    doc_id: str
    chunk_id: str | None
    span: tuple[int, int] | None  # the cited evidence, in the document's text
    score: float | None
    origin: str  # "agent", "warm_start", "search", "judge"
    reasons: tuple[str, ...] = ()  # the agent's
    judge: JudgeNote | None = None
    verdict: str | None = None  # the agent's final verdict on the document (accept, hold, reject), in an ask run


FindTrail = Callable[[str], Sequence[Event]]  # a run id to its trail's events


def run_of(events: Sequence[Event]) -> RunEvent:
    first = events[0] if events else None
    if not isinstance(first, RunEvent):
        raise SelectionError("the trail has no 'run' event")
    return first


def _judgments(events: Sequence[Event]) -> dict[str, JudgmentEvent]:
    """Each document's judgment (the best-ranked chunk's when several of its chunks were judged)."""
    out: dict[str, JudgmentEvent] = {}
    for e in events:
        if isinstance(e, JudgmentEvent) and e.doc_id not in out:
            out[e.doc_id] = e
    return out


def _note(j: JudgmentEvent) -> JudgeNote:
    return JudgeNote(j.score, j.reasoning, j.failure, j.model, j.run_id)


def candidates_of(events: Sequence[Event], judged: Sequence[Event] = ()) -> list[Candidate]:
    """The candidates of a run, in its rank order. A run with a `result` (ask, search) gives its ranking; a judge
    run gives its judged candidates. `judged` is a judge run over the same candidates: its notes are added."""
    run = run_of(events)
    judgments = _judgments(judged) if judged else {}
    result = next((e for e in reversed(events) if isinstance(e, ResultEvent)), None)
    if result is not None:
        origin_of = None if run.run in (RunKind.ASK, RunKind.JUDGE) else run.run.value  # a search run's own kind
        verdicts = {
            **dict.fromkeys(result.rejected, "reject"),
            **dict.fromkeys(result.held, "hold"),
            **dict.fromkeys(result.accepted, "accept"),
        }
        return [
            Candidate(
                rank=r.rank,
                doc_id=r.doc_id,
                chunk_id=r.chunk_id,
                span=r.span,
                score=r.score,
                origin=origin_of or r.origin,
                reasons=tuple(r.reasons),
                judge=_note(judgments[r.doc_id]) if r.doc_id in judgments else None,
                verdict=verdicts.get(r.doc_id) if run.run is RunKind.ASK else None,
            )
            for r in sorted(result.ranking, key=lambda r: r.rank)
        ]
    own = _judgments(events)
    if own:
        return [
            Candidate(
                rank=j.rank if j.rank is not None else n,
                doc_id=j.doc_id,
                chunk_id=j.chunk_id,
                span=None,
                score=j.retrieval_score,
                origin="judge",
                judge=_note(j),
            )
            for n, j in enumerate(own.values(), start=1)
        ]
    kind = run.run.value
    if run.run in (RunKind.REVIEW, RunKind.ANSWER):
        raise SelectionError(
            f"run {run.run_id} is a{'n' if kind == 'answer' else ''} {kind} run: it has no candidates to review; "
            "review the search, ask or judge run it came from"
        )
    raise SelectionError(
        f"run {run.run_id} has no candidates: it did not finish (no 'result' event) and judged nothing"
    )


def with_chunk_spans(candidates: Sequence[Candidate], chunks: Mapping[str, tuple[int, int]]) -> list[Candidate]:
    """A candidate that cites no span (a search run's, a judge run's) cites its chunk: the chunk's span in the
    document (`chunks`: chunk id -> (start, end)), so that the decision and the export carry the evidence seen."""
    out = []
    for c in candidates:
        cited = chunks.get(c.chunk_id) if c.span is None and c.chunk_id is not None else None
        out.append(replace(c, span=cited) if cited is not None else c)
    return out


def source_run_id(run: RunEvent) -> str | None:
    """The run a judge run judged, when its settings name it."""
    for key in ("from_run", "source_run", "from"):
        value = run.config.get(key)
        if isinstance(value, str) and value and not value.startswith(SELECTION_SOURCE):  # a selection is no run
            return value
    return None


@dataclass(frozen=True)
class RunCandidates:
    """What a review starts from: the candidates, the run they came from, its question, and what could not be
    read (said to the researcher, not fatal)."""

    candidates: list[Candidate]
    from_run: str
    question: str
    warnings: tuple[str, ...] = ()


def run_candidates(events: Sequence[Event], judge_events: Sequence[Event] = (), *, find: FindTrail) -> RunCandidates:
    """A run's candidates for review (the CLI's and the web app's). A judge run that names the run it judged is
    reviewed as that run's candidates with the judge's notes beside them; `find(run_id)` reads that run's trail
    (raising TrailError when it cannot), and a judged run that cannot be read leaves the judgments alone."""
    run = run_of(events)
    if run.run is RunKind.JUDGE and not judge_events:
        source = source_run_id(run)
        if source is not None:
            try:
                source_events = find(source)
            except TrailError as exc:
                warning = f"the judged run {source} cannot be read ({exc}): reviewing the judgments alone"
                return RunCandidates(candidates_of(events), run.run_id, run.question, (warning,))
            return RunCandidates(candidates_of(source_events, events), source, run_of(source_events).question)
    return RunCandidates(candidates_of(events, judge_events), run.run_id, run.question)


def chunk_spans(col: Collection, candidates: Sequence[Candidate]) -> dict[str, tuple[int, int]]:
    """Each candidate chunk's span in its document (chunk id -> (start, end)), for `with_chunk_spans`."""
    chunk_ids = [c.chunk_id for c in candidates if c.chunk_id]
    return {cid: (ch.start, ch.end) for cid, ch in col.store.get_chunks(chunk_ids).items()}


def start_review_trail(
    col: Collection, question: str, from_run: str, *, who: str, candidates: int, judge_run: str | None = None
) -> tuple[Trail, Path]:
    """A new `review` run's trail with its run event written: the decisions of one review session follow it
    (`DecisionEvent`s, through `Trail.emit` to a `JsonlWriter` on the path returned)."""
    trail = Trail()
    path = col.trails_dir / f"{trail.run_id}.jsonl"
    writer = JsonlWriter(path)
    trail.listeners.append(writer)
    try:
        trail.emit(
            RunEvent(
                question=question_key(question),
                collection=str(col.path),
                k=candidates,
                config={"from_run": from_run, "judge_run": judge_run, "who": who},
                versions={"tracerag": __version__},
                run=RunKind.REVIEW,
            )
        )
    finally:
        trail.listeners.remove(writer)
        writer.close()
    return trail, path


def reviewable_runs(roots: Sequence[Path]) -> list[RunEvent]:
    """The runs whose candidates can be reviewed (search, ask, judge), newest first, read from the first line of
    each trail only (an ask run's trail may be megabytes); a trail whose first line is no run event is left out."""
    found: list[RunEvent] = []
    for path in trails_by_run(roots).values():
        try:
            with path.open("rb") as fh:
                event = EVENT_ADAPTER.validate_json(fh.readline())
        except (OSError, ValueError):
            continue
        if isinstance(event, RunEvent) and event.run in (RunKind.SEARCH, RunKind.ASK, RunKind.JUDGE):
            found.append(event)
    return sorted(found, key=lambda e: e.run_id, reverse=True)


# -- the session -------------------------------------------------------------------------------------------------


class Action(StrEnum):
    ACCEPT = "accept"
    REJECT = "reject"
    SKIP = "skip"  # undecided: seen, decided later
    NOTE = "note"  # the next line typed is the note
    BACK = "back"  # to the previous candidate, nothing changed
    NEXT = "next"  # to the next candidate, nothing changed
    UNDO = "undo"  # the last decision of this session taken back
    QUIT = "quit"


KEYS: Mapping[str, Action] = {
    "a": Action.ACCEPT,
    "y": Action.ACCEPT,
    "r": Action.REJECT,
    "x": Action.REJECT,
    "s": Action.SKIP,
    " ": Action.SKIP,
    "n": Action.NOTE,
    "b": Action.BACK,
    "k": Action.BACK,
    "j": Action.NEXT,
    "u": Action.UNDO,
    "q": Action.QUIT,
    "\x1b": Action.QUIT,  # Esc
    "\x03": Action.QUIT,  # Ctrl-C in raw mode: quit keeps what is decided
    "\x04": Action.QUIT,  # Ctrl-D, end of a key script
}

HELP = "a accept · r reject · s/space skip · n note · b back · j next · u undo · q quit (decisions are kept)"

_DECISION_OF = {Action.ACCEPT: Decision.ACCEPTED, Action.REJECT: Decision.REJECTED, Action.SKIP: Decision.UNDECIDED}


@dataclass
class _Done:
    """One decision of this session, with what it replaced: what undo puts back."""

    index: int
    previous: SelectionEntry | None
    entry: SelectionEntry


@dataclass
class ReviewSession:
    """A review of `candidates` for `question`, writing to `store` and reporting each decision to `emit`."""

    question: str
    candidates: Sequence[Candidate]
    store: SelectionStore
    who: str
    from_run: str | None
    emit: Callable[[DecisionEvent], object] = lambda event: None
    index: int = 0
    finished: bool = False
    message: str = ""
    noting: bool = False  # the next line is a note for the current candidate
    done: list[_Done] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.question = question_key(self.question)
        if not self.candidates:
            raise SelectionError("nothing to review: the run has no candidates")

    @property
    def current(self) -> Candidate | None:
        return self.candidates[self.index] if not self.finished else None

    def decision_of(self, candidate: Candidate) -> SelectionEntry | None:
        return self.store.get(self.question, candidate.doc_id)

    def handle(self, key: str) -> None:
        """One key pressed. Unknown keys say so and change nothing."""
        if self.finished or not key:  # no key: a terminal sequence the review has no use for
            return
        action = KEYS.get(key.lower() if len(key) == 1 else key)
        if action is None:
            self.message = f"unknown key {key!r}: {HELP}"
            return
        self.message = ""
        if action is Action.QUIT:
            self.finished = True
        elif action in _DECISION_OF:
            self.decide(_DECISION_OF[action])
        elif action is Action.NOTE:
            self.noting = True
        elif action is Action.BACK:
            self.index = max(0, self.index - 1)
        elif action is Action.NEXT:
            self._advance()
        elif action is Action.UNDO:
            self.undo()

    def decide(self, decision: Decision, note: str | None = None, *, advance: bool = True) -> SelectionEntry:
        """Decide on the current candidate (written at once), then show the next unless `advance` is False."""
        candidate = self.candidates[self.index]
        previous = self.decision_of(candidate)
        entry = self.store.decide(
            self.question, candidate.doc_id, decision, who=self.who, chunk_id=candidate.chunk_id,
            span=candidate.span, note=note, run_id=self.from_run,
        )  # fmt: skip
        self.done.append(_Done(self.index, previous, entry))
        self._emit(candidate, entry.decision, previous.decision if previous else None, entry.note, undo=False)
        if advance:
            self._advance()
        return entry

    def add_note(self, note: str) -> None:
        """The note for the current candidate; its decision stays (undecided when it had none)."""
        self.noting = False
        previous = self.decision_of(self.candidates[self.index])
        self.decide(previous.decision if previous else Decision.UNDECIDED, note.strip(), advance=False)
        self.message = "note kept"

    def undo(self) -> None:
        """Take back this session's last decision: the source goes back to what it was (or to no decision)."""
        if not self.done:
            self.message = "nothing to undo in this session"
            return
        last = self.done.pop()
        candidate = self.candidates[last.index]
        self.store.restore(self.question, candidate.doc_id, last.previous, who=self.who)
        back = last.previous.decision if last.previous is not None else None
        note = last.previous.note if last.previous is not None else ""
        self._emit(candidate, back, last.entry.decision, note, undo=True)
        self.index, self.finished = last.index, False
        self.message = f"undone: {candidate.doc_id} is {back.value if back else 'without a decision'} again"

    def tally(self) -> dict[Decision, int]:
        """How the run's candidates stand now in the selection (every process's decisions included)."""
        counts = dict.fromkeys(Decision, 0)
        for candidate in self.candidates:
            entry = self.decision_of(candidate)
            if entry is not None:
                counts[entry.decision] += 1
        return counts

    def _advance(self) -> None:
        if self.index + 1 >= len(self.candidates):
            self.finished = True
        else:
            self.index += 1

    def _emit(
        self, candidate: Candidate, decision: Decision | None, previous: Decision | None, note: str, *, undo: bool
    ) -> None:
        self.emit(
            DecisionEvent(
                question=self.question,
                doc_id=candidate.doc_id,
                chunk_id=candidate.chunk_id,
                decision=decision,
                previous=previous,
                undo=undo,
                note=note,
                who=self.who,
                span=candidate.span,
                from_run=self.from_run,
            )
        )
