"""`tracerag serve` and `tracerag demo --serve` as a user runs them: a subprocess on port 0 that prints the address
it really listens on (with the token when one is asked), answers /api/health, and stops on SIGINT or SIGTERM with
exit code 0."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import httpx
import pytest

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.ingest import read_documents
from tracerag.model import Document

START_S = 90  # a cold start imports the library and opens the collection; a loaded machine is slower


class Served:
    """A `tracerag` command in a subprocess, its output read line by line as it comes."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tracerag.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        self._drained = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, pattern: str, timeout: float = START_S) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                self._drained = True
                break
            self.output.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        self.stop(signal.SIGKILL)
        raise AssertionError(f"no {pattern!r} in the output:\n{''.join(self.output)}")

    def stop(self, how: int = signal.SIGINT) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(how)
        code = self.proc.wait(60)
        while not self._drained:
            line = self.lines.get(timeout=10)
            if line is None:
                self._drained = True
            else:
                self.output.append(line)
        return code


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The subprocess's environment: a private cache, and no settings file of the developer's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACERAG_") or k == "TRACERAG_DATASETS"}
    env["TRACERAG_CACHE_DIR"] = str(tmp_path_factory.mktemp("serve-cache"))
    return env


@pytest.fixture(scope="module")
def small(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory, server_settings: Settings) -> Path:
    path = tmp_path_factory.mktemp("serve") / "gazettes"
    docs = (
        d for d in read_documents(hipe_dir / "HIPE-2022-v2.1-letemps-dev-fr.tsv", "hipe") if isinstance(d, Document)
    )
    with Collection.open(path, server_settings, mode="write", create=True, embed_model="none") as col:
        col.ingest(list(islice(docs, 5)), dense=False)
    return path


@pytest.fixture()
def serving(small: Path, env: dict[str, str]) -> Iterator[tuple[Served, str]]:
    served = Served(["serve", "-c", str(small), "--port", "0"], env)
    url = served.wait_for(r"at (http://\S+)").group(1)
    yield served, url
    served.stop(signal.SIGKILL)


def test_serve_prints_the_address_it_listens_on_and_stops_on_ctrl_c(serving: tuple[Served, str]) -> None:
    served, url = serving
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url) and not url.endswith(":0/")
    health = httpx.get(url + "api/health", timeout=30)
    assert health.status_code == 200
    assert health.json()["collections"] == ["gazettes"] and health.json()["status"] == "ok"
    # on loopback, another host name is refused (a DNS-rebinding page)
    assert httpx.get(url + "api/health", headers={"Host": "evil.example"}, timeout=30).status_code == 421
    assert served.stop(signal.SIGINT) == 0, "".join(served.output)
    assert "stopped" in "".join(served.output)


def test_serve_stops_on_sigterm_with_exit_code_0(serving: tuple[Served, str]) -> None:
    served, url = serving
    assert httpx.get(url + "api/health", timeout=30).status_code == 200
    assert served.stop(signal.SIGTERM) == 0, "".join(served.output)


def test_beyond_loopback_a_token_is_made_and_shown_once(small: Path, env: dict[str, str]) -> None:
    # 127.0.0.2 is a loopback address but not one of the loopback names: the server counts it as opened beyond
    # loopback (as 0.0.0.0), and this test listens on no outside interface
    served = Served(["serve", "-c", str(small), "--host", "127.0.0.2", "--port", "0"], env)
    try:
        url = served.wait_for(r"at (http://\S+)").group(1)
        served.wait_for("Ctrl-C")
        found = re.fullmatch(r"(http://127\.0\.0\.2:\d+/)\?token=([\w-]{24,})", url)
        assert found, url
        base, token = found.groups()
        assert httpx.get(base + "api/health", timeout=30).status_code == 401
        assert (
            httpx.get(base + "api/health", headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code == 200
        )
        opened = httpx.get(url, timeout=30, follow_redirects=False)
        assert opened.status_code == 303 and token not in opened.headers["location"]
        assert served.stop() == 0
        assert "".join(served.output).count(token) == 1
    finally:
        served.stop(signal.SIGKILL)


def test_a_given_token_is_asked_on_loopback_too(small: Path, env: dict[str, str]) -> None:
    served = Served(["serve", "-c", str(small), "--port", "0"], {**env, "TRACERAG_TOKEN": "given-token-1234"})
    try:
        url = served.wait_for(r"at (http://\S+)").group(1)
        assert url.endswith("/?token=given-token-1234")
        base = url.split("?")[0]
        assert httpx.get(base + "api/health", timeout=30).status_code == 401
        assert httpx.get(base + "api/health?token=given-token-1234", timeout=30).status_code == 401
        bearer = {"Authorization": "Bearer given-token-1234"}
        assert httpx.get(base + "api/health", headers=bearer, timeout=30).status_code == 200
        served.wait_for("Authorization: Bearer TOKEN")
    finally:
        assert served.stop() == 0


def test_what_serve_refuses(small: Path, tmp_path: Path, env: dict[str, str]) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "tracerag.cli", "serve", *args], capture_output=True, text=True, env=env, timeout=120
        )
        done.stderr = " ".join(done.stderr.split())  # as one line, whatever the console wrapped
        return done

    nothing = run()
    assert nothing.returncode == 2 and "nothing to serve" in nothing.stderr
    not_one = run("-c", str(tmp_path))
    assert not_one.returncode == 2 and "not a TRACE collection" in not_one.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        in_use = run("-c", str(small), "--port", str(port))
    assert in_use.returncode == 2 and f"--port {port}: cannot listen there" in in_use.stderr


def test_demo_serve_opens_the_demo_collection(tmp_path: Path, env: dict[str, str]) -> None:
    target = tmp_path / "demo"
    served = Served(["demo", "--no-dense", "--per-file", "3", "-c", str(target), "--serve", "--port", "0"], env)
    try:
        url = served.wait_for(r"at (http://127\.0\.0\.1:\d+/)", timeout=240).group(1)
        health = httpx.get(url + "api/health", timeout=30).json()
        assert health["collections"] == ["demo"]
        assert "collection kept in" in "".join(served.output)  # the demo ran first
    finally:
        assert served.stop() == 0, "".join(served.output)
    alone = subprocess.run(
        [sys.executable, "-m", "tracerag.cli", "demo", "--port", "0"], capture_output=True, text=True, env=env
    )
    assert alone.returncode == 2 and "with --serve" in alone.stderr


def test_what_serve_refuses_of_a_catalog_and_a_collection_given_twice(small: Path, env: dict[str, str]) -> None:
    # a collection folder is no catalog: said at start-up, not at the first chat request
    done = subprocess.run(
        [sys.executable, "-m", "tracerag.cli", "serve", "-c", str(small), "--catalog", str(small)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2 and "not a catalog" in " ".join(done.stderr.split())
    served = Served(["serve", "-c", str(small), "-c", f"{small}/", "--port", "0"], env)
    try:
        url = served.wait_for(r"at (http://\S+)").group(1)
        assert httpx.get(url + "api/health", timeout=30).json()["collections"] == ["gazettes"]
    finally:
        assert served.stop() == 0


def test_ctrl_c_ends_the_event_streams_and_says_which_job_it_cut_off(
    hipe_dir: Path, tmp_path: Path, env: dict[str, str], server_settings: Settings
) -> None:
    """A page following a job must not hold the stop up (it did for uvicorn's whole graceful timeout, then was
    cancelled with a traceback), and an ingest the stop cuts off is named, with what to do."""
    target = tmp_path / "growing"
    texts = [
        d.text
        for d in read_documents(hipe_dir / "HIPE-2022-v2.1-letemps-dev-fr.tsv", "hipe")
        if isinstance(d, Document)
    ]
    with Collection.open(target, server_settings, mode="write", create=True, embed_model="none") as col:
        col.ingest([Document("seed", texts[0], language="fr")], dense=False)
    upload = tmp_path / "many.jsonl"
    with upload.open("w", encoding="utf-8") as out:
        for i in range(4000):
            out.write(json.dumps({"id": f"d{i}", "text": texts[i % len(texts)], "language": "fr"}) + "\n")
    served = Served(["serve", "-c", str(target), "--port", "0"], env)
    try:
        url = served.wait_for(r"at (http://\S+)").group(1)
        with upload.open("rb") as fh:
            started = httpx.post(
                url + "api/collections/growing/ingest",
                files={"files": ("many.jsonl", fh, "application/x-ndjson")},
                data={"dense": "false"},
                headers={"Authorization": "Bearer any"},  # a script, not a page: no CSRF header needed
                timeout=60,
            )
        assert started.status_code == 202, started.text
        job = started.json()["id"]
        kinds: list[str] = []

        def follow() -> None:
            with httpx.stream("GET", url + f"api/jobs/{job}/events", timeout=60) as stream:
                for line in stream.iter_lines():
                    if line.startswith("data: "):
                        kinds.append(json.loads(line[6:])["kind"])

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        deadline = time.monotonic() + 60
        while "progress" not in kinds and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "progress" in kinds and "end" not in kinds, kinds
        asked = time.monotonic()
        assert served.stop(signal.SIGINT) == 0, "".join(served.output)
        took = time.monotonic() - asked
        follower.join(10)
        output = "".join(served.output)
        assert took < 4.5, (took, output)  # uvicorn's graceful timeout is 5 s: nothing waited for it
        assert "Traceback" not in output and "ERROR" not in output, output
        assert kinds[-1] == "stopping", kinds
        assert re.search(rf"job {job} \(ingest into growing\) was cut off at \d+ of 4000", output), output
    finally:
        served.stop(signal.SIGKILL)
