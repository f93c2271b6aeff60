"""`tracerag answer`: a cited interpretive draft from the accepted sources only, then its citation check.

The sources are the researcher's accepted ones (`--selection QUESTION`) or the agent's (`--from RUN
--agent-accepted`). Each sentence is printed with its kind (quotation, paraphrase, inference) and its citations
as document id, character offsets and the quoted words; a citation the check could not confirm is flagged in red
beside its sentence, never left out. `--explain` prints instead each sentence's support verdict (research/support.py,
the one the web app's draft shows): its citations, what each check found and why, the verdict, then the totals.
Exit 1 when a citation is flagged or the draft abstained.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.padding import Padding
from rich.text import Text

from tracerag.cli.app import (
    BaseUrlOpt,
    CollectionOpt,
    ConfigOpt,
    ExitCode,
    app,
    counted,
    data_text,
    err,
    friendly,
    out,
    settings_with_llm,
    write_json,
)
from tracerag.errors import ConfigError

if TYPE_CHECKING:
    from tracerag.research.answer import Draft
    from tracerag.research.citecheck import CitationCheck
    from tracerag.research.support import SentenceSupport

KIND_STYLE = {"quotation": "cyan", "paraphrase": "", "inference": "magenta"}
VERDICT_STYLE = {"supported": "green", "partly supported": "yellow", "unsupported": "bold red", "not checked": "yellow"}
OUTCOME_STYLE = {"supports": "green", "does not support": "red", "not checked": "yellow"}


@app.command()
@friendly
def answer(
    question: Annotated[str, typer.Argument(help="The question the draft answers.")],
    selection: Annotated[
        str | None,
        typer.Option(
            "--selection", metavar="QUESTION", help="A saved selection's question: draft from its accepted sources."
        ),
    ] = None,
    from_run: Annotated[
        str | None, typer.Option("--from", metavar="RUN", help="An ask run (id, prefix or .jsonl file).")
    ] = None,
    agent_accepted: Annotated[
        bool, typer.Option("--agent-accepted", help="With --from: the sources the agent accepted.")
    ] = False,
    collection: CollectionOpt = Path("."),
    llm: Annotated[
        str | None,
        typer.Option(
            "--llm",
            metavar="MODEL",
            help="openai:MODEL, local or replay:DIR (default: settings; none: extractive draft).",
        ),
    ] = None,
    base_url: BaseUrlOpt = None,
    language: Annotated[
        str | None, typer.Option("--language", help="The draft's language (default: the question's, detected).")
    ] = None,
    trail_dir: Annotated[Path | None, typer.Option(help="Write the run's trail here.")] = None,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Per sentence: its citations, each check's finding and the support verdict (supported, partly "
            "supported, unsupported, not checked), then the totals.",
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the draft and its checks as JSON.")] = False,
    config: ConfigOpt = None,
) -> ExitCode:
    """Draft an answer citing exact spans of the accepted sources, or abstain; then check every citation."""
    from tracerag.collection import Collection, trail_roots
    from tracerag.llm import load_llm
    from tracerag.research.answer_run import answer_run, answer_sources
    from tracerag.research.support import sentence_support, totals
    from tracerag.trail import find_trail, read_trail

    if not question.strip():
        raise ConfigError("a question is required")
    if (selection is None) == (from_run is None):
        raise ConfigError("give one of --selection QUESTION or --from RUN --agent-accepted")
    if from_run is not None and not agent_accepted:
        raise ConfigError("--from RUN drafts from what the agent accepted: pass --agent-accepted to say so")
    settings = settings_with_llm(config, llm, base_url)
    model = load_llm(settings)
    with Collection.open(collection, settings, mode="read") as col:
        run = None
        if from_run is not None:
            path = find_trail(trail_roots(col.path, settings), from_run)
            run = (path.stem, read_trail(path))
        sources = answer_sources(col, settings, selection=selection, run=run)
        for doc_id in sources.loaded.missing:  # drafted without it, and said so
            err.print(data_text(f"left out {doc_id}: the collection no longer holds it", "yellow"))
        if model is None:
            err.print("[yellow]no language model: an extractive draft, checked lexically[/yellow]")
        with err.status("drafting and checking (each step goes to the trail)…"):
            done = answer_run(col, question, sources, model, language=language, trail_dir=trail_dir)
    result, checks, run_id, trail_path, missing = done.draft, done.checks, done.run_id, done.trail_path, done.missing
    flagged = [c for c in checks if c.flagged]
    supports = sentence_support(result.sentences, checks)
    if json_out:
        write_json(
            {
                "run_id": run_id,
                "trail": str(trail_path),
                "label": result.label,
                "question": question,
                "language": result.language,
                "method": result.method,
                "abstained": result.abstained,
                "abstention": result.abstention,
                "withdrawn": done.withdrawn,
                "sources": [{"label": k, "doc_id": s.doc_id, "chunk_id": s.chunk_id} for k, s in result.labels.items()],
                "sentences": [s.model_dump(mode="json") for s in result.sentences],
                "checks": [{**vars(c), "flagged": c.flagged} for c in checks],
                "support": [
                    {
                        "sentence": s.index,
                        "verdict": str(s.verdict),
                        "reason": s.reason,
                        "citations": [
                            {"label": c.label, "outcome": str(c.outcome), "reason": c.reason} for c in s.citations
                        ],
                    }
                    for s in supports
                ],  # fmt: skip
                "verdicts": {str(v): n for v, n in totals(supports).items()},
                "missing": missing,
            }
        )
    elif explain:
        _head(result, done.withdrawn)
        print_support(supports, out)
        out.print(data_text(f"{result.method} draft · trail {trail_path}", "dim"))
    else:
        _print(result, checks, trail_path, done.withdrawn)
    return ExitCode.PARTIAL if flagged or result.abstained or missing else ExitCode.OK


def _head(result: Draft, withdrawn: str | None) -> None:
    out.print(Text(result.label, style="bold yellow"))
    if result.abstained:
        out.print(Text.assemble(("abstained: ", "yellow"), data_text(result.abstention)))
        if result.failure:
            out.print(data_text(result.failure, "red"))
    if withdrawn:  # no answer; the draft is shown all the same, as the trail keeps it, for what it got wrong
        out.print(Text.assemble(("no answer, withdrawn: ", "bold red"), data_text(withdrawn, "red")))
        out.print(Text("the withdrawn draft, as written:", style="dim"))


def print_support(supports: list[SentenceSupport], console: Console) -> None:
    """Each sentence with its kind, its citations (label, document and span, quote), what each check found and
    why, and its verdict with the reason; then one line of totals. The verdict is spelt out, not only coloured."""
    from tracerag.research.support import totals

    for s in supports:
        console.print(
            Text.assemble(
                f"{s.index + 1}. ", (f"[{s.kind}] ", KIND_STYLE[s.kind] or "bold"), data_text(s.text, block=True)
            )
        )
        for c in s.citations:
            where = f"{c.doc_id}:{c.span[0]}-{c.span[1]}" if c.span else f"{c.doc_id or ''} not located".lstrip()
            console.print(Padding(data_text(f"{c.label} {where} “{c.quote}”", "dim"), (0, 0, 0, 3), expand=False))
            how = f" ({c.method}): " if c.method else ": "
            found = Text.assemble((str(c.outcome), OUTCOME_STYLE[c.outcome]), how, data_text(c.reason))
            console.print(Padding(found, (0, 0, 0, 5), expand=False))
        verdict = Text.assemble("verdict: ", (str(s.verdict), VERDICT_STYLE[s.verdict]), f" ({s.reason})")
        console.print(Padding(verdict, (0, 0, 0, 3), expand=False))
    counts = totals(supports)
    line = " · ".join(f"{n} {v}" for v, n in counts.items())
    console.print(Text(f"{counted(len(supports), 'sentence')}: {line}", style="bold"))


def _print(result: Draft, checks: list[CitationCheck], trail_path: Path, withdrawn: str | None) -> None:
    _head(result, withdrawn)
    by_sentence: dict[int, list[CitationCheck]] = {}
    for c in checks:
        by_sentence.setdefault(c.sentence, []).append(c)
    for i, sentence in enumerate(result.sentences):
        kind = str(sentence.kind)
        line = Text.assemble((f"[{kind}] ", KIND_STYLE[kind] or "bold"), data_text(sentence.text, block=True))
        out.print(line)
        for n, citation in enumerate(sentence.citations):
            where = f"{citation.doc_id}:{citation.span[0]}-{citation.span[1]}" if citation.span else "not located"
            out.print(Text.assemble("    ", data_text(f"[{citation.label} {where}] “{citation.quote}”", "dim")))
            for c in by_sentence.get(i, []):
                if c.citation == n and c.flagged:
                    out.print(Text.assemble("    ", ("FLAGGED: ", "bold red"), data_text(c.reason, "red")))
        for c in by_sentence.get(i, []):
            if c.citation == -1:
                out.print(Text.assemble("    ", ("FLAGGED: ", "bold red"), data_text(c.reason, "red")))
    flagged = sum(c.flagged for c in checks)
    out.print(
        data_text(
            f"{result.method} draft · {counted(len(result.sentences), 'sentence')} · "
            f"{counted(len(checks), 'citation check')}, {flagged} flagged · trail {trail_path}"
        )
    )
