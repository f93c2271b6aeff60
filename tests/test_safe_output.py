"""Document text is data: against a hostile corpus (ESC and OSC sequences, BEL, NUL, C1 controls, bidi overrides,
rich markup, emoji codes, spreadsheet formulas in ids, titles, corpus names, texts, file names, model output and
catalog fields; an id holding a control character is refused at ingest, and said), no raw control character
reaches stdout or stderr of any command (an export included, on a real terminal), markup and emoji codes show
literally, CSV cells are neutralised, and JSON and exports to a file or a pipe give back the exact text."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import re
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from tests.agent.policy import Policy
from tests.fakes.openai_server import FakeOpenAI, Reply
from tracerag.cli import app, render, write_stdout
from tracerag.config import load_settings
from tracerag.llm import Message
from tracerag.research.selection import Decision, open_selections
from tracerag.text import FORMULA_TRIGGERS, csv_cell, first_control, json_dumps, safe_block, safe_line
from tracerag.trail import read_trail
from tracerag.trail.show import render_trail

runner = CliRunner()
ENV = {"COLUMNS": "400"}  # rich wraps at 80 columns otherwise

# -- the hostile corpus ---------------------------------------------------------------------------------------

CLEAR = "\x1b[2J\x1b[?1049h"  # clear the screen, switch to the alternate screen
TITLE = "\x1b]0;PWNED\x07"  # set the window title (OSC, ended by BEL)
LINK = "\x1b]8;;http://evil.example\x1b\\lien\x1b]8;;\x1b\\"  # an OSC 8 hyperlink
DCS = "\x1bP+q544e\x1b\\"  # a device control string
C1_CSI = "\x9b31m"  # the one-character CSI of C1
BIDI = "\u202eevil\u202c \u2066isolate\u2069"
MARKUP = "[bold red]rouge[/] [/] [link=https://evil.example]ici[/link]"
EMOJI = ":smile:"
HYPERLINK = '=HYPERLINK("http://evil.example","x")'

DOC_1 = "evil\u202e[31m-1"  # a bidi override: an id with a control character is refused at ingest
DOC_2 = "@SUM(1+1)"
TITLE_2 = f"-1+2 {CLEAR}{TITLE} \u202eevil"  # ESC, an OSC sequence and a right-to-left override
DOCUMENTS = [
    {
        "id": DOC_1,
        "corpus": "corp\x1b]0;T\x07us",
        "title": HYPERLINK,
        "date": "1881",
        "text": f"{CLEAR}{TITLE} Incendie au théâtre. {MARKUP} {EMOJI}\n{C1_CSI} {BIDI}\x00\x07\x08 fin.\r\n"
        "Deuxième ligne de l'incendie.",
        "source": {"publication": "+cmd|' /C calc'!A0"},
    },
    {
        "id": DOC_2,
        "corpus": "press\u202e",
        "title": TITLE_2,
        "text": f"+cmd incendie du port. {LINK} {DCS} suite.",
        "language": "fr",
    },
    {"id": "plain-1", "corpus": "press", "text": "=1+2 incendie simple."},
]
BAD_FILE = "bad\x1b[2J.jsonl"
BAD_LINES = ['{"id": "x\\u001b]0;T\\u0007", "text": ""}', '{"text": "no id \\u009b"}']  # empty text; no id

QUESTION = f"incendie {TITLE} [bold]théâtre[/] {EMOJI}"
REASON = f"{HYPERLINK} {CLEAR}{C1_CSI} [bold red]sûr[/] {EMOJI} \u202eevil"
MODEL_OUTPUT = f"{CLEAR}{TITLE} [bold red]not JSON[/] {EMOJI} \u202e{C1_CSI}"

# What may reach a terminal: printable text, newlines and tabs, and the format characters text is written with.
KEPT = {"\xad", "\u200c", "\u200d"} | {chr(c) for c in (0x600, 0x601, 0x602, 0x603, 0x604, 0x605, 0x6DD, 0x70F)}
KEPT |= {"\u0890", "\u0891", "\u08e2", "\U000110bd", "\U000110cd"}


def _unsafe(char: str) -> bool:
    category = unicodedata.category(char)
    return (category == "Cc" and char not in "\n\t") or category == "Cs" or (category == "Cf" and char not in KEPT)


def assert_safe(text: str) -> None:
    bad = sorted({f"U+{ord(c):04X}" for c in text if _unsafe(c)})
    assert not bad, f"raw control or format characters reached the output: {bad}"


def assert_literal(text: str) -> None:
    flat = " ".join(text.split())
    assert "[bold red]rouge[/]" in flat or "[bold red]sûr[/]" in flat or "[bold red]not JSON[/]" in flat
    assert EMOJI in flat and "😄" not in text


def invoke(*args) -> object:
    result = runner.invoke(app, [str(a) for a in args], env=ENV)
    assert_safe(result.stdout)
    assert_safe(result.stderr)
    return result


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    data = root / "data"
    data.mkdir()
    (data / "good.jsonl").write_text("\n".join(json.dumps(d) for d in DOCUMENTS) + "\n", encoding="utf-8")
    (data / BAD_FILE).write_text("\n".join(BAD_LINES) + "\n", encoding="utf-8")
    return data


@pytest.fixture(scope="module")
def ingested(hostile: Path) -> tuple[Path, object]:
    path = hostile.parent / "collection"
    result = invoke("ingest", hostile, "-c", path, "--embed-model", "none")
    assert result.exit_code == 1, result.output  # two records skipped
    return path, result


# -- the helpers ----------------------------------------------------------------------------------------------


def test_every_control_and_invisible_format_character_is_made_visible():
    hidden = "".join(
        chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cc", "Cf", "Cs") and chr(c) not in KEPT
    )
    for shown in (safe_line(hidden), safe_block(hidden)):
        assert_safe(shown)
    assert "\\x1b" in safe_line(hidden) and "\\x9b" in safe_line(hidden) and "\\u202e" in safe_line(hidden)
    assert "\\U000e0041" in safe_line(hidden) and "\\ud800" in safe_line(hidden)


def test_an_id_may_hold_no_control_character_and_the_set_is_unicodes():
    """What ingest refuses in an id (`first_control`) is exactly Unicode's controls and surrogates, from the
    definition `safe_line` escapes; a bidi override is shown escaped but allowed."""
    controls = {chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cc", "Cs")}
    assert {chr(c) for c in range(0x110000) if first_control(chr(c))} == controls
    assert first_control("ab\x1bc") == (2, "\\x1b") and first_control("x\n") == (1, "\\x0a")
    assert first_control(DOC_1) is None and first_control("Grève à Zürich") is None


def test_text_is_otherwise_kept_as_it_is():
    for text in ("l'opi\xadnion", "می\u200cخواهم", "👩\u200d💻", "Grève à Carmaux ¬ 1892", MARKUP, EMOJI, HYPERLINK):
        assert safe_line(text) == safe_block(text) == text
    assert safe_line(f"{CLEAR}x") == "\\x1b[2J\\x1b[?1049hx"
    assert safe_line(TITLE) == "\\x1b]0;PWNED\\x07"


def test_one_line_or_a_paragraph():
    text = " a\tb\nc\r\nd\re\x0bf\x0cg\x85h\u2028i  "
    assert safe_line(text) == "a b c d e f g h i"
    assert safe_block(text) == " a\tb\nc\nd\ne\nf\ng\nh\ni  "


def test_csv_cells_are_neutralised_as_owasp_recommends():
    for value in (HYPERLINK, "+cmd|' /C calc'!A0", "@SUM(1+1)", "-1+2", "\tx", "\rx", "\nx", "\x00x"):
        assert csv_cell(value) == "'" + value
    for value in ("ok", "", "'=1", " =1", "1.5", "2026-12-01"):
        assert csv_cell(value) == value
    assert csv_cell(None) == "" and csv_cell(5) == "5"
    assert set(FORMULA_TRIGGERS) >= {"=", "+", "-", "@", "\t", "\r"}


def test_json_keeps_the_exact_text_and_carries_nothing_raw():
    value = {"t": f"{CLEAR}{TITLE}{C1_CSI}{BIDI}\x00\x7f\u2028\ud800\U000e0041 é ß 北京 👩\u200d💻", DOC_1: [DOC_2]}
    written = json_dumps(value, indent=2)
    assert json.loads(written) == value
    assert_safe(written)
    assert "é ß 北京" in written  # readable, not \u-escaped


def test_rendering_for_a_real_terminal_sends_only_its_own_styles(ingested):
    """With a terminal console (colours on), the only escape sequences in the output are rich's own SGR styles."""
    path, _ = ingested
    result = runner.invoke(app, ["search", "incendie", "-c", str(path), "--json"], env=ENV)
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=200)
    render(json.loads(result.stdout), True, console)
    written = console.file.getvalue()
    assert "\x1b[" in written  # styled
    assert_safe(re.sub(r"\x1b\[[0-9;]*m", "", written))


def test_raw_output_is_exact_in_a_file_and_escaped_on_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    text = f"a,{CLEAR}\r\nb,{C1_CSI}\n"
    for stream, expected in ((io.StringIO(), text), (Terminal(), "a,\\x1b[2J\\x1b[?1049h\nb,\\x9b31m\n")):
        monkeypatch.setattr("sys.stdout", stream)
        write_stdout(text)
        assert stream.getvalue() == expected


# -- every command, on the hostile corpus ---------------------------------------------------------------------


def test_ingest_skip_messages(ingested, hostile):
    _, result = ingested
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 2
    assert all("bad\\x1b[2J.jsonl" in line for line in skipped)
    assert "id holds a control character (\\x1b at character 2) (key 'id')" in skipped[0]
    again = invoke("ingest", hostile, "-c", ingested[0], "--embed-model", "none", "--json")
    errors = json.loads(again.stdout)["errors"]
    assert {Path(e["file"]).name for e in errors} == {BAD_FILE}  # exact in JSON


def test_search_explain_and_plain(ingested):
    path, _ = ingested
    for args in (["--explain"], []):
        result = invoke("search", "incendie", "-c", path, *args)
        assert result.exit_code == 0, result.output
        assert_literal(result.stdout)
        assert "evil\\u202e[31m-1" in result.stdout and "\\x1b[2J\\x1b[?1049h\\x1b]0;PWNED\\x07" in result.stdout
        assert "\\x9b31m \\u202eevil\\u202c \\u2066isolate\\u2069\\x00\\x07\\x08" in result.stdout
    explained = invoke("search", "incendie", "-c", path, "--explain").stdout
    assert "corp\\x1b]0;T\\x07us" in explained and "\\x1b]8;;http://evil.example\\x1b\\lien" in explained
    assert "+cmd|' /C calc'!A0" in explained


def test_search_json_round_trips_the_exact_text(ingested):
    path, _ = ingested
    result = invoke("search", "incendie", "-c", path, "--json")
    results = {r["doc_id"]: r for r in json.loads(result.stdout)["results"]}
    originals = {d["id"]: d for d in DOCUMENTS}
    assert set(results) == set(originals)
    for doc_id, r in results.items():
        chunk = r["best_chunk"]
        assert chunk["text"] == originals[doc_id]["text"][chunk["start"] : chunk["end"]]
        assert r["corpus"] == originals[doc_id]["corpus"]
    assert results[DOC_1]["title"] == HYPERLINK


def test_info(ingested):
    path, _ = ingested
    result = invoke("info", "-c", path)
    assert result.exit_code == 0, result.output
    assert "corp\\x1b]0;T\\x07us" in result.stdout and "press\\u202e" in result.stdout
    corpora = {c["name"] for c in json.loads(invoke("info", "-c", path, "--json").stdout)["corpora"]}
    assert corpora == {"corp\x1b]0;T\x07us", "press\u202e", "press"}


class HostilePolicy(Policy):
    """The scripted model, answering with hostile reasons, and with hostile garbage when asked for a briefing."""

    def answer(self, messages: list[Message]) -> str:
        text = super().answer(messages)
        return MODEL_OUTPUT if self.calls[-1] == "briefing" else text

    def _verdicts(self, user: str, purpose: str) -> dict:
        answer = super()._verdicts(user, purpose)
        for verdict in answer["verdicts"]:
            verdict["reason"] = REASON
        return answer


def _ask(path: Path, *args: str) -> tuple[object, HostilePolicy]:
    policy = HostilePolicy(
        sub_questions=[{"question": QUESTION, "target_corpus": None}, {"question": "incendie du port"}],
        accept=("incendie",),
        actions=[{"tool": "review"}, {"tool": "finish"}],
    )

    def handler(body: dict, n: int) -> Reply:
        return Reply(content=policy.answer([Message(m["role"], m["content"]) for m in body["messages"]]))

    with FakeOpenAI(handler) as fake:
        result = invoke("ask", QUESTION, "-c", path, "--llm", "openai:policy", "--base-url", fake.base_url, *args)
    assert "briefing" in policy.calls
    return result, policy


@pytest.fixture(scope="module")
def run(ingested) -> tuple[Path, str, dict]:
    path, _ = ingested
    shown, _ = _ask(path)
    assert shown.exit_code == 0, shown.output
    assert_literal(shown.stdout)
    assert "evil\\u202e[31m-1" in shown.stdout
    as_json, _ = _ask(path, "--json")
    assert as_json.exit_code == 0, as_json.output
    payload = json.loads(as_json.stdout)
    return path, payload["run_id"], payload


def test_ask_json_keeps_reasons_exactly(run):
    _, _, payload = run
    reasons = [reason for r in payload["ranking"] for reason in r["reasons"]]
    assert REASON in reasons
    assert {r["doc_id"] for r in payload["ranking"]} == {d["id"] for d in DOCUMENTS}


def test_trail_show_and_list(run):
    path, run_id, _ = run
    events = read_trail(path / "trails" / f"{run_id}.jsonl")
    assert any(e.kind == "llm_call" and e.response == MODEL_OUTPUT for e in events)  # the trail keeps it exactly
    for args in ([], ["-v"]):
        shown = invoke("trail", "show", run_id, "-c", path, *args)
        assert shown.exit_code == 0, shown.output
        assert_literal(shown.stdout)
        assert "evil\\u202e[31m-1" in shown.stdout and "\\u202eevil" in shown.stdout
    verbose = invoke("trail", "show", run_id, "-c", path, "-v").stdout
    assert "[bold red]not JSON[/]" in " ".join(verbose.split())
    listed = invoke("trail", "list", "-c", path)
    assert listed.exit_code == 0, listed.output
    assert run_id in listed.stdout and "\\x1b]0;PWNED\\x07 [bold]théâtre[/] :smile:" in listed.stdout


def test_trail_render_for_a_real_terminal(run):
    path, run_id, _ = run
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=200)
    for renderable in render_trail(read_trail(path / "trails" / f"{run_id}.jsonl"), verbose=True):
        console.print(renderable)
    assert_safe(re.sub(r"\x1b\[[0-9;]*m", "", console.file.getvalue()))


def test_trail_export_csv_neutralises_formulas(run):
    path, run_id, _ = run
    # To a pipe or a file the CSV is exact (a terminal gets it escaped: see write_stdout above).
    result = runner.invoke(app, ["trail", "export", run_id, "-c", str(path), "--format", "csv"], env=ENV)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["doc_id"] for r in rows} == {DOC_1, "'" + DOC_2, "plain-1"}
    for row in rows:
        for column, cell in row.items():
            assert not cell.startswith(FORMULA_TRIGGERS), (column, cell)
    by_id = {r["doc_id"].removeprefix("'"): r for r in rows}
    assert by_id[DOC_1]["title"] == "'" + HYPERLINK and by_id[DOC_2]["title"] == "'" + TITLE_2
    assert by_id[DOC_1]["reasons"] == "'" + REASON and by_id["plain-1"]["quote"].startswith("'=1+2")
    assert by_id[DOC_1]["publication"] == "'+cmd|' /C calc'!A0"


def test_trail_export_ris_and_csl_json(run, tmp_path):
    path, run_id, _ = run
    ris = invoke("trail", "export", run_id, "-c", path, "--format", "ris", "-o", tmp_path / "x.ris")
    assert ris.exit_code == 0, ris.output
    lines = (tmp_path / "x.ris").read_text(encoding="utf-8").split("\n")
    assert all(line == "" or re.match(r"^[A-Z][A-Z0-9]  - ", line) for line in lines), lines
    assert sum(line == "ER  - " for line in lines) == len(DOCUMENTS)
    result = invoke("trail", "export", run_id, "-c", path, "--format", "csl-json")
    items = {item["id"]: item for item in json.loads(result.stdout)}
    assert items[DOC_1]["title"] == HYPERLINK and items[DOC_2]["title"] == TITLE_2
    text = DOCUMENTS[0]["text"]
    assert items[DOC_1]["abstract"] in text and REASON in items[DOC_1]["note"]


# -- exports: escaped on a terminal, exact in a file or a pipe -------------------------------------------------

SRC = str(Path(__file__).resolve().parents[1] / "src")
EXPORT_FORMATS = ("csv", "ris", "csl-json")


def _cli(args: list[str], *, tty: bool) -> bytes:
    """What `tracerag ARGS` writes to stdout, run as its own process with stdout a pseudo-terminal (`tty`) or a
    pipe: `isatty()` is then the real one, as on a user's screen."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    command = [sys.executable, "-c", "from tracerag.cli import app; app()", *args]
    if not tty:
        done = subprocess.run(command, capture_output=True, env=env, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout
    leader, follower = pty.openpty()
    with subprocess.Popen(command, stdout=follower, stderr=subprocess.PIPE, env=env) as child:
        os.close(follower)
        out: list[bytes] = []
        _drain(leader, out)  # as it comes: a full terminal buffer would block the child
        os.close(leader)
        assert child.wait(timeout=120) == 0, child.stderr.read() if child.stderr else ""
    return b"".join(out)


def _drain(leader: int, out: list[bytes]) -> None:
    """Read a pseudo-terminal until every writer has closed it (Linux then answers EIO)."""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            return
        if not chunk:
            return
        out.append(chunk)


@pytest.fixture(scope="module")
def selected(run) -> Path:
    """The researcher accepted the two hostile sources of the run, with a hostile note."""
    path, _, _ = run
    with open_selections(path, load_settings(), write=True) as store:
        for doc_id in (DOC_1, DOC_2):
            store.decide(QUESTION, doc_id, Decision.ACCEPTED, who="historian", span=(0, 12), note=f"vu {TITLE}")
    return path


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)
@pytest.mark.parametrize("command", ["trail", "selection"])
def test_an_export_to_a_terminal_shows_control_characters_as_escapes(run, selected, command, fmt, tmp_path):
    """The title of DOC_2 holds ESC, an OSC sequence (set the window title) and U+202E. On a terminal they are
    shown as `\\x1b`, `\\x07`, `\\u202e`; through a pipe and in a file the export is exact, the same bytes."""
    path, run_id, _ = run
    args = [command, "export", run_id if command == "trail" else "incendie", "-c", str(path), "--format", fmt]
    shown = _cli(args, tty=True).decode("utf-8").replace("\r\n", "\n")  # the terminal's own line ends
    assert_safe(shown)
    # (CSL-JSON escapes them itself, as JSON does; a RIS line drops C0 controls, as before.)
    osc = {"csv": "\\x1b]0;PWNED\\x07", "csl-json": "\\u001b]0;PWNED\\u0007", "ris": "[2J[?1049h]0;PWNED"}[fmt]
    assert osc in shown and "\\u202eevil" in shown
    piped = _cli(args, tty=False)
    _cli([*args, "-o", str(tmp_path / f"export.{fmt}")], tty=False)
    assert piped == (tmp_path / f"export.{fmt}").read_bytes()
    text = piped.decode("utf-8")
    if fmt == "csv":
        titles = {r["doc_id"].removeprefix("'"): r["title"] for r in csv.DictReader(io.StringIO(text))}
        assert titles[DOC_2] == "'" + TITLE_2  # exact, formula neutralised as before
    elif fmt == "csl-json":
        assert {item["id"]: item["title"] for item in json.loads(text)}[DOC_2] == TITLE_2
    else:
        assert "\u202eevil" in text


def test_an_export_to_a_terminal_named_by_out_is_escaped_too(run):
    path, run_id, _ = run
    leader, follower = pty.openpty()
    shown: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(leader, shown))  # a full terminal buffer would block the writer
    reader.start()
    try:
        result = runner.invoke(app, ["trail", "export", run_id, "-c", str(path), "-o", os.ttyname(follower)], env=ENV)
        assert result.exit_code == 0, result.output
    finally:
        os.close(follower)
        reader.join(timeout=60)
        os.close(leader)
    text = b"".join(shown).decode("utf-8")
    assert "\\x1b]0;PWNED\\x07" in text and "\x1b" not in text and "\u202e" not in text


@pytest.fixture(scope="module")
def hostile_catalog(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("catalog")
    records = [
        {
            "ID": "svc\x1b[2J1",
            "Program": f"Food {TITLE}[bold red]rouge[/] Pantry {EMOJI}",
            "City": "Springfield",
            "Description": f"{HYPERLINK} free food pantry, groceries {C1_CSI} \u202eevil {CLEAR}",
            "Phones": "305-555-0100",
        },
        {"ID": "svc-2", "Program": "Shelter \u2066Beds\u2069", "City": "Springfield", "Description": "a shelter"},
    ]
    source = root / "services.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    mapping = root / "mapping.toml"
    mapping.write_text(
        'id = "ID"\nname = "Program"\ncity = "City"\ndescription = "Description"\nphones = "Phones"\n',
        encoding="utf-8",
    )
    catalog = root / "catalog"
    built = invoke("catalog", "ingest", source, "--catalog", catalog, "--mapping", mapping)
    assert built.exit_code == 0, built.output
    return catalog


def test_chat_once(hostile_catalog):
    result = invoke("chat", "--catalog", hostile_catalog, "--once", "food pantry in Springfield")
    assert result.exit_code == 0, result.output
    assert_literal(result.stdout)
    assert "\\x1b]0;PWNED\\x07" in result.stdout
    payload = json.loads(
        invoke("chat", "--catalog", hostile_catalog, "--once", "food pantry in Springfield", "--json").stdout
    )
    names = {r["name"] for r in payload["recommendations"]}
    assert f"Food {TITLE}[bold red]rouge[/] Pantry {EMOJI}" in names  # exact in JSON
    trail = Path(payload["trail"])
    shown = invoke("trail", "show", trail, "-c", hostile_catalog)
    assert shown.exit_code == 0, shown.output
