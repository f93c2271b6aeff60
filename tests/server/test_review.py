"""The review board over HTTP and in a browser, on a real collection of its own (the server tests' HIPE newspapers
and the hostile letter; this one is written to): a search run's candidates decided through the API persist across
app instances, are `decision` events of a `review` trail, and are what `selection export` (CLI and API) exports;
undo takes back the session's last decision; a bad decision is a 422 naming `decision`; and in Chromium, two
candidates accepted with the keyboard are in the fetched export, keys typed into a note are the note's, the page
passes axe and its screenshot is kept."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.server.browser import axe, chromium, page, shot  # noqa: F401
from tests.server.conftest import LiveServer, _documents
from tracerag.cli import app as cli_app
from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.model import RankedSource, RunStatus
from tracerag.research.selection import selection_id
from tracerag.retrieval.search import SearchRequest
from tracerag.search.run import run_search
from tracerag.server import ServerConfig, create_app
from tracerag.trail import JsonlWriter, Trail, read_trail
from tracerag.trail.events import DecisionEvent, ResultEvent, RunEvent, RunKind

NAME = "papers"  # the collection's folder name: its name in URLs


@pytest.fixture(scope="session")
def research_dir(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory, server_settings: Settings) -> Path:
    """The server tests' documents in a collection these tests may write (selections, trails): lexical only."""
    path = tmp_path_factory.mktemp("review") / NAME
    with Collection.open(path, server_settings, mode="write", create=True, embed_model="none") as col:
        report = col.ingest(_documents(hipe_dir), dense=False)
    assert report.added > 50
    return path


def search_run(path: Path, settings: Settings, query: str, k: int = 8, least: int = 4) -> str:
    """A recorded search run (what `tracerag search` writes), made with the library as the CLI makes it."""
    with Collection.open(path, settings, mode="read") as col:
        run = run_search(col, SearchRequest(query, k=k, channels=("bm25",), windows=""))
    assert len(run.ranking.documents) >= least, query
    return run.run_id


def app_client(path: Path, settings: Settings) -> TestClient:
    return TestClient(create_app(ServerConfig(collections=(path,), settings=settings)), base_url="http://127.0.0.1")


@pytest.fixture()
def research_client(research_dir: Path, server_settings: Settings) -> Iterator[TestClient]:
    with app_client(research_dir, server_settings) as c:
        yield c


def decisions_of(trail: Path) -> list[DecisionEvent]:
    return [e for e in read_trail(trail) if isinstance(e, DecisionEvent)]


def test_decisions_persist_across_apps_are_in_the_trail_and_in_the_export(research_dir, server_settings):
    run_id = search_run(research_dir, server_settings, "fire harbour warehouses")
    with app_client(research_dir, server_settings) as first:
        board = first.get(f"/api/collections/{NAME}/selections/{run_id}")
        assert board.status_code == 200, board.text
        view = board.json()
        assert view["question"] == "fire harbour warehouses" and view["run_id"] == run_id
        cands = view["candidates"]
        assert len(cands) >= 4 and all(c["decision"] is None for c in cands)
        # a search hit cites its chunk: the board shows the window of it with the query's words, those marked
        with Collection.open(research_dir, server_settings, mode="read") as col:
            docs = col.store.get_documents([c["doc_id"] for c in cands])
        for c in cands:
            start, end = c["span"]
            shown = "".join(seg["text"] for seg in c["passage"])
            assert not c["cited"] and start <= c["passage_start"] and c["passage_start"] + len(shown) <= end
            assert docs[c["doc_id"]].text[c["passage_start"] :].startswith(shown)
            marked = {seg["text"].lower() for seg in c["passage"] if seg["mark"]}
            assert marked and marked <= {"fire", "fires", "harbour", "warehouses", "warehouse"}, marked
        first_doc, second_doc, third_doc = (c["doc_id"] for c in cands[:3])
        review_run = None
        for doc_id, decision, note in [(first_doc, "accept", "the fire itself"), (second_doc, "reject", None),
                                       (third_doc, "accept", None)]:  # fmt: skip
            body = {"doc_id": doc_id, "decision": decision, "note": note, "review_run": review_run, "who": "ana"}
            answer = first.post(f"/api/collections/{NAME}/selections/{run_id}/decisions", json=body)
            assert answer.status_code == 200, answer.text
            assert review_run in (None, answer.json()["review_run"])  # one session: one review run
            review_run = answer.json()["review_run"]
        assert answer.json()["counts"] == {"accepted": 2, "rejected": 1, "undecided": 0,
                                           "candidates": len(cands), "open": len(cands) - 3}  # fmt: skip
    sel = selection_id("fire harbour warehouses")
    with app_client(research_dir, server_settings) as second:  # another app: only the files remember
        listed = second.get(f"/api/collections/{NAME}/selections").json()
        summary = next(s for s in listed["selections"] if s["id"] == sel)
        assert (summary["accepted"], summary["rejected"], summary["undecided"]) == (2, 1, 0)
        assert run_id in [r["run_id"] for r in listed["runs"]]
        again = second.get(f"/api/collections/{NAME}/selections/{sel}").json()
        assert again["run_id"] == run_id  # the run the decisions came from
        by_doc = {c["doc_id"]: c["decision"] for c in again["candidates"]}
        assert by_doc[first_doc]["decision"] == "accept" and by_doc[first_doc]["note"] == "the fire itself"
        assert by_doc[first_doc]["who"] == "ana" and by_doc[second_doc]["decision"] == "reject"
        exported = second.get(f"/api/collections/{NAME}/selections/{sel}/export?format=csv")
        assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(exported.text)))
        ris = second.get(f"/api/collections/{NAME}/selections/{sel}/export?format=ris").text
        csl = json.loads(second.get(f"/api/collections/{NAME}/selections/{sel}/export?format=csl-json").text)
    assert [r["doc_id"] for r in rows] == [first_doc, third_doc]  # the accepted, in the order accepted
    assert ris.count("TY  -") == 2 and len(csl) == 2
    # the CLI's `selection export` exports the same sources
    cli = CliRunner().invoke(cli_app, ["selection", "export", "fire harbour", "-c", str(research_dir)])
    assert cli.exit_code == 0, cli.output
    assert [r["doc_id"] for r in csv.DictReader(io.StringIO(cli.stdout))] == [first_doc, third_doc]
    # every decision is a `decision` event of the session's `review` run, as `tracerag review` records it
    trail = research_dir / "trails" / f"{review_run}.jsonl"
    events = read_trail(trail)
    head = events[0]
    assert isinstance(head, RunEvent) and head.run is RunKind.REVIEW and head.config["from_run"] == run_id
    decided = decisions_of(trail)
    assert [(e.doc_id, e.decision.value if e.decision else None) for e in decided] == [
        (first_doc, "accepted"), (second_doc, "rejected"), (third_doc, "accepted"),
    ]  # fmt: skip
    assert all(e.who == "ana" and e.from_run == run_id and not e.undo and e.span for e in decided)
    assert decided[0].note == "the fire itself"


def test_undo_takes_back_the_sessions_last_decision(research_dir, server_settings, research_client):
    run_id = search_run(research_dir, server_settings, "Conseil fédéral Berne")
    url = f"/api/collections/{NAME}/selections/{run_id}"
    doc = research_client.get(url).json()["candidates"][0]["doc_id"]
    first = research_client.post(f"{url}/decisions", json={"doc_id": doc, "decision": "accept", "note": "kept"})
    review_run = first.json()["review_run"]
    research_client.post(f"{url}/decisions", json={"doc_id": doc, "decision": "reject", "review_run": review_run})
    undone = research_client.post(f"{url}/undo", json={"review_run": review_run}).json()
    assert undone["undone"] and undone["doc_id"] == doc
    assert undone["entry"]["decision"] == "accept" and undone["entry"]["note"] == "kept"  # as it was before
    undone = research_client.post(f"{url}/undo", json={"review_run": review_run}).json()
    assert undone["undone"] and undone["entry"] is None  # back to no decision at all
    assert research_client.get(url).json()["candidates"][0]["decision"] is None
    nothing = research_client.post(f"{url}/undo", json={"review_run": review_run}).json()
    assert not nothing["undone"] and "nothing to undo" in nothing["message"]
    stranger = research_client.post(f"{url}/undo", json={"review_run": "20260101T000000-000000"}).json()
    assert not stranger["undone"]  # another session's (or a restarted server's) decisions are not this one's
    events = decisions_of(research_dir / "trails" / f"{review_run}.jsonl")
    assert [(e.undo, e.decision.value if e.decision else None) for e in events] == [
        (False, "accepted"), (False, "rejected"), (True, "accepted"), (True, None),
    ]  # fmt: skip


def test_bad_requests_name_what_is_wrong(research_dir, server_settings, research_client):
    run_id = search_run(research_dir, server_settings, "Zürich Stadtrat")
    url = f"/api/collections/{NAME}/selections/{run_id}"
    doc = research_client.get(url).json()["candidates"][0]["doc_id"]
    bad = research_client.post(f"{url}/decisions", json={"doc_id": doc, "decision": "maybe"})
    assert bad.status_code == 422 and bad.json()["field"] == "decision", bad.text
    stranger = research_client.post(f"{url}/decisions", json={"doc_id": "no-such-doc", "decision": "accept"})
    assert stranger.status_code == 404 and "no-such-doc" in stranger.json()["error"]
    assert research_client.get(f"/api/collections/{NAME}/selections/nothing-like-it").status_code == 404
    assert research_client.get(f"/api/collections/{NAME}/selections/..%2F..%2Fetc").status_code == 404
    assert research_client.get("/api/collections/elsewhere/selections").status_code == 404
    fmt = research_client.get(f"{url}/export?format=docx")
    assert fmt.status_code == 422 and fmt.json()["field"] == "format"
    # nothing was decided by the refused requests
    assert research_client.get(url).json()["counts"]["accepted"] == 0


def test_the_board_page_shows_hostile_text_as_text(research_dir, server_settings, research_client):
    run_id = search_run(research_dir, server_settings, "harbour master council", least=1)
    page_html = research_client.get(f"/review/{NAME}/{run_id}")
    assert page_html.status_code == 200
    html = page_html.text
    assert "hostile-1" in html  # the hostile letter is a candidate
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#39;text&#39;)&lt;/script&gt;" in html  # shown, as text
    index = research_client.get("/review").text
    assert f"/review/{NAME}/{run_id}" in index


def test_review_board_by_keyboard_then_export_and_draft(research_dir, server_settings, page):  # noqa: F811
    run_id = search_run(research_dir, server_settings, "Genève Lausanne")
    with LiveServer(ServerConfig(collections=(research_dir,), settings=server_settings)) as live:
        page.goto(f"{live.url}/review")  # the picker: this run is listed, and the page passes axe
        assert axe(page) == []
        page.locator(f'a[href="/review/{NAME}/{run_id}"]').click()
        page.wait_for_url(f"**/review/{NAME}/{run_id}")
        cards = page.locator("article.card")
        assert cards.count() >= 4
        page.keyboard.press("j")  # the first card, focused and announced
        assert page.evaluate("document.activeElement.id") == "card-1"
        assert "Candidate 1 of" in page.locator("#status").inner_text()
        page.keyboard.press("a")  # accept it; the focus moves on to the second
        page.locator("#card-1[data-decision=accept]").wait_for()
        assert page.evaluate("document.activeElement.id") == "card-2"
        assert "current" in (page.locator("#card-2").get_attribute("class") or "")  # outlined as focused
        page.keyboard.press("a")
        page.locator("#card-2[data-decision=accept]").wait_for()
        page.keyboard.press("r")
        page.locator("#card-3[data-decision=reject]").wait_for()
        page.keyboard.press("u")  # the reject taken back
        page.locator("#card-3[data-decision='']").wait_for()
        assert page.locator('[data-count="accepted"]').inner_text() == "2"
        # keys typed into a note are the note's
        note = page.locator("#note-4")
        note.click()
        page.keyboard.type("a rare source")
        assert note.input_value() == "a rare source"
        assert page.locator("#card-4").get_attribute("data-decision") == ""
        assert page.locator('[data-count="accepted"]').inner_text() == "2"
        accepted = [cards.nth(i).get_attribute("data-doc") for i in (0, 1)]
        href = page.locator('a[data-export="csv"]').get_attribute("href")
        exported = page.evaluate("async (url) => (await fetch(url)).text()", href)
        assert [r["doc_id"] for r in csv.DictReader(io.StringIO(exported))] == accepted
        page.reload()  # the decisions are kept
        assert page.locator("#card-1").get_attribute("data-decision") == "accept"
        assert page.locator("#card-2").get_attribute("data-decision") == "accept"
        page.locator("#draft-button").click()  # no model here: the extractive draft, or its abstention
        page.locator("#draft:not([hidden]) .draft-label").wait_for()
        assert "Interpretive draft" in page.locator("#draft").inner_text()
        # each sentence's support verdict in words beside it (checked lexically here), as `answer --explain` says it
        verdicts = page.locator("#draft-body .sentence .support").all_inner_texts()
        assert len(verdicts) == page.locator("#draft-body .sentence").count() > 0
        words = ("supported (", "partly supported (", "unsupported (", "not checked (")
        assert all(v.startswith("verdict: ") and v.removeprefix("verdict: ").startswith(words) for v in verdicts)
        violations = axe(page)
        assert violations == [], json.dumps(violations, indent=1)[:3000]
        shot(page, "review")
        assert page.js_errors == []


def ask_run(path: Path, settings: Settings) -> tuple[str, tuple[int, int], str]:
    """An ask run's trail as the agent ends it (its `result`): the hostile letter accepted with the span its reason
    quotes, another document of the collection rejected; written through the trail's own writer. Returns the run
    id, the cited span and the rejected document."""
    with Collection.open(path, settings, mode="read") as col:
        text = col.store.get_documents(["hostile-1"])["hostile-1"].text
        other = next(i for i in col.store.document_ids() if i != "hostile-1")
        start = text.index("The harbour master")
        cited = (start, start + len("The harbour master wrote to the council about the fire."))
        ranking = [
            RankedSource(1, "hostile-1", "hostile-1#0", "agent", (1,), ("it reports the harbour fire",), cited),
            RankedSource(2, other, f"{other}#0", "warm_start", (), ("nothing of a fire",), None),
        ]
        trail = Trail()
        writer = JsonlWriter(col.trails_dir / f"{trail.run_id}.jsonl")
        trail.listeners.append(writer)
        trail.emit(RunEvent(question="the harbour fire", collection=str(path), k=2, config={}, versions={}))
        trail.emit(
            ResultEvent(status=RunStatus.COMPLETE, ranking=ranking, accepted=["hostile-1"], held=[],
                        rejected=[other], totals={})
        )  # fmt: skip
        writer.close()
    return trail.run_id, cited, other


def test_an_ask_runs_board_marks_the_cited_span_and_the_verdicts(research_dir, server_settings, research_client):
    run_id, cited, rejected = ask_run(research_dir, server_settings)
    board = research_client.get(f"/api/collections/{NAME}/selections/{run_id}").json()
    first, second = board["candidates"]
    assert first["doc_id"] == "hostile-1" and first["cited"] and first["verdict"] == "accept"
    marked = [s["text"] for s in first["passage"] if s["mark"]]
    assert marked == ["The harbour master wrote to the council about the fire."]
    assert first["reasons"] == ["it reports the harbour fire"]
    assert first["document_url"] == f"/collections/{NAME}/documents/hostile-1?start={cited[0]}&end={cited[1]}"
    assert second["doc_id"] == rejected and second["verdict"] == "reject" and not second["cited"]
    html = research_client.get(f"/review/{NAME}/{run_id}").text
    assert "<mark>The harbour master wrote to the council about the fire.</mark>" in html
    assert 'class="verdict-accept">accept<' in html and 'class="verdict-reject">reject<' in html


def test_decisions_from_many_clients_at_once_are_all_kept(research_dir, server_settings, research_client):
    """Eight reviewers deciding at the same moment (each their own session, the server's worker threads): every
    decision is in the selection and in its session's trail, none lost to another's transaction."""
    from concurrent.futures import ThreadPoolExecutor

    run_id = search_run(research_dir, server_settings, "la le de the der", k=8, least=8)
    url = f"/api/collections/{NAME}/selections/{run_id}"
    docs = [c["doc_id"] for c in research_client.get(url).json()["candidates"]]

    def decide(n: int) -> tuple[str, str]:
        body = {"doc_id": docs[n], "decision": "accept" if n % 2 else "reject", "who": f"reviewer {n}"}
        answer = research_client.post(f"{url}/decisions", json=body)
        assert answer.status_code == 200, answer.text
        return docs[n], answer.json()["review_run"]

    with ThreadPoolExecutor(8) as pool:
        done = list(pool.map(decide, range(8)))
    board = research_client.get(url).json()
    assert board["counts"]["accepted"] == 4 and board["counts"]["rejected"] == 4
    assert {c["doc_id"]: c["decision"]["who"] for c in board["candidates"]} == {
        d: f"reviewer {n}" for n, d in enumerate(docs)
    }
    for doc_id, review_run in done:
        assert [e.doc_id for e in decisions_of(research_dir / "trails" / f"{review_run}.jsonl")] == [doc_id]
