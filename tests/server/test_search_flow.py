"""No state change on a GET, and one path from a hit to a citation (issue 25, items 4 and 6): a search's address
records nothing, whoever opens it (a reload, a prefetch, another site's `<img>`); the page's form POST with the CSRF
token records it once and redirects to the address with its run; another site's form or fetch records nothing; a
result goes into its run's selection by a form (no JavaScript) and opens in the document view with the query's
words marked as BM25 matched them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi.testclient import TestClient

from tests.server.conftest import _documents
from tracerag.collection import Collection, trail_roots
from tracerag.config import Settings
from tracerag.research.selection import open_selections
from tracerag.server import ServerConfig, create_app
from tracerag.server.security import CSRF_COOKIE
from tracerag.trail import read_trail, trails_by_run
from tracerag.trail.events import ChannelEvent

NAME = "flow"


@pytest.fixture(scope="module")
def flow_dir(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory, server_settings: Settings) -> Path:
    """A collection these tests may write (trails, selections): the server tests' documents, lexical only."""
    path = tmp_path_factory.mktemp("flow") / NAME
    with Collection.open(path, server_settings, mode="write", create=True, embed_model="none") as col:
        col.ingest(_documents(hipe_dir), dense=False)
    return path


@pytest.fixture()
def flow(flow_dir: Path, server_settings: Settings) -> Iterator[TestClient]:
    app = create_app(ServerConfig(collections=(flow_dir,), settings=server_settings))
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def runs(path: Path, settings: Settings) -> set[str]:
    return set(trails_by_run(trail_roots(path, settings)))


def csrf(client: TestClient) -> str:
    client.get("/")  # the page sets the CSRF cookie
    return client.cookies[CSRF_COOKIE]


def post_search(client: TestClient, token: str, **fields: str) -> tuple[str, str]:
    """The page's form posted: (the address it redirects to, the run id in it)."""
    answer = client.post("/search", data={"csrf_token": token, "c": NAME, **fields}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    location = answer.headers["location"]
    return location, parse_qs(urlsplit(location).query).get("run", [""])[0]


def test_a_search_address_records_nothing(flow: TestClient, flow_dir: Path, server_settings: Settings) -> None:
    before = runs(flow_dir, server_settings)
    for _ in range(3):  # a reload, a prefetch, another site's <img src=".../?q=fire">
        page = flow.get("/", params={"q": "fire", "c": NAME})
        assert page.status_code == 200 and '<li class="result">' in page.text
        assert "Not in the trail" in page.text and "Record this search" in page.text
        assert "Add to selection" not in page.text  # a selection needs a recorded run
    flow.get("/", params={"q": "fire", "c": NAME}, headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "image"})
    assert runs(flow_dir, server_settings) == before


def test_the_posted_form_records_once_and_redirects_to_the_address(
    flow: TestClient, flow_dir: Path, server_settings: Settings
) -> None:
    token = csrf(flow)
    before = runs(flow_dir, server_settings)
    location, run_id = post_search(flow, token, q="harbour  fire", k="5", to="")
    assert run_id and runs(flow_dir, server_settings) == before | {run_id}
    assert location.startswith("/?") and "csrf_token" not in location and "to=" not in location
    page = flow.get(location)
    assert f"run {run_id}</a>" in page.text and f'href="/trails/{NAME}/{run_id}"' in page.text
    assert f'href="/review/{NAME}/{run_id}"' in page.text and "Add to selection" in page.text
    # the same search again (spaces aside): not recorded twice in a row, the same run answered
    again, same = post_search(flow, token, q="harbour fire", k="5")
    assert same == run_id and runs(flow_dir, server_settings) == before | {run_id}
    # another search is a new run; then the first one again is new too (not "in a row" any more)
    _, other = post_search(flow, token, q="harbour fire", k="6")
    _, third = post_search(flow, token, q="harbour fire", k="5")
    assert len({run_id, other, third}) == 3
    # the API records the same way
    api = flow.post(f"/api/collections/{NAME}/search", json={"query": "harbour fire", "k": 5}).json()
    assert api["run_id"] == third and api["repeated"] is True


def test_a_run_in_an_address_is_shown_only_for_its_own_search(
    flow: TestClient, flow_dir: Path, server_settings: Settings
) -> None:
    token = csrf(flow)
    _, run_id = post_search(flow, token, q="incendie", k="3")
    other = flow.get("/", params={"q": "incendie", "k": "4", "c": NAME, "run": run_id})
    assert run_id not in other.text and "Not in the trail" in other.text
    bogus = flow.get("/", params={"q": "incendie", "k": "3", "c": NAME, "run": "../../etc/passwd"})
    assert "passwd" not in bogus.text.split("<main", 1)[1].split('name="q"')[1]
    # a fresh server (no answer kept in memory) still knows the run from its trail, and searches again
    app = create_app(ServerConfig(collections=(flow_dir,), settings=server_settings))
    with TestClient(app, base_url="http://127.0.0.1") as fresh:
        page = fresh.get("/", params={"q": "incendie", "k": "3", "c": NAME, "run": run_id})
        assert f"run {run_id}</a>" in page.text


@pytest.mark.parametrize(
    "how",
    [
        {"data": {"q": "fire", "c": NAME}},  # another site's <form method=post>: no token, no SameSite cookie
        {"data": {"q": "fire", "c": NAME, "csrf_token": "guessed"}},
        {"data": {"q": "fire", "c": NAME}, "headers": {"Origin": "https://evil.example"}},
        {"content": b'{"q": "fire"}', "headers": {"Content-Type": "text/plain", "Origin": "https://evil.example"}},
    ],
)
def test_another_sites_form_or_fetch_records_nothing(flow_dir: Path, server_settings: Settings, how: dict) -> None:
    app = create_app(ServerConfig(collections=(flow_dir,), settings=server_settings))
    with TestClient(app, base_url="http://127.0.0.1") as stranger:  # a browser with no cookie of this server
        before = runs(flow_dir, server_settings)
        answer = stranger.post("/search", follow_redirects=False, **how)
        assert answer.status_code == 403, answer.text
        assert runs(flow_dir, server_settings) == before
        # a cross-site fetch to the API: refused by its Origin (and a JSON body would need a preflight)
        api = stranger.post(
            f"/api/collections/{NAME}/search", json={"query": "fire"}, headers={"Origin": "https://evil.example"}
        )
        assert api.status_code == 403 and runs(flow_dir, server_settings) == before


def test_a_result_goes_into_the_selection_by_a_form(
    flow: TestClient, flow_dir: Path, server_settings: Settings
) -> None:
    token = csrf(flow)
    location, run_id = post_search(flow, token, q="DESTRUCTIVE FIRE IN LONDON", k="3")
    page = flow.get(location).text
    pick = unescape(re.search(r'name="pick"\s+value="([^"]+)"', page).group(1))
    rank, doc_id = pick.split(":", 1)
    fields = {"csrf_token": token, "c": NAME, "q": "DESTRUCTIVE FIRE IN LONDON", "k": "3", "run": run_id, "pick": pick}
    added = flow.post("/search/select", data=fields, follow_redirects=False)
    assert added.status_code == 303 and added.headers["location"].endswith(f"run={run_id}#result-{rank}")
    with open_selections(flow_dir, server_settings) as store:
        assert [(e.doc_id, e.decision.value, e.run_id) for e in store.entries("DESTRUCTIVE FIRE IN LONDON")] == [
            (doc_id, "accepted", run_id)
        ]
    shown = flow.get(added.headers["location"]).text
    assert shown.count("In the selection") == 1
    refused = flow.post("/search/select", data={**fields, "csrf_token": "x"}, follow_redirects=False)
    assert refused.status_code == 403


def cited_text(html: str) -> str:
    """The cited span's text, its inner marks (the query's words) taken out."""
    after = html.split('<mark id="span" class="cited" tabindex="-1">', 1)[1]
    depth, out = 1, []
    for part in re.split(r"(</?mark[^>]*>)", after):
        if part.startswith("<mark"):
            depth += 1
        elif part == "</mark>":
            depth -= 1
            if depth == 0:
                break
        else:
            out.append(part)
    return unescape("".join(out))


def test_the_document_marks_the_querys_words_as_bm25_matched_them(client: TestClient) -> None:
    page = client.get("/", params={"q": "incendies", "k": "1", "language": "fr"}).text
    href = unescape(re.search(r'<a class="open-doc" href="([^"]+)"', page).group(1))
    assert "q=incendies" in href and href.endswith("#span")
    doc = client.get(href.split("#")[0]).text
    words = [unescape(w).lower() for w in re.findall(r'<mark class="word">([^<]+)</mark>', doc)]
    # folded and stemmed as BM25 matches: the plural asked, "incendie" found
    assert words and all(w.startswith("incendi") for w in words) and "incendie" in words
    assert f"{len(words)} match" in doc and "for “incendies”" in unescape(doc)
    back = unescape(re.search(r'<p class="crumbs"><a href="([^"]+)"', doc).group(1))
    assert parse_qs(urlsplit(back).query)["q"] == ["incendies"]
    # without a query, nothing but the cited span is marked
    plain = client.get(href.split("?")[0], params={"start": 0, "end": 10}).text
    assert 'class="word"' not in plain and "match" not in plain.split('id="doctext"')[0].split("Text")[-1]


def test_the_same_search_sent_twice_at_once_is_one_run(
    flow: TestClient, flow_dir: Path, server_settings: Settings
) -> None:
    """A double click: both requests check for a repeat before either is recorded, so both were recorded. The
    check and the record hold the request's lock (each request in its own thread, as the server runs them)."""
    before = runs(flow_dir, server_settings)
    body = {"query": "harbour fire at once", "k": 4}
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: flow.post(f"/api/collections/{NAME}/search", json=body).json(), range(4)))
    assert len({a["run_id"] for a in answers}) == 1 and sum(not a["repeated"] for a in answers) == 1
    assert len(runs(flow_dir, server_settings) - before) == 1


def test_the_trail_lists_each_document_once_with_its_chunks(
    flow: TestClient, flow_dir: Path, server_settings: Settings
) -> None:
    token = csrf(flow)
    _, run_id = post_search(flow, token, q="fire London harbour", k="10", channel="bm25")
    events = read_trail(trails_by_run(trail_roots(flow_dir, server_settings))[run_id])
    ranking = next(e for e in events if isinstance(e, ChannelEvent) and e.channel == "bm25").ranking
    ids = [d for d, _, _ in ranking]
    assert len(set(ids)) < len(ids)  # some document has several chunks among the hits: the case this is about
    page = flow.get(f"/trails/{NAME}/{run_id}").text
    line = re.search(r"channel</span> bm25.*?</p>", page, flags=re.S).group(0)
    assert f"→ {len(ids)} chunks of {len(set(ids))} documents" in line
    shown = re.findall(r"([^,>]+?) #(\d+)(?: \((\d+) chunks\))?(?:,|</span>)", line.split('class="muted hit-docs">')[1])
    docs = [unescape(d.strip()) for d, _, _ in shown]
    assert docs == list(dict.fromkeys(ids))[:5] and len(set(docs)) == len(docs)
    for doc, best, chunks in shown:
        doc = unescape(doc.strip())
        assert int(best) == ids.index(doc) + 1 and int(chunks or 1) == ids.count(doc)


def test_the_review_board_links_back_to_the_search_and_the_trail(
    flow: TestClient, flow_dir: Path, server_settings: Settings
) -> None:
    token = csrf(flow)
    location, run_id = post_search(flow, token, q="incendie", k="4", corpus="letemps")
    board = flow.get(f"/review/{NAME}/{run_id}").text
    search = unescape(re.search(r'<a class="search-link" href="([^"]+)"', board).group(1))
    assert parse_qs(urlsplit(search).query) == parse_qs(urlsplit(location).query)  # the page's own address
    assert f'<a class="run-link" href="/trails/{NAME}/{run_id}">' in board
    assert f"run {run_id}</a>" in flow.get(search).text  # and that address shows the recorded run
    # a run the web app did not record (the CLI's): the question searched again, no run claimed
    from tests.server.test_review import search_run

    cli = search_run(flow_dir, server_settings, "incendie", k=3, least=1)
    other = unescape(re.search(r'<a class="search-link" href="([^"]+)"', flow.get(f"/review/{NAME}/{cli}").text)[1])
    assert parse_qs(urlsplit(other).query) == {"c": [NAME], "q": ["incendie"]}
