"""A headless Chromium for the web app's end-to-end tests: Debian's browser (/usr/bin/chromium, installed by
.ci/run) driven by Playwright's Python package, which downloads nothing. Without the browser the tests skip with
one reason on a developer's machine, and fail under CI. `shot` saves a screenshot of the page as a test artefact
(test-artifacts/screenshots/); `axe` runs axe-core (tests/server/node_modules, `npm ci` in tests/server) in the
page and returns its serious and critical violations (without axe-core installed: none, with a warning)."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, in_ci

CHROMIUM = os.environ.get("TRACERAG_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
SHOTS = REPO / "test-artifacts" / "screenshots"
# what Chromium needs on a closed network, as root, with no display (see the env notes of this machine)
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def _need(what: str, ok: bool) -> None:
    if ok:
        return
    if in_ci():
        pytest.fail(f"{what} (CI is set: the browser tests must run)", pytrace=False)
    pytest.skip(what)


_RUNNING: dict[str, Any] = {}  # one Playwright and browser per process (see `chromium`)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """The browser. Each test module that imports this fixture gets its own session-scoped copy of it, and a second
    Playwright started while the first runs fails ("Sync API inside the asyncio loop"): so every copy shares one,
    started by the first and stopped by the first copy torn down at the session's end."""
    _need(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set TRACERAG_CHROMIUM)", Path(CHROMIUM).exists())
    from playwright.sync_api import sync_playwright

    if not _RUNNING:
        _RUNNING["playwright"] = sync_playwright().start()
        _RUNNING["browser"] = _RUNNING["playwright"].chromium.launch(
            executable_path=CHROMIUM, headless=True, args=FLAGS
        )
    yield _RUNNING["browser"]
    if _RUNNING:
        _RUNNING.pop("browser").close()
        _RUNNING.pop("playwright").stop()


@pytest.fixture()
def page(chromium: Any) -> Iterator[Any]:
    """A fresh page at 1280×800 (the size the issue asks the app to be usable at)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    pg.js_errors = errors  # a test may assert none happened (a CSP violation is logged as a console error)
    yield pg
    context.close()


def shot(page: Any, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def axe(page: Any, *, impacts: tuple[str, ...] = ("serious", "critical")) -> list[dict[str, Any]]:
    """axe-core's violations of `impacts` on the page as it is now (WCAG 2 A/AA rules), each with its nodes.
    Without axe-core (a developer who has not run `npm ci --prefix tests/server`) the check is left out with a
    warning, so that the rest of the browser test still runs; under CI its absence fails the test."""
    if not AXE.exists():
        missing = f"no axe-core at {AXE} (run `npm ci --prefix tests/server`): accessibility not checked"
        if in_ci():
            pytest.fail(f"{missing} (CI is set: the accessibility checks must run)", pytrace=False)
        warnings.warn(missing, stacklevel=2)
        return []
    # evaluated through the DevTools protocol: a <script> tag would be inline, which the app's CSP forbids
    page.evaluate("() => { " + AXE.read_text(encoding="utf-8") + "\n}")
    result = page.evaluate(
        "async () => JSON.stringify(await axe.run(document, {runOnly: "
        "{type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}}))"
    )
    violations = json.loads(result)["violations"]
    return [
        {"id": v["id"], "impact": v["impact"], "help": v["help"], "nodes": [n["target"] for n in v["nodes"][:5]]}
        for v in violations
        if v["impact"] in impacts
    ]
