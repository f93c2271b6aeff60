"""The app behind a real uvicorn on 127.0.0.1 (real sockets, HTTP/1.1 as a browser speaks it): API calls, the
guards as a client meets them, and an ingest job's server-sent events streamed as they happen, resumed with
Last-Event-ID."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import httpx
import pytest

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.ingest import read_documents
from tracerag.model import Document
from tracerag.server import ServerConfig
from tracerag.server.security import CSP

from .conftest import LiveServer

UPLOADS = ("HIPE-2022-v2.1-hipe2020-train-de.tsv", "HIPE-2022-v2.1-letemps-test-fr.tsv")  # ~0.7 M characters


def test_api_calls_through_uvicorn(live_server: LiveServer) -> None:
    with httpx.Client(base_url=live_server.url, timeout=30) as http:
        health = http.get("/api/health")
        assert health.status_code == 200 and health.json()["collections"] == ["newspapers"]
        assert health.headers["content-security-policy"] == CSP
        found = http.post("/api/collections/newspapers/search", json={"query": "harbour fire council", "k": 5})
        assert found.status_code == 200 and found.json()["results"][0]["doc_id"] == "hostile-1"
        missing = http.get("/api/jobs/none-such")
        assert missing.status_code == 404 and missing.json()["error"].startswith("job 'none-such'")
        assert http.get("/api/health", headers={"Host": "rebound.example"}).status_code == 421
        schema = http.get("/api/openapi.json").json()
        assert schema["info"]["title"] == "TRACE" and "/api/health" in schema["paths"]


@pytest.fixture()
def writable(hipe_dir: Path, tmp_path: Path, server_settings: Settings) -> Iterator[LiveServer]:
    """A live server on a collection of this test's own (an ingest writes it)."""
    path = tmp_path / "gazettes"
    docs = (
        d for d in read_documents(hipe_dir / "HIPE-2022-v2.1-letemps-dev-fr.tsv", "hipe") if isinstance(d, Document)
    )
    with Collection.open(path, server_settings, mode="write", create=True, embed_model="none") as col:
        col.ingest(list(islice(docs, 3)), dense=False)
    with LiveServer(ServerConfig(collections=(path,), settings=server_settings)) as live:
        yield live


def _stream(http: httpx.Client, job_id: str, **headers: str) -> Iterator[tuple[float, dict[str, Any]]]:
    """(when received, event) for each event of the stream, as it arrives."""
    with http.stream("GET", f"/api/jobs/{job_id}/events", headers=headers) as stream:
        assert stream.status_code == 200 and stream.headers["content-type"].startswith("text/event-stream")
        for line in stream.iter_lines():
            if line.startswith("data: "):
                yield time.time(), json.loads(line[6:])


def test_an_ingest_job_s_events_stream_as_they_happen(writable: LiveServer, hipe_dir: Path) -> None:
    with httpx.Client(base_url=writable.url, timeout=120) as http:
        # the page's way: a FormData upload with the CSRF header echoing its cookie
        csrf = http.get("/api/health").cookies["tracerag_csrf"]
        files = [("files", (name, (hipe_dir / name).read_bytes())) for name in UPLOADS]
        started = http.post(
            "/api/collections/gazettes/ingest", files=files, data={"dense": "false"}, headers={"X-CSRF-Token": csrf}
        )
        assert started.status_code == 202, started.text
        job_id = started.json()["id"]

        received = list(_stream(http, job_id))
        events = [event for _, event in received]
        assert events[-1]["kind"] == "end" and events[-1]["status"] == "done"
        assert [e["seq"] for e in events] == list(range(len(events)))
        # streamed, not buffered to the end: the first events reached the client well before the job ended
        first_progress = next(when for when, e in received if e["kind"] in ("open", "progress"))
        ended = events[-1]["time"]
        assert first_progress < ended - 0.5, (first_progress, ended)

        # a client that reconnects says the last event it had, and gets only the ones after it
        resumed = [e for _, e in _stream(http, job_id, **{"Last-Event-ID": "2"})]
        assert [e["seq"] for e in resumed] == list(range(3, len(events)))
        assert [e["seq"] for _, e in _stream(http, job_id)] == list(range(len(events)))
        # one that says a number past the end is told it is over (the end again), not kept waiting
        begun = time.monotonic()
        assert [e for _, e in _stream(http, job_id, **{"Last-Event-ID": "999"})] == [events[-1]]
        assert time.monotonic() - begun < 5
        assert [e["seq"] for _, e in _stream(http, job_id, **{"Last-Event-ID": "-7"})][:1] == [0]

        report = http.get(f"/api/jobs/{job_id}").json()["result"]
        assert report["added"] == 154 and report["skipped"] == 0
        found = http.post("/api/collections/gazettes/search", json={"query": "Staatskleidung Gesetzgeber", "k": 5})
        assert found.status_code == 200
        assert any(r["doc_id"].startswith("NZZ-1798") for r in found.json()["results"])
