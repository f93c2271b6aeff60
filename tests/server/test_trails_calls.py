"""An assistant's runs in the web app (a search and a document read made as `tracerag mcp` makes them, beside the
agent's recorded run): the API's trail list says who asked each (`client`, None for the others), the trail list
page says "asked by …" under the question, and a call's page shows who asked, each argument, the document named
with its title and link, and the digest short. A client names itself: its name is data, escaped and with its
controls shown."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.trail import AGENT_TRAIL, recorded, small_collection
from tests.trail.assistant import CLIENT, DOC_ID, QUERY, assistant_runs, call
from tracerag.config import load_settings
from tracerag.mcp import models as m
from tracerag.server import ServerConfig, create_app
from tracerag.trail import read_trail, trails_by_run
from tracerag.trail.events import CallEvent

NAME = "collection"
HOSTILE_CLIENT = "mcp: <b>Evil</b>\u202egnp.exe 1.0"  # markup and a bidi override, as a client may name itself


@pytest.fixture(scope="module")
def used(tmp_path_factory, datasets_dir):
    path = tmp_path_factory.mktemp("web-calls") / NAME
    # without its trails: other tests place recorded runs in the shared collection's
    shutil.copytree(
        small_collection(tmp_path_factory, datasets_dir).path, path, ignore=shutil.ignore_patterns("trails")
    )
    agent = recorded(AGENT_TRAIL, path)
    runs = assistant_runs(path)
    _, hostile = call(path, "document", m.DocumentIn(doc_id="hostile-1"), client=HOSTILE_CLIENT)
    return path, agent.run_id, runs, hostile


@pytest.fixture(scope="module")
def client(used) -> Iterator[TestClient]:
    config = ServerConfig(collections=(used[0],), settings=load_settings())
    with TestClient(create_app(config), base_url="http://127.0.0.1") as c:
        yield c


def test_the_api_says_who_asked_each_run(used, client):
    _, agent_run, runs, hostile = used
    items = {i["run_id"]: i for i in client.get(f"/api/collections/{NAME}/trails").json()}
    assert items[agent_run]["client"] is None
    assert {items[r]["client"] for r in (runs.search, runs.document, runs.selection)} == {CLIENT}
    assert items[hostile]["client"] == HOSTILE_CLIENT  # the trail keeps what the client said; the page shows it
    document = items[runs.document]
    assert (document["kind"], document["status"]) == ("call", "answered")
    assert document["question"] == f'document doc_id="{DOC_ID}" max_chars=400'
    assert items[runs.search]["question"] == QUERY and items[runs.search]["kind"] == "search"
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]["TrailItem"]["properties"]["client"]
    assert "Model Context Protocol" in schema["description"]


def test_the_list_page_says_asked_by(used, client):
    _, agent_run, runs, _ = used
    page = client.get("/trails").text
    row = page[page.index(f">{runs.document}</a>") :].split("</tr>")[0]
    assert f'<span class="muted asked-by" dir="auto">asked by {CLIENT}</span>' in row
    assert '<td data-label="Kind">call</td>' in row and "answered" in row
    agent_row = page[page.index(f">{agent_run}</a>") :].split("</tr>")[0]
    assert "asked by" not in agent_row


def test_a_call_page_shows_who_asked_the_arguments_the_documents_and_the_digest(used, client):
    path, _, runs, _ = used
    (event,) = [e for e in read_trail(trails_by_run([path])[runs.document]) if isinstance(e, CallEvent)]
    page = client.get(f"/trails/{NAME}/{runs.document}").text
    assert f'<dt>Asked by</dt><dd class="asked-by" dir="auto">{CLIENT}</dd>' in page
    assert "<dd>call run</dd>" in page and "<dd>answered</dd>" in page
    assert "The assistant&#39;s call and what it got" in page
    assert '<dt>doc_id</dt><dd><code dir="auto">&#34;lpj-1881-a&#34;</code></dd>' in page
    assert '<dt>max_chars</dt><dd><code dir="auto">400</code></dd>' in page
    assert '<dt>start</dt><dd><code dir="auto">null</code></dd>' in page
    assert f"/collections/{NAME}/documents/{DOC_ID}" in page and "Le Salon de 1881" in page
    assert f"{event.digest[:12]}…</code>" in page
    assert f"tracerag mcp --replay {runs.document} -c DIR" in page
    assert "nothing to export" not in page  # a call has no ranking to export, nor is one missing
    search = client.get(f"/trails/{NAME}/{runs.search}").text
    assert f'<dt>Asked by</dt><dd class="asked-by" dir="auto">{CLIENT}</dd>' in search


def test_a_client_name_is_data(used, client):
    _, _, _, hostile = used
    for page in (client.get("/trails").text, client.get(f"/trails/{NAME}/{hostile}").text):
        assert "<b>Evil</b>" not in page and "\u202e" not in page
        assert "mcp: &lt;b&gt;Evil&lt;/b&gt;\\u202egnp.exe 1.0" in page
