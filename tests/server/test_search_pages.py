"""The search page and the document view, as HTML from the real app (the browser tests are in
test_search_browser.py): the address is the search, results show the marked words and the channels, filters
stay as chosen, a bad option is said beside the form, and the hostile document is text wherever it shows."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import quote

from fastapi.testclient import TestClient

from tests.server.test_search_flow import cited_text
from tracerag.retrieval.kwic import query_keys, term_key


def marks(html: str) -> list[str]:
    return [unescape(m) for m in re.findall(r"<mark>(.*?)</mark>", html, flags=re.S)]


def test_the_address_is_the_search(client: TestClient) -> None:
    page = client.get("/", params=[("q", "harbour fire"), ("corpus", "topres19th"), ("from", "1820"), ("to", "1869")])
    assert page.status_code == 200
    html = page.text
    results = re.findall(r'<li class="result">.*?</li>', html, flags=re.S)
    assert results
    for item in results:  # each result in the corpus and the dates asked
        meta = re.search(r'<p class="meta">(.*?)</p>', item, flags=re.S).group(1)
        date = re.search(r"<span>(\d{4})", meta).group(1)
        assert "topres19th/" in meta and 1820 <= int(date) <= 1869, meta
    keys = query_keys(["harbour fire"], "en")
    words = marks(html)
    assert words and all(term_key(w, "en") in keys for w in words)
    assert re.search(r'<span class="chip"[^>]*>bm25 #\d+</span>', html)
    # the form keeps what was asked
    assert re.search(r'value="topres19th" id="[^"]+" checked', html)
    assert 'id="from" name="from" value="1820"' in html and 'value="harbour fire"' in html


def test_the_page_without_a_query_shows_the_filters(client: TestClient) -> None:
    html = client.get("/").text
    assert "<mark>" not in html and 'class="result"' not in html
    for corpus in ("letemps", "letemps/gdl", "newseye/aze", "topres19th"):
        assert f'value="{corpus}"' in html
    for channel in ("bm25", "dense", "date", "phrase", "entity"):
        assert f'id="channel-{channel}"' in html
    assert 'aria-current="page">Search' in html


def test_a_bad_option_is_said_beside_the_form(client: TestClient) -> None:
    page = client.get("/", params={"q": "fire", "from": "1900", "to": "1890"})
    assert page.status_code == 400
    assert "From 1900 is after To 1890" in unescape(page.text) and 'value="fire"' in page.text
    page = client.get("/", params={"q": "fire", "windows": "decade"})
    assert page.status_code == 422 and 'role="alert"' in page.text
    assert re.search(r'<input[^>]*id="windows"[^>]*value="decade"[^>]*aria-invalid="true"', page.text)


def test_the_windows_chart_is_drawn_with_attributes_not_styles(client: TestClient) -> None:
    html = client.get("/", params={"q": "fire feu Feuer", "windows": "20y", "k": "10"}).text
    bars = re.findall(r'<rect x="\d+" y="\d+" width="([\d.]+)" height="10" class="bar-results">', html)
    assert len(bars) >= 3 and any(float(w) > 0 for w in bars)
    assert "style=" not in html


def test_the_hostile_document_is_text_in_results_and_document(client: TestClient) -> None:
    html = client.get("/", params={"q": "harbour fire"}).text
    assert "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt; A letter" in html
    assert "&lt;script&gt;alert(&#39;text&#39;)&lt;/script&gt;" in html
    assert "<script>alert" not in html and "<img" not in html and '<a href="javascript' not in html
    doc = client.get("/collections/newspapers/documents/hostile-1", params={"start": 13, "end": 64}).text
    assert (
        '<mark id="span" class="cited" tabindex="-1">the harbour fire of March spread to the warehouses.</mark>' in doc
    )
    assert "<script>alert" not in doc and 'href="javascript:' not in doc.lower()
    assert "javascript:alert(&#39;source&#39;)" in doc  # shown as text
    scripts = re.findall(r"<script[^>]*>", doc)
    assert scripts and all(re.fullmatch(r'<script src="/static/[\w.]+" defer>', s) for s in scripts)


def test_a_result_links_to_its_span_in_the_document(client: TestClient) -> None:
    html = client.get("/", params={"q": "DESTRUCTIVE FIRE IN LONDON", "k": "1"}).text
    href = unescape(re.search(r'<h3[^>]*><a href="([^"]+)">', html).group(1))
    assert href.startswith("/collections/newspapers/documents/") and href.endswith("#span")
    doc = client.get(href.split("#")[0])
    assert doc.status_code == 200
    cited = cited_text(doc.text)
    assert cited.startswith("DESTRUCTIVE FIRE IN LONDON")


def test_the_document_view_shows_metadata_and_ocr(client: TestClient) -> None:
    doc_id = "3580130_Manchester1820"
    html = client.get(f"/collections/newspapers/documents/{quote(doc_id, safe='')}").text
    assert "Manchester Courier" in html and "1825-02-05" in html
    assert re.search(r"<h3>OCR quality</h3>\s*<p><strong>0\.\d\d</strong>", html)
    assert '<a href="https://doi.org/10.23636/b1c4-py78"' in html  # an http(s) value of the source is a link
    assert 'id="span"' not in html  # no span asked, none marked
    missing = client.get("/collections/newspapers/documents/no-such-doc")
    assert missing.status_code == 404 and "no-such-doc" in unescape(missing.text)


def test_the_channels_that_found_a_result_read_as_separate_words(client: TestClient) -> None:
    # chips side by side in the markup read "bm25 #1dense #9" to a screen reader, in a copy and in inner text
    html = client.get("/", params={"q": "harbour fire"}).text
    found = [re.sub(r"<[^>]+>", "", p) for p in re.findall(r'<p class="found">(.*?)</p>', html, flags=re.S)]
    assert any(len(re.findall(r"#\d+", f)) > 1 for f in found), found
    assert not any(re.search(r"#\d+\S", f) for f in found), found


def test_the_windows_chart_comes_first_only_when_it_explains_the_order(client: TestClient) -> None:
    """Balanced across windows, the chart says why the results are in their order: above them. Otherwise it is a
    reading of the results, after them, so that on a phone the results come first (it was 1,150 px down at 390)."""
    balanced = client.get("/", params={"q": "fire feu Feuer", "windows": "20y", "k": "10"}).text
    assert balanced.index('class="window-chart"') < balanced.index('class="result-list"')
    plain = client.get("/", params={"q": "fire feu Feuer", "k": "10"}).text
    assert plain.index('class="result-list"') < plain.index('class="window-chart"')


def test_the_document_view_is_headed_by_the_title_its_result_showed(client: TestClient) -> None:
    """An untitled newspaper page was headed by its id in the document view and by its first words in the results:
    one document, two names. Both are `text.document_title`'s now, the id said beneath."""
    doc_id = "3580130_Manchester1820"  # untitled
    page = client.get("/", params={"q": "harbour fire"}).text
    shown = re.search(r'<a href="/collections/newspapers/documents/' + doc_id + r'[^"]*">([^<]+)</a>', page)
    assert shown is not None and shown.group(1).startswith("DESTRUCTIVE FIRE IN LONDON")
    html = client.get(f"/collections/newspapers/documents/{doc_id}").text
    heading = re.search(r'<h1 dir="auto">([^<]+)</h1>', html)
    assert heading is not None and heading.group(1) == shown.group(1)
    assert re.search(r'class="muted small doc-id">Its first words: it has no title\. Id <bdi>' + doc_id, html)
