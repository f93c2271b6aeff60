"""`tracerag search`'s results show why they match: keyword-in-context snippets with the matched words marked
(styled on a terminal, in brackets when piped or with NO_COLOR), wrapped to 80 columns, controls escaped; `--json`
gives each snippet's offsets and the line of the source file it starts on."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console
from rich.text import Text
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.cli.views import found_by, kwic_text, marking, print_wrapped

runner = CliRunner()


def _snippet(text: str, spans: list[tuple[int, int]], cut: bool = True) -> dict:
    return {"text": text, "spans": [list(s) for s in spans], "cut_before": cut, "cut_after": cut}


def test_piped_or_no_color_marks_words_in_brackets_and_a_terminal_styles_them() -> None:
    sn = _snippet("la grève du lac et les grèves", [(3, 8), (23, 29)])
    piped = Console(file=io.StringIO(), force_terminal=False)
    assert marking(piped) is None
    assert kwic_text(sn, marking(piped)).plain == "…la [grève] du lac et les [grèves]…"
    assert marking(Console(file=io.StringIO(), force_terminal=True, no_color=True)) is None
    tty = Console(file=io.StringIO(), force_terminal=True, color_system="standard")
    styled = kwic_text(sn, marking(tty))
    assert styled.plain == "…la grève du lac et les grèves…"
    marked = [styled.plain[s.start : s.end] for s in styled.spans if s.style]
    assert marked == ["grève", "grèves"]


def test_controls_and_bidi_in_the_text_are_shown_as_escapes_and_marks_stay_on_their_words() -> None:
    text = "evil\x1b[31m red\u202e txt  strike\nhere"
    start = text.index("strike")
    out = kwic_text(_snippet(text, [(start, start + 6)], cut=False), None).plain
    assert "\x1b" not in out and "\u202e" not in out and "\n" not in out
    assert "\\x1b" in out and "\\u202e" in out
    assert out.endswith("txt [strike] here")


def test_snippets_wrap_within_80_columns_without_losing_words() -> None:
    words = " ".join(f"mot{i:03d}" for i in range(60))
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=80)
    print_wrapped(kwic_text(_snippet(words, [(0, 6)]), None), console)
    lines = buf.getvalue().splitlines()
    assert len(lines) > 3 and all(len(line) <= 80 and line.startswith("    ") for line in lines)
    assert " ".join(line.strip() for line in lines) == "…[mot000] " + words[7:] + "…"


def _hipe(path: Path) -> dict[str, int]:
    """A HIPE file of one long French document, with a comment line and tokens glued to the one before in it; the
    file line of each word token (unique words, so a snippet's first word names its line)."""
    rows = ["TOKEN\tNE-COARSE-LIT\tNEL-LIT\tMISC", "", "# hipe2022:document_id = long-1"]
    rows += ["# hipe2022:date = 1890-05-01", "# hipe2022:language = fr", "# hipe2022:dataset = letemps"]
    line_of: dict[str, int] = {}
    for i in range(120):
        word = "grèves" if i == 90 else f"mot{i:03d}"
        misc = "EndOfLine" if i % 9 == 8 else "NoSpaceAfter" if i % 7 == 3 else "_"
        rows.append(f"{word}\tO\t_\t{misc}")
        line_of[word] = len(rows)
        if i % 7 == 3:
            rows.append(",\tO\t_\t_")
        if i == 50:
            rows.append("# segment_iiif_link = _")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return line_of


def test_search_marks_the_stemmed_folded_words_and_json_gives_file_and_line(tmp_path: Path) -> None:
    line_of = _hipe(tmp_path / "long.tsv")
    col = tmp_path / "c"
    assert runner.invoke(app, ["ingest", str(tmp_path / "long.tsv"), "-c", str(col), "--no-dense"]).exit_code == 0
    listed = runner.invoke(app, ["search", "greve", "-c", str(col)], env={"COLUMNS": "80"})
    assert listed.exit_code == 0, listed.output
    assert "[grèves]" in listed.stdout  # folded and stemmed as the index matched it, marked when piped
    assert all(len(line) <= 80 for line in listed.stdout.splitlines())
    explained = runner.invoke(app, ["search", "greve", "-c", str(col), "--explain"], env={"COLUMNS": "80"})
    answer = runner.invoke(app, ["search", "greve", "-c", str(col), "--json"])
    (result,) = json.loads(answer.stdout)["results"]
    (sn,) = result["snippets"]
    assert sn["text"] == result["best_chunk"]["text"][sn["start"] - result["best_chunk"]["start"] :][: len(sn["text"])]
    assert [sn["text"][s:e] for s, e in sn["spans"]] == ["grèves"]
    first = sn["text"].split()[0].strip(",")
    assert sn["line"] == line_of[first] and result["source"]["file"] == "long.tsv"
    assert f"source: file long.tsv, line {sn['line']}" in explained.stdout


def test_a_reader_without_a_line_map_says_so(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("The dock STRIKES went on.\n", encoding="utf-8")
    col = tmp_path / "c"
    assert runner.invoke(app, ["ingest", str(tmp_path / "docs"), "-c", str(col), "--no-dense"]).exit_code == 0
    answer = json.loads(runner.invoke(app, ["search", "strike", "-c", str(col), "--json"]).stdout)
    (sn,) = answer["results"][0]["snippets"]
    assert answer["results"][0]["language"] == "en"  # detected at ingest: stemmed in English, as indexed
    assert sn["line"] is None and [sn["text"][s:e] for s, e in sn["spans"]] == ["STRIKES"]
    explained = runner.invoke(app, ["search", "strike", "-c", str(col), "--explain"], env={"COLUMNS": "80"})
    assert "[STRIKES]" in explained.stdout and "source: not recorded by its reader" in explained.stdout


def test_the_rank_s_colour_stays_on_the_rank_and_the_title_keeps_its_own_style() -> None:
    buf = io.StringIO()
    tty = Console(file=buf, force_terminal=True, color_system="standard", width=80)
    print_wrapped(Text("Le titre", style="bold"), tty, first=Text(" 1. ", style="bold cyan"))
    assert buf.getvalue() == "\x1b[1;36m 1. \x1b[0m\x1b[1mLe titre\x1b[0m\n"


def test_a_match_in_the_title_only_is_marked_there_and_said(tmp_path: Path) -> None:
    # an article's paragraphs carry its title, which is indexed with every chunk: a paragraph that never names
    # its subject is found by the title's words, and its snippet alone would show no reason (a PIAF trial)
    rows = [
        {"id": "a-1", "title": "Louis-Napoléon Bonaparte", "text": "Le prince tente de regagner sa monture."},
        {"id": "b-1", "title": "Volcans", "text": "Un volcan est une structure géologique."},
    ]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    col = tmp_path / "c"
    args = ["ingest", str(tmp_path / "d.jsonl"), "-c", str(col), "--no-dense", "--language", "fr"]
    assert runner.invoke(app, args).exit_code == 0
    listed = runner.invoke(app, ["search", "napoleon", "-c", str(col)], env={"COLUMNS": "80"}).stdout
    assert " 1. Louis-[Napoléon] Bonaparte" in listed
    assert "the query's words are in its title; found by bm25 #1" in listed
    shown = runner.invoke(app, ["search", "volcans", "-c", str(col)], env={"COLUMNS": "80"}).stdout
    assert " 1. [Volcans]" in shown and "[volcan]" in shown and "found by" not in shown  # the text explains it


def test_a_result_whose_passage_holds_no_query_word_says_how_it_was_found() -> None:
    dense = {"channels": [{"channel": "dense", "rank": 2}]}
    assert found_by(dense, titled=False) == "no query word in this passage; found by dense #2 (by meaning)"
    both = {"channels": [{"channel": "bm25", "rank": 7}, {"channel": "dense", "rank": 1}]}
    assert found_by(both, titled=False) == "no query word in this passage; found by bm25 #7, dense #1"
