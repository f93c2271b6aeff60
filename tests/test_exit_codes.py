"""Exit codes that scripts can trust (README, "Exit codes"): 0 all good, 1 partial, 2 bad usage or input, 3 busy;
and settings checked before anything is written: a bad option leaves no collection, or the existing one as it was,
and a first ingest that fails leaves no half-made collection behind. One family of commands per section."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tracerag
from tests.agent.policy import Policy
from tests.fakes.openai_server import FakeOpenAI, Reply
from tracerag.cli import ExitCode, app
from tracerag.llm import Message

ENV = {"COLUMNS": "400"}
DOCS = [
    {"id": "figaro-1", "text": "L'incendie de l'Opéra-Comique a fait de nombreuses victimes.", "corpus": "press"},
    {"id": "nzz-1", "text": "Neue Zürcher Zeitung: ein Brand im Hafen.", "corpus": "press", "date": "1888"},
    {"id": "note-1", "text": "Un document sans incendie, ou presque.", "corpus": "notes"},
]
BAD_LINES = ["not json", '{"text": "no id"}']

runner = CliRunner()


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> tuple[Path, Path]:
    """A file of 3 good documents, and a folder of those plus 2 records that cannot be read."""
    root = tmp_path_factory.mktemp("sources")
    good = _write(root / "good" / "docs.jsonl", [json.dumps(d, ensure_ascii=False) for d in DOCS])
    mixed = root / "mixed"
    _write(mixed / "docs.jsonl", [json.dumps(d, ensure_ascii=False) for d in DOCS])
    _write(mixed / "bad.jsonl", BAD_LINES)
    return good, mixed


def invoke(*args, env: dict[str, str] | None = None):
    result = runner.invoke(app, [str(a) for a in args], env=ENV | (env or {}))
    assert "Traceback" not in result.output
    return result


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file of a folder and its bytes (the lock and note folder aside: readers may touch it)."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".tracerag" not in p.relative_to(folder).parts
    }


def all_skipped(tmp_path: Path) -> Path:
    source = tmp_path / "unreadable.jsonl"
    source.write_text('{"id": "a"}\n{"text": "no id"}\nnot json\n', encoding="utf-8")
    return source


@pytest.fixture(scope="module")
def good(sources) -> Path:
    return sources[0]


@pytest.fixture(scope="module")
def collection(tmp_path_factory, good) -> Path:
    path = tmp_path_factory.mktemp("codes") / "col"
    result = invoke("ingest", good, "-c", path, "--embed-model", "none")
    assert result.exit_code == ExitCode.OK, result.output
    return path


# -- ingest ---------------------------------------------------------------------------------------------------


def test_ingest_0_when_every_record_is_read(collection, good):
    result = invoke("ingest", good, "-c", collection, "--embed-model", "none")
    assert result.exit_code == 0, result.output
    assert "read 3" in result.stdout


def test_ingest_1_when_records_are_skipped(sources, tmp_path):
    result = invoke("ingest", sources[1], "-c", tmp_path / "c", "--embed-model", "none")
    assert result.exit_code == 1, result.output
    assert "read 3" in result.stdout and "skipped 2" in result.stdout and result.stderr.count("skipped ") == 2


def test_ingest_2_and_no_collection_when_a_first_ingest_reads_nothing(tmp_path):
    path = tmp_path / "new"
    result = invoke("ingest", all_skipped(tmp_path), "-c", path, "--embed-model", "none")
    assert result.exit_code == 2, result.output
    assert "no record of" in result.stderr and "no collection was made" in result.stderr
    assert result.stderr.count("skipped ") == 3  # the user still sees why
    assert not path.exists()
    empty = tmp_path / "empty-source"
    empty.mkdir()
    (empty / "nothing.jsonl").write_text("", encoding="utf-8")
    result = invoke("ingest", empty, "-c", path, "--embed-model", "none")
    assert result.exit_code == 2 and "holds no document" in result.stderr and not path.exists()


def test_a_folder_that_existed_is_kept_with_what_was_in_it(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("my notes", encoding="utf-8")
    result = invoke("ingest", all_skipped(tmp_path), "-c", folder, "--embed-model", "none")
    assert result.exit_code == 2, result.output
    assert snapshot(folder) == {"notes.txt": b"my notes"} and sorted(os.listdir(folder)) == ["notes.txt"]


def test_ingest_1_when_every_record_is_skipped_on_an_existing_collection(collection, tmp_path):
    before = snapshot(collection)
    result = invoke("ingest", all_skipped(tmp_path), "-c", collection, "--embed-model", "none")
    assert result.exit_code == 1, result.output
    assert snapshot(collection) == before


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (
            ["--chunk-size", "100", "--chunk-overlap", "2000"],
            {},
            "chunk.overlap = 2000 must be smaller than chunk.size = 100",
        ),
        (["--chunk-overlap", "1000"], {}, "chunk.overlap = 1000 must be smaller than chunk.size = 1000"),
        (["--chunk-size", "10"], {}, "chunk.size = 10: Input should be greater than 50"),
        (["--chunk-overlap", "-5"], {}, "chunk.overlap = -5"),
        ([], {"TRACERAG_CHUNK__OVERLAP": "5000"}, "chunk.overlap = 5000 must be smaller"),
        (["--format", "pdf"], {}, "unknown format 'pdf'"),
        (["--format", "alto", "--unit", "line"], {}, "ALTO unit must be one of"),
        (["--format", "csv", "--delimiter", ";;"], {}, "--delimiter ';;': expected one character"),
        (["--spelling-map", "/nonexistent/map.tsv"], {}, "--spelling-map /nonexistent/map.tsv: no such file"),
        (["--embed-model", "bogus"], {}, "unknown embedding model 'bogus'"),
        (["--limit", "0"], {}, "'--limit'"),
    ],
)
def test_a_bad_option_exits_2_and_writes_nothing(collection, good, tmp_path, args, env, message):
    new = tmp_path / "new"
    result = invoke("ingest", good, "-c", new, "--embed-model", "none", *args, env=env)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not new.exists()
    before = snapshot(collection)
    again = invoke("ingest", good, "-c", collection, *args, env=env)
    assert again.exit_code == 2, again.output
    assert snapshot(collection) == before


def test_a_path_that_does_not_exist(tmp_path):
    result = invoke("ingest", tmp_path / "missing", "-c", tmp_path / "c")
    assert result.exit_code == 2 and "no such file or folder" in result.stderr
    assert not (tmp_path / "c").exists()


def test_a_collection_saved_with_impossible_chunking_is_refused_plainly(good, tmp_path):
    """A collection.toml written by the old bug (overlap 2000 over size 100) is named, not a traceback."""
    path = tmp_path / "old"
    assert invoke("ingest", good, "-c", path, "--embed-model", "none").exit_code == 0
    manifest = path / "collection.toml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace("size = 1000", "size = 100").replace("overlap = 150", "overlap = 2000"))
    for args in (["ingest", good, "-c", path], ["search", "incendie", "-c", path], ["info", "-c", path]):
        result = invoke(*args)
        assert result.exit_code == 2, result.output
        assert "collection.toml [chunk]: chunk.overlap = 2000 must be smaller than chunk.size = 100" in " ".join(
            result.stderr.split()
        )


class Embeddings:
    """An OpenAI-compatible /v1/embeddings endpoint on localhost: answers the dimension probe and `good` more
    calls, then fails with 500; with `hold` set it waits on it before answering (a slow model)."""

    def __init__(self, good: int):
        self.good = good
        self.calls = 0
        self.hold: threading.Event | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.calls += 1
                if outer.hold is not None and outer.calls > 1:
                    outer.hold.wait(30)
                if outer.calls > outer.good + 1:
                    self.send_response(500)
                    self.end_headers()
                    return
                data = [{"index": i, "embedding": [1.0, float(i), 0.5, 0.25]} for i in range(len(body["input"]))]
                payload = json.dumps({"data": data}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.env = {
            "TRACERAG_EMBED__BASE_URL": f"http://127.0.0.1:{self.server.server_address[1]}/v1",
            # a 500 is retried by the endpoint client: these tests count calls, so a failure fails at once
            "TRACERAG_EMBED__ENDPOINT_RETRIES": "0",
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_first_ingest_that_fails_leaves_no_collection(good, tmp_path):
    endpoint = Embeddings(good=0)  # the probe answers (the manifest is written), the first batch fails
    try:
        path = tmp_path / "c"
        result = invoke("ingest", good, "-c", path, "--embed-model", "openai:m", env=endpoint.env)
        assert result.exit_code == 2, result.output
        assert "embedding endpoint" in result.stderr and endpoint.calls == 2
        assert not path.exists()
    finally:
        endpoint.close()


def test_a_first_ingest_that_fails_after_committing_keeps_its_work_to_resume(good, tmp_path):
    """Deleting hours of committed embeddings would be worse than a resumable collection: it is kept, and said."""
    endpoint = Embeddings(good=1)  # probe, first batch (one document), then failure
    env = endpoint.env | {"TRACERAG_INGEST__BATCH_DOCUMENTS": "1"}
    try:
        path = tmp_path / "c"
        result = invoke("ingest", good, "-c", path, "--embed-model", "openai:m", env=env)
        assert result.exit_code == 2, result.output
        assert "keeps the 1 documents committed so far" in " ".join(result.stderr.split())
        endpoint.good = 100
        again = invoke("ingest", good, "-c", path, "--embed-model", "openai:m", "--json", env=env)
        assert again.exit_code == 0, again.output
        report = json.loads(again.stdout)
        assert report["added"] + report["resumed"] + report["unchanged"] >= 2 and report["read"] == 3
    finally:
        endpoint.close()


def test_ingest_3_when_another_process_writes_the_collection(good, tmp_path):
    endpoint = Embeddings(good=100)
    endpoint.hold = threading.Event()
    path = tmp_path / "c"
    env = os.environ | endpoint.env | {"PYTHONPATH": str(Path(tracerag.__file__).parents[1])}
    command = [sys.executable, "-c", "from tracerag.cli import app; app()", "ingest", str(good), "-c", str(path)]
    writer = subprocess.Popen([*command, "--embed-model", "openai:m"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while endpoint.calls < 2 and time.monotonic() < deadline:  # the writer is embedding its first batch
            time.sleep(0.05)
        assert endpoint.calls >= 2, "the writer never started"
        second = invoke("ingest", good, "-c", path, "--embed-model", "openai:m", env=endpoint.env)
        assert second.exit_code == 3, second.output
        assert "being written by" in second.stderr and f"pid {writer.pid}" in second.stderr
    finally:
        endpoint.hold.set()
        _, stderr = writer.communicate(timeout=120)
        endpoint.close()
    assert writer.returncode == 0, stderr


# -- search and info ------------------------------------------------------------------------------------------


def test_search_and_info_0(collection):
    assert invoke("search", "incendie", "-c", collection).exit_code == 0
    assert invoke("info", "-c", collection).exit_code == 0


@pytest.mark.parametrize("args", [["--k", "0"], ["--channels", "bm25,magic"], ["--from", "18x7"]])
def test_search_2_on_bad_options(collection, args):
    result = invoke("search", "incendie", "-c", collection, *args)
    assert result.exit_code == 2 and "error:" in result.stderr


@pytest.mark.parametrize("command", [["search", "incendie", "--explain"], ["info"], ["trail", "schema"]])
def test_a_reader_that_closes_the_pipe_is_no_failure(collection, command):
    """`tracerag search … | head -3`: the reader stops early, which is not a partial result (Click says 1)."""
    args = [*command, "-c", str(collection)] if command[0] != "trail" else command
    proc = subprocess.Popen(
        [sys.executable, "-c", "from tracerag.cli import app; app()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ | ENV,
        text=True,
    )
    proc.stdout.close()  # before the command starts (imports take a while): its first write meets a closed pipe
    _, stderr = proc.communicate(timeout=120)
    said = [line for line in stderr.splitlines() if not line.startswith("run ")]  # a search names its run
    assert proc.returncode == 0 and not said, stderr


def test_search_and_info_2_on_a_folder_that_is_no_collection(tmp_path):
    assert invoke("search", "incendie", "-c", tmp_path).exit_code == 2
    assert invoke("info", "-c", tmp_path / "missing").exit_code == 2
    assert not (tmp_path / "missing").exists()


# -- ask ------------------------------------------------------------------------------------------------------


def trails(collection: Path) -> list[str]:
    return sorted(p.name for p in (collection / "trails").glob("*.jsonl"))


def test_ask_0_without_a_model_and_with_one(collection):
    assert invoke("ask", "incendie", "-c", collection).exit_code == 0
    policy = Policy(accept=("incendie",), sub_questions=[{"question": "incendie", "target_corpus": None}])

    def handler(body: dict, n: int) -> Reply:
        return Reply(content=policy.answer([Message(m["role"], m["content"]) for m in body["messages"]]))

    with FakeOpenAI(handler) as fake:
        result = invoke("ask", "incendie", "-c", collection, "--llm", "openai:p", "--base-url", fake.base_url)
    assert result.exit_code == 0, result.output
    assert "status complete" in result.stdout


def test_ask_prints_a_trail_command_that_runs(collection, tmp_path):
    """The `tracerag trail show …` line that `ask` prints names the real collection (and the file of a trail
    written elsewhere): copied as it is, it shows the run."""
    for extra in ([], ["--trail-dir", tmp_path / "elsewhere"]):
        result = invoke("ask", "incendie", "-c", collection, *extra)
        assert result.exit_code == 0, result.output
        shown = re.search(r"\((tracerag trail show [^)]+)\)", result.stdout)
        assert shown and "..." not in shown[1] and str(collection) in shown[1], result.stdout
        again = invoke(*shlex.split(shown[1])[1:])
        assert again.exit_code == 0 and "incendie" in again.stdout, again.output


def test_ask_1_when_the_run_failed_with_its_fallback_ranking(collection):
    before = trails(collection)
    result = invoke(
        "ask",
        "incendie",
        "-c",
        collection,
        "--llm",
        "openai:m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--json",
        env={"TRACERAG_LLM__MAX_RETRIES": "0"},
    )
    assert result.exit_code == 1, result.output
    payload = json.loads(result.stdout)
    assert payload["status"] == "failed" and payload["ranking"]  # the hybrid warm start still answers
    assert len(trails(collection)) == len(before) + 1


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--k", "0"], {}, "'--k'"),
        (["--k", "-3"], {}, "'--k'"),
        (
            ["--llm", "openai:m", "--base-url", "http://127.0.0.1:9/v1"],  # with a model, a run would start
            {"TRACERAG_RETRIEVAL__CHANNELS": '["bm25", "magic"]'},
            "TRACERAG_RETRIEVAL__CHANNELS[1] = 'magic': Input should be 'bm25', 'dense', 'date', 'phrase' or 'entity'",
        ),
        (["--llm", "bogus:x"], {}, "bogus"),
    ],
)
def test_ask_2_on_bad_options_and_no_trail(collection, args, env, message):
    before = trails(collection)
    result = invoke("ask", "incendie", "-c", collection, *args, env=env)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert trails(collection) == before


def test_ask_2_on_a_missing_collection_or_question(collection, tmp_path):
    assert invoke("ask", "incendie", "-c", tmp_path / "missing").exit_code == 2
    assert not (tmp_path / "missing").exists()
    before = trails(collection)
    result = invoke("ask", "  ", "-c", collection)
    assert result.exit_code == 2 and "a question is required" in result.stderr
    assert trails(collection) == before


# -- trail ----------------------------------------------------------------------------------------------------


def test_trail_0_1_2(collection, tmp_path):
    run = json.loads(invoke("ask", "incendie", "-c", collection, "--json").stdout)["run_id"]
    assert invoke("trail", "list", "-c", collection).exit_code == 0
    assert invoke("trail", "show", run, "-c", collection).exit_code == 0
    assert invoke("trail", "export", run, "-c", collection, "--format", "ris").exit_code == 0
    assert invoke("trail", "show", "nosuchrun", "-c", collection).exit_code == 2
    assert invoke("trail", "export", run, "-c", collection, "--format", "bibtex").exit_code == 2
    damaged = collection / "trails" / "20000101T000000-damaged.jsonl"
    damaged.write_text('{"kind": "run", "not": "an event"}\n', encoding="utf-8")
    try:
        listed = invoke("trail", "list", "-c", collection)
        assert listed.exit_code == 1, listed.output
        assert "damaged" in listed.stdout and run in listed.stdout  # the others are still listed
        assert invoke("trail", "show", "20000101T000000", "-c", collection).exit_code == 2
    finally:
        damaged.unlink()


# -- eval -----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def beir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("beir") / "mini"
    (folder / "qrels").mkdir(parents=True)
    docs = [
        {"_id": "d1", "title": "", "text": "La grève des mineurs de Carmaux."},
        {"_id": "d2", "title": "", "text": "Le budget de la ville de Lyon."},
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in docs), encoding="utf-8")
    queries = [{"_id": "q1", "text": "grève Carmaux"}, {"_id": "q2", "text": "budget Lyon"}]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q, ensure_ascii=False) for q in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    return folder


def test_eval_0_1_2(beir, tmp_path):
    common = ["--benchmark", beir, "--no-dense", "--collections", tmp_path / "cols"]
    assert invoke("eval", *common, "--runs", "bm25", "--out", tmp_path / "a").exit_code == 0
    failing = invoke(
        "eval",
        *common,
        "--runs",
        "bm25,agent",
        "--llm",
        "openai:m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--out",
        tmp_path / "b",
        env={"TRACERAG_LLM__MAX_RETRIES": "0"},
    )
    assert failing.exit_code == 1, failing.output
    assert "2 of 2 agent runs ended failed or truncated" in " ".join(failing.stderr.split())
    assert (tmp_path / "b" / "results.json").is_file()  # the report is still written
    assert invoke("eval", "--benchmark", "nosuchbench", "--out", tmp_path / "c").exit_code == 2
    assert invoke("eval", *common, "--runs", "bm25", "--limit", "0", "--out", tmp_path / "d").exit_code == 2


# -- catalog ingest and chat ----------------------------------------------------------------------------------


def services(folder: Path, rows: list[dict]) -> tuple[Path, Path]:
    source = folder / "services.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    mapping = folder / "mapping.toml"
    mapping.write_text('id = "ID"\nname = "Program"\ncity = "City"\ndescription = "About"\n', encoding="utf-8")
    return source, mapping


ROWS = [
    {"ID": "s1", "Program": "Food Pantry", "City": "Springfield", "About": "free groceries and food"},
    {"ID": "s2", "Program": "Night Shelter", "City": "Springfield", "About": "beds for the night"},
]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("catalog")
    source, mapping = services(root, ROWS)
    result = invoke("catalog", "ingest", source, "--catalog", root / "catalog", "--mapping", mapping)
    assert result.exit_code == 0, result.output
    return root / "catalog"


def test_catalog_ingest_1_and_2(tmp_path):
    source, mapping = services(tmp_path, [*ROWS, {"ID": "s3", "City": "Springfield"}])  # s3 has no name
    result = invoke("catalog", "ingest", source, "--catalog", tmp_path / "cat", "--mapping", mapping)
    assert result.exit_code == 1, result.output
    missing = invoke("catalog", "ingest", tmp_path / "nothing", "--catalog", tmp_path / "cat2")
    assert missing.exit_code == 2, missing.output
    (tmp_path / "bad.toml").write_text("id = [", encoding="utf-8")
    bad = invoke("catalog", "ingest", source, "--catalog", tmp_path / "cat3", "--mapping", tmp_path / "bad.toml")
    assert bad.exit_code == 2 and "cannot read the mapping" in bad.stderr


def test_a_first_catalog_ingest_that_reads_nothing_exits_2_and_leaves_nothing(tmp_path):
    """A folder that is no datapackage (no services.csv) reads no record: as a first `tracerag ingest`, exit 2 with
    the report saying why, and no catalog.sqlite, collection/ or profile.toml left behind (nor the folder)."""
    folder = tmp_path / "not-hsds"
    folder.mkdir()
    (folder / "notes.tsv").write_text("TOKEN\tNE\n", encoding="utf-8")
    result = invoke("catalog", "ingest", folder, "--catalog", tmp_path / "cat")
    assert result.exit_code == 2, result.output
    assert "no services.csv" in result.stdout and "no catalog was made" in " ".join(result.stderr.split())
    assert not (tmp_path / "cat").exists()
    (tmp_path / "kept").mkdir()  # a folder that existed before stays, empty
    assert invoke("catalog", "ingest", folder, "--catalog", tmp_path / "kept").exit_code == 2
    assert list((tmp_path / "kept").iterdir()) == []


def test_catalog_ingest_takes_the_encoding_its_warning_names(tmp_path):
    """A CSV in cp1252 whose mapping says UTF-8: the warning names `--encoding`, which `catalog ingest` takes
    (over the mapping's key); where no reader takes it (an HSDS folder, JSON) it is refused, not ignored."""
    from tracerag.catalog.store import CatalogStore

    source = tmp_path / "services.csv"
    source.write_bytes("ID,Program,City\ns1,Café solidaire,Springfield\n".encode("cp1252"))
    mapping = tmp_path / "mapping.toml"
    mapping.write_text('id = "ID"\nname = "Program"\ncity = "City"\nencoding = "utf-8"\n', encoding="utf-8")
    base = ["catalog", "ingest", source, "--mapping", mapping, "--json"]
    as_utf8 = invoke(*base, "--catalog", tmp_path / "a")
    assert as_utf8.exit_code == 0, as_utf8.output
    assert any("(--encoding UTF-8)" in w for w in json.loads(as_utf8.stdout)["warnings"]), as_utf8.stdout
    named = invoke(*base, "--catalog", tmp_path / "b", "--encoding", "cp1252")
    assert named.exit_code == 0, named.output
    assert json.loads(named.stdout)["warnings"] == []
    with CatalogStore.open(tmp_path / "b" / "catalog.sqlite") as store:
        assert store.get(["s1"])["s1"].name == "Café solidaire"
    (tmp_path / "x.jsonl").write_text('{"ID": "s1"}\n', encoding="utf-8")
    for where, message in ((tmp_path, "HSDS datapackage"), (tmp_path / "x.jsonl", "is JSON")):
        refused = invoke("catalog", "ingest", where, "--catalog", tmp_path / "c", "--encoding", "cp1252")
        assert refused.exit_code == 2 and message in refused.stderr, refused.output
    unknown = invoke(*base, "--catalog", tmp_path / "c", "--encoding", "klingon")
    assert unknown.exit_code == 2 and "--encoding: unknown encoding 'klingon'" in unknown.stderr
    assert not (tmp_path / "c").exists()


def test_chat_0_and_2(catalog, tmp_path):
    assert invoke("chat", "--catalog", catalog, "--once", "food pantry in Springfield").exit_code == 0
    for args, message in (
        (["--once", "food"], "not a catalog"),
        (["--json"], "use it with --once"),
        (["--once", "food", "--k", "0"], "'--k'"),
        (["--once", "food", "--variant", "magic"], "structured-index variant 'magic'"),
        (["--once", " "], "--once needs a request"),
    ):
        where = tmp_path if message == "not a catalog" else catalog
        result = invoke("chat", "--catalog", where, *args)
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.output.split()), (args, result.output)


def test_trail_list_shows_a_catalog_conversation_as_one(catalog):
    """A conversation has no agent result: it is listed with its turns and first request, not "unfinished"."""
    result = runner.invoke(app, ["chat", "--catalog", str(catalog)], input="a food pantry\nin Springfield\n\n", env=ENV)
    assert result.exit_code == 0, result.output
    listed = invoke("trail", "list", "-c", catalog)
    assert listed.exit_code == 0, listed.output
    assert re.search(r"catalog · 2 turns\s+│\s+a food pantry\s", listed.stdout), listed.stdout
    assert "unfinished" not in listed.stdout and "(catalog conversation)" not in listed.stdout


# -- a model named in the settings is used without --llm ------------------------------------------------------


def settings_file(folder: Path, model: str) -> Path:
    path = folder / "settings.toml"
    path.write_text(f'[llm]\nmodel = "{model}"\n', encoding="utf-8")
    return path


def test_ask_uses_the_model_of_the_settings_file(collection, tmp_path):
    """Answers recorded from a real run over HTTP, then named only in the settings file (`replay:DIR`)."""
    policy = Policy(accept=("incendie",), sub_questions=[{"question": "incendie", "target_corpus": None}])

    def handler(body: dict, n: int) -> Reply:
        return Reply(content=policy.answer([Message(m["role"], m["content"]) for m in body["messages"]]))

    recorded = tmp_path / "answers"
    with FakeOpenAI(handler) as fake:
        live = invoke("ask", "incendie", "-c", collection, "--llm", "openai:p", "--base-url", fake.base_url,
                      "--record", recorded, "--json")  # fmt: skip
    assert live.exit_code == 0, live.output
    config = settings_file(tmp_path, f"replay:{recorded}")
    again = invoke("ask", "incendie", "-c", collection, "--config", config, "--json")
    assert again.exit_code == 0, again.output
    assert "agent with replay:p" in again.stderr
    replayed, first = json.loads(again.stdout), json.loads(live.stdout)
    assert replayed["status"] == "complete" and replayed["totals"]["llm_calls"] == first["totals"]["llm_calls"] > 0
    assert [r["doc_id"] for r in replayed["ranking"]] == [r["doc_id"] for r in first["ranking"]]


def test_eval_uses_the_model_of_the_settings(beir, tmp_path):
    """An empty folder of recorded answers: every agent call is refused, so the agent runs end failed (exit 1);
    without the model they would be the hybrid warm start (exit 0)."""
    (tmp_path / "none").mkdir()
    common = ["--benchmark", beir, "--no-dense", "--collections", tmp_path / "cols", "--runs", "bm25,agent"]
    result = invoke("eval", *common, "--config", settings_file(tmp_path, f"replay:{tmp_path / 'none'}"),
                    "--out", tmp_path / "a")  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "2 of 2 agent runs ended failed or truncated" in " ".join(result.stderr.split())
    by_env = invoke("eval", *common, "--out", tmp_path / "b", env={"TRACERAG_LLM__MODEL": f"replay:{tmp_path}/none"})
    assert by_env.exit_code == 1, by_env.output


def test_chat_and_catalog_eval_use_the_model_of_the_settings(catalog, tmp_path):
    from tracerag.trail import read_trail

    (tmp_path / "none").mkdir()
    config = settings_file(tmp_path, f"replay:{tmp_path / 'none'}")
    turn = invoke("chat", "--catalog", catalog, "--once", "food pantry in Springfield", "--json", "--config", config)
    assert turn.exit_code == 0, turn.output
    run = read_trail(Path(json.loads(turn.stdout)["trail"]))[0]
    assert run.llm == {"provider": "replay", "model": "unknown"}
    report = tmp_path / "report"
    bench = invoke("catalog", "eval", "--catalog", catalog, "--queries", "8", "--variants", "none,location",
                   "--out", report, "--config", config)  # fmt: skip
    assert bench.exit_code == 0, bench.output
    results = json.loads((report / "results.json").read_text(encoding="utf-8"))["results"]
    assert list(results) == ["none", "location", "none + unknown", "location + unknown"]
