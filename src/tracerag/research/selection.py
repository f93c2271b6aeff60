"""A research question's selection: the researcher's decision on each candidate source (accepted, rejected,
undecided), with a note, who decided and when.

The selection lives in a SQLite file of its own beside the collection's store (`collection.SELECTIONS_FILE`), not
in the store: a re-ingest rewrites documents and chunks, and must leave the researcher's work untouched; and a
decision is written without the collection's writer lock, so that reviewing goes on while an ingest runs. Each
decision is one `BEGIN IMMEDIATE` transaction (the current state and its history row together), so two processes
deciding at once wait for each other (SQLite's busy timeout) and lose nothing.

On a collection this user cannot write, the selection is this user's own: the same file name under
`collection.private_root`, where the trails of runs on such a collection already go.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tracerag.collection import SELECTIONS_FILE, private_root
from tracerag.config import Settings
from tracerag.errors import SelectionError
from tracerag.trail.events import SelectionDecision

SELECTION_SOURCE = "selection:"  # a run whose sources are a selection's says "selection:QUESTION", not a run id
BUSY_TIMEOUT_S = 30.0  # a decision is one small transaction: another process's never holds the file this long

_SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    question TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('accepted', 'rejected', 'undecided')),
    chunk_id TEXT,
    span_start INTEGER,
    span_end INTEGER,
    note TEXT NOT NULL DEFAULT '',
    who TEXT NOT NULL,
    at TEXT NOT NULL,
    run_id TEXT,
    PRIMARY KEY (question, doc_id)
);
CREATE TABLE IF NOT EXISTS history (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    question TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    decision TEXT,  -- NULL: the decision was taken back to none (an undo of the first decision)
    chunk_id TEXT,
    span_start INTEGER,
    span_end INTEGER,
    note TEXT NOT NULL DEFAULT '',
    who TEXT NOT NULL,
    at TEXT NOT NULL,
    run_id TEXT
);
CREATE INDEX IF NOT EXISTS history_question ON history (question, doc_id);
"""


# accepted: a source for the question; rejected: judged not a source; undecided: seen and skipped, or taken back.
# One enum with the trail's, which records every decision and may not import this wing.
Decision = SelectionDecision


@dataclass(frozen=True, slots=True)
class SelectionEntry:
    """The decision on one source (a document) for one research question."""

    question: str
    doc_id: str
    decision: Decision
    chunk_id: str | None = None  # the chunk whose evidence was shown when deciding
    span: tuple[int, int] | None = None  # the cited evidence's character span in the document text
    note: str = ""
    who: str = ""
    when: str = ""  # UTC, ISO 8601 to the millisecond
    run_id: str | None = None  # the run the candidate was reviewed from


@dataclass(frozen=True, slots=True)
class SelectionSummary:
    question: str
    accepted: int
    rejected: int
    undecided: int
    last_change: str

    @property
    def total(self) -> int:
        return self.accepted + self.rejected + self.undecided


def question_key(question: str) -> str:
    """The selection's key: the question with its whitespace collapsed (a retyped question finds its selection)."""
    key = " ".join(question.split())
    if not key:
        raise SelectionError("a research question is needed: got an empty one")
    return key


def selection_id(question: str) -> str:
    """A short stable name of a question's selection, for URLs (a question may hold any character, '/' too)."""
    return hashlib.sha256(question_key(question).encode()).hexdigest()[:12]


def now_utc() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def selections_path(collection_dir: Path, settings: Settings) -> Path:
    """Where the collection's selections are kept for this user: in the collection when it can be written here,
    else in this user's private folder for it."""
    path = Path(collection_dir)
    own = path / SELECTIONS_FILE
    writable = os.access(own, os.W_OK) if own.exists() else os.access(path, os.W_OK)
    if writable and not _read_only_storage(path):
        return own
    return private_root(path, settings) / SELECTIONS_FILE


def _read_only_storage(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def open_selections(collection_dir: Path, settings: Settings, *, write: bool = False) -> SelectionStore:
    """The collection's selections. For reading, a selection file not made yet reads as empty (nothing decided);
    `write=True` makes it. A collection directory that does not exist is an error either way."""
    path = Path(collection_dir)
    if not path.is_dir():
        raise SelectionError(f"{path}: no such collection directory")
    return SelectionStore(selections_path(path, settings), write=write)


class SelectionStore:
    """Every research question's selection in one SQLite file. `write=False` never creates the file."""

    def __init__(self, path: Path, *, write: bool = False):
        self.path = Path(path)
        self.write = write
        self._db: sqlite3.Connection | None = None
        if write:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = self._connect(self.path)
            # WAL, as the store: readers never wait for a decision, and a commit costs one fsync (FULL: a
            # decision the researcher saw written survives a power cut).
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            with self._db:
                self._db.executescript(_SCHEMA)
        elif self.path.exists():
            uri = f"file:{self.path}?mode=ro"
            self._db = self._connect(uri, uri=True)

    @staticmethod
    def _connect(target: Path | str, uri: bool = False) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(target, timeout=BUSY_TIMEOUT_S, isolation_level=None, uri=uri)
        except sqlite3.Error as exc:
            raise SelectionError(f"{target}: cannot open the selections ({exc})") from None
        db.row_factory = sqlite3.Row
        return db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> SelectionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        if self._db is None or not self.write:
            raise SelectionError(f"{self.path}: the selections were opened for reading")
        try:
            self._db.execute("BEGIN IMMEDIATE")  # the write lock now: no other writer interleaves
        except sqlite3.OperationalError as exc:
            raise SelectionError(f"{self.path}: another process kept the selections locked ({exc})") from None
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _rows(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        if self._db is None:
            return []
        return self._db.execute(sql, params).fetchall()

    # -- reading ----------------------------------------------------------------------------------------------

    def questions(self) -> list[SelectionSummary]:
        rows = self._rows(
            "SELECT question, SUM(decision = 'accepted') AS a, SUM(decision = 'rejected') AS r, "
            "SUM(decision = 'undecided') AS u, MAX(at) AS last FROM decisions GROUP BY question ORDER BY last DESC"
        )
        return [SelectionSummary(r["question"], r["a"], r["r"], r["u"], r["last"]) for r in rows]

    def resolve(self, question: str) -> str:
        """The question as stored: given exactly (whitespace aside) or by a unique prefix of it."""
        key = question_key(question)
        known = [s.question for s in self.questions()]
        if key in known:
            return key
        matches = [q for q in known if q.startswith(key)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            listed = "; ".join(repr(q) for q in known[:5]) or "none yet"
            raise SelectionError(f"no selection for the question {key!r} (selections: {listed})")
        raise SelectionError(f"{key!r} begins {len(matches)} questions' selections: give more of the question")

    def entries(self, question: str, decision: Decision | None = None) -> list[SelectionEntry]:
        """The current decisions on a question, in the order they were last made."""
        key = question_key(question)
        if decision is None:
            rows = self._rows("SELECT * FROM decisions WHERE question = ? ORDER BY at, rowid", (key,))
        else:
            rows = self._rows(
                "SELECT * FROM decisions WHERE question = ? AND decision = ? ORDER BY at, rowid", (key, decision.value)
            )
        return [_entry(r) for r in rows]

    def accepted(self, question: str) -> list[SelectionEntry]:
        return self.entries(question, Decision.ACCEPTED)

    def get(self, question: str, doc_id: str) -> SelectionEntry | None:
        rows = self._rows("SELECT * FROM decisions WHERE question = ? AND doc_id = ?", (question_key(question), doc_id))
        return _entry(rows[0]) if rows else None

    def history(self, question: str, doc_id: str | None = None) -> list[SelectionEntry | tuple[str, str]]:
        """Every change to a question's selection, oldest first: an entry, or (doc_id, when) where a decision was
        taken back to none."""
        key = question_key(question)
        if doc_id is None:
            rows = self._rows("SELECT * FROM history WHERE question = ? ORDER BY seq", (key,))
        else:
            rows = self._rows("SELECT * FROM history WHERE question = ? AND doc_id = ? ORDER BY seq", (key, doc_id))
        return [_entry(r) if r["decision"] is not None else (r["doc_id"], r["at"]) for r in rows]

    # -- writing ----------------------------------------------------------------------------------------------

    def decide(
        self,
        question: str,
        doc_id: str,
        decision: Decision,
        *,
        who: str,
        chunk_id: str | None = None,
        span: tuple[int, int] | None = None,
        note: str | None = None,
        run_id: str | None = None,
    ) -> SelectionEntry:
        """Record a decision (replacing the one before on this source); `note=None` keeps the note there was."""
        key = question_key(question)
        if not doc_id:
            raise SelectionError("a decision needs a document id")
        if span is not None and not (0 <= span[0] <= span[1]):
            raise SelectionError(f"span {span}: expected (start, end) with 0 <= start <= end")
        with self._transaction() as db:
            if note is None:
                old = db.execute("SELECT note FROM decisions WHERE question = ? AND doc_id = ?", (key, doc_id))
                row = old.fetchone()
                note = row["note"] if row else ""
            entry = SelectionEntry(key, doc_id, Decision(decision), chunk_id, span, note, who, now_utc(), run_id)
            _write(db, entry)
        return entry

    def restore(self, question: str, doc_id: str, previous: SelectionEntry | None, *, who: str) -> None:
        """Put a source back as it was before a decision (`previous`, or no decision at all): the review's undo.
        The change is kept in the history like any other."""
        key = question_key(question)
        with self._transaction() as db:
            if previous is None:
                db.execute("DELETE FROM decisions WHERE question = ? AND doc_id = ?", (key, doc_id))
                db.execute(
                    "INSERT INTO history (question, doc_id, decision, who, at) VALUES (?, ?, NULL, ?, ?)",
                    (key, doc_id, who, now_utc()),
                )
            else:
                back = SelectionEntry(
                    key, doc_id, previous.decision, previous.chunk_id, previous.span, previous.note, who, now_utc(),
                    previous.run_id,
                )  # fmt: skip
                _write(db, back)


def _write(db: sqlite3.Connection, e: SelectionEntry) -> None:
    start, end = e.span if e.span is not None else (None, None)
    values = (e.question, e.doc_id, e.decision.value, e.chunk_id, start, end, e.note, e.who, e.when, e.run_id)
    db.execute(
        "INSERT INTO decisions (question, doc_id, decision, chunk_id, span_start, span_end, note, who, at, run_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (question, doc_id) DO UPDATE SET "
        "decision = excluded.decision, chunk_id = excluded.chunk_id, span_start = excluded.span_start, "
        "span_end = excluded.span_end, note = excluded.note, who = excluded.who, at = excluded.at, "
        "run_id = excluded.run_id",
        values,
    )
    db.execute(
        "INSERT INTO history (question, doc_id, decision, chunk_id, span_start, span_end, note, who, at, run_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        values,
    )


def _entry(row: sqlite3.Row) -> SelectionEntry:
    span = (row["span_start"], row["span_end"]) if row["span_start"] is not None else None
    return SelectionEntry(
        question=row["question"],
        doc_id=row["doc_id"],
        decision=Decision(row["decision"]),
        chunk_id=row["chunk_id"],
        span=span,
        note=row["note"],
        who=row["who"],
        when=row["at"],
        run_id=row["run_id"],
    )


def default_user(settings: Settings) -> str:
    """Who decides: the `selection.user` setting, else the login name."""
    if settings.selection.user:
        return settings.selection.user
    try:
        import getpass

        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"
