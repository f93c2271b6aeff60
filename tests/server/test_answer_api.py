"""The cited draft over HTTP, from the sources accepted on the review board only: without a model, the CLI's
extractive draft (quotes located at their exact spans, checked lexically, linked to the document view) or its
abstention; with a model behind a real OpenAI-compatible endpoint (scripted), a cited draft whose citation to a
source outside the selection is flagged, never dropped; and the run in the trail."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAI, Reply, json_reply, last_user
from tests.server.test_judge_api import with_model
from tests.server.test_review import NAME, app_client, research_dir, search_run  # noqa: F401
from tracerag.collection import Collection
from tracerag.research.answer import DRAFT_LABEL
from tracerag.research.selection import selection_id
from tracerag.trail import read_trail
from tracerag.trail.events import CitationCheckEvent, DraftEvent, RunEvent, RunKind


def accept(client, run_id: str, picks: dict[int, str]) -> list[str]:
    """Decide on the run's candidates by their place (0-based): {place: decision}; the doc ids, in that order."""
    url = f"/api/collections/{NAME}/selections/{run_id}"
    cands = client.get(url).json()["candidates"]
    docs = []
    for place, decision in picks.items():
        answer = client.post(f"{url}/decisions", json={"doc_id": cands[place]["doc_id"], "decision": decision})
        assert answer.status_code == 200, answer.text
        docs.append(cands[place]["doc_id"])
    return docs


def test_without_a_model_the_draft_is_extractive_and_cites_exact_spans(research_dir, server_settings):  # noqa: F811
    run_id = search_run(research_dir, server_settings, "Lausanne")
    with app_client(research_dir, server_settings) as client:
        accepted = accept(client, run_id, {0: "accept", 1: "accept", 2: "reject"})[:2]
        sel = selection_id("Lausanne")
        answer = client.post(f"/api/collections/{NAME}/answer", json={"selection": sel})
        assert answer.status_code == 200, answer.text
        draft = answer.json()
    assert draft["label"] == DRAFT_LABEL and draft["method"] == "extractive" and not draft["abstained"]
    assert [s["doc_id"] for s in draft["sources"]] == accepted  # the accepted only, in the order accepted
    assert draft["flagged"] == 0 and draft["sentences"]
    with Collection.open(research_dir, server_settings, mode="read") as col:
        docs = col.store.get_documents(accepted)
    for sentence in draft["sentences"]:
        assert sentence["kind"] == "quotation"
        for c in sentence["citations"]:
            start, end = c["span"]
            assert c["doc_id"] in accepted and docs[c["doc_id"]].text[start:end] == c["quote"]
            assert "lausanne" in c["quote"].lower()
            assert c["document_url"] == f"/collections/{NAME}/documents/{c['doc_id']}?start={start}&end={end}"
            assert c["check"]["located"] and c["check"]["method"] == "lexical" and not c["check"]["flagged"]
    events = read_trail(research_dir / "trails" / f"{draft['run_id']}.jsonl")
    head = events[0]
    assert isinstance(head, RunEvent) and head.run is RunKind.ANSWER and head.config["from"] == "selection:Lausanne"
    assert len([e for e in events if isinstance(e, DraftEvent)]) == 1
    assert len([e for e in events if isinstance(e, CitationCheckEvent)]) == sum(
        len(s["citations"]) for s in draft["sentences"]
    )


def test_it_abstains_when_the_accepted_sources_cannot_answer(research_dir, server_settings):  # noqa: F811
    run_id = search_run(research_dir, server_settings, "Bern Bundesrat")
    with app_client(research_dir, server_settings) as client:
        accept(client, run_id, {0: "accept"})
        url = f"/api/collections/{NAME}/answer"
        off_topic = client.post(
            url, json={"selection": "Bern Bundesrat", "question": "textile strikers demanded wages"}
        )
        none_accepted = accept(client, search_run(research_dir, server_settings, "Paris Londres"), {0: "reject"})
        empty = client.post(url, json={"selection": "Paris Londres"})
        refused = client.post(url, json={"from_run": run_id, "question": "who?"})
        neither = client.post(url, json={"question": "who?"})
    draft = off_topic.json()
    assert off_topic.status_code == 200 and draft["abstained"] and not draft["sentences"]
    assert "enough of the question's words" in draft["abstention"]
    assert none_accepted and empty.status_code == 200
    assert empty.json()["abstained"] and "no accepted sources" in empty.json()["abstention"]
    assert refused.status_code == 400 and "only the agent accepts sources" in refused.json()["error"]
    assert neither.status_code == 400


def drafter(body: dict, n: int) -> Reply:
    """The drafter quotes six words of its first source and cites a source it was not given (S9); the checker
    finds every located quote supports its sentence."""
    schema = json.dumps(body.get("response_format", {}))
    if '"abstain"' in schema:
        fenced = last_user(body).split("<documents>\n", 1)[1].split("\n</documents>", 1)[0]
        first = json.loads(fenced.split("\n")[0])
        quote = " ".join(first["text"].split()[3:9])
        return json_reply({
            "abstain": False,
            "sentences": [
                {"text": f"The source reports: {quote}.", "kind": "paraphrase",
                 "citations": [{"source": first["id"], "quote": quote}]},
                {"text": "The town council met daily.", "kind": "inference",
                 "citations": [{"source": "S9", "quote": "the council met"}]},
            ],
        })  # fmt: skip
    return json_reply({"reasoning": "the passage says it", "supported": True})


@pytest.fixture()
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(drafter, model="scripted-drafter") as server:
        yield server


def test_a_model_draft_flags_a_citation_outside_the_accepted_sources(research_dir, server_settings, fake):  # noqa: F811
    run_id = search_run(research_dir, server_settings, "Zürich Regierung")
    with app_client(research_dir, with_model(server_settings, fake)) as client:
        accepted = accept(client, run_id, {0: "accept", 1: "accept"})
        answer = client.post(f"/api/collections/{NAME}/answer", json={"selection": "Zürich Regierung"})
    assert answer.status_code == 200, answer.text
    draft = answer.json()
    assert draft["method"] == "model" and not draft["abstained"] and draft["flagged"] == 1
    cited, outside = draft["sentences"][0]["citations"][0], draft["sentences"][1]["citations"][0]
    with Collection.open(research_dir, server_settings, mode="read") as col:
        doc = col.store.get_documents([accepted[0]])[accepted[0]]
    start, end = cited["span"]
    assert cited["doc_id"] == accepted[0] and " ".join(doc.text[start:end].split()) == cited["quote"]
    assert cited["check"]["located"] and cited["check"]["supported"] and not cited["check"]["flagged"]
    assert outside["doc_id"] is None and outside["span"] is None and outside["document_url"] is None
    assert outside["check"]["flagged"] and not outside["check"]["located"]
    assert draft["sentences"][1]["kind"] == "inference"
