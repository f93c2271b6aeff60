"""`tracerag`: a thin command line over the library. Parse, build settings, call the library, print.

`app.py` holds the Typer app, the consoles, the shared options and the one error edge (outcomes become exit codes:
0 all good, 1 partial, 2 bad usage or input, 3 busy); one module per command group registers its commands on it:
`collections` (ingest, embed, info), `migrate` (an index moved to a Qdrant server), `calibrate`, `search`,
`eval`, `fuse`, `demo`, `agent` (ask, trail), `catalog` (catalog ingest and eval, chat), `serve` (the web app).
Command modules import `app.py` (and `views.py`, what several of them print), never each other; this file names
them, and the sub-apps, in one place. A command's module is imported only when the command runs or shows its help
(`app.LazyGroup`): `tracerag --help` and every `--help` load no model, engine or data library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracerag.cli.app import ExitCode, app, register_lazily, write_stdout
from tracerag.cli.views import render

if TYPE_CHECKING:
    from tracerag.cli.demo import DEMO_LEXICAL

# Every command and group with the module that registers it, in the order `tracerag --help` lists them.
register_lazily(
    {
        "ingest": "collections",
        "embed": "collections",
        "info": "collections",
        "calibrate": "calibrate",
        "search": "search",
        "eval": "eval",
        "fuse": "fuse",
        "demo": "demo",
        "ask": "agent",
        "chat": "catalog",
        "review": "review",
        "judge": "judge",  # the criteria judge
        "answer": "answer",  # cited drafts
        "entities": "entities",  # named entities for the entity channel
        "expand": "expand",  # vocabulary neighbours
        "serve": "serve",  # the web app and HTTP API
        "mcp": "mcp",  # a Model Context Protocol server for other assistants
        "migrate": "migrate",  # an index moved to a Qdrant server
        "trail": "agent:trail_app",
        "catalog": "catalog:catalog_app",
        "selection": "review:selection_app",
    }
)

__all__ = ["DEMO_LEXICAL", "ExitCode", "app", "render", "write_stdout"]


def __getattr__(name: str) -> Any:
    """`DEMO_LEXICAL` (the demo's lexical channels, which the tests search with) loads the demo command's module."""
    if name == "DEMO_LEXICAL":
        from tracerag.cli import demo

        return demo.DEMO_LEXICAL
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
