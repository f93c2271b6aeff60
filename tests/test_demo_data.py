"""The demo data is found locally, taken from the cache, or downloaded and verified; failures say why."""

from __future__ import annotations

import io
import os
import shutil
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from rich.console import Console

from tracerag.demo_data import DEMO_FILES, demo_files, locate_demo_data
from tracerag.errors import DataUnavailableError

_DATASETS = Path(
    os.environ.get("TRACERAG_DATASETS", Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets")
)
HIPE = _DATASETS / "hipe2022"

pytestmark = pytest.mark.skipif(
    not all((HIPE / spec.name).is_file() for spec in DEMO_FILES), reason=f"HIPE-2022 copy not found in {HIPE}"
)


def _quiet() -> Console:
    return Console(file=io.StringIO(), force_terminal=False)


def _copy_flat(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for spec in DEMO_FILES:
        shutil.copyfile(HIPE / spec.name, dest / spec.name)
    return dest


class _Server:
    """A real HTTP server on 127.0.0.1 serving `root` (laid out like the data repository), counting GETs."""

    def __init__(self, root: Path):
        self.requests: list[str] = []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                server.requests.append(self.path)
                super().do_GET()

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _repo_layout(root: Path) -> Path:
    for spec in DEMO_FILES:
        target = root / spec.url_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(HIPE / spec.name, target)
    return root


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[_Server, Path]]:
    root = _repo_layout(tmp_path / "repo")
    server = _Server(root)
    yield server, root
    server.close()


def test_full_local_copy_is_used_as_is():
    folder = locate_demo_data(HIPE, Path("/nonexistent-cache"), offline=True)
    assert folder == HIPE
    assert demo_files(folder) == [HIPE / spec.name for spec in DEMO_FILES]
    assert [path.name for path in demo_files(folder)] == [spec.name for spec in DEMO_FILES]


def test_clone_of_the_data_repository_works(tmp_path: Path):
    root = _repo_layout(tmp_path / "clone")
    assert locate_demo_data(root, tmp_path / "cache", offline=True) == root
    assert demo_files(root) == [root / spec.url_path for spec in DEMO_FILES]


def test_corrupt_local_copy_names_the_file(tmp_path: Path):
    folder = _copy_flat(tmp_path / "copy")
    bad = folder / DEMO_FILES[1].name
    bad.write_bytes(bad.read_bytes()[:1000])
    with pytest.raises(DataUnavailableError) as info:
        locate_demo_data(folder, tmp_path / "cache")
    message = str(info.value)
    assert DEMO_FILES[1].name in message
    assert "1000 bytes" in message and str(DEMO_FILES[1].size) in message and DEMO_FILES[1].sha256 in message
    assert DEMO_FILES[0].name not in message


def test_same_size_different_content_is_refused(tmp_path: Path):
    folder = _copy_flat(tmp_path / "copy")
    bad = folder / DEMO_FILES[0].name
    data = bytearray(bad.read_bytes())
    data[-2] ^= 1
    bad.write_bytes(bytes(data))
    with pytest.raises(DataUnavailableError, match=DEMO_FILES[0].sha256):
        locate_demo_data(folder, tmp_path / "cache")


def test_missing_local_file_is_named(tmp_path: Path):
    folder = _copy_flat(tmp_path / "copy")
    (folder / DEMO_FILES[2].name).unlink()
    with pytest.raises(DataUnavailableError, match=rf"{DEMO_FILES[2].name}: missing"):
        locate_demo_data(folder, tmp_path / "cache")


def test_missing_data_dir(tmp_path: Path):
    with pytest.raises(DataUnavailableError, match="does not exist"):
        locate_demo_data(tmp_path / "nope", tmp_path / "cache")


def test_download_then_cache_without_request(tmp_path: Path, served: tuple[_Server, Path]):
    server, _ = served
    cache = tmp_path / "cache" / "commit"
    folder = locate_demo_data(None, cache, base_url=server.url, console=_quiet())
    assert folder == cache
    assert sorted(server.requests) == sorted(f"/{spec.url_path}" for spec in DEMO_FILES)
    for spec, path in zip(DEMO_FILES, demo_files(folder), strict=True):
        assert path.read_bytes() == (HIPE / spec.name).read_bytes()
    assert sorted(p.name for p in cache.iterdir()) == sorted(spec.name for spec in DEMO_FILES)

    server.requests.clear()
    assert locate_demo_data(None, cache, base_url=server.url, console=_quiet()) == cache
    assert server.requests == []


def test_only_missing_or_damaged_files_are_downloaded(tmp_path: Path, served: tuple[_Server, Path]):
    server, _ = served
    cache = _copy_flat(tmp_path / "cache")
    (cache / DEMO_FILES[0].name).unlink()
    (cache / DEMO_FILES[2].name).write_text("damaged")
    locate_demo_data(None, cache, base_url=server.url, console=_quiet())
    assert server.requests == [f"/{DEMO_FILES[0].url_path}", f"/{DEMO_FILES[2].url_path}"]
    assert (cache / DEMO_FILES[2].name).read_bytes() == (HIPE / DEMO_FILES[2].name).read_bytes()


def test_checksum_mismatch_leaves_nothing_in_cache(tmp_path: Path, served: tuple[_Server, Path]):
    server, root = served
    spec = DEMO_FILES[0]
    served_file = root / spec.url_path
    served_file.write_bytes(served_file.read_bytes()[:-10] + b"x" * 10)
    cache = tmp_path / "cache"
    with pytest.raises(DataUnavailableError) as info:
        locate_demo_data(None, cache, base_url=server.url, console=_quiet())
    message = str(info.value)
    assert f"{server.url}/{spec.url_path}" in message
    assert spec.sha256 in message and "checksum mismatch" in message
    assert list(cache.iterdir()) == []


def test_unreachable_server_explains_the_ways_out(tmp_path: Path):
    cache = tmp_path / "cache"
    with pytest.raises(DataUnavailableError) as info:
        locate_demo_data(None, cache, base_url="http://127.0.0.1:9", console=_quiet())
    message = str(info.value)
    assert "could not download" in message
    assert "ConnectError" in message
    assert "--data" in message and "TRACERAG_DEMO_DATA" in message and "connected machine" in message
    assert not any(cache.iterdir())


def test_http_error_status_is_reported(tmp_path: Path, served: tuple[_Server, Path]):
    server, _ = served
    with pytest.raises(DataUnavailableError, match="404") as info:
        locate_demo_data(None, tmp_path / "cache", base_url=server.url + "/wrong", console=_quiet())
    assert "--data" in str(info.value)


def test_offline_without_cache_makes_no_request(tmp_path: Path, served: tuple[_Server, Path]):
    server, _ = served
    with pytest.raises(DataUnavailableError, match="offline") as info:
        locate_demo_data(None, tmp_path / "cache", base_url=server.url, offline=True, console=_quiet())
    assert "--data" in str(info.value)
    assert server.requests == []
