"""Where the demo's data comes from: the packaged sample (real OCR, public domain, read by the real readers), a
local or downloaded copy of the pinned HIPE files (verified, cached), and the order in which they are chosen."""

from __future__ import annotations

import io
import json
import shutil
import threading
import tomllib
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from rich.console import Console

from tracerag.demo_data import (
    DEMO_FILES,
    SAMPLE_MANIFEST,
    demo_files,
    describe_change,
    load_manifest,
    locate_demo_data,
    packaged_sample_dir,
    resolve_demo_source,
    sample_source,
)
from tracerag.errors import ConfigError, DataUnavailableError
from tracerag.ingest import RecordError
from tracerag.model import Document

SAMPLE = packaged_sample_dir()


def _quiet() -> Console:
    return Console(file=io.StringIO(), force_terminal=False)


# -- the packaged sample ------------------------------------------------------------------------------------


def test_the_sample_ships_in_the_package_with_its_licence_and_sources() -> None:
    manifest = load_manifest(SAMPLE)
    files = sorted(p.relative_to(SAMPLE).as_posix() for p in SAMPLE.rglob("*") if p.is_file())
    listed = sorted(d.file for d in manifest.documents)
    # every document file is listed once, nothing else is shipped beside the manifest and its two notes
    assert sorted(set(files) - set(listed)) == ["LICENSE.md", "SOURCE.md", SAMPLE_MANIFEST]
    assert len(listed) == len(set(listed)) == 35
    size = sum((SAMPLE / f).stat().st_size for f in files)
    assert 50_000 < size < 400_000, size  # installed with every copy of TRACE
    licence = (SAMPLE / "LICENSE.md").read_text(encoding="utf-8")
    source = (SAMPLE / "SOURCE.md").read_text(encoding="utf-8")
    assert "CC0 1.0" in licence and "Public Domain Mark 1.0" in licence and "public domain" in licence
    assert "The MIT License" in licence and "Copyright (c) 2010, Library of Congress." in licence
    for pinned in (
        "natliblux/nautilusocr @ `e7f03810670b317163fdfa31604904c41d0e6eba`",
        "`a08535b4287fa842e2a7507becf05f7dafe41d27`",
        "LibraryOfCongress/chronam",
        "`1550011bf0eec87131beb561c0df4d4092db1389`",
        "`4ae3f1c549b2f54651e74eff984fa9da671a9a4a`",
    ):
        assert pinned in source, pinned
    # not the evaluation data: none of its formats, licences or names
    assert {d.format for d in manifest.documents} == {"alto", "txt"}
    assert "BY-NC" not in licence and "hipe" not in json.dumps(manifest.model_dump()).lower()
    assert {d.source["licence"] for d in manifest.documents} == {
        "CC0-1.0",
        "public domain (published 1903)",
        "public domain (published 1911)",
    }


def test_every_sample_file_is_declared_as_package_data() -> None:
    """A wheel carries only what pyproject.toml declares: a sample file left out would break installed copies."""
    root = Path(__file__).resolve().parents[1]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    package = root / "src" / "tracerag"
    patterns = pyproject["tool"]["setuptools"]["package-data"]["tracerag"]
    declared = {p for pattern in patterns for p in package.glob(pattern)}
    assert {p for p in SAMPLE.rglob("*") if p.is_file()} <= declared


def _sample_documents(per_part: int | None = None) -> list[Document]:
    items = list(sample_source().documents(per_part))
    errors = [i for i in items if isinstance(i, RecordError)]
    assert not errors, errors
    return items


def test_the_sample_reads_cleanly_with_its_metadata_and_ocr_noise_kept() -> None:
    docs = _sample_documents()
    by_id = {d.id: d for d in docs}
    assert len(by_id) == len(docs) == 35
    assert {d.corpus for d in docs} == {"bnl/luxzeit", "chronam/nytribune", "chronam/saltlaketribune"}
    assert {d.language for d in docs} == {"fr", "de", "lb", "en", None}
    assert {d.date for d in docs} == {"1858-07-10", "1903-05-01", "1911-09-17"}
    assert 55_000 < sum(len(d.text) for d in docs) < 70_000
    revue = by_id["luxzeit-1858-07-10-revue-politique"]
    # ALTO: block and line ids with exact spans; a line-end hyphen (HYP) kept in the text as printed
    assert revue.title == "Revue politique." and revue.source["page_id"] == "P1"
    assert revue.source["publication"] == "Luxemburger Zeitung – Journal de Luxembourg"
    line = next(ln for ln in revue.source["lines"] if ln["id"] == "P1_TL00059")
    assert revue.text[line["start"] : line["end"]] == "L'envoi par M. le comte Walcwski d'une note"
    assert "transac-\ntion." in revue.text
    # plain text: the OCR exactly as the page gave it
    harbor = by_id["nytribune-1903-05-01-harbor-tieup"]
    assert harbor.text.startswith("VOIV O1 LXIII----N 0 20.620.\nCO BIG HARBOR TIEUP-\n")
    assert harbor.title is None and harbor.source["publication"] == "New-York Tribune"


def test_nothing_of_the_pages_was_lost_in_the_cutting() -> None:
    """The BnL page's running text is its 134 TextLines, each in exactly one article file; each Chronicling
    America page is its articles joined by line ends, as long as the source file (SOURCE.md)."""
    docs = _sample_documents()
    bnl = [ln["id"] for d in docs if d.corpus == "bnl/luxzeit" for ln in d.source["lines"]]
    assert sorted(bnl) == [f"P1_TL{n:05d}" for n in range(1, 135)]
    for corpus, length in (("chronam/nytribune", 29_468), ("chronam/saltlaketribune", 26_282)):
        assert len("\n".join(d.text for d in docs if d.corpus == corpus)) == length, corpus


def test_per_part_keeps_the_first_documents_of_each_sub_corpus() -> None:
    docs = _sample_documents(2)
    assert [d.id for d in docs] == [
        "luxzeit-1858-07-10-titre",
        "luxzeit-1858-07-10-polizei-reglement",
        "nytribune-1903-05-01-harbor-tieup",
        "nytribune-1903-05-01-russia-manchuria",
        "saltlaketribune-1911-09-17-syracuse-auto-race",
        "saltlaketribune-1911-09-17-alff-apoplexy",
    ]
    with pytest.raises(ConfigError, match="at least 1"):
        sample_source().documents(0)


def test_a_damaged_manifest_names_its_file(tmp_path: Path) -> None:
    copy = tmp_path / "sample"
    shutil.copytree(SAMPLE, copy)
    manifest = json.loads((copy / SAMPLE_MANIFEST).read_text(encoding="utf-8"))
    manifest["documents"][0]["colour"] = "red"
    (copy / SAMPLE_MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(DataUnavailableError, match=rf"{copy / SAMPLE_MANIFEST}.*colour"):
        sample_source(copy)
    (copy / SAMPLE_MANIFEST).unlink()
    with pytest.raises(DataUnavailableError, match="cannot read"):
        sample_source(copy)


def test_describe_change() -> None:
    assert describe_change(["a", "b"], ["a", "b"], {"a": 1}) == [
        "same documents in the same order: the lexical channels already agreed with the dense one"
    ]
    assert describe_change(["a", "b", "c"], ["d", "a", "c"], {"d": 1, "a": 4}) == [
        "new at 1: d (dense rank 1)",
        "down 1 → 2: a (dense rank 4)",
        "out of the top 3: b",
    ]


# -- choosing the source ------------------------------------------------------------------------------------


def test_a_fresh_machine_gets_the_packaged_sample_without_the_network(tmp_path: Path) -> None:
    for datasets in (None, tmp_path / "no-such-folder", tmp_path):
        source, notes = resolve_demo_source(None, datasets, tmp_path / "cache", base_url="http://127.0.0.1:9")
        assert (source.kind, source.location, notes) == ("sample", SAMPLE, [])
    assert not (tmp_path / "cache").exists()


def test_a_damaged_datasets_copy_is_named_and_passed_over(tmp_path: Path) -> None:
    (tmp_path / "hipe2022").mkdir()
    (tmp_path / "hipe2022" / DEMO_FILES[0].name).write_text("not the file")
    source, notes = resolve_demo_source(None, tmp_path, tmp_path / "cache")
    assert source.kind == "sample"
    assert len(notes) == 1 and str(tmp_path / "hipe2022") in notes[0] and DEMO_FILES[0].name in notes[0]


def test_data_and_download_are_exclusive_and_a_named_folder_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--data and --download"):
        resolve_demo_source(tmp_path, None, tmp_path / "cache", download=True)
    with pytest.raises(DataUnavailableError, match="does not exist"):
        resolve_demo_source(tmp_path / "nope", None, tmp_path / "cache")


def test_the_datasets_hipe_files_win_over_the_sample(hipe_dir: Path, tmp_path: Path) -> None:
    source, notes = resolve_demo_source(None, hipe_dir.parent, tmp_path / "cache")
    assert (source.kind, source.location, notes) == ("hipe", hipe_dir, [])
    assert "CC BY-NC-SA 4.0" in source.licence
    docs = [d for d in source.documents(2) if isinstance(d, Document)]
    assert [d.language for d in docs] == ["fr", "fr", "de", "de", "en", "en"]


def test_a_named_folder_wins_over_the_datasets(hipe_dir: Path, tmp_path: Path) -> None:
    copy = _copy_flat(hipe_dir, tmp_path / "copy")
    source, _ = resolve_demo_source(copy, hipe_dir.parent, tmp_path / "cache")
    assert (source.kind, source.location) == ("hipe", copy)


# -- the pinned HIPE files: local copies, cache and download ------------------------------------------------


def _copy_flat(hipe: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for spec in DEMO_FILES:
        shutil.copyfile(hipe / spec.name, dest / spec.name)
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


def _repo_layout(hipe: Path, root: Path) -> Path:
    for spec in DEMO_FILES:
        target = root / spec.url_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(hipe / spec.name, target)
    return root


@pytest.fixture
def served(hipe_dir: Path, tmp_path: Path) -> Iterator[tuple[_Server, Path]]:
    root = _repo_layout(hipe_dir, tmp_path / "repo")
    server = _Server(root)
    yield server, root
    server.close()


def test_full_local_copy_is_used_as_is(hipe_dir: Path):
    folder = locate_demo_data(hipe_dir, Path("/nonexistent-cache"), offline=True)
    assert folder == hipe_dir
    assert demo_files(folder) == [hipe_dir / spec.name for spec in DEMO_FILES]


def test_clone_of_the_data_repository_works(hipe_dir: Path, tmp_path: Path):
    root = _repo_layout(hipe_dir, tmp_path / "clone")
    assert locate_demo_data(root, tmp_path / "cache", offline=True) == root
    assert demo_files(root) == [root / spec.url_path for spec in DEMO_FILES]


def test_corrupt_local_copy_names_the_file(hipe_dir: Path, tmp_path: Path):
    folder = _copy_flat(hipe_dir, tmp_path / "copy")
    bad = folder / DEMO_FILES[1].name
    bad.write_bytes(bad.read_bytes()[:1000])
    with pytest.raises(DataUnavailableError) as info:
        locate_demo_data(folder, tmp_path / "cache")
    message = str(info.value)
    assert DEMO_FILES[1].name in message
    assert "1000 bytes" in message and str(DEMO_FILES[1].size) in message and DEMO_FILES[1].sha256 in message
    assert DEMO_FILES[0].name not in message


def test_same_size_different_content_is_refused(hipe_dir: Path, tmp_path: Path):
    folder = _copy_flat(hipe_dir, tmp_path / "copy")
    bad = folder / DEMO_FILES[0].name
    data = bytearray(bad.read_bytes())
    data[-2] ^= 1
    bad.write_bytes(bytes(data))
    with pytest.raises(DataUnavailableError, match=DEMO_FILES[0].sha256):
        locate_demo_data(folder, tmp_path / "cache")


def test_missing_local_file_is_named(hipe_dir: Path, tmp_path: Path):
    folder = _copy_flat(hipe_dir, tmp_path / "copy")
    (folder / DEMO_FILES[2].name).unlink()
    with pytest.raises(DataUnavailableError, match=rf"{DEMO_FILES[2].name}: missing"):
        locate_demo_data(folder, tmp_path / "cache")


def test_missing_data_dir(tmp_path: Path):
    with pytest.raises(DataUnavailableError, match="does not exist"):
        locate_demo_data(tmp_path / "nope", tmp_path / "cache")


def test_download_then_cache_without_request(hipe_dir: Path, tmp_path: Path, served: tuple[_Server, Path]):
    server, _ = served
    cache = tmp_path / "cache" / "commit"
    source, _ = resolve_demo_source(None, None, cache, download=True, base_url=server.url, console=_quiet())
    assert (source.kind, source.location) == ("hipe", cache)
    assert sorted(server.requests) == sorted(f"/{spec.url_path}" for spec in DEMO_FILES)
    for spec, path in zip(DEMO_FILES, demo_files(cache), strict=True):
        assert path.read_bytes() == (hipe_dir / spec.name).read_bytes()
    assert sorted(p.name for p in cache.iterdir()) == sorted(spec.name for spec in DEMO_FILES)

    server.requests.clear()
    assert locate_demo_data(None, cache, base_url=server.url, console=_quiet()) == cache
    assert server.requests == []


def test_only_missing_or_damaged_files_are_downloaded(hipe_dir: Path, tmp_path: Path, served: tuple[_Server, Path]):
    server, _ = served
    cache = _copy_flat(hipe_dir, tmp_path / "cache")
    (cache / DEMO_FILES[0].name).unlink()
    (cache / DEMO_FILES[2].name).write_text("damaged")
    locate_demo_data(None, cache, base_url=server.url, console=_quiet())
    assert server.requests == [f"/{DEMO_FILES[0].url_path}", f"/{DEMO_FILES[2].url_path}"]
    assert (cache / DEMO_FILES[2].name).read_bytes() == (hipe_dir / DEMO_FILES[2].name).read_bytes()


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
        resolve_demo_source(None, None, cache, download=True, base_url="http://127.0.0.1:9", console=_quiet())
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
