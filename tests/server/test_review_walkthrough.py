"""The review board as a new user met it: the picker tells identical searches apart (start time, candidates,
kind; newest first); after an undo the note field shows the restored decision's note; the key table says what
Enter in a note does; the criteria typed survive the judge's reload; and a draft that abstained with sentences
says so in plain words with the plural right."""

from __future__ import annotations

import time
from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI
from tests.research.test_answer import _recorded, _run, demo, selected  # noqa: F401
from tests.server.browser import axe, chromium, page, shot  # noqa: F401
from tests.server.conftest import LiveServer
from tests.server.test_judge_api import CRITERIA, fake, judge_answer, with_model  # noqa: F401
from tests.server.test_review import NAME, app_client, research_dir, search_run  # noqa: F401
from tracerag.config import Settings
from tracerag.server import ServerConfig
from tracerag.trail import trails_by_run


def test_the_picker_tells_identical_runs_apart_newest_first(research_dir: Path, server_settings: Settings):  # noqa: F811
    first = search_run(research_dir, server_settings, "harbour fire", k=5, least=1)
    time.sleep(0.01)
    second = search_run(research_dir, server_settings, "harbour fire", k=3, least=1)
    with app_client(research_dir, server_settings) as client:
        runs = client.get(f"/api/collections/{NAME}/selections").json()["runs"]
        page_text = client.get("/review").text
    mine = [r for r in runs if r["run_id"] in (first, second)]
    assert [r["run_id"] for r in mine] == [second, first]  # newest first, even within one second
    assert [r["results"] for r in mine] == [3, 5] and {r["kind"] for r in mine} == {"search"}
    assert all(r["started"] > "2026" for r in mine)
    assert [r["started"] for r in runs] == sorted((r["started"] for r in runs), reverse=True)
    assert '<th scope="col">Candidates</th>' in page_text and "(newest first)" in page_text
    assert mine[0]["started"][:19].replace("T", " ") in page_text


def test_undo_restores_the_note_enter_is_explained_and_criteria_survive_the_judge(
    research_dir: Path,  # noqa: F811
    server_settings: Settings,
    fake: FakeOpenAI,  # noqa: F811
    page,  # noqa: F811
):
    run_id = search_run(research_dir, server_settings, "incendie", k=4, least=2)
    settings = with_model(server_settings, fake)
    with LiveServer(ServerConfig(collections=(research_dir,), settings=settings)) as live:
        page.goto(f"{live.url}/review/{NAME}/{run_id}")
        keys = page.locator(".keys").inner_text()
        assert "Enter in a note: keep the note; a card not yet decided becomes undecided" in " ".join(keys.split())
        note = page.locator("#note-1")
        note.fill("first thoughts")
        note.press("Enter")  # no decision yet: recorded as undecided, with the note
        page.locator("#card-1[data-decision=undecided]").wait_for()
        page.locator("#card-1").focus()
        page.keyboard.press("u")  # taken back: no decision, and no note
        page.locator("#card-1[data-decision='']").wait_for()
        assert note.input_value() == ""

        page.locator(".judge-panel summary").click()
        page.get_by_label("Criteria: what counts, what does not").fill(CRITERIA)
        page.locator("#judge-button").click()
        page.wait_for_url("**judge=*")
        page.locator(".judge").first.wait_for()
        assert page.get_by_label("Criteria: what counts, what does not").input_value() == CRITERIA
        assert axe(page) == []
        shot(page, "review-judged")
        assert page.js_errors == []
    assert any(r != run_id for r in trails_by_run([research_dir]))


def test_an_abstention_with_sentences_says_so_plainly(tmp_path, selected):  # noqa: F811
    def one_sentence(shown: list[dict]) -> dict:
        quote = " ".join(shown[0]["text"].split()[:4])
        return {
            "abstain": True,
            "abstention": "Die Quellen sagen nichts darüber.",
            "sentences": [{"text": "Etwas.", "kind": "paraphrase", "citations": [{"source": "S1", "quote": quote}]}],
        }

    llm, _ = _recorded(tmp_path, one_sentence)
    said, _events = _run("Welche Seuche wütete in Hamburg?", selected, llm)
    assert said.abstained and not said.sentences
    assert said.failure == "the model abstained yet wrote 1 sentence: dropped, since an abstention makes no claims"
