"""The collections, search and document API through the real app, on the real fixture collection (HIPE-2022
newspapers in French, English and German, and the hostile letter): every filter honoured by every result, the
run in the trail, the channels and ranks, the keyword-in-context spans on the query's words, bad input refused
naming the field, documents by id (no id reaches a file)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.model import Document
from tracerag.retrieval.kwic import query_keys, term_key
from tracerag.server import ServerConfig, create_app
from tracerag.trail.reader import read_trail

SEARCH = "/api/collections/newspapers/search"


def search(client: TestClient, **body: object) -> dict:
    response = client.post(SEARCH, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_collections_are_listed_with_what_info_shows(client: TestClient) -> None:
    listed = client.get("/api/collections").json()
    assert [c["name"] for c in listed] == ["newspapers"]
    c = listed[0]
    assert c["documents"] == 61 and c["chunks"] >= c["documents"]
    assert set(c["languages"]) == {"fr", "en", "de"}
    assert c["date_min"] < "1830" < "1900" < c["date_max"]
    assert c["read_only"] is None
    assert sum(x["documents"] for x in c["corpora"]) == c["documents"]


def test_a_collection_has_its_sub_corpus_tree_and_ocr_summary(client: TestClient) -> None:
    info = client.get("/api/collections/newspapers").json()
    tree = {node["name"]: node for node in info["corpus_tree"]}
    assert set(tree) == {"letemps", "letters", "newseye", "topres19th"}
    assert tree["letemps"]["documents"] == 30 and tree["topres19th"]["documents"] == 20
    for node in tree.values():  # a parent counts what its children hold
        if node["children"]:
            assert node["documents"] == sum(child["documents"] for child in node["children"])
            assert all(child["name"].startswith(node["name"] + "/") for child in node["children"])
    assert sum(node["documents"] for node in tree.values()) == info["documents"]
    ocr = info["ocr_quality"]
    assert set(ocr) == {c["name"] for c in info["corpora"]}
    low, _, median, _, high = ocr["letemps/gdl"]["min_q1_median_q3_max"]
    assert 0 < low <= median <= high <= 1
    assert info["fusion"]["method"]


def test_an_unknown_collection_is_404_naming_the_served_ones(client: TestClient) -> None:
    response = client.get("/api/collections/elsewhere")
    assert response.status_code == 404
    assert "elsewhere" in response.json()["error"] and "newspapers" in response.json()["error"]
    assert client.post("/api/collections/elsewhere/search", json={"query": "fire"}).status_code == 404


@pytest.mark.parametrize(
    ("body", "holds"),
    [
        ({"query": "fire feu Feuer", "corpus": ["letemps"]}, lambda r: r["corpus"].startswith("letemps/")),
        ({"query": "fire", "corpus": ["topres19th/dorset-county-chronicle-etc"]}, lambda r: "dorset" in r["corpus"]),
        ({"query": "fire feu Feuer", "date_from": "1850", "date_to": "1899"}, lambda r: "1850" <= r["date"] < "1900"),
        ({"query": "fire feu Feuer", "language": ["de"]}, lambda r: r["language"] == "de"),
        ({"query": "the", "min_ocr": 0.9}, lambda r: r["ocr"]["score"] >= 0.9),
    ],
)
def test_every_result_satisfies_the_filter(client: TestClient, body: dict, holds) -> None:
    answer = search(client, **body)
    assert answer["results"], body
    assert all(holds(r) for r in answer["results"]), [
        (r["corpus"], r["date"], r["language"]) for r in answer["results"]
    ]
    unfiltered = search(client, query=body["query"], k=61)
    assert not all(holds(r) for r in unfiltered["results"])  # the filter had something to leave out


def test_the_search_is_a_run_in_the_trail(client: TestClient, server_collection: Path) -> None:
    answer = search(client, query="harbour fire", k=5)
    trail = server_collection / "trails" / f"{answer['run_id']}.jsonl"
    events = read_trail(trail)
    run = events[0]
    assert run.kind == "run" and run.question == "harbour fire" and run.config["command"] == "search"
    result = [e for e in events if e.kind == "result"][-1]
    assert [s.doc_id for s in result.ranking] == [r["doc_id"] for r in answer["results"]]


def test_results_say_which_channels_found_them_at_which_rank(client: TestClient) -> None:
    answer = search(client, query="harbour fire", k=5)
    assert answer["results"][0]["doc_id"] == "hostile-1"  # the one text holding both words, twice
    for r in answer["results"]:
        assert r["channels"] and all(
            c["rank"] >= 1 and c["channel"] in answer["params"]["channels"] for c in r["channels"]
        )
        assert 0 <= r["best_chunk"]["start"] < r["best_chunk"]["end"]
    only_bm25 = search(client, query="harbour fire", k=5, channels=["bm25"])
    assert {c["channel"] for r in only_bm25["results"] for c in r["channels"]} == {"bm25"}
    assert answer["channel_rankings"] is None
    explained = search(client, query="harbour fire", k=5, explain=True)
    assert explained["channel_rankings"]["bm25"][0]["doc_id"] == "hostile-1"


def test_kwic_spans_point_at_the_query_words(client: TestClient) -> None:
    answer = search(client, query="harbour fires", k=10)
    keys = query_keys(["harbour fires"], "en")
    marked = []
    for r in answer["results"]:
        kwic = r["kwic"]
        assert r["best_chunk"]["start"] <= kwic["start"] < kwic["end"] <= r["best_chunk"]["end"]
        assert kwic["text"] in r["best_chunk"]["text"]
        for start, end in kwic["spans"]:
            word = kwic["text"][start:end]
            assert term_key(word, r["language"]) in keys, word
            marked.append(word.lower())
    assert {"harbour", "fire"} <= set(marked)  # "fires" was asked: the index's stem finds "fire" too


def test_kwic_of_french_results_is_folded_and_stemmed(client: TestClient) -> None:
    answer = search(client, query="GENEVE", k=5, language=["fr"])
    words = {r["kwic"]["text"][s:e] for r in answer["results"] for s, e in r["kwic"]["spans"]}
    assert "Genève" in words  # no accent and upper case in the query, as the index folds them


def test_the_time_windows_table_counts_the_results(client: TestClient) -> None:
    answer = search(client, query="fire feu Feuer", k=10, windows="20y")
    windows = answer["time_windows"]
    assert windows["window"] == "20y"
    assert sum(row["results"] for row in windows["rows"]) == len(answer["results"])
    assert sum(row["documents"] for row in windows["rows"]) == windows["searched"]
    assert all(r["window"] for r in answer["results"])


def test_additions_and_synonyms_are_searched_and_marked(client: TestClient) -> None:
    answer = search(client, query="harbour", synonyms="harbour\tflames\n", add=["council"], k=3)
    assert "flames" in answer["expansion"]["searched"] and "council" in answer["expansion"]["searched"]
    hostile = next(r for r in answer["results"] if r["doc_id"] == "hostile-1")
    words = {hostile["kwic"]["text"][s:e] for s, e in hostile["kwic"]["spans"]}
    assert {"harbour", "flames", "council"} <= words


def test_llm_variants_without_a_model_are_a_failure_said_not_an_error(client: TestClient) -> None:
    answer = search(client, query="harbour fire", expand=["llm"], k=3)
    assert answer["results"] and any("no language model" in f for f in answer["failures"])


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        ({"query": "fire", "date_from": "1900", "date_to": "1890"}, 400, "date_from 1900 is after date_to 1890"),
        ({"query": "fire", "date_from": "18x7"}, 422, "date_from"),
        ({"query": "fire", "channels": ["bm25", "smell"]}, 422, "channels.1"),
        ({"query": "fire", "expand": ["thesaurus"]}, 422, "expand.0"),
        ({"query": "fire", "filter": "fire AND ("}, 400, "filter: at character"),
        ({"query": "fire", "windows": "decade"}, 422, "windows"),
        ({"query": "fire", "k": 0}, 422, "k"),
        ({"query": "fire", "min_ocr": 1.5}, 422, "min_ocr"),
        ({"query": ""}, 422, "query"),
        ({"query": "fire", "colour": "red"}, 422, "colour"),
        ({"query": "fire", "synonyms": "harbour only\n"}, 400, "synonyms:1"),
        ({"query": "fire", "fields": {"genre": "x"}}, 400, "fields: no document"),
        ({"query": "fire", "fields": {'shelf "B"': "x"}}, 400, "fields: the key 'shelf \"B\"' cannot be filtered on"),
        ({"query": "fire", "iiif_base": "javascript:alert(1)"}, 400, "iiif_base"),
    ],
)
def test_bad_input_is_refused_naming_the_field(client: TestClient, body: dict, status: int, said: str) -> None:
    response = client.post(SEARCH, json=body)
    assert response.status_code == status, response.text
    error = response.json()
    assert said in error["error"], error
    if status == 422:
        assert error["field"].split(".")[0] == said.split(".")[0]


def test_a_document_with_its_cited_span(client: TestClient) -> None:
    hit = search(client, query="DESTRUCTIVE FIRE IN LONDON", k=1)["results"][0]
    start, end = hit["best_chunk"]["start"], hit["best_chunk"]["end"]
    doc = client.get(f"/api/collections/newspapers/documents/{hit['doc_id']}", params={"start": start, "end": end})
    assert doc.status_code == 200, doc.text
    view = doc.json()
    assert view["span"]["text"] == view["text"][start:end] == hit["best_chunk"]["text"]
    assert view["corpus"] == hit["corpus"] and view["date"] == hit["date"]
    assert view["ocr"]["score"] == hit["ocr"]["score"]
    assert view["source"]["publication"] and "entities" not in view["source"]  # plain values only
    assert view["regions"] == [] and "no page regions" in view["regions_note"]
    assert client.get(f"/api/collections/newspapers/documents/{hit['doc_id']}").json()["span"] is None


def test_a_span_outside_the_text_is_refused(client: TestClient) -> None:
    response = client.get("/api/collections/newspapers/documents/hostile-1", params={"start": 10, "end": 10_000})
    assert response.status_code == 400 and "start/end" in response.json()["error"]
    response = client.get("/api/collections/newspapers/documents/hostile-1", params={"start": -1})
    assert response.status_code == 422 and response.json()["field"] == "start"


def test_the_hostile_source_link_is_not_offered(client: TestClient) -> None:
    view = client.get("/api/collections/newspapers/documents/hostile-1").json()
    assert view["source"]["url"].startswith("javascript:")  # kept as data
    assert view["source_url"] is None  # never offered as a link
    hit = next(r for r in search(client, query="harbour")["results"] if r["doc_id"] == "hostile-1")
    assert hit["source_url"] is None


@pytest.fixture(scope="module")
def odd_ids(tmp_path_factory: pytest.TempPathFactory, server_settings: Settings) -> TestClient:
    """A collection whose document ids hold "/", "#", spaces and dots, one of them the name of its own manifest."""
    path = tmp_path_factory.mktemp("odd") / "odd"
    docs = [
        Document(id="a/b#1 c", corpus="x", title="slash hash space", date="1901", language="en", text="A fire."),
        Document(id="../collection.toml", corpus="x", title="dots", date="1902", language="en", text="A flood."),
    ]
    with Collection.open(path, server_settings, mode="write", create=True, embed_model="none") as col:
        col.ingest(docs, dense=False)
    with TestClient(create_app(ServerConfig((path,), server_settings)), base_url="http://127.0.0.1") as c:
        yield c


def test_document_ids_are_looked_up_never_used_as_paths(odd_ids: TestClient) -> None:
    from urllib.parse import quote

    base = "/api/collections/odd/documents/"
    view = odd_ids.get(base + quote("a/b#1 c", safe=""))
    assert view.status_code == 200 and view.json()["doc_id"] == "a/b#1 c"
    dots = odd_ids.get(base + quote("../collection.toml", safe=""))
    assert dots.status_code == 200 and dots.json()["text"] == "A flood."  # the document, not the file
    for probe in ("collection.toml", "%2E%2E%2Fstore.sqlite", "..%2F..%2Fetc%2Fpasswd", "a"):
        response = odd_ids.get(base + probe)
        assert response.status_code == 404, probe
        assert "not in collection" in response.json()["error"]


def test_a_window_whose_documents_were_not_counted_yet_has_no_ratio() -> None:
    """During an ingest a search can find documents written but not yet committed, which the document counts leave
    out: their window has results and no documents. Its ratio is null in the API and a dash on the page."""
    from tracerag.retrieval.window_share import shares
    from tracerag.server.api.search import TimeWindows
    from tracerag.server.app import templates
    from tracerag.server.pages.search import window_chart

    counted = shares([1890, 1910], {1890: 4}, years=10).to_dict()
    windows = TimeWindows(**counted)
    assert [(r.window, r.ratio) for r in windows.rows] == [("1890-1899", 0.5), ("1910-1919", None)]
    html = templates().get_template("search_windows.html").render(chart=window_chart(windows))
    assert "<td>1910-1919</td><td>1</td><td>0</td><td>–</td>" in html
