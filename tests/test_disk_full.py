"""A full disk is said, never a crash (README, "Exit codes": 4): an ingest, embed, calibrate, or a search's trail
that meets one exits 4 with one message naming the folder and its free space, and no traceback; the collection
stays readable, and once space is freed the next run resumes. On a real small disk: a tmpfs mounted for the test
(root here; elsewhere skipped, saying why). The CLI runs in a child process, so that an engine that dies of the
full disk (SIGBUS: Qdrant Edge, the previous embedded engine, did) cannot take pytest with it."""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import tracerag
from tests.fakes.embeddings_server import FakeEmbeddings
from tracerag.cli import ExitCode, app
from tracerag.errors import CollectionError, DiskFullError, disk_full, on_full_disk, says_disk_full
from tracerag.trail import JsonlWriter, Trail, read_trail
from tracerag.trail.events import RunEvent

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first

SRC = str(Path(tracerag.__file__).parents[1])
WORDS = ["incendie", "opéra", "grève", "mineurs", "budget", "ville", "lyon", "carmaux", "hafen", "brand"]
A_DOCS, B_DOCS = 12, 60  # the first ingest, and the one that meets the full disk
SLACK = 64 << 10  # what the full disk leaves free for the second ingest: less than its text alone
DISK = "64M"  # room for a small collection and its index


def tracerag_cli(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`tracerag ARGS` in a child process (COLUMNS wide: a message on one line)."""
    return subprocess.run(
        [sys.executable, "-c", "from tracerag.cli import app; app()", *map(str, args)],
        capture_output=True,
        text=True,
        env=os.environ | {"COLUMNS": "400", "PYTHONPATH": SRC} | (env or {}),
        timeout=600,
    )


def said_no_space(result: subprocess.CompletedProcess[str], folder: Path) -> None:
    """Exit 4, one message naming `folder`, and no traceback."""
    crashed = " (the engine crashed: SIGBUS)" if result.returncode in (135, -7) else ""
    assert result.returncode == ExitCode.NO_SPACE, f"exit {result.returncode}{crashed}: {result.stderr[-3000:]}"
    assert f"no space left on the disk of {folder} (" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """`tmpfs(DISK)`: a small disk of its own, unmounted after the test."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        where.mkdir()
        if shutil.which("mount") is None:
            pytest.skip("no `mount` command: a full disk is played by a small tmpfs")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip() or done.returncode}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


def fill(disk: Path, leave: int = 0) -> Path:
    """A ballast file that takes the space of `disk` but about `leave` bytes (none at all when 0)."""
    ballast = disk / "ballast"
    with ballast.open("ab", buffering=0) as fh:
        block = b"\0" * (1 << 16)
        try:
            while (free := shutil.disk_usage(disk).free - leave) > 0:
                fh.write(block[: min(free, len(block))])
            while not leave:  # the last pages, to the byte
                fh.write(block[:4096])
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return ballast


def _texts(folder: Path, prefix: str, n: int, seed: int) -> Path:
    """`n` text files; each holds a word of its own (`{prefix}{i}marker`), so that a search finds it."""
    folder.mkdir(parents=True)
    rng = random.Random(seed)
    for i in range(n):
        words = [f"{rng.choice(WORDS)}{rng.randint(0, 999)}" for _ in range(200)]
        words.insert(100, f"{prefix}{i}marker")
        (folder / f"{prefix}{i:03d}.txt").write_text(" ".join(words), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def texts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("texts")
    return _texts(root / "a", "alpha", A_DOCS, 1), _texts(root / "b", "beta", B_DOCS, 2)


def collection_on(disk: Path, texts: Path, *options: str, env: dict[str, str] | None = None) -> Path:
    """A collection of `texts` on `disk`, searched once with room to spare: what an engine makes when it first
    opens a collection is made (Qdrant Edge maps ~55 MB of files then), as it is for a collection in use."""
    col = disk / "col"
    made = tracerag_cli("ingest", texts, "-c", col, *(options or ("--embed-model", "none")), env=env)
    assert made.returncode == 0, made.stderr[-3000:]
    assert tracerag_cli("search", "alpha3marker", "-c", col, env=env).returncode == 0
    return col


def info(collection: Path) -> dict:
    result = tracerag_cli("info", "-c", collection, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def found(collection: Path, query: str) -> list[str]:
    result = tracerag_cli("search", query, "-c", collection, "--json", "--k", "3")
    assert result.returncode == 0, result.stderr[-3000:]
    return [r["doc_id"] for r in json.loads(result.stdout)["results"]]


def trail_files(collection: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((collection / "trails").glob("*.jsonl"))}


# -- through the CLI, on a tmpfs ------------------------------------------------------------------------------


def test_an_ingest_that_fills_the_disk_says_so_and_the_next_one_resumes(tmpfs, texts, tmp_path):
    a, b = texts
    reference = tmp_path / "reference"  # the same two ingests with room enough: what the collection must hold
    for folder in (a, b):
        assert tracerag_cli("ingest", folder, "-c", reference, "--embed-model", "none").returncode == 0
    disk = tmpfs(DISK)
    col = collection_on(disk, a)
    ballast = fill(disk, leave=SLACK)
    said_no_space(tracerag_cli("ingest", b, "-c", col), col)
    # left behind on the full disk: readable as it is
    assert info(col)["documents"] >= A_DOCS
    ballast.unlink()  # space freed: the next run finishes the work
    again = tracerag_cli("ingest", b, "-c", col, "--json")
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["read"] == B_DOCS
    held, expected = info(col), info(reference)
    assert held["documents"] == expected["documents"] == A_DOCS + B_DOCS
    assert held["chunks"] == expected["chunks"]  # no chunk lost or doubled
    assert found(col, "beta7marker")[0] == "beta007" and found(col, "alpha3marker")[0] == "alpha003"


def test_info_answers_on_a_full_disk(tmpfs, texts):
    a, _ = texts
    col = collection_on(tmpfs(DISK), a)
    disk = col.parent
    fill(disk)
    assert info(col)["documents"] == A_DOCS


def test_a_search_whose_trail_does_not_fit_says_so_and_leaves_no_torn_trail(tmpfs, texts):
    a, _ = texts
    col = collection_on(tmpfs(DISK), a)
    disk = col.parent
    before = trail_files(col)
    ballast = fill(disk)
    result = tracerag_cli("search", "alpha3marker", "-c", col)
    said_no_space(result, col / "trails")
    assert "while writing the trail " in result.stderr
    said_no_space(tracerag_cli("ask", "alpha3marker", "-c", col), col / "trails")  # the agent's trail too
    assert trail_files(col) == before  # no empty trail, no half line
    listed = tracerag_cli("trail", "list", "-c", col)
    assert listed.returncode == 0, listed.stderr
    ballast.unlink()
    assert found(col, "alpha3marker")[0] == "alpha003"
    (new,) = set(trail_files(col)) - set(before)
    assert read_trail(col / "trails" / new)[0].question == "alpha3marker"


def test_calibrate_on_a_full_disk_says_so_and_keeps_the_calibration(tmpfs, texts):
    _, b = texts  # enough documents to calibrate (the ingest calibrates them)
    col = collection_on(tmpfs(DISK), b)
    disk = col.parent
    calibration = (col / "calibration.json").read_bytes()
    ballast = fill(disk)
    said_no_space(tracerag_cli("calibrate", "-c", col, "--queries", "10"), col)
    assert (col / "calibration.json").read_bytes() == calibration
    assert not list(col.glob("*.tmp"))
    ballast.unlink()
    again = tracerag_cli("calibrate", "-c", col, "--queries", "10", "--json")
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["calibrated"] is True


def test_embed_on_a_full_disk_says_so_and_the_next_one_finishes(tmpfs, texts):
    a, _ = texts
    with FakeEmbeddings(dim=16) as fake:
        env = {"TRACERAG_EMBED__BASE_URL": fake.base_url}
        col = collection_on(tmpfs(DISK), a, "--embed-model", "openai:fake-embed", "--no-dense", env=env)
        disk = col.parent
        assert info(col)["chunks_without_vectors"] > 0
        ballast = fill(disk)
        said_no_space(tracerag_cli("embed", "-c", col, env=env), col)
        ballast.unlink()
        again = tracerag_cli("embed", "-c", col, env=env)
        assert again.returncode == 0, again.stderr[-3000:]
    assert info(col)["chunks_without_vectors"] == 0


# -- in this process: the trail writer, and the boundary that says any full disk ------------------------------


def _event(n: int) -> RunEvent:
    return RunEvent(question=f"q{n} " + "x" * 900, collection="c", k=10, config={}, versions={})


def test_the_trail_writer_takes_back_a_line_that_does_not_fit(tmpfs):
    disk = tmpfs("256K")
    path = disk / "trails" / "run.jsonl"
    writer = JsonlWriter(path)
    trail = Trail(listeners=[writer])
    with pytest.raises(DiskFullError) as raised:
        for n in range(1000):
            trail.emit(_event(n))
    writer.close()
    error = raised.value
    assert error.folder == path.parent and error.needed and error.needed > 900
    assert f"no space left on the disk of {path.parent} (" in str(error) and "run.jsonl" in str(error)
    events = read_trail(path)  # every line whole
    assert 0 < len(events) < 1000 and [e.question.split()[0] for e in events] == [f"q{n}" for n in range(len(events))]


def test_a_trail_whose_first_line_does_not_fit_leaves_no_file(tmpfs):
    disk = tmpfs("64K")
    fill(disk)
    path = disk / "run.jsonl"
    writer = JsonlWriter(path)
    with pytest.raises(DiskFullError):
        Trail(listeners=[writer]).emit(_event(0))
    writer.close()
    assert not path.exists()


def _sqlite_full() -> sqlite3.Error:
    """A real SQLITE_FULL: a database that may not grow past two pages."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (x)")
    db.execute("PRAGMA max_page_count = 2")
    try:
        db.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 100)
    except sqlite3.Error as exc:
        return exc
    raise AssertionError("SQLite took it all")


def _caused(outer: Exception, cause: BaseException) -> Exception:
    try:
        raise outer from cause
    except Exception as exc:
        return exc


@pytest.mark.parametrize(
    ("error", "full"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), True),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), True),
        (_sqlite_full(), True),
        (ValueError("Failed to commit: IoError: No space left on device (os error 28)"), True),  # tantivy's kind
        (_caused(RuntimeError("index write failed"), OSError(errno.ENOSPC, "No space left on device")), True),
        (OSError(errno.EACCES, "Permission denied"), False),
        (ValueError("invalid literal for int()"), False),
        (_caused(CollectionError("cannot load the index"), Exception("No space left on device (os error 28)")), True),
        (CollectionError("the query 'No space left on device' found nothing"), False),  # our words quote anything
    ],
)
def test_a_full_disk_is_recognised_in_what_libraries_raise(error, full):
    assert says_disk_full(error) is full
    assert (disk_full(error) is not None) is full


def test_a_full_disk_said_further_down_keeps_its_folder(tmp_path):
    """An error raised from a DiskFullError (a trail's, in a collection's work) is said as that one, not anew."""
    trails = tmp_path / "trails"
    inner = DiskFullError(trails, "the trail run.jsonl", needed=900)
    outer = _caused(CollectionError("the run failed"), inner)
    assert disk_full(outer) is inner and DiskFullError.of(outer, tmp_path) is inner
    with pytest.raises(DiskFullError) as raised, on_full_disk(tmp_path, "collection.toml"):
        raise outer
    assert raised.value is inner and raised.value.folder == trails
    with pytest.raises(DiskFullError) as raised, on_full_disk(tmp_path, "collection.toml"):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert raised.value.folder == tmp_path and "while writing collection.toml" in str(raised.value)


def test_the_cli_says_a_full_disk_met_anywhere_below_it(monkeypatch, tmp_path):
    """Raised where no folder was known: exit 4, the folder of the file it names, one line, no traceback."""
    from tracerag.collection import Collection

    def no_space(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "somewhere" / "segment.bin"))

    monkeypatch.setattr(Collection, "open", no_space)
    result = CliRunner().invoke(app, ["info", "-c", str(tmp_path)], env={"COLUMNS": "400"})
    assert result.exit_code == ExitCode.NO_SPACE, result.output
    assert f"no space left on the disk of {tmp_path / 'somewhere'} (" in result.stderr
    assert "segment.bin" in result.stderr and "Traceback" not in result.output

    def refused(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(Collection, "open", refused)
    other = CliRunner().invoke(app, ["info", "-c", str(tmp_path)])
    assert isinstance(other.exception, PermissionError)  # not a full disk: a bug still shows as one


def test_the_web_server_answers_507(tmp_path):
    from tracerag.server.errors import install

    server = FastAPI()
    install(server)

    @server.get("/api/store")
    def store() -> None:
        raise _sqlite_full()

    @server.get("/api/index")
    def index() -> None:
        raise ValueError("IoError: No space left on device (os error 28)")

    @server.get("/api/trail")
    def trail() -> None:
        raise DiskFullError(tmp_path, "the trail run.jsonl", needed=1200)

    @server.get("/api/bug")
    def bug() -> None:
        raise ValueError("a bug")

    client = TestClient(server, raise_server_exceptions=False)
    for where in ("store", "index", "trail"):
        answer = client.get(f"/api/{where}")
        assert answer.status_code == 507, (where, answer.text)
        assert answer.json()["kind"] == "DiskFullError" and "no space left" in answer.json()["error"]
    assert f"disk of {tmp_path} (" in client.get("/api/trail").json()["error"]
    assert client.get("/api/bug").status_code == 500
