"""End to end in headless Chromium, on a live uvicorn serving the replay model: ask a question, follow the run
(plan, verdict counts, tokens and cost) to its ranked sources, open the run's trail and expand a model call;
axe-core finds no serious or critical violation on either page, nothing breaks the CSP, and the hostile letter's
markup is text. Screenshots: test-artifacts/screenshots/ask.png and trail.png."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.server.ask_setup import (  # noqa: F401  (fixtures)
    NAME,
    QUESTION,
    AskSetup,
    ask_config_fixture,
    ask_setup_fixture,
)
from tests.server.browser import axe, chromium, page, shot  # noqa: F401
from tests.server.conftest import LiveServer
from tracerag.server import ServerConfig


@pytest.fixture(scope="module")
def replay_server(ask_config: ServerConfig) -> Iterator[LiveServer]:
    with LiveServer(ask_config) as live:
        yield live


def test_follow_an_ask_run_then_its_trail(replay_server: LiveServer, page, ask_setup: AskSetup):  # noqa: F811
    page.goto(replay_server.url + "/ask")
    assert page.locator("h1").inner_text() == "Ask the agent"
    page.get_by_label("Question").fill(QUESTION)
    page.get_by_label("Sources to rank").fill("6")
    page.get_by_role("button", name="Ask").click()

    sources = page.locator("#ask-sources > li")
    sources.first.wait_for()
    # the progress as it stood at the end: the plan, the verdicts so far, the model's tokens and cost
    assert page.locator("#ask-plan > li").all_inner_texts() == ["harbour fire", "guerre"]
    assert re.search(r"\d+ accepted · \d+ held · \d+ rejected", page.locator("#ask-verdicts").inner_text())
    assert re.fullmatch(r"\d+ calls · [\d,]+ tokens · \$\d+\.\d{4}", page.locator("#ask-llm").inner_text())
    run_id = page.locator("#ask-run").inner_text()
    assert re.fullmatch(r"\d{8}T\d{6}-[0-9a-f]{6}", run_id)
    assert "complete" in page.locator("#ask-status").inner_text()

    # the ranked sources, as recorded; each linked to the document view at its quoted span
    assert sources.count() == len(ask_setup.recorded_sources)
    hostile = page.locator("#ask-sources > li", has_text="hostile-1")
    link = hostile.locator("h3 a")
    assert link.inner_text() == "<script>alert('title')</script> A letter"  # the markup as text
    assert link.get_attribute("href") == f"/collections/{NAME}/documents/hostile-1?start=0&end=24#span"
    assert hostile.locator(".verdict").inner_text() == "accept"
    assert hostile.locator("blockquote.quote").inner_text() == "Dear editor, the harbour"
    assert hostile.locator(".reasons li").count() == 1
    assert page.locator("#ask-sources script, #ask-sources img").count() == 0
    assert axe(page) == []
    shot(page, "ask")

    page.locator("#ask-trail").click()
    page.wait_for_url(f"**/trails/{NAME}/{run_id}")
    assert page.locator("h1").inner_text() == f"Trail of run {run_id}"
    steps = page.locator(".timeline > li h2").all_inner_texts()
    assert steps[0].endswith("Plan") and steps[-1].endswith("Result")
    call = page.locator("details.llm-call").first
    assert not call.locator(".call-body").is_visible()
    call.locator("summary").click()
    assert call.locator(".call-body").is_visible()
    assert call.locator("pre.prompt").first.inner_text().startswith("You plan searches")
    assert page.locator("a", has_text="CSL-JSON").get_attribute("href").endswith("format=csl-json")
    assert axe(page) == []
    shot(page, "trail")
    page.goto(replay_server.url + "/trails")
    assert page.locator(f'a[href="/trails/{NAME}/{run_id}"]').count() == 1
    assert axe(page) == []
    assert page.js_errors == []
