"""Every table the CLI prints keeps all its columns at any width (`app.print_table`): Rich drops the columns past
the terminal's edge and cuts long words with "…"; here cells wrap and fold, and a table that cannot fit prints
one `header: value` block per row. Checked by counting: every letter and digit of every header and cell is in
the output, as often as in the table, and no line is wider than the console."""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from rich import box
from rich.console import Console
from rich.table import Column, Table
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.cli.app import print_table

NAMES = ["topres19th/the-poole-and-south-western-herald-etc", "sonar/deutschesnachrichtenbuero", "newseye/la_presse"]


def corpora() -> Table:
    """As `tracerag info` makes it: the corpus column asks for the widest name."""
    table = Table(
        Column("corpus", overflow="fold", min_width=max(map(len, NAMES))), "documents", "from", "to", "languages"
    )
    for i, name in enumerate(NAMES):
        table.add_row(name, str(10 + i), "1825-10-06", "1867-10-17", f"en {10 + i}, fr 2 (1 detected)")
    return table


def weights() -> Table:
    """As `tracerag calibrate` makes its table of kinds: no outer border, columns that never wrap."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    for name in ("kind", "queries", "bm25", "dense", "date", "phrase", "entity", "fused"):
        table.add_column(name, no_wrap=True)
    table.add_row("title", "120", "0.512 (120)", "0.733 (118)", "-", "0.402 (64)", "0.100 (3)", "0.801")
    table.add_row("question", "80", "0.300 (80)", "0.699 (80)", "0.250 (12)", "-", "-", "0.745")
    return table


def letters(text: str) -> Counter[str]:
    return Counter(ch for ch in text if ch.isalnum())


def shown(make: Callable[[], Table], blocks: bool) -> Counter[str]:
    """The letters of a table's headers and cells; with `blocks` (one block per row) the headers once a row."""
    table = make()
    headers = "".join(str(c.header) for c in table.columns) * (table.row_count if blocks else 1)
    return letters(headers + "".join(str(cell) for c in table.columns for cell in c.cells))


@pytest.mark.parametrize("make", [corpora, weights], ids=["info", "calibrate"])
@pytest.mark.parametrize("width", [120, 80, 60, 40, 24])
def test_every_header_and_value_is_printed_whole(make: Callable[[], Table], width: int) -> None:
    buffer = io.StringIO()
    print_table(make(), Console(file=buffer, width=width, emoji=False, highlight=False))
    output = buffer.getvalue()
    assert max(len(line) for line in output.splitlines()) <= width, output
    blocks = output.startswith(f"{make().columns[0].header}:")
    assert "…" not in output and letters(output) == shown(make, blocks), output


def test_a_name_stays_on_one_line_where_the_others_can_wrap() -> None:
    buffer = io.StringIO()
    print_table(corpora(), Console(file=buffer, width=100))
    assert all(name in buffer.getvalue() for name in NAMES), buffer.getvalue()


def test_info_keeps_every_column_on_a_narrow_terminal(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    rows = [{"id": f"d{i}", "text": "Une page.", "corpus": name, "date": "1858-07-10"} for i, name in enumerate(NAMES)]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(source), "-c", str(tmp_path / "c"), "--no-dense"]).exit_code == 0
    for columns in ("80", "40"):
        info = runner.invoke(app, ["info", "-c", str(tmp_path / "c")], env={"COLUMNS": columns})
        assert info.exit_code == 0, info.output
        corpus_table = info.output.split("OCR quality")[0]
        for header in ("corpus", "documents", "from", "to", "languages"):
            assert header in corpus_table, (columns, info.output)
        assert corpus_table.count("1858-07-10") == 2 * len(NAMES), info.output  # from and to, every row
        assert max(len(line) for line in info.output.splitlines()) <= int(columns), info.output


def test_ask_never_cuts_a_document_id(tmp_path: Path) -> None:
    """Found by a new user: at 80 columns `ask`'s table split `saltlaketribune-1911-09-17-alff-apoplexy` mid-word;
    an id is copied into other commands, so its column takes the id's width and the other columns wrap."""
    ids = ["saltlaketribune-1911-09-17-alff-apoplexy", "sn91068761-1960-11-23-a-i0001"]
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": "A fire in the mill."}) + "\n" for i in ids), "utf-8")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(source), "-c", str(tmp_path / "c"), "--no-dense"]).exit_code == 0
    asked = runner.invoke(app, ["ask", "fire in the mill", "-c", str(tmp_path / "c")], env={"COLUMNS": "80"})
    assert asked.exit_code == 0, asked.output
    assert all(i in asked.stdout for i in ids), asked.stdout
    assert "warm_start" in asked.stdout  # nor the origin's word: without a review, no empty review columns
    assert max(len(line) for line in asked.stdout.splitlines()[:-1]) <= 80, asked.stdout  # the trail line aside
    # no model: said once, with how to configure one
    assert " ".join(asked.output.split()).lower().count("language model") == 1, asked.output
