"""The web app's fixtures: a small real collection (HIPE-2022 newspapers in French, English and German, and one
hostile document whose text, title and source are markup and script), the real Miami 211 catalog, the app built
on them, a live uvicorn on 127.0.0.1, and a headless Chromium (tests/server/browser.py)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.built_once import private_copy
from tracerag.catalog.ingest import build_catalog
from tracerag.collection import Collection
from tracerag.config import Settings, load_settings
from tracerag.ingest import read_documents
from tracerag.model import Document
from tracerag.server import ServerConfig, create_app

HERE = Path(__file__).parent
HOSTILE = HERE / "fixtures" / "hostile.jsonl"
# (file, documents taken): real OCR'd newspapers, three languages, three sub-corpora
HIPE_FILES = (
    ("HIPE-2022-v2.1-letemps-dev-fr.tsv", 30),
    ("HIPE-2022-v2.1-topres19th-dev-en.tsv", 20),
    ("HIPE-2022-v2.1-newseye-dev-de.tsv", 10),
)


def _documents(hipe_dir: Path) -> Iterator[Document]:
    for name, n in HIPE_FILES:
        docs = (d for d in read_documents(hipe_dir / name, "hipe") if isinstance(d, Document))
        yield from islice(docs, n)
    yield from (d for d in read_documents(HOSTILE, "jsonl") if isinstance(d, Document))


@pytest.fixture(scope="session")
def server_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    # a private cache (vocabulary models, copies) and no rate limit worth the name: tests make many requests
    return load_settings(cache_dir=str(tmp_path_factory.mktemp("cache")), server={"rate_per_minute": 100_000})


@pytest.fixture(scope="session")
def server_collection(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory, server_settings: Settings) -> Path:
    """~60 real newspaper documents and the hostile one, lexical channels (no vectors: ~5 s). Tests must not
    change it; a test that writes makes its own. Built once per run, each pytest-xdist worker serving a copy."""

    def build(path: Path) -> None:
        with Collection.open(path, server_settings, mode="write", create=True, embed_model="none") as col:
            report = col.ingest(_documents(hipe_dir), dense=False)
        assert report.added > 50 and not report.skipped

    return private_copy(tmp_path_factory, "served", "newspapers", build)[0]


@pytest.fixture(scope="session")
def server_catalog(datasets_dir: Path, tmp_path_factory: pytest.TempPathFactory, server_settings: Settings) -> Path:
    def build(target: Path) -> None:
        build_catalog(datasets_dir / "miami211", target, server_settings, dense=False)

    return private_copy(tmp_path_factory, "served-catalog", "miami", build)[0]  # once per run, as above


@pytest.fixture(scope="session")
def server_config(server_collection: Path, server_catalog: Path, server_settings: Settings) -> ServerConfig:
    return ServerConfig(collections=(server_collection,), settings=server_settings, catalog=server_catalog)


@pytest.fixture()
def client(server_config: ServerConfig) -> Iterator[TestClient]:
    """The real app in-process (httpx through the ASGI app), as a browser on 127.0.0.1 would reach it."""
    with TestClient(create_app(server_config), base_url="http://127.0.0.1") as c:
        yield c


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """uvicorn serving `config` on 127.0.0.1 in a thread of the test process."""

    def __init__(self, config: ServerConfig):
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = create_app(config)
        self.server = uvicorn.Server(
            uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(15)


@pytest.fixture(scope="session")
def live_server(server_config: ServerConfig) -> Iterator[LiveServer]:
    with LiveServer(server_config) as live:
        yield live
