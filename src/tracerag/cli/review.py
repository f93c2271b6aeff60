"""`tracerag review` and `tracerag selection`: the researcher decides which of a run's candidates are sources.

`review RUN` shows one candidate at a time (its cited span, the agent's reasons, the judge's reasoning and score)
and takes one key per decision; `research.review.ReviewSession` does the deciding, this module only draws and
reads keys. On a terminal the keys are read raw (no Enter); from a pipe or a file the input is a key script, one
character per key (a note is the rest of its line), which is how the tests and scripts drive a review. Rich with
this small key reader rather than Textual: Rich is already what the CLI prints with, a one-key list needs no
widget tree, and the session it drives is tested without any terminal.

Document text, reasons and notes are data: printed as `Text` through `app.data_text`, never in markup.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from tracerag.cli.app import (
    CollectionOpt,
    ConfigOpt,
    ExitCode,
    ExportFormatOpt,
    ExportOutOpt,
    app,
    counted,
    data_text,
    err,
    friendly,
    out,
    print_table,
    write_export,
    write_json,
)
from tracerag.cli.options import IiifBaseOpt

if TYPE_CHECKING:
    from tracerag.config import Settings
    from tracerag.model import Document
    from tracerag.research.review import Candidate, ReviewSession
    from tracerag.research.selection import SelectionStore
    from tracerag.trail import Event

selection_app = typer.Typer(help="List, show and export the researcher's selections.", no_args_is_help=True)

QUOTE_CHARS = 600  # of a chunk shown when the candidate cites no span
CONTEXT_CHARS = 160  # either side of a cited span

_ARROWS = {"[A": "k", "[D": "k", "[B": "j", "[C": "j"}  # up/left: back; down/right: next


class KeyReader:
    """Keys from a terminal (raw, one at a time, arrows understood) or from a script (any other stream)."""

    def __init__(self, stream: IO[str]):
        self.stream = stream
        self.tty = stream.isatty()

    @contextlib.contextmanager
    def raw(self) -> Iterator[None]:
        if not self.tty:
            yield
            return
        import termios
        import tty

        fd = self.stream.fileno()
        saved = termios.tcgetattr(fd)
        try:
            tty.setcbreak(fd)
            yield
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)

    def key(self) -> str:
        """The next key; Ctrl-D ('\\x04') at the end of a script."""
        if not self.tty:
            char = self.stream.read(1)
            while char in ("\n", "\r"):  # a script may put keys on lines of their own
                char = self.stream.read(1)
            return char or "\x04"
        fd = self.stream.fileno()
        data = os.read(fd, 8).decode("utf-8", errors="replace")
        if data == "\x1b" and select.select([fd], [], [], 0.05)[0]:  # an arrow's bytes may come a moment later
            data += os.read(fd, 8).decode("utf-8", errors="replace")
        if data.startswith("\x1b") and data != "\x1b":
            return _ARROWS.get(data[1:3], "")  # another escape sequence (a function key): no key
        return data[:1]

    def line(self, prompt: str) -> str:
        """A note: the rest of the script's line, or a line typed with echo."""
        if not self.tty:
            return self.stream.readline().rstrip("\r\n")
        import termios

        fd = self.stream.fileno()
        saved = termios.tcgetattr(fd)
        cooked = termios.tcgetattr(fd)
        cooked[3] |= termios.ICANON | termios.ECHO
        termios.tcsetattr(fd, termios.TCSADRAIN, cooked)
        try:
            err.print(data_text(prompt), end="")
            return self.stream.readline().rstrip("\r\n")
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


@app.command()
@friendly
def review(
    run: Annotated[str, typer.Argument(help="The run to review: an ask, search or judge run id (or prefix, or file).")],
    collection: CollectionOpt = Path("."),
    question: Annotated[
        str | None, typer.Option("--question", "-q", help="The research question (default: the run's question).")
    ] = None,
    judge: Annotated[
        str | None, typer.Option("--judge", help="A judge run over the same candidates: its reasoning and scores.")
    ] = None,
    who: Annotated[str | None, typer.Option("--who", help="Record decisions as this user (default: settings).")] = None,
    undecided: Annotated[
        bool, typer.Option("--undecided", help="Only the candidates without an accept or a reject yet.")
    ] = False,
    config: ConfigOpt = None,
) -> ExitCode:
    """Accept or reject a run's candidates one key at a time (a accept, r reject, s skip, n note, b back, u undo,
    q quit): each decision is written to the question's selection at once and recorded in a `review` trail."""
    from tracerag.collection import Collection, trail_roots
    from tracerag.config import load_settings
    from tracerag.research.review import (
        ReviewSession,
        chunk_spans,
        run_candidates,
        start_review_trail,
        with_chunk_spans,
    )
    from tracerag.research.selection import Decision, default_user
    from tracerag.trail import find_trail, read_trail
    from tracerag.trail.writer import JsonlWriter

    settings = load_settings(config)
    roots = trail_roots(collection, settings)
    events = read_trail(find_trail(roots, run))
    judged: list[Event] = read_trail(find_trail(roots, judge)) if judge else []
    found = run_candidates(events, judged, find=lambda run_id: read_trail(find_trail(roots, run_id)))
    for warning in found.warnings:
        err.print(data_text(warning))
    candidates, from_run = found.candidates, found.from_run
    key = question or found.question
    user = who or default_user(settings)
    with Collection.open(collection, settings, mode="read") as col, _selections(collection, settings) as store:
        if undecided:
            candidates = [c for c in candidates if _open(store, key, c)]
            if not candidates:
                err.print(data_text(f"every candidate of {from_run} is decided for this question"))
                return ExitCode.OK
        documents = col.store.get_documents(sorted({c.doc_id for c in candidates}))
        spans = chunk_spans(col, candidates)
        candidates = with_chunk_spans(candidates, spans)
        trail, trail_file = start_review_trail(
            col, key, from_run, who=user, candidates=len(candidates), judge_run=judge
        )
        writer = JsonlWriter(trail_file)
        trail.listeners.append(writer)
        try:
            session = ReviewSession(key, candidates, store, user, from_run, emit=trail.emit)
            _drive(session, KeyReader(sys.stdin), documents, spans)
        finally:
            writer.close()
        tally = session.tally()
    out.print(
        data_text(
            f"{session.question}: {tally[Decision.ACCEPTED]} accepted, {tally[Decision.REJECTED]} rejected, "
            f"{tally[Decision.UNDECIDED]} undecided of {counted(len(candidates), 'candidate')} "
            f"(review trail {trail.run_id})"
        ),
        soft_wrap=True,
    )
    return ExitCode.OK


def _open(store: SelectionStore, question: str, candidate: Candidate) -> bool:
    from tracerag.research.selection import Decision

    entry = store.get(question, candidate.doc_id)
    return entry is None or entry.decision is Decision.UNDECIDED


@contextlib.contextmanager
def _selections(collection: Path, settings: Settings, write: bool = True) -> Iterator[SelectionStore]:
    from tracerag.research.selection import open_selections

    store = open_selections(collection, settings, write=write)
    try:
        yield store
    finally:
        store.close()


def _drive(
    session: ReviewSession, keys: KeyReader, documents: dict[str, Document], spans: dict[str, tuple[int, int]]
) -> None:
    with keys.raw():
        while not session.finished:
            current = session.current
            assert current is not None
            _show(session, current, documents.get(current.doc_id), spans.get(current.chunk_id or ""), keys.tty)
            session.handle(keys.key())
            if session.noting:
                session.add_note(keys.line("note: "))
            if session.message:
                err.print(data_text(session.message, "yellow"))


def _show(session: ReviewSession, c: Candidate, doc: Document | None, chunk: tuple[int, int] | None, tty: bool) -> None:
    from rich.panel import Panel

    from tracerag.research.review import HELP
    from tracerag.research.selection_export import decision_reason

    if tty:
        err.clear()
    entry = session.decision_of(c)
    head = Text.assemble((f"[{session.index + 1}/{len(session.candidates)}] ", "bold"), data_text(c.doc_id, "bold"))
    for part in (doc.title if doc else None, doc.date if doc else None):
        if part:
            head.append(" · ")
            head.append_text(data_text(part))
    head.append(f" · rank {c.rank} (", style="dim")
    head.append_text(data_text(c.origin, "dim"))
    head.append(")", style="dim")
    body = Text()
    if doc is None:
        body.append_text(data_text("(the document is no longer in the collection)", "red"))
    elif c.span is not None and 0 <= c.span[0] <= c.span[1] <= len(doc.text):
        start, end = c.span
        body.append_text(data_text("…" + doc.text[max(0, start - CONTEXT_CHARS) : start], "dim", block=True))
        body.append_text(data_text(doc.text[start:end], "bold yellow", block=True))
        body.append_text(data_text(doc.text[end : end + CONTEXT_CHARS] + "…", "dim", block=True))
    elif chunk is not None:
        body.append_text(data_text(doc.text[chunk[0] : chunk[1]][:QUOTE_CHARS], block=True))
    else:
        body.append_text(data_text(doc.text[:QUOTE_CHARS], block=True))
    for reason in c.reasons:
        body.append("\nagent: ", style="cyan")
        body.append_text(data_text(reason))
    if c.judge is not None:
        score = f"{c.judge.score}/10" if c.judge.score is not None else "no score"
        body.append(f"\njudge ({score}): ", style="magenta")
        body.append_text(data_text(c.judge.failure or c.judge.reasoning, block=True))
    status = f"now: {decision_reason(entry)}" if entry else "now: no decision"
    err.print(Panel(body, title=head, subtitle=data_text(status), title_align="left"))
    err.print(Text(HELP, style="dim"))


# -- the selections ----------------------------------------------------------------------------------------------


@selection_app.command("list")
@friendly
def selection_list(collection: CollectionOpt = Path("."), config: ConfigOpt = None) -> None:
    """Every research question with a selection, with how many sources are accepted, rejected and undecided."""
    from rich.table import Table

    from tracerag.config import load_settings

    with _selections(collection, load_settings(config), write=False) as store:
        table = Table("question", "accepted", "rejected", "undecided", "last change")
        for s in store.questions():
            table.add_row(data_text(s.question), str(s.accepted), str(s.rejected), str(s.undecided), s.last_change)
    print_table(table)


@selection_app.command("show")
@friendly
def selection_show(
    question: Annotated[str, typer.Argument(help="The research question (or a unique beginning of it).")],
    collection: CollectionOpt = Path("."),
    history: Annotated[bool, typer.Option("--history", help="Every change, oldest first.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="As JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """A question's decisions: source, decision, who, when, note, cited span."""
    from rich.table import Table

    from tracerag.config import load_settings
    from tracerag.research.selection import Decision

    with _selections(collection, load_settings(config), write=False) as store:
        key = store.resolve(question)
        rows = store.history(key) if history else store.entries(key)
    if json_out:
        write_json(
            [
                {"doc_id": r[0], "decision": None, "when": r[1]}
                if isinstance(r, tuple)
                else {
                    "doc_id": r.doc_id, "decision": r.decision.value, "chunk_id": r.chunk_id,
                    "span": list(r.span) if r.span else None, "note": r.note, "who": r.who, "when": r.when,
                    "run_id": r.run_id,
                }
                for r in rows
            ]
        )  # fmt: skip
        return
    table = Table("source", "decision", "who", "when", "note", "span", title=data_text(key))
    for r in rows:
        if isinstance(r, tuple):
            table.add_row(data_text(r[0]), Text("taken back", style="dim"), "", r[1], "", "")
            continue
        style = {Decision.ACCEPTED: "green", Decision.REJECTED: "red"}.get(r.decision, "yellow")
        span = f"{r.span[0]}-{r.span[1]}" if r.span else ""
        table.add_row(data_text(r.doc_id), Text(r.decision.value, style=style), data_text(r.who), r.when,
                      data_text(r.note), span)  # fmt: skip
    print_table(table)


@selection_app.command("export")
@friendly
def selection_export(
    question: Annotated[str, typer.Argument(help="The research question (or a unique beginning of it).")],
    collection: CollectionOpt = Path("."),
    fmt: ExportFormatOpt = "csv",
    output: ExportOutOpt = None,
    iiif_base: IiifBaseOpt = None,
    config: ConfigOpt = None,
) -> None:
    """The accepted sources with their cited spans and the researcher's notes (RIS and CSL-JSON import into
    Zotero), and where each span lies on the page scans when the collection keeps ALTO boxes."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.ingest.alto_regions import check_base
    from tracerag.research.selection_export import export_accepted

    settings = load_settings(config)
    base = check_base(iiif_base)
    with _selections(collection, settings, write=False) as store:
        key = store.resolve(question)
        accepted = store.accepted(key)
    if not Collection.exists(collection):
        text = export_accepted(accepted, None, fmt)
    else:
        with Collection.open(collection, settings, mode="read") as col:
            text = export_accepted(accepted, col, fmt, iiif_base=base)
    write_export(text, output)
    if output is not None:
        err.print(data_text(f"wrote {counted(len(accepted), 'accepted source')} to {output}"))
    if not accepted:
        err.print(data_text(f"nothing is accepted yet for {key!r}: the export holds no source", "yellow"))
