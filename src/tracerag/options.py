"""The options of a search, an ask, a catalog turn and a judge run, declared once: each field's name, type,
default, bounds and description, and `Cli` for how it reads on the command line where that is not derived from
the field. The API's request bodies are these models (`server/api/search.py`, `ask.py`, `catalog.py` and
`research.py` add their validators), and the commands take their options from them (`cli/options.py`);
tests/test_options.py checks the two against each other.

Derived on the command line: the flag is `--name`; a list is a repeatable option whose help ends "(repeatable).",
given as None when absent; numeric bounds are the option's min and max. A string's length is the API's alone (a
server bounds what it reads; a command reads what its user typed). Every other difference between the two is
declared in the field's `Cli`, with why.

Light on purpose: `--help` builds the options from this module, so it imports pydantic only, never the settings
(`Channel` is the settings' name, resolved where the request body is built)."""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo

from tracerag.model import ChannelName

if TYPE_CHECKING:
    from tracerag.config import Channel

SAME: Any = object()  # a `Cli` default: as the field says


@dataclass(frozen=True)
class Cli:
    """A field on the command line, where it differs from what the field derives (each use says why)."""

    flags: tuple[str, ...] = ()  # the option's names (default: `--name`)
    metavar: str | None = None  # what to type (default: from the type, `cli/help.py`)
    param: str | None = None  # the command function's parameter, where it is not the field's name
    argument: bool = False  # a positional argument, not an option
    type: Any = SAME  # the type the command line takes, where it takes the value in another shape
    default: Any = SAME
    help: str | None = None  # where the command line says it otherwise
    min: bool = True  # False: the lower bound is checked by the command itself, not by the option
    max: bool = True  # False: the upper bound is the server's, a limit on the work one request asks
    absent: bool = False  # the command line does not take it (its field says how it gets the value instead)


def cli_of(field: FieldInfo) -> Cli:
    """The field's `Cli` (an empty one when it declares none)."""
    found = [m for m in field.metadata if isinstance(m, Cli)]  # pydantic keeps what it does not know, unused
    return found[0] if found else Cli()


class SearchOptions(BaseModel):
    """A search: the options of `tracerag search`, by the same names (`from`/`to` are `date_from`/`date_to`)."""

    query: Annotated[str, Cli(argument=True)] = Field(
        min_length=1, max_length=4000, description='What to look for. Quote phrases with "...".'
    )
    # the search itself refuses k < 1 on the command line (ConfigError), as it always did
    k: Annotated[int, Cli(flags=("--k", "-k"), min=False, max=False)] = Field(
        10, ge=1, le=500, description="Number of documents."
    )
    corpus: Annotated[list[str], Cli(metavar="NAME")] = Field([], description="Restrict to a sub-corpus.")
    date_from: Annotated[str | None, Cli(flags=("--from",), metavar="DATE")] = Field(
        None, description="Earliest date (1890, 1890-05, 1890-05-01)."
    )
    # the command line's help shows the flag in its example
    date_to: Annotated[
        str | None, Cli(flags=("--to",), metavar="DATE", help="Latest date (inclusive: --to 1900 is up to 1900-12-31).")
    ] = Field(None, description="Latest date, inclusive (1900 is up to 1900-12-31).")
    language: Annotated[list[str], Cli(metavar="CODE")] = Field([], description="Restrict to a language.")
    # a JSON object in a request; KEY=VALUE words on the command line
    fields: Annotated[
        dict[str, str],
        Cli(
            flags=("--field",),
            param="field",
            metavar="KEY=VALUE",
            type=list[str] | None,
            default=None,
            help="Structured field KEY=VALUE (repeatable).",
        ),
    ] = Field({}, description="Structured fields that must hold these values.")
    doc_ids: Annotated[list[str], Cli(flags=("--doc-id",), param="doc_id", metavar="ID")] = Field(
        [], description="Allow-list of document ids."
    )
    # a list in a request; one comma-separated value on the command line, checked by the search
    channels: Annotated[
        list["Channel"] | None,
        Cli(type=str | None, metavar="CHANNELS", help=f"Comma-separated channels ({','.join(ChannelName)})."),
    ] = Field(None, description="The channels to run (absent: the settings' channels).")
    # the command line's help names --explain, which shows the windows
    windows: Annotated[
        str | None,
        Cli(
            metavar="SPAN",
            help="Temporal windowing: equal share per window, e.g. 5y (also the windows --explain shows).",
        ),
    ] = Field(None, description="Temporal windowing, e.g. 5y ('' turns it off).")
    # the command line's values are checked by the search; its help names --llm and the setting that applies
    expand: Annotated[
        list[Literal["llm", "translate", "vocab"]],
        Cli(
            type=list[str] | None,
            metavar="llm|translate|vocab",
            help="Also search variants, fused by RRF: 'llm' (a model's, --llm; with the query in the collection's "
            "other languages unless expansion.translate is false), 'translate' (those translations alone) or "
            "'vocab' (repeatable).",
        ),
    ] = Field(
        [],
        description="Also search variants: an LLM's, the query in its collection's other languages, the vocabulary's.",
    )
    variants: Annotated[int | None, Cli(max=False)] = Field(
        None, ge=1, le=20, description="LLM variants (default expansion.variants)."
    )
    add: Annotated[list[str], Cli(flags=("--add",), metavar="WORD")] = Field(
        [], description="Add a word to the query, e.g. a neighbour."
    )
    # a file on the command line; its text in a request
    synonyms: Annotated[
        str | None, Cli(type=Path | None, metavar="FILE", help="Spelling/synonym map (TSV) applied to the query.")
    ] = Field(None, max_length=200_000, description="A spelling/synonym map as TSV text (forms of one word per line).")
    filter: Annotated[str | None, Cli(flags=("--filter",), param="filter_expr", metavar="EXPRESSION")] = Field(
        None, description='Boolean filter: AND OR NOT ( ) "phrase" field:value word*.'
    )
    min_ocr: Annotated[float | None, Cli(flags=("--min-ocr",))] = Field(
        None, ge=0, le=1, description="Only documents whose estimated OCR quality is at least this (0-1)."
    )
    # the command prints an explanation; a request gets the rankings behind it
    explain: Annotated[
        bool, Cli(flags=("--explain",), param="explain_", help="Show channels, scores, spans and metadata.")
    ] = Field(False, description="Also return each channel's and text field's own ranking.")
    iiif_base: Annotated[str | None, Cli(metavar="URL")] = Field(
        None, description="IIIF image base for page-region links; may name {doc_id}, {page_id}, {page_number}."
    )


class AskOptions(BaseModel):
    """An ask: the question and how many sources, as `tracerag ask` takes them."""

    # optional on the command line, where --replay RUN asks none (the command says a question is required)
    question: Annotated[str, Cli(argument=True, type=str | None, default=None)] = Field(
        min_length=1, max_length=4000, description="The research question."
    )
    k: Annotated[int, Cli(flags=("--k", "-k"), max=False)] = Field(10, ge=1, le=100, description="Number of sources.")


class TurnOptions(BaseModel):
    """A catalog request: one turn of a conversation (`tracerag chat --once TEXT` asks one and exits)."""

    # on the command line, the request given as --once is also the one-turn mode (else an interactive chat)
    text: Annotated[
        str, Cli(flags=("--once",), param="once", type=str | None, default=None, help="Answer one request and exit.")
    ] = Field(
        description='What the person asks, in words ("a food pantry open on Monday"; a follow-up may give only '
        "the place)."
    )


class JudgeOptions(BaseModel):
    """A judge run: what to judge and against which criteria, as `tracerag judge` takes them."""

    # the command line also takes a trail file
    from_run: Annotated[
        str | None,
        Cli(
            flags=("--from",),
            metavar="RUN",
            help="A search, ask or judge run (id, unique prefix, or .jsonl file).",
        ),
    ] = Field(None, max_length=200, description="A search, ask or judge run whose candidates to judge.")
    selection: Annotated[str | None, Cli(flags=("--selection",), metavar="QUESTION")] = Field(
        None, max_length=1000, description="A saved selection's question (its accepted sources)."
    )
    # a file on the command line (its suffix says the format); its text in a request
    criteria: Annotated[
        str,
        Cli(flags=("--criteria",), metavar="FILE", type=Path, help="The criteria: a .toml file, or any text file."),
    ] = Field(min_length=1, max_length=20_000, description="The researcher's criteria.")
    # the command line reads the format from the criteria file's suffix
    criteria_format: Annotated[Literal["text", "toml"], Cli(absent=True)] = Field(
        "text", description="text: the whole text is what counts (default anchors); toml: as a criteria .toml file."
    )
    # a request's candidates are each a model call: at most 500
    k: Annotated[int | None, Cli(flags=("--k", "-k"), max=False)] = Field(
        None, ge=1, le=500, description="Judge only the run's first K candidates."
    )
    no_cache: bool = Field(False, description="Ask the model even where a judgment is cached.")


MODELS: dict[str, type[BaseModel]] = {
    "search": SearchOptions,
    "ask": AskOptions,
    "chat": TurnOptions,
    "judge": JudgeOptions,
}
"""Each command's options, by the command's name."""
