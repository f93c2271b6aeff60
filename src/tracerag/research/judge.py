"""The criteria judge: each candidate scored 0-10 against the researcher's criteria, reasoning first, on its own.

Why not the agent's verdict stage (`agent/verdicts.py`): that stage judges a batch of candidates in one call, as
accept / hold / reject; HistoRAG's judge must see one candidate per call (a batch scores each candidate against
its neighbours, not against the criteria) and give a score. What both need is below the wings already: the data
fence (`tracerag.text.fence_json`), structured output with bounded repair rounds (`tracerag.llm`), and the model
call's event (`LLMCallEvent.of`). So the stage stays the agent's, and the judge is this small class.

- The answer schema puts `reasoning` before `score`, so a model writing it in order reasons before it scores.
- An answer still unusable after the repair rounds is a recorded failure: a judgment with `score=None` and the
  error, never a default score. A transport failure is recorded the same way and the run goes on.
- Judgments are cached by (criteria digest, hash of what the model was shown of the chunk, model), so a second
  run over the same candidates calls no model. The criteria part of the key also hashes the judge's instructions
  (`prompts.JUDGE_SYSTEM`): a changed prompt is a new judge, whose judgments are not the old one's. The cache is
  `judgments.sqlite` in the collection, or in this user's private folder for the collection
  (`collection.private_root`) when the collection is read-only here. Failures are not cached: a second run asks
  again.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tracerag.collection import Collection, private_root
from tracerag.config import Settings
from tracerag.errors import ConfigError, LLMCallFailed
from tracerag.llm import Completion, StructuredLLM
from tracerag.research import prompts
from tracerag.research.criteria import Criteria
from tracerag.research.selection import SELECTION_SOURCE
from tracerag.research.sources import SourceChunk
from tracerag.text import fence_json
from tracerag.trail import Event, Trail
from tracerag.trail.events import JudgmentEvent, LLMCallEvent, LLMPurpose

JUDGE_CACHE_FILE = "judgments.sqlite"
EXCERPT_CHARS = 1500  # what the model is shown of a chunk: a 1.5B local model pays ~30 ms per prompt token
# A judgment is a few sentences and a number (~100 tokens from the local model); a longer answer is a runaway
# (measured: the 1.5B model once wrote 700 tokens of it), cut here and sent back as unusable.
MAX_TOKENS = 300


class JudgeAnswer(BaseModel):
    """Reasoning first, score last: the property order of the JSON Schema the model is asked to follow."""

    model_config = ConfigDict(extra="ignore")

    reasoning: str = Field(description="Why, briefly, citing the excerpt's words.")
    score: int = Field(ge=0, le=10, description="0-10 against the criteria, placed by the anchors.")


@dataclass(frozen=True)
class JudgeCandidate:
    """A chunk to judge, with where it stood in the run it came from (for the diagnostics)."""

    doc_id: str
    chunk_id: str
    text: str  # the chunk's original text
    rank: int | None = None
    retrieval_score: float | None = None
    title: str = ""
    date: str = ""

    def shown(self, limit: int = EXCERPT_CHARS) -> dict[str, Any]:
        """What the model is shown of it: never its rank or score (the judge must not echo the retriever)."""
        item: dict[str, Any] = {}
        if self.title:
            item["title"] = self.title
        if self.date:
            item["date"] = self.date
        item["text"] = " ".join(self.text.split())[:limit]
        return item


@dataclass(frozen=True)
class Judgment:
    doc_id: str
    chunk_id: str
    rank: int | None
    retrieval_score: float | None
    score: int | None  # None: the judgment failed (`failure` says why)
    reasoning: str
    failure: str | None
    cached: bool
    model: str


def shown_hash(shown: dict[str, Any]) -> str:
    """The cache's chunk key: a hash of exactly what the model is shown of the chunk."""
    return hashlib.sha256(fence_json(shown).encode()).hexdigest()[:24]


class JudgeCache:
    """Judgments on disk, keyed by (criteria digest, shown-chunk hash, model). SQLite: safe across processes."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db, db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS judgments (criteria TEXT NOT NULL, chunk TEXT NOT NULL, model TEXT NOT "
                "NULL, score INTEGER NOT NULL, reasoning TEXT NOT NULL, judged_at TEXT NOT NULL, "
                "PRIMARY KEY (criteria, chunk, model))"
            )

    @classmethod
    def for_collection(cls, col: Collection, settings: Settings) -> JudgeCache:
        """In the collection; in this user's private folder for it when the collection is read-only here."""
        root = private_root(col.path, settings) if col.read_only else col.path
        return cls(root / JUDGE_CACHE_FILE)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def get(self, criteria: str, chunk: str, model: str) -> tuple[int, str] | None:
        with closing(self._connect()) as db:
            row = db.execute(
                "SELECT score, reasoning FROM judgments WHERE criteria = ? AND chunk = ? AND model = ?",
                (criteria, chunk, model),
            ).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def put(self, criteria: str, chunk: str, model: str, score: int, reasoning: str) -> None:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with closing(self._connect()) as db, db:
            db.execute(
                "INSERT OR REPLACE INTO judgments VALUES (?, ?, ?, ?, ?, ?)",
                (criteria, chunk, model, score, reasoning, now),
            )


Progress = Callable[[int, int, float], None]  # (done, total, seconds so far)


class Judge:
    """Scores candidates one model call each; every judgment (failures too) and every call goes to the trail."""

    def __init__(
        self,
        llm: StructuredLLM,
        criteria: Criteria,
        trail: Trail,
        *,
        cache: JudgeCache | None = None,
        excerpt_chars: int = EXCERPT_CHARS,
        reasoning_chars: int = 600,
        max_tokens: int = MAX_TOKENS,
    ):
        if excerpt_chars < 50:
            raise ValueError(f"excerpt_chars must be >= 50, got {excerpt_chars}")
        self.llm = llm
        self.criteria = criteria
        self.trail = trail
        self.cache = cache
        self.excerpt_chars = excerpt_chars
        self.reasoning_chars = reasoning_chars
        self.max_tokens = max_tokens
        self.calls = 0
        # The cache's criteria key: the criteria and the instructions they are judged under.
        self.cache_key = hashlib.sha256((criteria.digest + prompts.JUDGE_SYSTEM).encode()).hexdigest()[:16]

    def run(self, candidates: Iterable[JudgeCandidate], progress: Progress | None = None) -> list[Judgment]:
        todo = list(candidates)
        started = time.perf_counter()
        out = []
        for n, candidate in enumerate(todo, start=1):
            out.append(self.judge(candidate))
            if progress is not None:
                progress(n, len(todo), time.perf_counter() - started)
        return out

    def judge(self, candidate: JudgeCandidate) -> Judgment:
        shown = candidate.shown(self.excerpt_chars)
        key = shown_hash(shown)
        model = self.llm.model
        hit = self.cache.get(self.cache_key, key, model) if self.cache is not None else None
        if hit is not None:
            return self._emit(candidate, hit[0], hit[1], None, cached=True)
        messages = prompts.judge(self.criteria.to_dict(), shown)
        self.calls += 1
        try:
            completion: Completion[JudgeAnswer] = self.llm.complete(messages, JudgeAnswer, max_tokens=self.max_tokens)
        except LLMCallFailed as failed:  # no answer at all: the call and the failure recorded, the run goes on
            self.trail.emit(LLMCallEvent.of(failed.completion, messages, LLMPurpose.JUDGE))
            return self._emit(candidate, None, "", failed.completion.error or str(failed), cached=False)
        self.trail.emit(LLMCallEvent.of(completion, messages, LLMPurpose.JUDGE))
        answer = completion.parsed
        if answer is None:
            return self._emit(candidate, None, "", completion.error or "no usable answer", cached=False)
        reasoning = " ".join(answer.reasoning.split())[: self.reasoning_chars]
        if self.cache is not None:
            self.cache.put(self.cache_key, key, model, answer.score, reasoning)
        return self._emit(candidate, answer.score, reasoning, None, cached=False)

    def _emit(
        self, candidate: JudgeCandidate, score: int | None, reasoning: str, failure: str | None, *, cached: bool
    ) -> Judgment:
        judgment = Judgment(
            candidate.doc_id,
            candidate.chunk_id,
            candidate.rank,
            candidate.retrieval_score,
            score,
            reasoning,
            failure,
            cached,
            self.llm.model,
        )
        self.trail.emit(
            JudgmentEvent(
                doc_id=judgment.doc_id,
                chunk_id=judgment.chunk_id,
                rank=judgment.rank,
                retrieval_score=judgment.retrieval_score,
                score=judgment.score,
                reasoning=judgment.reasoning,
                failure=judgment.failure,
                cached=judgment.cached,
                model=judgment.model,
                criteria_hash=self.criteria.digest,
            )
        )
        return judgment


def scored(judgments: Sequence[Judgment]) -> list[Judgment]:
    """The judgments that have a score (failures have none and take no part in any correlation)."""
    return [j for j in judgments if j.score is not None]


@dataclass(frozen=True)
class JudgeRun:
    run_id: str
    trail_path: Path
    judgments: list[Judgment]
    calls: int  # model calls made (cache hits make none)

    @property
    def failures(self) -> list[Judgment]:
        return [j for j in self.judgments if j.score is None]


def judge_run(
    col: Collection,
    settings: Settings,
    llm: StructuredLLM,
    criteria: Criteria,
    candidates: Sequence[JudgeCandidate],
    *,
    question: str,
    source_run: str,
    trail_dir: Path | None = None,
    cache: JudgeCache | None = None,
    listeners: Sequence[Callable[[Any], None]] = (),
    progress: Progress | None = None,
) -> JudgeRun:
    """A judge run with its own trail (run kind `judge`): the run event, then per candidate its model call (none
    on a cache hit) and its judgment, failures included."""
    from tracerag import __version__
    from tracerag.trail import JsonlWriter, new_run_id
    from tracerag.trail.events import RunEvent, RunKind

    run_id = new_run_id()
    path = (trail_dir or col.trails_dir) / f"{run_id}.jsonl"
    writer = JsonlWriter(path)
    try:
        trail = Trail(run_id, [writer, *listeners])
        trail.emit(
            RunEvent(
                question=question,
                collection=str(col.path),
                k=len(candidates),
                config={
                    "from": source_run,
                    "criteria": criteria.to_dict(),
                    "criteria_hash": criteria.digest,
                    "criteria_source": criteria.source,
                    "cache": str(cache.path) if cache is not None else None,
                },
                llm={"provider": llm.name, "model": llm.model},
                versions={"tracerag": __version__},
                run=RunKind.JUDGE,
            )
        )
        judge = Judge(llm, criteria, trail, cache=cache)
        judgments = judge.run(candidates, progress)
    finally:
        writer.close()
    return JudgeRun(run_id, path, judgments, judge.calls)


def candidates_of(chunks: Iterable[SourceChunk]) -> list[JudgeCandidate]:
    """Source chunks as candidates, with their place in the run they came from."""
    return [JudgeCandidate(c.doc_id, c.chunk_id, c.text, c.rank, c.score, c.title, c.date) for c in chunks]


@dataclass(frozen=True)
class JudgeSources:
    """What a judge run judges: the question, where the candidates came from (a run id or `selection:QUESTION`),
    the candidates, and the documents named there that the collection no longer holds (skipped, said)."""

    question: str
    source: str
    candidates: list[JudgeCandidate]
    missing: list[str]


def judge_sources(
    col: Collection,
    settings: Settings,
    *,
    run: tuple[str, Sequence[Event]] | None = None,
    selection: str | None = None,
    k: int | None = None,
) -> JudgeSources:
    """The candidates of a run (`run`: its id and events) or of a saved selection's accepted sources, the first
    `k` of them; ConfigError when there is nothing to judge (the CLI's `--from`/`--selection`, the web app's)."""
    from tracerag.research.sources import load_chunks, refs_from_run, refs_from_selection, run_question

    if (run is None) == (selection is None):
        raise ConfigError("give one of --from RUN or --selection QUESTION")
    if selection is not None:
        question, refs = refs_from_selection(col.path, settings, selection)
        source = f"{SELECTION_SOURCE}{question}"
    else:
        assert run is not None
        source, events = run
        refs, question = refs_from_run(events, source=source), run_question(events)
    refs = refs[:k] if k else refs
    if not refs:
        raise ConfigError(f"{source}: no candidates to judge")
    loaded = load_chunks(col, refs)
    if not loaded.chunks:
        raise ConfigError(f"{source}: none of its candidates is in {col.path}")
    return JudgeSources(question, source, candidates_of(loaded.chunks), loaded.missing)
