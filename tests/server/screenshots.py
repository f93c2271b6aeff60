"""The README's screenshots of the web app, at a phone's width (390 px) and a desktop's (1280 px): search results,
a document and the catalog chat, on the browser tests' collection (real HIPE-2022 newspapers, the Miami 211
catalog). Regenerate with `python -m tests.server.screenshots` (TRACERAG_DATASETS set, Chromium installed); they
go to docs/screenshots/. Each is what the screen shows (not the whole page), saved as PNG at one device pixel per
CSS pixel, with a reduced palette, to keep it small."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.conftest import REPO, require_datasets
from tests.server.browser import CHROMIUM, FLAGS
from tests.server.conftest import LiveServer, _documents
from tracerag.catalog.ingest import build_catalog
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.server import ServerConfig

OUT = REPO / "docs" / "screenshots"
SIZES = {"phone": (390, 844), "desktop": (1280, 800)}


def _small_png(path: Path) -> None:
    """Quantise to 128 colours (text and flat colours lose nothing a reader sees): about a third of the size."""
    from PIL import Image

    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=128).save(path, optimize=True)


def main(out: Path = OUT) -> list[Path]:
    from playwright.sync_api import sync_playwright

    datasets = require_datasets("hipe2022", "miami211")
    out.mkdir(parents=True, exist_ok=True)
    saved: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(cache_dir=str(Path(tmp) / "cache"), server={"rate_per_minute": 100_000})
        path = Path(tmp) / "newspapers"
        with Collection.open(path, settings, mode="write", create=True, embed_model="none") as col:
            col.ingest(_documents(datasets / "hipe2022"), dense=False)
        catalog = Path(tmp) / "miami"
        build_catalog(datasets / "miami211", catalog, settings, dense=False)
        config = ServerConfig(collections=(path,), settings=settings, catalog=catalog)
        with LiveServer(config) as live, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            for size, (width, height) in SIZES.items():
                context = browser.new_context(viewport={"width": width, "height": height})
                page = context.new_page()

                def save(name: str, page=page, size=size) -> None:
                    target = out / f"{name}-{size}.png"
                    page.screenshot(path=str(target))
                    _small_png(target)
                    saved.append(target)

                page.goto(live.url + "/?q=harbour+fire")
                page.locator("button.record-button").click()  # recorded: each result can join the selection
                page.locator("li.result .add-button").first.wait_for()
                if width < 768:  # a phone shows the time-window chart first: the shot is of the results under it
                    page.locator(".result-list").evaluate("r => r.scrollIntoView({block: 'start'})")
                save("search")
                page.locator("li.result", has_text="DESTRUCTIVE FIRE IN LONDON").locator("h3 a").click()
                page.locator("mark#span").wait_for()
                page.evaluate("() => window.scrollTo(0, 0)")  # the title, the text and (on a desktop) its facts
                save("document")
                page.goto(live.url + "/catalog")
                box = page.get_by_label("Your request")
                box.fill("I need a food pantry")
                box.press("Enter")
                page.wait_for_function("() => document.getElementById('chat-status').textContent.includes('asks')")
                box.fill("in Hialeah open on Monday")
                box.press("Enter")
                page.locator(".card").first.wait_for()
                # the answer's end at the screen's foot: the card, and above it as much of the talk as fits
                page.locator(".turn.assistant").last.evaluate("t => t.scrollIntoView({block: 'end'})")
                save("catalog")
                context.close()
            browser.close()
    return saved


if __name__ == "__main__":
    for p in main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(f"{p.relative_to(REPO) if p.is_relative_to(REPO) else p}  {p.stat().st_size // 1024} KB")
