"""A collection this user cannot write: searched, shown, exported and asked about as user `nobody` (via
`setpriv`) on a collection root owned, mode 0755; the commands that must write say so and exit 2; the
collection is left exactly as it was."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from tests.sharing import environment, tracerag
from tracerag.collection import SELECTIONS_FILE, Collection
from tracerag.config import load_settings
from tracerag.ingest import read_documents
from tracerag.retrieval import Retriever, SearchRequest

pytestmark = pytest.mark.heavy  # run first: see tests/conftest.py, heaviest files first

NOBODY = 65534
SRC = Path(__file__).resolve().parents[2] / "src"
FILE = "HIPE-2022-v2.1-hipe2020-dev-fr.tsv"


def _as_nobody(python: str, env: dict[str, str]) -> bool:
    probe = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python, "-c", "import tracerag"]
    return subprocess.run(probe, env=env, capture_output=True, timeout=60).returncode == 0


def nobodys_python(env: dict[str, str]) -> str:
    """An interpreter user nobody can run with this checkout importable: this one, or (when it lives in a
    folder nobody cannot enter, e.g. /root/.pyenv) a system Python of the same version pointed at this
    environment's site-packages. Skips, saying why, when there is none."""
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed: cannot run a command as another user")
    if os.geteuid() != 0:
        pytest.skip("not running as root: cannot switch to user nobody to test a read-only collection")
    if _as_nobody(sys.executable, env):
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        if Path(candidate).is_file() and _as_nobody(candidate, env):
            return candidate
    pytest.skip(f"user nobody can run neither {sys.executable} nor a system {version} with this checkout")


def tree(path: Path) -> dict[str, tuple[int, int]]:
    """Every file of a collection with its size and mtime: what "left exactly as it was" compares."""
    return {str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*") if p.is_file()}


@pytest.fixture
def shared_dir():
    """A folder outside pytest's 0700 temporary tree, so that nobody can reach what root puts in it."""
    folder = Path(tempfile.mkdtemp(prefix="tracerag-ro-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_collection_of_another_user_is_readable_and_refuses_writes(hipe_dir: Path, shared_dir: Path):
    col = shared_dir / "col"
    with Collection.open(col, load_settings(), mode="write", create=True) as c:  # root's collection
        c.ingest(read_documents(hipe_dir, "hipe"), dense=False)
    # The text index's segment files, which a reader that cannot write the folder searches from a private copy
    assert list(col.glob("index/text/*/*.idx"))
    home = shared_dir / "home"  # nobody's own home and cache: the only place it may write
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    root_env = environment(shared_dir / "root-cache")
    rc, out, err = tracerag("ask", "conseil municipal", "-c", col, "--json", env=root_env)  # a trail by root
    assert rc == 0, err
    root_run = json.loads(out)["run_id"]
    with Collection.open(col, load_settings(), mode="read") as c:  # root, in place: what nobody must find too
        documents = c.store.count_documents()
        expected = Retriever(c).search(SearchRequest("Berlin Paris", k=3)).doc_ids()
    for p in [col, *col.rglob("*")]:
        assert p.stat().st_uid == 0 and not p.stat().st_mode & 0o022, p
    before = tree(col)

    # The interpreter check runs as nobody with PYTHONPATH already set, so that a system Python finds this
    # checkout and the virtual environment's packages.
    paths = [str(SRC), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    env = environment(home / "cache", HOME=str(home), PYTHONPATH=os.pathsep.join(paths), TMPDIR=str(home))
    python = nobodys_python(env)

    def nobody(*args: object, keys: str | None = None) -> tuple[int, str, str]:
        prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python, "-c"]
        done = subprocess.run(
            [*prefix, "from tracerag.cli import app; app()", *map(str, args)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=home,
            input=keys,
        )
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        return done.returncode, done.stdout, done.stderr

    rc, out, err = nobody("search", "Berlin Paris", "-c", col, "--json", "-k", "3")
    assert rc == 0, err
    results = json.loads(out)["results"]
    assert results and "read-only here: searching a private copy of its index" in err
    assert str(home / "cache" / "readonly") in err
    assert [r["doc_id"] for r in results] == expected

    rc, out, err = nobody("search", "Berlin Paris", "-c", col, "--json", "-k", "3")  # the copy is reused
    assert rc == 0 and "private copy" not in err, err

    rc, out, err = nobody("info", "-c", col, "--json")
    assert rc == 0, err
    stats = json.loads(out)
    assert stats["documents"] == documents
    assert stats["indexed_points"] == stats["chunks"]
    assert stats["activity"]["read_only"].startswith("owned by root, not writable by this user")
    rc, out, err = nobody("info", "-c", col)
    assert rc == 0 and "read-only here" in out, err

    rc, out, err = nobody("trail", "show", root_run, "-c", col)
    assert rc == 0 and "conseil municipal" in out, err
    rc, out, err = nobody("trail", "export", root_run, "-c", col, "--format", "csv")
    assert rc == 0 and "doc_id" in out.splitlines()[0] and len(out.splitlines()) > 1, err

    rc, out, err = nobody("ask", "Reichstag Sitzung", "-c", col, "--json")
    assert rc == 0, err
    run = json.loads(out)
    trail = Path(run["trail"])
    assert trail.is_file() and trail.is_relative_to(home / "cache" / "readonly") and str(trail.parent) in err
    rc, out, err = nobody("trail", "show", run["run_id"], "-c", col)  # found where it was written
    assert rc == 0 and "Reichstag Sitzung" in out, err
    rc, out, err = nobody("trail", "list", "-c", col)
    assert rc == 0 and root_run in out and run["run_id"] in out, err

    for command in (("ingest", hipe_dir / FILE, "--format", "hipe", "--no-dense"), ("embed",)):
        rc, out, err = nobody(*command[:1], *command[1:], "-c", col)
        assert rc == 2, (command, err)
        assert "owned by root, not writable by this user" in err and "must write" in err
        assert len(err.strip().splitlines()) == 1

    # A plain search is a run too: its trail goes where nobody may write, and is listed with the others.
    searches = [t for t in (home / "cache" / "readonly").rglob("*.jsonl") if '"run": "search"' in t.read_text()]
    assert searches, "the search runs' trails are in nobody's private folder"
    # nobody's own selection of root's run: kept in nobody's private folder, the collection untouched
    rc, out, err = nobody("review", root_run, "-c", col, "--question", "Conseils municipaux", keys="ar")
    assert rc == 0, err
    rc, out, err = nobody("selection", "list", "-c", col)
    assert rc == 0 and "Conseils municipaux" in out, err
    assert list((home / "cache" / "readonly").rglob(SELECTIONS_FILE))

    assert tree(col) == before  # nothing of the collection was touched


def test_a_private_copy_in_use_is_kept_when_a_newer_one_is_made(tmp_path: Path):
    """A reader searching a private copy holds it: a reader that copies the index after its owner wrote more
    removes the older copies nobody holds, never the one in use (which then answered nothing, silently)."""
    from tracerag.engine import IndexedChunk
    from tracerag.engine.embedded import EmbeddedEngine
    from tracerag.engine.private_copy import hold, private_copy

    def chunk(i: int, text: str) -> IndexedChunk:
        return IndexedChunk(f"d{i}#0", f"d{i}", text, "c", "fr", None, None, {})

    index, root = tmp_path / "index", tmp_path / "cache"
    writer = EmbeddedEngine(index, None, writer=True)
    writer.upsert([chunk(0, "le conseil fédéral")], None)
    writer.flush()
    first = private_copy(index / "text", root, label="col", notify=lambda _: None)
    held = hold(first)
    assert held is not None
    reader = EmbeddedEngine(index, None, text=first / "index")
    assert reader.count() == 1
    writer.upsert([chunk(1, "la grève du port")], None)
    writer.flush()
    second = private_copy(index / "text", root, label="col", notify=lambda _: None)
    assert second != first and first.exists()  # in use: kept
    assert reader.count() == 1 and [h.chunk_id for h in reader.bm25("conseil", 5)["fr"]] == ["d0#0"]
    held.release()
    reader.close()
    third_reader = hold(second)
    assert third_reader is not None
    private_copy(index / "text", root, label="col", notify=lambda _: None)  # the current one: nothing to copy
    writer.upsert([chunk(2, "encore")], None)
    writer.flush()
    private_copy(index / "text", root, label="col", notify=lambda _: None)
    assert not first.exists() and second.exists()  # the old one nobody holds goes; the held one stays
    third_reader.release()
    writer.close()
