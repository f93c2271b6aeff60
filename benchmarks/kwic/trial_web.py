"""The web app's side of the trial (README.md): five of `trial_piaf.tsv`'s queries typed into the search box of a
running `tracerag serve` at 390 px in headless Chromium; prints, per query, the result count, the sentences above
the results, how many results mark a word and the "found by" chips of those that do not, the page's overflow, and
for the first result's document the "N matches marked" line and the number of marked words.

    tracerag serve -c /tmp/trial/coll --port 8799 &
    python benchmarks/kwic/trial_web.py --url http://127.0.0.1:8799 > /tmp/trial/web.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.server.browser import CHROMIUM, FLAGS  # noqa: E402

QUERIES = ["eglise romane", "napoleon bonapart", "ONU", "Quelle est la capitale de l'Australie ?", "la"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--width", type=int, default=390)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_context(viewport={"width": args.width, "height": 844}).new_page()
        for q in QUERIES:
            page.goto(args.url + "/")
            page.fill("#q", q)
            page.press("#q", "Enter")
            page.wait_for_selector("#results-heading")
            results = page.locator("li.result")
            rows = []
            for i in range(results.count()):
                r = results.nth(i)
                rows.append(
                    {
                        "title": r.locator("h3").inner_text(),
                        "marks": r.locator(".kwic mark").all_inner_texts(),
                        "found": r.locator(".found").inner_text(),
                    }
                )
            entry = {
                "query": q,
                "heading": page.locator("#results-heading").inner_text(),
                "listed": results.count(),
                "above": page.locator(".run-note, .search-statements li, .warning").all_inner_texts(),
                "scroll_width": page.evaluate("document.documentElement.scrollWidth"),
                "results": rows,
            }
            if results.count():
                results.nth(0).locator("a.open-doc").click()
                page.wait_for_load_state()
                entry["document"] = {
                    "url": page.url,
                    "said": page.locator(".query-words").all_inner_texts(),
                    "marked": page.locator("mark.word").all_inner_texts()[:12],
                    "scroll_width": page.evaluate("document.documentElement.scrollWidth"),
                }
            out.append(entry)
        browser.close()
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
