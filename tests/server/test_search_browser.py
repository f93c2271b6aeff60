"""The search page and the document view in headless Chromium against a live server: a search typed in the box
shows the query's words marked, a result opens its document with the cited span marked and on screen, the hostile
letter stays text (no script of its runs, nothing breaks the CSP), and axe finds no serious violation."""

from __future__ import annotations

from tests.server.browser import axe, chromium, page, shot  # noqa: F401
from tracerag.retrieval.kwic import query_keys, term_key


def test_search_then_open_a_result(live_server, page) -> None:  # noqa: F811
    page.goto(live_server.url + "/")
    page.fill("#q", "harbour fire")
    page.fill("#windows", "20y")
    page.press("#q", "Enter")
    page.wait_for_selector("ol.result-list li.result")
    assert "q=harbour+fire" in page.url and "windows=20y" in page.url  # the address is the search
    assert "from=" not in page.url  # and only what was asked
    words = page.locator("ol.result-list mark").all_inner_texts()
    keys = query_keys(["harbour fire"], "en")
    assert words and all(term_key(w, "en") in keys for w in words), words
    assert page.locator("svg.window-chart rect.bar-results").count() >= 3
    shot(page, "search")
    assert axe(page) == []
    # the hostile letter is a result: its markup is text, and no script but the app's own is in the page
    assert page.locator("h3 a", has_text="<script>alert('title')</script> A letter").count() == 1
    assert page.evaluate("() => [...document.scripts].every(s => s.src.includes('/static/'))")
    assert page.locator("a[href^='javascript']").count() == 0

    result = page.locator("ol.result-list li.result", has_text="DESTRUCTIVE FIRE IN LONDON")
    result.locator("h3 a").click()
    page.wait_for_selector("mark#span")
    span = page.locator("mark#span")
    assert span.inner_text().startswith("DESTRUCTIVE FIRE IN LONDON")
    assert page.evaluate(
        "() => { const r = document.getElementById('span').getBoundingClientRect();"
        " return r.bottom > 0 && r.top < window.innerHeight; }"
    )
    assert page.evaluate("() => document.activeElement && document.activeElement.id") == "span"
    shot(page, "document")
    assert axe(page) == []
    assert page.js_errors == []


def test_the_hostile_document_renders_as_text(live_server, page) -> None:  # noqa: F811
    page.goto(live_server.url + "/collections/newspapers/documents/hostile-1?start=103&end=135#span")
    page.wait_for_selector("mark#span")
    assert page.locator("mark#span").inner_text() == "<img src=x onerror=alert('img')>"
    assert page.locator("#doctext img, #doctext a, #doctext script, aside img").count() == 0
    assert page.evaluate("() => [...document.scripts].every(s => s.src.includes('/static/'))")
    assert page.locator("text=javascript:alert('source')").count() == 1  # the source URL, shown as text
    assert page.locator("a[href^='javascript']").count() == 0
    assert page.js_errors == []  # no alert ran, nothing the CSP had to block
    assert axe(page) == []
