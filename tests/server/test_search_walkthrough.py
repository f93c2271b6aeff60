"""The new-user walk-through's fixes on the search page and under it: errors in the form's words, an unknown
sub-corpus or language said, one title for a document on every page, the document's language on its text."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tracerag.collection import Collection
from tracerag.errors import TraceError
from tracerag.model import Filter
from tracerag.retrieval.search_filter import CLI_NAMES, check_scope
from tracerag.text import document_title


def test_page_errors_name_the_forms_labels(client: TestClient) -> None:
    page = client.get("/", params={"q": "fire", "from": "1900", "to": "1890"})
    assert "From 1900 is after To 1890" in page.text
    assert "date_from" not in page.text.split("<main", 1)[1].split("</form>", 1)[0].split('name="from"')[0]
    page = client.get("/", params={"q": "fire", "k": "0"})
    assert "Results: Input should be greater than or equal to 1" in page.text
    page = client.get("/", params={"q": "fire", "channel": "nosuch"})
    assert "Channels: Input should be" in page.text and "channels.0" not in page.text


def test_no_value_error_prefix_reaches_a_user(client: TestClient) -> None:
    api = client.post("/api/collections/newspapers/search", json={"query": "fire", "date_from": "18x0"})
    page = client.get("/", params={"q": "fire", "from": "18x0"})
    for said in (api.text, page.text):
        assert "Value error" not in said


def test_boolean_filter_error_keeps_its_caret_in_a_pre(client: TestClient) -> None:
    page = client.get("/", params={"q": "fire", "filter": "fire AND (water"})
    assert '<pre class="error error-block"' in page.text


def test_unknown_corpus_or_language_is_an_error_naming_the_known(client: TestClient) -> None:
    said = client.post("/api/collections/newspapers/search", json={"query": "fire", "corpus": ["nosuch"]})
    assert said.status_code == 400 and "'nosuch'" in said.json()["error"] and "letemps" in said.json()["error"]
    said = client.post("/api/collections/newspapers/search", json={"query": "fire", "language": ["xx"]})
    assert said.status_code == 400 and "fr" in said.json()["error"]
    parent = client.post("/api/collections/newspapers/search", json={"query": "la", "corpus": ["letemps"]})
    assert parent.status_code == 200 and parent.json()["results"]


def test_check_scope_names_the_cli_option(server_collection, server_settings) -> None:
    with Collection.open(server_collection, server_settings, mode="read") as col:
        with pytest.raises(TraceError, match="--corpus: no sub-corpus 'nosuch'"):
            check_scope(col, Filter(corpora=("nosuch",)), CLI_NAMES)
        check_scope(col, Filter(corpora=("letemps",)), CLI_NAMES)  # a parent admits its children


def test_one_title_everywhere() -> None:
    assert document_title("  A  title ", "text", "d1") == ("A title", "document")
    assert document_title(None, "PORTLAND. Serious Accident.", "d1") == ("PORTLAND. Serious Accident.", "text")
    assert document_title("", "", "d1") == ("d1", "doc_id")


def test_search_results_show_the_derived_title_and_language(client: TestClient) -> None:
    said = client.post("/api/collections/newspapers/search", json={"query": "la", "k": 20}).json()
    untitled = [r for r in said["results"] if r["title_source"] == "text"]
    assert untitled and all(r["title"] != r["doc_id"] for r in untitled)
    page = client.get("/", params={"q": "la", "k": "20"})
    assert 'class="kwic" lang="' in page.text
