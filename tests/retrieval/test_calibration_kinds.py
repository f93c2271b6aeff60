"""The calibration's kinds beyond the text's own words, on real data: the collection's entity names (French and
German HIPE-2022, predicted entities), each answered by every document holding it; and questions a scripted model
writes for passages of HIPE-2022 through the project's structured-output path (`research/pseudo_questions.py`),
with its failures recorded and skipped, never fatal."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence

import pytest

from tests.ingest.test_entities import EntityCollection, french_entities
from tracerag.errors import LLMError
from tracerag.llm import Message, RawAnswer, StructuredLLM, Usage
from tracerag.research.pseudo_questions import PassageQuestions, prompt
from tracerag.retrieval import Retriever, calibration
from tracerag.retrieval.pseudo_queries import ENTITY_MAX_DOCUMENTS, QUESTION_GIVE_UP, entity_queries, make
from tracerag.text import fold_key

__all__ = ["french_entities"]  # the session fixture, shared with the ingest tests

_FENCED = re.compile(r"<passage>\n(.*)\n</passage>", re.S)


def passage_of(messages: Sequence[Message]) -> str:
    return json.loads(_FENCED.search(messages[1].content).group(1))  # type: ignore[union-attr]


class Asker:
    """A model that asks about a passage's four longest words, except where `fails` says (given the passage's
    number, in the order asked): there it answers something that is no JSON (`garbage`) or its transport fails
    (`down`)."""

    name = "scripted"
    model = "scripted-questions"

    def __init__(self, fails=lambda n: None):
        self.fails = fails
        self.asked: list[Sequence[Message]] = []
        self.passages: list[str] = []

    def generate(self, messages, *, json_schema, temperature, max_tokens) -> RawAnswer:
        self.asked.append(messages)
        passage = passage_of(messages)  # a repair round shows the passage again
        if passage not in self.passages:
            self.passages.append(passage)
        how = self.fails(self.passages.index(passage))
        if how == "down":
            raise LLMError("connection refused")
        if how == "garbage":
            return RawAnswer("I would ask about the passage.", Usage(80, 10))
        words = sorted(set(re.findall(r"[^\W\d_]{4,}", passage)), key=lambda w: (-len(w), w))[:4]
        return RawAnswer(json.dumps({"question": f"Que dit-on de {' '.join(words)} ?"}), Usage(80, 10))


@pytest.mark.needs_data("hipe2022")
def test_questions_are_asked_in_the_passage_language_and_answered_by_it(hipe_collection) -> None:
    col = hipe_collection.collection
    model = Asker()
    questions = PassageQuestions(StructuredLLM(model))
    made = make(col, per_kind=20, seed=1, questioner=questions)
    asked = [q for q in made.queries if q.kind == "question"]
    assert len(asked) == 20 and questions.calls == 20 and questions.failures == []
    assert "question" not in made.notes
    # the draw does not depend on the model: every other kind is what it is without one
    without = make(col, per_kind=20, seed=1)
    assert [q for q in made.queries if q.kind != "question"] == without.queries
    assert "no model asked" in without.notes["question"]
    # each passage travelled fenced as data, with its document's language
    languages = {d: doc.language for d, doc in col.store.get_documents([q.doc_id for q in asked], text=False).items()}
    for q, messages in zip(asked, model.asked, strict=True):
        passage = passage_of(messages)
        assert "<" not in messages[1].content.split("<passage>\n")[1].split("\n</passage>")[0]
        assert f"ISO 639-1 code {languages[q.doc_id]!r}" in messages[0].content
        assert passage in " ".join(c.index_text for c in col.store.chunks_of([q.doc_id]))
        assert q.relevant == {q.doc_id} and q.text.startswith("Que dit-on de ")
    found = calibration.calibrate(
        Retriever(col), per_kind=20, seed=1, questioner=PassageQuestions(StructuredLLM(Asker()))
    )
    assert found is not None and found.queries["question"] == 20
    report = found.kinds["question"]
    assert report.queries == 20 and report.acted["bm25"] == 20 and report.note == ""
    assert report.mrr["bm25"] >= 0.8  # measured 0.95: the passage's four longest words find it


@pytest.mark.needs_data("hipe2022")
def test_a_question_the_model_cannot_give_is_recorded_and_skipped(hipe_collection) -> None:
    col = hipe_collection.collection
    model = Asker(lambda n: "garbage" if n % 4 == 3 else None)
    questions = PassageQuestions(StructuredLLM(model, repair_rounds=1))
    made = make(col, per_kind=20, seed=1, questioner=questions)
    asked = [q for q in made.queries if q.kind == "question"]
    failed = len(questions.failures)
    assert failed == 5 and len(asked) == 15  # every fourth passage skipped, the rest asked
    assert len(model.asked) == 20 + failed  # a failure had its one repair round, no more
    assert made.notes["question"].startswith(f"{failed} of 20 passages got no question from scripted-questions")
    assert "unusable answer" in made.notes["question"] and "stopped" not in made.notes["question"]


@pytest.mark.needs_data("hipe2022")
def test_a_model_that_is_down_is_asked_no_more_and_the_calibration_goes_on(hipe_collection) -> None:
    col = hipe_collection.collection
    model = Asker(lambda n: "down")
    found = calibration.calibrate(
        Retriever(col), per_kind=20, seed=1, questioner=PassageQuestions(StructuredLLM(model))
    )
    assert found is not None and len(model.asked) == QUESTION_GIVE_UP
    report = found.kinds["question"]
    assert report.queries == 0 and report.mrr == {}
    assert report.note == (
        f"{QUESTION_GIVE_UP} of {QUESTION_GIVE_UP} passages got no question from scripted-questions (first: no "
        f"answer from the model: connection refused); stopped after {QUESTION_GIVE_UP} failures in a row"
    )
    assert found.queries["span"] == 20 and found.weights["bm25"] == 1.0  # the other kinds, as without a model


def test_a_question_that_repeats_the_passage_is_no_question() -> None:
    passage = "Le Conseil fédéral a nommé hier le nouveau consul à Marseille."
    answer = json.dumps({"question": "Le Conseil fédéral a nommé hier"})

    class Parrot:
        name, model = "scripted", "parrot"

        def generate(self, messages, **_) -> RawAnswer:
            return RawAnswer(answer)

    asked = PassageQuestions(StructuredLLM(Parrot()))(passage, "fr")
    assert asked.question is None and asked.failure == "the question repeats the passage"
    assert "the language of the passage" in prompt(passage, None)[0].content  # no language known: none named


def test_entity_names_are_answered_by_every_document_holding_them(french_entities: EntityCollection) -> None:
    col = french_entities.collection
    queries, why = entity_queries(col.store, 30, random.Random("0/entity"))
    assert len(queries) == 30 and why == ""
    assert queries == entity_queries(col.store, 30, random.Random("0/entity"))[0]  # seeded
    several = 0
    for q in queries:
        holding = {d for _, d, _, _ in col.store.entity_chunks([fold_key(q.text)])}
        assert q.kind == "entity" and q.relevant == holding and 1 <= len(holding) <= ENTITY_MAX_DOCUMENTS
        assert "\n" not in q.text and q.doc_id in holding
        several += len(holding) > 1
    assert several > 0  # measured: names in two or three documents are drawn too
    # asked for more names than the collection has rare ones: all of them, and why no more
    every, why = entity_queries(col.store, 100_000, random.Random("0/entity"))
    named = int(
        re.match(rf"only {len(every)} of the collection's ([\d,]+) entity names are held by 1 to 3 documents$", why)
        .group(1)
        .replace(",", "")
    )  # type: ignore[union-attr]
    assert 30 < len(every) < named <= len(col.store.entity_forms())  # numbers and 2-letter forms are no names


def test_the_entity_channel_is_calibrated_on_entity_names(french_entities: EntityCollection) -> None:
    found = calibration.calibrate(Retriever(french_entities.collection), per_kind=30)
    assert found is not None and "entity" in found.weights
    report = found.kinds["entity"]
    assert report.queries == 30 and report.note == ""
    # measured 1.0 and 0.94: the entity channel finds a name's documents, bm25 most of them
    assert report.mrr["entity"] >= 0.9 and report.mrr["bm25"] >= 0.8
    # on the spans it acts on few queries, and there it is weaker than on names
    assert found.kinds["span"].acted["entity"] < found.kinds["span"].queries
    assert found.kinds["span"].mrr["entity"] < report.mrr["entity"]
