"""`python -m tracerag.cli`: the same command line as the `tracerag` script (used where no script is installed)."""

from tracerag.cli import app

app()
