from tests.server.browser import axe, chromium, page, shot  # noqa: F401


def test_smoke(live_server, page):  # noqa: F811
    page.goto(live_server.url + "/nothing-here")
    assert page.locator("h1").inner_text() == "404"
    shot(page, "smoke")
    print(axe(page), page.js_errors)
