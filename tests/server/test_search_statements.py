"""Only true statements (issue 25, item 5): each sentence the search page says about how a search was done is
read from what the search did, and each is tested by a pair: a search where it is said (and checked true against
the API's answer for the same search) and one where it would be false and is not said."""

from __future__ import annotations

import re
from html import unescape

from fastapi.testclient import TestClient

from tracerag.server.api.search import SearchAnswer
from tracerag.server.pages.search import statements


def said(client: TestClient, **params: str) -> list[str]:
    page = client.get("/", params=params)
    assert page.status_code == 200, page.text
    block = re.search(r'<ul class="search-statements[^"]*">(.*?)</ul>', page.text, flags=re.S)
    return [unescape(li) for li in re.findall(r"<li>(.*?)</li>", block.group(1), flags=re.S)] if block else []


def scores(client: TestClient, **params: str) -> list[float]:
    return [float(s) for s in re.findall(r"<span>score ([\d.]+)</span>", client.get("/", params=params).text)]


def api(client: TestClient, **body: object) -> dict:
    answer = client.post("/api/collections/newspapers/search", json=body)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_windows_are_said_only_when_the_results_were_balanced(client: TestClient) -> None:
    windowed = said(client, q="fire", k="8", windows="20y")
    assert "Balanced across time windows of 20y, not sorted by score." in windowed
    assert "Sorted by score." not in windowed
    truth = api(client, query="fire", k=8, windows="20y")
    assert truth["params"]["windows"] == "20y" and all(r["window"] for r in truth["results"])
    plain = said(client, q="fire", k="8")
    assert not any("time windows" in s for s in plain)  # said on every search before
    assert "Sorted by score." in plain
    found = scores(client, q="fire", k="8")
    assert len(found) > 1 and found == sorted(found, reverse=True)


def test_a_filter_is_said_only_when_one_was_applied(client: TestClient) -> None:
    limited = said(client, q="fire", corpus="letemps", language="fr", **{"from": "1880"})
    assert "Searched only: sub-corpora letemps; languages fr; dates 1880-01-01 to …." in limited
    assert not any(s.startswith("Searched only") for s in said(client, q="fire"))
    floor = said(client, q="fire", min_ocr="0.5")
    assert "Searched only: estimated OCR quality at least 0.5." in floor


def test_the_boolean_filter_count_is_the_searchs_own(client: TestClient) -> None:
    allowed = api(client, query="fire", filter="fire OR incendie")["expansion"]["allowed"]
    line = f"The boolean filter admitted {allowed:,} document{'' if allowed == 1 else 's'}."
    assert line in said(client, q="fire", filter="fire OR incendie")
    assert not any("boolean filter" in s for s in said(client, q="fire"))


def test_the_channels_said_are_those_that_found_something(client: TestClient) -> None:
    one = said(client, q="fire", channel="bm25")
    assert "Found by the channel bm25." in one and not any("found nothing" in s or "silent" in s for s in one)
    truth = api(client, query="fire harbour 1890", channels=["bm25", "date"])
    active = truth["params"]["active_channels"]
    both = said(client, q="fire harbour 1890", channel=["bm25", "date"])
    assert f"Found by the channels {', '.join(active)}." in both
    silent = said(client, q="fire harbour", channel=["bm25", "date"])  # no date in the query: date says so
    why = api(client, query="fire harbour", channels=["bm25", "date"])["params"]["channel_readings"]["date"]["why"]
    assert f"The date channel stayed silent: {why}." in silent and "Found by the channel bm25." in silent


def test_a_fallback_is_said_only_when_the_search_fell_back(client: TestClient) -> None:
    page = client.get("/", params={"q": "fire", "expand": "llm"}).text
    assert "llm variants: no language model is configured (--llm); searched without it" in unescape(page)
    assert "searched without it" not in client.get("/", params={"q": "fire"}).text


def test_added_words_and_variants_are_said_when_searched(client: TestClient) -> None:
    added = said(client, q="fire", add="incendie")
    truth = api(client, query="fire", add=["incendie"])["expansion"]["searched"]
    assert f"Searched as “{truth}” (with the words added)." in added and "incendie" in truth
    assert not any(s.startswith("Searched as") for s in said(client, q="fire"))
    # variants fused after windowing: the list is in fused order, and balancing is not claimed for it
    answer = SearchAnswer(**api(client, query="fire", k=5, windows="20y"))
    plain = statements(answer)
    assert "Balanced across time windows of 20y, not sorted by score." in plain
    assert not any(s.startswith("Also searched") for s in plain)
    variant = {"query": "blaze", "source": "vocab"}
    fused = statements(answer.model_copy(update={"expansion": {**(answer.expansion or {}), "variants": [variant]}}))
    assert "Also searched: “blaze” (vocab)" in fused
    assert not any(s.startswith("Balanced") for s in fused)
    assert any("then the queries' rankings fused: the results are in fused-score order" in s for s in fused)
