"""The catalog chat page in headless Chromium on a live uvicorn: two turns (the clarifying question shown as
one, then the cards with their checked constraints and quotes), Enter sends, the reply announced in the live
region, markup typed by a person shown as text, a reload that shows the conversation again, a new conversation,
no serious accessibility violation, no console error (a CSP violation is one), and the screenshot."""

from __future__ import annotations

from tests.server.browser import axe, chromium, page, shot  # noqa: F401


def test_chat_over_two_turns_shows_the_question_then_cards(live_server, page):  # noqa: F811
    page.goto(live_server.url + "/catalog")
    box = page.get_by_label("Your request")
    box.fill("I need a food pantry")
    box.press("Enter")
    question = page.locator(".turn.assistant .question")
    question.wait_for()
    assert "city or postal code" in question.inner_text()
    status = page.get_by_role("status")
    page.wait_for_function("() => document.getElementById('chat-status').textContent.includes('asks')")

    box.fill("in Hialeah open on Monday")
    box.press("Enter")
    cards = page.locator(".card")
    cards.first.wait_for()
    assert cards.count() >= 1
    first = cards.first
    assert first.locator("h3").inner_text()
    reasons = first.locator(".reason.ok")
    assert reasons.count() == 3  # city, weekday, service type: each checked, each with the record's words
    assert first.locator(".reason.ok", has_text="Hialeah").locator("q").inner_text() == "Hialeah"
    assert "Mon" in first.locator(".reason.ok", has_text="Monday").locator("q").inner_text()
    page.wait_for_function("() => document.getElementById('chat-status').textContent.includes('found')")
    assert "service" in status.inner_text()
    assert page.evaluate("document.activeElement.id") == "chat-input"  # ready for the next turn

    assert axe(page) == []
    shot(page, "catalog")

    page.reload()  # the conversation is the server's: the page shows it again
    page.locator(".card").first.wait_for()
    assert page.locator(".turn.user").count() == 2

    box = page.get_by_label("Your request")
    box.fill('<img src=x onerror="window.pwned=1">legal help')
    box.press("Enter")
    page.locator(".turn.user").nth(2).wait_for()
    assert "<img src=x" in page.locator(".turn.user").nth(2).inner_text()  # shown as text, never run
    assert page.locator(".chat-log img").count() == 0 and page.evaluate("window.pwned") is None

    page.get_by_role("button", name="New conversation").click()
    assert page.locator(".turn").count() == 0 and page.locator("#chat-empty").is_visible()
    assert page.js_errors == []
