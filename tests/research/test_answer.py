"""Cited drafts and their check, on real chunks of the demo's HIPE-2022 files, with recorded model answers
(`tracerag.llm.replay`) and without a model: the drafter is shown only the selected sources and every citation
it makes is located in them (a label outside them is flagged, never dropped and never pointed at another
document); it abstains where the selection cannot answer; the check catches a planted wrong citation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.demo_data import DEMO_FILES
from tracerag.ingest import read_documents
from tracerag.llm import RawAnswer, StructuredLLM, Usage
from tracerag.llm.replay import RecordingProvider, ReplayProvider
from tracerag.research.answer import (
    DRAFT_LABEL,
    Draft,
    DraftAnswer,
    cite,
    draft,
    labelled,
    prose_sentences,
    question_language,
)
from tracerag.research.citecheck import check, flagged
from tracerag.research.sources import SourceChunk, SourceRef, load_chunks
from tracerag.retrieval.search import Retriever, SearchRequest
from tracerag.text import sentence_spans
from tracerag.trail import MemoryListener, Trail
from tracerag.trail.events import (
    CitationCheckEvent,
    DraftEvent,
    DraftSentence,
    LLMCallEvent,
    LLMPurpose,
    SentenceKind,
)


@pytest.fixture(scope="module")
def demo(hipe_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collection]:
    path = tmp_path_factory.mktemp("answer") / "col"
    files = [next(hipe_dir.rglob(spec.name)) for spec in DEMO_FILES]
    with Collection.open(path, load_settings(), mode="write", create=True) as col:
        col.ingest((d for f in files for d in read_documents(f, "hipe")), dense=False)
    with Collection.open(path, load_settings(), mode="read") as col:
        yield col


def _sources(col: Collection, query: str, k: int) -> list[SourceChunk]:
    ranking = Retriever(col).search(SearchRequest(query, k=k, channels=("bm25",), windows=""))
    return load_chunks(col, [SourceRef(d.doc_id, d.best_chunk_id) for d in ranking.documents]).chunks


@pytest.fixture(scope="module")
def selected(demo) -> list[SourceChunk]:
    """Two sources a researcher accepted for a Reichstag question."""
    chosen = _sources(demo, "Reichstag", 2)
    assert len(chosen) == 2
    return chosen


@pytest.fixture(scope="module")
def outside(demo, selected) -> SourceChunk:
    """A document of the collection that is NOT in the selection."""
    ids = {s.doc_id for s in selected}
    return next(s for s in _sources(demo, "Paris", 10) if s.doc_id not in ids)


def _words(text: str, start: int, n: int) -> str:
    return " ".join(text.split()[start : start + n])


class Drafter:
    """Answers the drafter's prompt with `answer` (a function of the sources' ids and texts it was shown)."""

    name = "scripted"
    model = "scripted-drafter"

    def __init__(self, answer):
        self.answer = answer
        self.shown: list[list[dict]] = []

    def generate(self, messages, *, json_schema, temperature, max_tokens) -> RawAnswer:
        user = messages[-1].content
        fenced = user.split("<documents>\n", 1)[1].split("\n</documents>", 1)[0]
        shown = [json.loads(line) for line in fenced.split("\n")]
        self.shown.append(shown)
        return RawAnswer(json.dumps(self.answer(shown)), Usage(200, 50), 0.0, self.model)


def _recorded(tmp_path: Path, answer) -> tuple[StructuredLLM, Drafter]:
    """Record the scripted answers once, and answer the test from the recording (a replay fails on anything not
    recorded: the draft under test cannot ask for more than was recorded)."""
    drafter = Drafter(answer)
    folder = tmp_path / "recorded"
    return StructuredLLM(RecordingProvider(drafter, folder)), drafter


def _run(question, sources, llm) -> tuple[Draft, MemoryListener]:
    events = MemoryListener()
    result = draft(question, sources, llm, Trail(listeners=[events]), language="de", evidence_share=None)
    return result, events


def test_the_drafter_sees_only_the_selection_and_cites_only_it(tmp_path, selected, outside):
    def answer(shown):
        s1 = shown[0]["text"]
        return {
            "abstain": False,
            "sentences": [
                {"text": "Der Reichstag tagte.", "kind": "paraphrase",
                 "citations": [{"source": "S1", "quote": _words(s1, 2, 6)}]},
                # A label that names no selected source, with words of a document outside the selection.
                {"text": "Anderswo geschah etwas.", "kind": "inference",
                 "citations": [{"source": "S9", "quote": _words(outside.text, 0, 6)}]},
            ],
        }  # fmt: skip

    llm, drafter = _recorded(tmp_path, answer)
    result, events = _run("Was geschah im Reichstag?", selected, llm)
    shown_ids = [[item["id"] for item in shown] for shown in drafter.shown]
    assert shown_ids == [["S1", "S2"]]
    shown_text = json.dumps(drafter.shown)
    assert _words(outside.text, 0, 8) not in shown_text  # nothing of another document is shown
    allowed = {s.doc_id for s in selected}
    citations = [c for s in result.sentences for c in s.citations]
    assert {c.doc_id for c in citations if c.doc_id is not None} <= allowed
    first = result.sentences[0].citations[0]
    assert first.doc_id == selected[0].doc_id and first.span is not None
    doc = selected[0]
    assert doc.text[first.span[0] - doc.start : first.span[1] - doc.start].split() == first.quote.split()
    stray = result.sentences[1].citations[0]
    assert stray.doc_id is None and stray.span is None  # kept, unlocated: the check flags it
    checks = check(result, None, Trail(listeners=[events]))
    bad = flagged(checks)
    assert [(c.sentence, c.label) for c in bad] == [(1, "S9")] and "not one of the draft's sources" in bad[0].reason
    assert result.label == DRAFT_LABEL
    (event,) = events.of(DraftEvent)
    assert event.sources == [(s.doc_id, s.chunk_id) for s in selected] and not event.abstained
    assert [e.located for e in events.of(CitationCheckEvent)] == [True, False]
    # replayed from the recording: the same draft, no other model
    replayed, _ = _run(
        "Was geschah im Reichstag?", selected, StructuredLLM(ReplayProvider.from_folder(tmp_path / "recorded"))
    )
    assert replayed.sentences == result.sentences


def test_it_abstains_where_the_selection_cannot_answer(tmp_path, selected):
    question = "Welche Seuche wütete in Hamburg im Jahre 1892?"
    # Without a model: no selected source has a sentence holding the question's words.
    alone, events = _run(question, selected, None)
    assert alone.abstained and not alone.sentences and alone.method == "extractive"
    assert events.of(DraftEvent)[0].abstained
    # With a model that says so: an abstention, with what is missing, and no claims.
    llm, _ = _recorded(tmp_path, lambda shown: {"abstain": True, "abstention": "Die Quellen sagen nichts darüber."})
    said, events = _run(question, selected, llm)
    assert said.abstained and said.abstention == "Die Quellen sagen nichts darüber." and not said.sentences
    assert [c.purpose for c in events.of(LLMCallEvent)] == [LLMPurpose.DRAFT]
    # Nothing accepted: nothing to draft from, and no model call.
    empty, events = _run(question, [], llm)
    assert empty.abstained and not events.of(LLMCallEvent)


def test_the_extractive_draft_abstains_when_a_source_shares_only_a_name_with_the_question(selected):
    """A sentence naming the Reichstag does not answer what happened there in a year it does not name: the year
    is content, so one shared name of three content words is not enough to quote."""
    answered, _ = _run("Reichstag", selected, None)
    assert not answered.abstained  # the name alone is the whole question: quoted
    years = {w for s in selected for w in s.text.split() if w.isdigit() and len(w) == 4}
    year = next(str(y) for y in range(1700, 2000) if str(y) not in years)
    assert not any("seuche" in s.text.lower() for s in selected)
    unanswered, _ = _run(f"Reichstag Seuche {year}", selected, None)  # without the year, one of two: quoted
    assert unanswered.abstained and not unanswered.sentences


def test_an_unusable_draft_is_an_abstention_with_its_failure(tmp_path, selected):
    class Garbage(Drafter):
        def generate(self, messages, **kw):
            return RawAnswer("Here is my draft: the Reichstag met.", Usage(1, 1), 0.0, self.model)

    result, events = _run("Was geschah im Reichstag?", selected, StructuredLLM(Garbage(None), repair_rounds=1))
    assert result.abstained and not result.sentences and result.failure and "attempt 2" in result.failure
    assert events.of(DraftEvent)[0].failure == result.failure


def test_the_extractive_draft_quotes_exact_spans_of_the_selection(selected):
    result, _ = _run("Reichstag", selected, None)
    assert not result.abstained and result.sentences
    for sentence in result.sentences:
        assert sentence.kind is SentenceKind.QUOTATION
        (c,) = sentence.citations
        source = next(s for s in selected if s.doc_id == c.doc_id)
        assert c.span is not None and source.text[c.span[0] - source.start : c.span[1] - source.start] == c.quote
    assert not flagged(check(result, None, Trail()))


def _planted(selected: list[SourceChunk]) -> Draft:
    """A draft whose first citation is right, second quotes real words of S2 that say nothing of the sentence,
    third quotes words that are in no source."""
    s1, s2 = selected
    sentence_1 = next(s1.text[a:b] for a, b in sentence_spans(s1.text) if "reichstag" in s1.text[a:b].lower())
    s2_sentences = [s2.text[a:b] for a, b in sentence_spans(s2.text)]
    unrelated = next(t for t in s2_sentences if len(t.split()) >= 6 and "reichstag" not in t.lower())
    labels = labelled(selected)
    sentences = [
        DraftSentence(text=sentence_1, kind=SentenceKind.PARAPHRASE, citations=[cite("S1", sentence_1, labels)]),
        DraftSentence(text=sentence_1, kind=SentenceKind.PARAPHRASE, citations=[cite("S2", unrelated, labels)]),
        DraftSentence(
            text="Der Kaiser eröffnete den Landtag.",
            kind=SentenceKind.INFERENCE,
            citations=[cite("S1", "der Kaiser eröffnete feierlich den Landtag", labels)],
        ),
    ]
    return Draft("Reichstag?", "de", list(selected), False, "", sentences, "model", labels=labels)


def test_the_lexical_check_catches_a_planted_wrong_citation(selected):
    checks = check(_planted(selected), None, Trail())
    assert [c.flagged for c in checks] == [False, True, True]
    assert checks[0].supported is True and checks[0].method == "lexical"
    assert checks[1].located and checks[1].supported is False  # a real quote of S2, but not of this sentence
    assert not checks[2].located and "not in" in checks[2].reason  # words that are in no source


def test_the_model_check_flags_what_it_cannot_confirm(tmp_path, selected):
    class Checker:
        name, model = "scripted", "scripted-checker"

        def __init__(self):
            self.n = 0

        def generate(self, messages, **kw):
            self.n += 1
            if self.n == 2:  # the second citation: an unusable answer, so its support stays unknown
                return RawAnswer("hmm", Usage(1, 1), 0.0, self.model)
            return RawAnswer('{"reasoning": "the passage says so", "supported": true}', Usage(9, 9), 0.0, self.model)

    events = MemoryListener()
    checks = check(_planted(selected), StructuredLLM(Checker(), repair_rounds=0), Trail(listeners=[events]))
    assert [(c.located, c.supported, c.flagged) for c in checks] == [
        (True, True, False),
        (True, None, True),
        (False, None, True),
    ]
    assert [c.purpose for c in events.of(LLMCallEvent)] == [LLMPurpose.CITE_CHECK] * 2  # none for the unlocated
    assert len(events.of(CitationCheckEvent)) == 3


def test_the_draft_answer_schema_lets_a_model_abstain_without_sentences():
    assert DraftAnswer.model_validate({"abstain": True}).sentences == []


def test_a_source_is_the_chunk_named_else_the_one_holding_its_span_and_a_gone_one_is_named(demo):
    (doc_id, chunks) = next((d, c) for d, c in _chunks_by_doc(demo).items() if len(c) >= 2)
    second = chunks[1]
    loaded = load_chunks(
        demo,
        [
            SourceRef(doc_id, second.id),
            SourceRef(doc_id, None, span=(second.end - 20, second.end - 5)),
            SourceRef(doc_id),
            SourceRef("no-such-document"),
        ],
    )
    named, by_span, first = loaded.chunks
    assert named.chunk_id == second.id and first.chunk_id == chunks[0].id  # named; else the document's first
    assert by_span.start <= second.end - 20 and second.end - 5 <= by_span.end  # a chunk holding the whole span
    assert loaded.missing == ["no-such-document"]
    assert all(c.text and c.end - c.start == len(c.text) for c in loaded.chunks)


def _chunks_by_doc(col: Collection) -> dict:
    ids = [
        d.doc_id for d in Retriever(col).search(SearchRequest("der", k=20, channels=("bm25",), windows="")).documents
    ]
    out: dict = {}
    for chunk in col.store.chunks_of(ids):
        out.setdefault(chunk.doc_id, []).append(chunk)
    return out


def test_the_question_language_is_detected_or_taken_from_the_sources(selected):
    assert question_language("Quelles villes ont subi des incendies pendant cette année ?", selected) == "fr"
    assert question_language("Reichstag?", selected) == max(
        {s.language for s in selected}, key=[s.language for s in selected].count
    )


def test_a_text_in_lower_case_is_read_sentence_by_sentence():
    """An abstract set all in lower case (Cranfield's) has no capital to start a sentence: the letter after a full
    stop is read as one, so that an extractive quote is a sentence, not the whole chunk; offsets stay exact."""
    text = "the flow was studied at mach 1.9 . straße results show a shock . a. b. smith found it"
    spans = prose_sentences(text)
    assert [text[a:b] for a, b in spans] == [
        "the flow was studied at mach 1.9 .", "straße results show a shock .", "a. b. smith found it",
    ]  # fmt: skip
    capitals = "The flow. the end"  # a text with capitals keeps the rule: no sentence starts in lower case
    assert [capitals[a:b] for a, b in prose_sentences(capitals)] == [capitals]
