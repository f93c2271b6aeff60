"""Every page of the web app at phone, tablet and desktop widths (360, 390, 768, 1280, 1920 px) in headless
Chromium: nothing scrolls sideways, the text column keeps a readable width, prose lines stay under ~75
characters, nav links and controls are tap targets of at least 44 px on a phone, the filters fold away on a
phone, and axe finds no serious violation. One browser page serves every case (the viewport is resized), on one
small collection of real newspapers and a catalog conversation held once.

Also the bidi rule: a title holding a right-to-left override is isolated (`dir=auto`) and the override is shown
as its escape (`\\u202e`), never left raw to reverse the words after it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.server.browser import axe, chromium  # noqa: F401
from tests.server.conftest import HERE, LiveServer, _documents
from tests.trail.assistant import call
from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.ingest import read_documents
from tracerag.mcp.models import DocumentIn
from tracerag.model import Document
from tracerag.retrieval.search import SearchRequest
from tracerag.search.run import run_search
from tracerag.server import ServerConfig
from tracerag.text import hidden_ranges, safe_block

NAME = "layout"
WIDTHS = (360, 390, 768, 1280, 1920)
PHONE = 390  # at this width and below: tap targets, folded filters
BIDI = HERE / "fixtures" / "bidi.jsonl"


@dataclass
class Site:
    url: str
    run_id: str
    call_id: str  # an assistant's call: a document read, its page the call's arguments and the document named


@pytest.fixture(scope="module")
def site(
    hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory, server_settings: Settings, server_catalog: Path
) -> Iterator[Site]:
    """The conftest's newspapers, the hostile letter and a title with a bidi override, with one search run (for
    the review board and the trail) and an assistant's call (a document read); served with the Miami catalog. Its
    own collection: the tests' searches write trails, which the shared one must not get."""
    path = tmp_path_factory.mktemp("responsive") / NAME
    bidi = [d for d in read_documents(BIDI, "jsonl") if isinstance(d, Document)]
    with Collection.open(path, server_settings, mode="write", create=True, embed_model="none") as col:
        col.ingest([*_documents(hipe_dir), *bidi], dense=False)
        run = run_search(col, SearchRequest("harbour fire", k=8, channels=("bm25",), windows=""))
    _, call_id = call(path, "document", DocumentIn(doc_id=run.ranking.doc_ids()[0], max_chars=2000))
    assert call_id is not None
    config = ServerConfig(collections=(path,), settings=server_settings, catalog=server_catalog)
    with LiveServer(config) as live:
        yield Site(live.url, run.run_id, call_id)


@pytest.fixture(scope="module")
def tab(chromium: Any, site: Site) -> Iterator[Any]:  # noqa: F811
    """One page for every case. The catalog conversation is held by the page (sessionStorage): it is had once,
    here, and every width reloads it."""
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    pg.goto(site.url + "/catalog")
    box = pg.get_by_label("Your request")
    box.fill("I need a food pantry")
    box.press("Enter")
    pg.locator(".turn.assistant .question").wait_for()
    pg.wait_for_function("() => document.getElementById('chat-status').textContent.includes('asks')")
    box.fill("in Hialeah open on Monday")
    box.press("Enter")
    pg.locator(".card").first.wait_for()
    yield pg
    context.close()


@dataclass(frozen=True)
class Case:
    # {run}: the search run; {call}: the call run; "@" + a search: its first result's page; "!" + a search: that
    # search recorded
    path: str
    ready: str  # what shows that the page is there
    column: str  # the main text column, measured
    prose: str | None = None  # an element of running text, whose lines are measured


CASES = {
    "search-empty": Case("/", "#q", ".results"),
    "search-results": Case("/?q=harbour+fire", "li.result", ".result-list", ".kwic"),
    "search-recorded": Case("!/?q=harbour+fire", ".add-button", ".result-list", ".kwic"),
    "search-filters": Case(
        "/?q=fire&from=1850&to=1920&language=en&language=fr&k=20", "li.result", ".result-list", ".kwic"
    ),
    "search-windows": Case("/?q=fire&windows=20y", "svg.window-chart", ".result-list", ".kwic"),
    "document": Case("@/?q=destructive+fire+london", "mark#span", "#doctext", "#doctext"),
    "ask": Case("/ask", "#ask-form", "#ask-form"),
    "review": Case("/review", ".review-collection", ".review-collection"),
    "review-board": Case(f"/review/{NAME}/{{run}}", ".card", ".card", ".card .quote"),
    "trails": Case("/trails", ".trail-list", ".trail-list"),
    "trail": Case(f"/trails/{NAME}/{{run}}", ".timeline", ".timeline"),
    "trail-call": Case(f"/trails/{NAME}/{{call}}", ".call-args", ".timeline"),
    "catalog": Case("/catalog", ".card", ".chat-log"),
    "error": Case("/collections/nowhere/documents/x", "h1", "main"),
}

# Measured in the page: what scrolls sideways, the column's width, a prose element's width in its own `ch`, and
# every nav link and visible control shorter than 44 px (inline links in running text are exempt, as in WCAG 2.5.8).
MEASURE = """([column, prose]) => {
  const width = (sel) => {
    const el = document.querySelector(sel);
    return el ? el.getBoundingClientRect().width : null;
  };
  let ch = null;
  const text = prose && document.querySelector(prose);
  if (text) {
    const probe = document.createElement("span");
    probe.style.cssText = "position:absolute;visibility:hidden;width:1ch";
    text.appendChild(probe);
    ch = text.getBoundingClientRect().width / probe.getBoundingClientRect().width;
    probe.remove();
  }
  const controls = "header a, .result-actions a, main button, main .button, main summary, main select, main textarea, "
    + "main input:not([type=hidden]):not([type=checkbox]):not([type=radio])";
  const small = [...document.querySelectorAll(controls)]
    .filter((el) => el.getClientRects().length && getComputedStyle(el).visibility !== "hidden")
    .map((el) => [el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + " " + el.textContent.trim().slice(0, 20),
                  Math.round(el.getBoundingClientRect().height)])
    .filter(([, h]) => h < 44);
  return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth,
          column: width(column), ch, small};
}"""


def _goto(tab: Any, site: Site, case: Case) -> None:
    path = case.path.replace("{run}", site.run_id).replace("{call}", site.call_id)
    if path.startswith("@"):
        tab.goto(site.url + path[1:])
        path = tab.locator("li.result h3 a").first.get_attribute("href")
    tab.goto(site.url + path.lstrip("!"))
    if path.startswith("!"):  # recorded by the page's own form post: the results get their actions
        tab.locator("button.record-button").click()
    tab.locator(case.ready).first.wait_for()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(CASES))
def test_page_fits_the_width(tab: Any, site: Site, name: str, width: int) -> None:
    case = CASES[name]
    tab.set_viewport_size({"width": width, "height": 800})
    _goto(tab, site, case)
    got = tab.evaluate(MEASURE, [case.column, case.prose])
    wrong = []  # every check, so that a failure names all that is wrong with the page at this width
    if got["scroll"] > got["inner"]:
        wrong.append(f"scrolls sideways: {got['scroll']} px wide")
    least = 280 if width <= PHONE else 440
    if got["column"] is None or got["column"] < least:
        wrong.append(f"text column {got['column']} px < {least}")
    if case.prose and (got["ch"] is None or got["ch"] > 76):
        wrong.append(f"prose lines of {got['ch']}ch")
    if width <= PHONE and got["small"]:
        wrong.append(f"tap targets under 44 px: {got['small']}")
    if violations := axe(tab):
        wrong.append(f"axe: {violations}")
    assert not wrong, f"{name} at {width} px: " + " | ".join(wrong)


@pytest.mark.parametrize("width", (PHONE, 1280))
def test_filters_fold_away_on_a_phone_and_stay_open_when_set(tab: Any, site: Site, width: int) -> None:
    tab.set_viewport_size({"width": width, "height": 800})
    _goto(tab, site, CASES["search-results"])
    filters = tab.locator("details.filters")
    assert filters.evaluate("d => d.open") is (width > PHONE)  # on a phone the results come first
    assert tab.locator("#from").is_visible() is (width > PHONE)
    if width <= PHONE:
        tab.locator("details.filters > summary").click()
        assert tab.locator("#from").is_visible()
    _goto(tab, site, CASES["search-filters"])  # filters set: shown, so that one sees what narrowed the results
    assert tab.locator("details.filters").evaluate("d => d.open") and tab.locator("#from").is_visible()


def test_a_bidi_override_in_a_title_is_isolated_and_shown(tab: Any, site: Site) -> None:
    """The fixture's title is "Invoice \\u202egnp.exe harbour report": raw, the override would show the rest
    reversed ("troper ruobrah exe.png"), disguising the file name; shown, it is the escape, in an isolated element."""
    tab.set_viewport_size({"width": 1280, "height": 800})
    tab.goto(site.url + "/?q=ruobrah")  # the text's reversed word: its snippet holds the controls too
    result = tab.locator("li.result", has_text="Invoice")
    title = result.locator("h3")
    assert title.evaluate("h => h.dir") == "auto"
    assert title.inner_text() == "Invoice \\u202egnp.exe harbour report"
    assert "\u202e" not in tab.evaluate("() => document.body.textContent")
    kwic = result.locator(".kwic").first
    assert kwic.evaluate("p => p.dir") == "auto" and "\\u202e" in kwic.inner_text()
    title.locator("a").click()
    tab.locator("#doctext").wait_for()
    assert tab.locator("h1").evaluate("h => h.dir") == "auto"
    assert tab.locator("h1").inner_text() == "Invoice \\u202egnp.exe harbour report"
    assert tab.title().startswith("Invoice \\u202egnp.exe")
    text = tab.locator("#doctext").inner_text()
    assert "\\u202eerif ruobrah\\u202c" in text and "\\u2066isolate\\u2069" in text and "\\u061c" in text
    assert tab.locator("td", has_text="Harbour").inner_text() == "The \\u2067Harbour\\u2069 Gazette"
    body = tab.evaluate("() => document.body.textContent + document.title")
    assert not any(ch in body for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")


def test_the_pages_scripts_show_hidden_characters_as_the_server_does(tab: Any, site: Site) -> None:
    """Text a script sets (catalog cards, ask sources, quotes) goes through `trace.shown`, whose set of hidden
    characters is the server's own (tracerag.text.hidden_ranges in the page's meta): each range's ends, and a
    character just outside each, are shown exactly as `safe_block` shows them; and an element built by
    `trace.el` from text holding an override shows the escape, not the override."""
    tab.goto(site.url + "/ask")
    probes = []
    for lo, hi in hidden_ranges():
        probes += [lo, hi, hi + 1] + ([lo - 1] if lo > 0 else [])
    # the line breaks aside, which a page's paragraph breaks (safe_block makes them newlines)
    text = "".join(f"<{chr(c)}>" for c in probes if c != 0x09 and safe_block(chr(c)) != "\n")
    assert tab.evaluate("t => trace.shown(t)", text) == safe_block(text)
    built = tab.evaluate("t => trace.el('h3', {dir: 'auto', text: t}).textContent", "Invoice \u202egnp.exe")
    assert built == "Invoice \\u202egnp.exe"


@pytest.mark.parametrize("width", [360, 390])
@pytest.mark.parametrize("name", ["trails", "review"])
def test_list_tables_show_every_cell_within_a_phones_screen(tab: Any, site: Site, name: str, width: int) -> None:
    """As tables in a sideways-scrolling box, the runs' and selections' later columns started past the screen's
    edge (the question "Gambet…", "Undecided" at 390 px); on a phone each row is a block of labelled lines."""
    tab.set_viewport_size({"width": width, "height": 800})
    _goto(tab, site, CASES[name])
    cells = tab.locator("table.stacked td")
    assert cells.count() >= 5
    boxes = cells.evaluate_all("cs => cs.map(c => [c.getBoundingClientRect().right, c.scrollWidth - c.clientWidth])")
    assert all(right <= width and overflow <= 1 for right, overflow in boxes), boxes
    labels = cells.evaluate_all("cs => cs.map(c => getComputedStyle(c, '::before').content)")
    assert all(label.endswith(': "') for label in labels), labels
