"""One path from a hit to a citation, in headless Chromium at a phone's width and a desktop's (issue 25, item 6):
a search typed and sent (recorded as a run), a result added to the selection from the results, the run's review
board reached from the results and worked by keyboard, the cited draft from the accepted sources, and the run in
the trail reached from the board. Each page stays within the screen's width and axe finds no serious violation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.server.browser import axe, chromium, page, shot  # noqa: F401
from tests.server.conftest import LiveServer
from tests.server.test_search_flow import flow_dir  # noqa: F401
from tracerag.config import Settings
from tracerag.research.selection import open_selections
from tracerag.server import ServerConfig

QUERY = "harbour fire"


@pytest.mark.parametrize("width", [390, 1280])
def test_search_add_review_draft_trail(flow_dir: Path, server_settings: Settings, page, width: int) -> None:  # noqa: F811
    page.set_viewport_size({"width": width, "height": 844 if width < 600 else 800})
    question = f"{QUERY} {width}"  # a selection of its own at each width
    with LiveServer(ServerConfig(collections=(flow_dir,), settings=server_settings)) as live:
        page.goto(f"{live.url}/")
        page.fill("#q", question)
        page.press("#q", "Enter")
        page.wait_for_url("**run=*")
        run_id = page.url.split("run=")[1].split("&")[0]
        assert page.locator("a.run-link").first.get_attribute("href") == f"/trails/flow/{run_id}"
        assert axe(page) == []
        fits(page)
        shot(page, f"flow-search-{width}")

        # add the first result to the selection, from the results (the selections API, by search.js)
        first = page.locator("ol.result-list li.result").first
        added = first.locator("button.add-button").get_attribute("data-doc")
        first.locator("button.add-button").click()
        first.locator(".in-selection").wait_for()
        with open_selections(flow_dir, server_settings) as store:
            assert [(e.doc_id, e.decision.value) for e in store.entries(question)] == [(added, "accepted")]

        # its run's review board, by keyboard: the added one is accepted already; accept the second with "a"
        page.locator("a.review-link").click()
        page.wait_for_url(f"**/review/flow/{run_id}")
        assert page.locator(f".card[data-doc='{added}']").get_attribute("data-decision") == "accept"
        second = page.locator(".card").nth(1)
        second.focus()
        page.keyboard.press("a")
        page.locator(".card[data-decision=accept]").nth(1).wait_for()
        assert page.locator("[data-count=accepted]").inner_text() == "2"
        fits(page)

        # the cited draft from the two accepted sources, with its run and the way back
        page.locator("#draft-button").focus()
        page.keyboard.press("Enter")
        page.locator("#draft-body .answer-run-link").wait_for()
        assert page.locator("#draft-body .citation a").count() >= 1
        # each label a citation uses (S1, S2...) is listed under the draft with its source's title
        cited = set(re.findall(r"\[(S\d+) ", page.locator("#draft-body .citations").first.inner_text()))
        listed = {li.split(" ", 1)[0] for li in page.locator("#draft-body .draft-sources li").all_inner_texts()}
        assert cited and cited <= listed
        assert page.locator("#draft-body .search-link").get_attribute("href").endswith(f"run={run_id}")
        assert axe(page) == []
        fits(page)
        shot(page, f"flow-draft-{width}")

        # the run in the trail, from the board
        page.locator(".board-links a.run-link").first.click()
        page.wait_for_url(f"**/trails/flow/{run_id}")
        assert question in page.locator("main").inner_text()
        assert page.js_errors == []


def fits(page) -> None:  # noqa: F811
    """The page is no wider than the window and the controls this path added wrap inside their own box, at a
    phone's width as at a desktop's (before the responsive layout of issue 25, the results column was 46 px wide
    at 390 px, which no control fits)."""
    over = page.evaluate(
        "() => [...document.querySelectorAll('.result-actions, .run-note, .board-links')]"
        ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.className)"
    )
    assert over == []
    wide = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert wide[0] <= wide[1], wide
