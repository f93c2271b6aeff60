"""The draft's per-sentence support verdicts over HTTP (`SentenceOut.verdict`), and the same verdicts from
`tracerag answer --json/--explain` on the same selection with the same (scripted, real-HTTP) model: both come from
research/support.py. The scripted model drafts four sentences whose checks give each verdict once: supported,
partly supported, unsupported (a source outside the selection) and not checked (the checker's answer unusable).
In Chromium at a phone's width, the draft page spells each verdict out beside its sentence, in the API's words.
A doubting model (the same draft, no citation found supported) gets the draft withdrawn (research/citecheck.py
`withdraw`): the API says why in `withdrawn`, not as an abstention, and still gives the sentences; the page says
"No answer" with the reason above the flagged sentences, and announces it in its live region, at a phone's width."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from typer.testing import CliRunner

from tests.fakes.openai_server import FakeOpenAI, Reply, json_reply, last_user
from tests.server.browser import SHOTS, axe, chromium, page  # noqa: F401
from tests.server.conftest import LiveServer
from tests.server.test_answer_api import accept
from tests.server.test_judge_api import with_model
from tests.server.test_review import NAME, app_client, research_dir, search_run  # noqa: F401
from tracerag.cli import app
from tracerag.server import ServerConfig
from tracerag.trail import read_trail
from tracerag.trail.events import WithdrawalEvent

QUERY = "Feuer Brand"
SUPPORTED, PARTLY, OUTSIDE, UNJUDGED = (
    "The first source reports it.",
    "Both sources agree on it.",
    "The town council met daily.",
    "Perhaps it was so.",
)


class Writer:
    """Drafts four sentences over S1 and S2; the checker supports every citation but S2's in the second sentence,
    and answers the fourth sentence's check with words, not the JSON asked for."""

    def __init__(self) -> None:
        self.second_quote = ""

    def __call__(self, body: dict, n: int) -> Reply:
        schema = json.dumps(body.get("response_format", {}))
        user = last_user(body)
        if '"abstain"' in schema:
            fenced = user.split("<documents>\n", 1)[1].split("\n</documents>", 1)[0]
            first, second = (json.loads(line) for line in fenced.split("\n")[:2])
            q1, q2 = " ".join(first["text"].split()[2:8]), " ".join(second["text"].split()[2:8])
            self.second_quote = q2
            s1, s2 = {"source": "S1", "quote": q1}, {"source": "S2", "quote": q2}
            return json_reply({
                "abstain": False,
                "sentences": [
                    {"text": SUPPORTED, "kind": "paraphrase", "citations": [s1]},
                    {"text": PARTLY, "kind": "inference", "citations": [s1, s2]},
                    {"text": OUTSIDE, "kind": "inference", "citations": [{"source": "S9", "quote": "the council"}]},
                    {"text": UNJUDGED, "kind": "inference", "citations": [s2]},
                ],
            })  # fmt: skip
        if UNJUDGED in user:
            return Reply(content="I would rather not say.")
        quoted = json.loads(user.split("<documents>\n", 1)[1].split("\n", 1)[0])["quote"]
        supported = not (PARTLY in user and quoted == self.second_quote)
        return json_reply({"reasoning": "it says so" if supported else "it says nothing of it", "supported": supported})


class Doubter(Writer):
    """Drafts as `Writer` does, but the checker finds every citation it judges unsupported: no citation holds up
    (S9 is outside the selection, the fourth sentence's check stays unusable), so the draft is withdrawn."""

    def __call__(self, body: dict, n: int) -> Reply:
        user = last_user(body)
        if '"abstain"' in json.dumps(body.get("response_format", {})) or UNJUDGED in user:
            return super().__call__(body, n)
        return json_reply({"reasoning": "the passage is about something else", "supported": False})


@pytest.fixture()
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(Writer(), model="scripted-writer") as server:
        yield server


@pytest.fixture()
def doubter() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(Doubter(), model="scripted-doubter") as server:
        yield server


EXPECTED = ["supported", "partly supported", "unsupported", "not checked"]


def test_the_api_and_the_cli_give_each_sentence_the_same_verdict(research_dir, server_settings, fake, tmp_path):  # noqa: F811
    settings = with_model(server_settings, fake)
    run_id = search_run(research_dir, server_settings, QUERY)
    with app_client(research_dir, settings) as client:
        accept(client, run_id, {0: "accept", 1: "accept"})
        answer = client.post(f"/api/collections/{NAME}/answer", json={"selection": QUERY})
    assert answer.status_code == 200, answer.text
    draft = answer.json()
    assert draft["withdrawn"] is None and not draft["abstained"]  # one citation holds up: the draft stands
    assert [s["text"] for s in draft["sentences"]] == [SUPPORTED, PARTLY, OUTSIDE, UNJUDGED]
    assert [s["verdict"] for s in draft["sentences"]] == EXPECTED
    assert [s["verdict_reason"] for s in draft["sentences"]] == [
        "its citation supports it", "1 of 2 citations support it", "its citation does not support it",
        "no verdict on its citation",
    ]  # fmt: skip
    assert [c["check"]["outcome"] for c in draft["sentences"][1]["citations"]] == ["supports", "does not support"]
    assert draft["sentences"][1]["citations"][1]["check"]["reason"] == "it says nothing of it"
    assert draft["verdicts"] == {v: 1 for v in EXPECTED}

    config = tmp_path / "settings.toml"
    config.write_text(
        f"cache_dir = {json.dumps(str(server_settings.cache_dir))}\n"
        f'[llm]\nmodel = "openai:scripted-judge"\nbase_url = "{fake.base_url}"\nrepair_rounds = 0\nmax_retries = 0\n',
        encoding="utf-8",
    )
    args = ["answer", QUERY, "--selection", QUERY, "-c", str(research_dir), "--config", str(config)]
    language = ["--language", draft["language"]]
    runner = CliRunner()
    cli = json.loads(runner.invoke(app, [*args, *language, "--json"]).stdout)
    assert [s["text"] for s in cli["sentences"]] == [s["text"] for s in draft["sentences"]]
    assert [s["verdict"] for s in cli["support"]] == [s["verdict"] for s in draft["sentences"]]
    assert [s["reason"] for s in cli["support"]] == [s["verdict_reason"] for s in draft["sentences"]]
    assert cli["verdicts"] == draft["verdicts"]
    shown = runner.invoke(app, [*args, *language, "--explain"])
    text = " ".join(shown.output.split())
    for s in draft["sentences"]:
        assert f"verdict: {s['verdict']} ({s['verdict_reason']})" in text
    assert "4 sentences: 1 supported · 1 partly supported · 1 unsupported · 1 not checked" in text


@contextmanager
def drafted_on_a_phone(collection, server_settings, model, question: str, tab) -> Iterator[None]:
    """The review page of a search for `question` (a selection of its own), its first two candidates accepted,
    drafted by `model` in a 390-pixel-wide browser; the live server runs until the block ends."""
    settings = with_model(server_settings, model)
    run_id = search_run(collection, server_settings, question)
    tab.set_viewport_size({"width": 390, "height": 844})
    with LiveServer(ServerConfig(collections=(collection,), settings=settings)) as live:
        with app_client(collection, settings) as client:
            accept(client, run_id, {0: "accept", 1: "accept"})
        tab.goto(f"{live.url}/review/{NAME}/{run_id}")
        tab.locator("#draft-button").click()
        tab.locator("#draft-body .support-totals").wait_for()
        yield


def test_the_draft_page_spells_out_each_verdict_at_a_phones_width(research_dir, server_settings, fake, page):  # noqa: F811
    with drafted_on_a_phone(research_dir, server_settings, fake, f"{QUERY} Stadt", page):
        shown = [" ".join(t.split()) for t in page.locator("#draft-body .sentence .support").all_inner_texts()]
        assert [t.split(" (")[0] for t in shown] == [f"verdict: {v}" for v in EXPECTED]  # words, not colour alone
        assert shown[1] == "verdict: partly supported (1 of 2 citations support it)"
        second = " ".join(page.locator("#draft-body .sentence").nth(1).inner_text().split())
        assert "does not support (model): it says nothing of it" in second and "supports (model): it says so" in second
        totals = page.locator("#draft-body .support-totals").inner_text()
        assert totals == "4 sentences: 1 supported · 1 partly supported · 1 unsupported · 1 not checked"
        wide = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert wide[0] <= wide[1], wide
        assert axe(page) == []
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("#draft").screenshot(path=str(SHOTS / "draft-verdicts-390.png"))
        assert page.js_errors == []


WHY = (
    "none of the draft's 5 citations holds up under the check (1 not found in the source, 3 unsupported, 1 not judged)"
)


def test_the_api_gives_a_withdrawn_draft_with_why_and_its_sentences(research_dir, server_settings, doubter):  # noqa: F811
    question = f"{QUERY} Nacht"  # a selection of its own
    run_id = search_run(research_dir, server_settings, question)
    with app_client(research_dir, with_model(server_settings, doubter)) as client:
        accept(client, run_id, {0: "accept", 1: "accept"})
        answer = client.post(f"/api/collections/{NAME}/answer", json={"selection": question})
    assert answer.status_code == 200, answer.text
    draft = answer.json()
    assert draft["withdrawn"] == WHY
    assert not draft["abstained"] and draft["abstention"] == "" and draft["failure"] is None  # no answer, no abstention
    assert [s["text"] for s in draft["sentences"]] == [SUPPORTED, PARTLY, OUTSIDE, UNJUDGED]  # as written
    assert [s["verdict"] for s in draft["sentences"]] == ["unsupported", "unsupported", "unsupported", "not checked"]
    assert draft["flagged"] == 5
    first = draft["sentences"][0]["citations"][0]["check"]
    assert first["flagged"] and first["reason"] == "the passage is about something else"
    events = read_trail(research_dir / "trails" / f"{draft['run_id']}.jsonl")
    assert [(e.reason, e.sentences) for e in events if isinstance(e, WithdrawalEvent)] == [(WHY, 4)]


def test_the_page_says_no_answer_above_a_withdrawn_draft(research_dir, server_settings, doubter, page):  # noqa: F811
    with drafted_on_a_phone(research_dir, server_settings, doubter, f"{QUERY} Haus", page):
        assert page.locator("#status").inner_text() == "The draft was withdrawn: no citation held up."
        said = " ".join(page.locator("#draft-body .withdrawn").inner_text().split())
        assert said == f"No answer, withdrawn: {WHY}. The withdrawn draft, as written:"
        assert page.locator("#draft-body .abstention").count() == 1  # the withdrawal, not an abstention besides
        edge = page.locator("#draft-body .withdrawn").evaluate("e => getComputedStyle(e).borderLeftStyle")
        assert edge == "solid"  # set apart from the sentences it withdraws (review.css), its words saying why
        texts = page.locator("#draft-body .sentence > p:first-child").all_inner_texts()
        assert [" ".join(t.split()) for t in texts] == [
            f"[paraphrase] {SUPPORTED}", f"[inference] {PARTLY}", f"[inference] {OUTSIDE}", f"[inference] {UNJUDGED}"
        ]  # fmt: skip
        # every citation flagged in words beside its sentence (never colour alone), the check's reason with it
        first = " ".join(page.locator("#draft-body .sentence").first.inner_text().split())
        assert "FLAGGED: does not support (model): the passage is about something else" in first
        assert page.locator("#draft-body .citations .flag").count() == 5
        shown = [" ".join(t.split()) for t in page.locator("#draft-body .sentence .support").all_inner_texts()]
        assert [t.split(" (")[0] for t in shown] == [f"verdict: {v}" for v in ("unsupported",) * 3 + ("not checked",)]
        # the notice comes before the sentences it is about
        order = page.evaluate(
            "() => { const w = document.querySelector('#draft-body .withdrawn');"
            " const s = document.querySelector('#draft-body .sentence');"
            " return !!(w.compareDocumentPosition(s) & Node.DOCUMENT_POSITION_FOLLOWING); }"
        )
        assert order
        wide = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert wide[0] <= wide[1], wide
        violations = axe(page)
        assert violations == [], json.dumps(violations, indent=1)[:3000]
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.locator("#draft").screenshot(path=str(SHOTS / "draft-withdrawn-390.png"))
        assert page.js_errors == []
