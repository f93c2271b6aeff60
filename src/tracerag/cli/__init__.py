"""`tracerag`: a thin command line over the library. Parse, build settings, call the library, print.

`app.py` holds the Typer app, the consoles, the shared options and the one error edge (outcomes become exit codes:
0 all good, 1 partial, 2 bad usage or input, 3 busy); one module per command group registers its commands on it:
`collections` (ingest, embed, info), `migrate` (an index moved to a Qdrant server), `calibrate`, `search`,
`eval`, `fuse`, `demo`, `agent` (ask, trail), `catalog` (catalog ingest and eval, chat), `serve` (the web app).
Command modules import `app.py` (and `views.py`, what several of them print), never each other; this file
registers them, and adds the sub-apps to the app, in one place.
"""

from __future__ import annotations

# isort: off
# Each import registers its commands, in the order `tracerag --help` lists them.
from tracerag.cli import collections, calibrate, search, eval, fuse, demo, agent, catalog  # noqa: F401
from tracerag.cli import review  # noqa: F401  (review, and the selection group)
from tracerag.cli import judge, answer  # noqa: F401  (the criteria judge, cited drafts)
from tracerag.cli import entities  # noqa: F401  (named entities for the entity channel)
from tracerag.cli import expand  # noqa: F401  (vocabulary neighbours)
from tracerag.cli import serve  # noqa: F401  (the web app and HTTP API)
from tracerag.cli import migrate  # noqa: F401  (an index moved to a Qdrant server)

# isort: on
from tracerag.cli.app import ExitCode, app, write_stdout
from tracerag.cli.demo import DEMO_LEXICAL
from tracerag.cli.views import render

app.add_typer(agent.trail_app, name="trail")
app.add_typer(catalog.catalog_app, name="catalog")
app.add_typer(review.selection_app, name="selection")

__all__ = ["DEMO_LEXICAL", "ExitCode", "app", "render", "write_stdout"]
