"""The catalog chat with a model, in Chromium: the notes on how the request was read have a label (a list a
screen reader names), and the conversation's trail is a link to its timeline at /catalog/trails/{run_id}."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.server.browser import axe, chromium, page, shot  # noqa: F401
from tests.server.conftest import LiveServer
from tracerag.config import Settings, load_settings
from tracerag.server import ServerConfig


@pytest.fixture
def llm_settings(tmp_path) -> Iterator[Settings]:
    """A model whose parse proposes a city the catalog lacks (so the turn has a note saying it was dropped)."""

    def handler(body: dict, n: int) -> Reply:
        if body.get("response_format"):
            return Reply(content=json.dumps({"cities": ["Hialeah", "Gotham"], "service_types": ["food pantry"]}))
        return Reply(content="Here are food pantries in Hialeah.")

    with FakeOpenAI(handler) as fake:
        yield load_settings(
            cache_dir=str(tmp_path / "cache"),
            server={"rate_per_minute": 100_000},
            llm={"model": "openai:fake", "base_url": fake.base_url, "json_schema": True},
        )


def test_the_notes_are_labelled_and_the_trail_is_a_link(server_catalog, llm_settings, page):  # noqa: F811
    with LiveServer(ServerConfig(collections=(), settings=llm_settings, catalog=server_catalog)) as live:
        page.goto(live.url + "/catalog")
        box = page.get_by_label("Your request")
        box.fill("a food pantry in Hialeah")
        box.press("Enter")
        page.locator(".card").first.wait_for()
        notes = page.get_by_role("list", name="Notes on how the request was read")
        assert notes.count() == 1
        assert "model proposed city 'Gotham'" in notes.inner_text()
        link = page.locator("#chat-trail a")
        run_id = link.inner_text().removeprefix("run ")
        assert link.get_attribute("href") == f"/catalog/trails/{run_id}"
        assert axe(page) == []
        link.click()
        page.wait_for_url(f"**/catalog/trails/{run_id}")
        assert page.locator("h1").inner_text() == f"Trail of run {run_id}"
        assert page.locator(".crumbs").inner_text() == f"Trails › Catalog: {server_catalog.name}"
        assert "a food pantry in Hialeah" in page.locator(".timeline").inner_text()
        assert axe(page) == []
        shot(page, "catalog-trail")
        assert page.js_errors == []
