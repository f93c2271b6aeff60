"""Channel weights calibrated on a collection's own pseudo-queries: how they are cut, what they measure, where
they are kept, and when a search uses them (`retrieval/calibration.py`, `Retriever.fusion_plan`)."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import ReadOnlyError
from tracerag.ingest import read_documents
from tracerag.model import Document, Hit
from tracerag.retrieval import Retriever, SearchRequest, calibration
from tracerag.retrieval.fusion import Method

runner = CliRunner()
pytestmark = pytest.mark.needs_data("hipe2022")


@pytest.fixture(scope="module")
def small_docs(hipe_dir: Path) -> list[Document]:
    docs = [d for d in read_documents(hipe_dir, "hipe") if isinstance(d, Document)]
    return sorted(docs, key=lambda d: d.id)[:80]


def _collection(path: Path, docs: list[Document]) -> Collection:
    col = Collection.open(path, load_settings(), mode="write", create=True)
    col.ingest(docs, dense=False)
    return col


def test_pseudo_queries_are_cut_from_the_documents_they_answer(hipe_collection) -> None:
    col = hipe_collection.collection
    queries = calibration.pseudo_queries(col, per_kind=40, seed=3)
    assert queries == calibration.pseudo_queries(col, per_kind=40, seed=3)  # seeded: the same draw twice
    assert queries != calibration.pseudo_queries(col, per_kind=40, seed=4)
    # a lexical collection without entities, and no model: the kinds cut from the text
    assert {q.kind for q in queries} == {"span", "keywords", "phrase", "shuffled"}
    assert len({q.doc_id for q in queries}) == len(queries)  # one query per drawn document
    texts = {c.doc_id: " ".join(c.index_text for c in col.store.chunks_of([c.doc_id])) for q in queries for c in [q]}
    for q in queries:
        words = q.text.split()
        text = " ".join(texts[q.doc_id].split())
        assert q.relevant == {q.doc_id}  # a query cut from a document is answered by it alone
        if q.kind == "span":
            assert 3 <= len(words) <= calibration.SPAN_WORDS and q.text in text
        elif q.kind == "shuffled":  # a span's words, in another order
            assert 3 <= len(words) <= calibration.SPAN_WORDS and q.text not in text
            spans = [text.split()[i : i + len(words)] for i in range(len(text.split()))]
            assert any(sorted(span) == sorted(words) for span in spans)
        else:
            assert len(words) <= max(calibration.KEYWORDS, calibration.PHRASE_WORDS)
            assert all(w.casefold() in texts[q.doc_id].casefold() for w in words)


def test_calibration_weighs_each_channel_by_its_pseudo_mrr(hipe_collection) -> None:
    found = calibration.calibrate(Retriever(hipe_collection.collection), per_kind=60)
    assert found is not None
    assert set(found.weights) == {"bm25", "phrase"}  # lexical collection; the date channel is never calibrated
    assert found.channels == ["bm25", "phrase"]
    assert found.acted["bm25"] == sum(found.queries.values())  # bm25 acts on every query
    assert 0 < found.acted["phrase"] < found.acted["bm25"]  # phrase only on short ones
    # measured 0.85 and 0.90 (60 of each kind); floors a little below
    assert found.mrr["bm25"] >= 0.75 and found.mrr["phrase"] >= 0.8
    assert max(found.weights.values()) == 1.0
    for channel, weight in found.weights.items():
        assert weight == pytest.approx(found.mrr[channel] / found.reference[channel], abs=1e-4)
    assert set(found.fused) == {name for name, *_ in calibration.CANDIDATES}
    # every kind is in the table, those without queries with why
    assert list(found.kinds) == list(calibration.KINDS)
    assert {k for k, r in found.kinds.items() if r.queries} == {"span", "keywords", "phrase", "shuffled"}
    assert "no entities" in found.kinds["entity"].note and "no model asked" in found.kinds["question"].note
    # each kind weighs the same: bm25 acts on every query, so its MRR is the mean of its MRR on each kind
    kinds = [r for r in found.kinds.values() if r.queries]
    assert found.mrr["bm25"] == pytest.approx(sum(r.mrr["bm25"] for r in kinds) / len(kinds), abs=1e-3)
    assert all(r.acted["bm25"] == r.queries for r in kinds)
    # the phrase channel speaks on short queries only: word pairs and rare words, never a 12-word span
    assert "phrase" not in found.kinds["span"].mrr and "phrase" not in found.kinds["shuffled"].mrr
    assert found.kinds["phrase"].acted["phrase"] > 0
    # measured: a span's words shuffled are found by bm25 as the span is (a bag of words)
    assert found.kinds["shuffled"].mrr["bm25"] >= found.kinds["span"].mrr["bm25"] - 0.05


class _Scrambled:
    """A retriever whose phrase channel returns its chunks for random documents: a channel that finds nothing
    it should."""

    def __init__(self, inner: Retriever, ids: list[str]):
        self.inner, self.ids, self.rng = inner, ids, random.Random(0)
        self.collection, self.settings, self.has_vectors = inner.collection, inner.settings, inner.has_vectors

    def search(self, request: SearchRequest):
        ranking = self.inner.search(request)
        hits = ranking.channel_hits.get("phrase", [])
        ranking.channel_hits["phrase"] = [h._replace(doc_id=self.rng.choice(self.ids)) for h in hits]
        return ranking


def test_a_channel_that_finds_nothing_it_should_weighs_little(hipe_collection) -> None:
    col = hipe_collection.collection
    fake = _Scrambled(Retriever(col), col.store.document_ids())
    found = calibration.calibrate(fake, per_kind=60)  # type: ignore[arg-type]
    assert found is not None
    assert found.weights["bm25"] == 1.0 and found.weights["phrase"] < 0.1


def test_too_small_a_collection_is_not_calibrated(tmp_path: Path, small_docs: list[Document]) -> None:
    with _collection(tmp_path / "c", small_docs[:20]) as col:
        assert calibration.calibrate(Retriever(col)) is None
        plan = Retriever(col).fusion_plan()
        assert plan.weights is None and plan.source == "equal" and "too small to calibrate" in plan.why


def test_a_saved_calibration_is_what_searches_use_until_the_collection_changes(
    tmp_path: Path, small_docs: list[Document]
) -> None:
    path = tmp_path / "c"
    with _collection(path, small_docs[:60]) as col:
        plan = Retriever(col).fusion_plan()
        assert plan.source == "equal" and "not calibrated" in plan.why
        found = calibration.calibrate(Retriever(col), per_kind=20)
        assert found is not None
        calibration.save(col, replace(found, weights={"bm25": 1.0, "phrase": 0.25}))
    with Collection.open(path, load_settings(), mode="read") as col:
        retriever = Retriever(col)
        plan = retriever.fusion_plan()
        expected = (Method.COMBSUM, {"bm25": 1.0, "phrase": 0.25}, "calibration")
        assert (plan.method, plan.weights, plan.source) == expected
        ranking = retriever.search(SearchRequest("Paris", k=5))
        assert ranking.params["fusion"]["weights"] == {"bm25": 1.0, "phrase": 0.25}
        assert ranking.params["fusion"]["why"].startswith("calibrated ")
        # the weights are applied: each document's score is the weighted sum of its channels' scaled scores
        top = ranking.documents[0]
        assert top.score <= 1.0 + 0.25 + 1e-9
        with pytest.raises(ReadOnlyError):
            calibration.save(col, found)  # only the writer may
    # a third more documents: the weights no longer describe the collection
    with _collection(path, small_docs[:80]) as col:
        plan = Retriever(col).fusion_plan()
        assert plan.weights is None and "measured on 60 documents, the collection now holds 80" in plan.why
        refreshed = calibration.refresh(col)
        assert refreshed is not None and refreshed.state["documents"] == 80
        assert calibration.refresh(col) is None  # still valid: nothing to do
    with Collection.open(path, load_settings(), mode="read") as col:
        assert Retriever(col).fusion_plan().source == "calibration"


def test_a_damaged_calibration_file_is_said_and_not_used(tmp_path: Path, small_docs: list[Document]) -> None:
    with _collection(tmp_path / "c", small_docs[:60]) as col:
        (col.path / calibration.CALIBRATION_FILE).write_text("{not json", encoding="utf-8")
        plan = Retriever(col).fusion_plan()
        assert plan.weights is None and "calibration.json could not be read" in plan.why


def test_a_calibration_of_the_format_before_the_kinds_asks_to_calibrate_again(
    tmp_path: Path, small_docs: list[Document]
) -> None:
    """A format 1 file (weights from spans and words only, no per-kind table) is still used, and said, until the
    writer's next refresh replaces it."""
    with _collection(tmp_path / "c", small_docs[:60]) as col:
        found = calibration.calibrate(Retriever(col), per_kind=10)
        assert found is not None
        data = calibration.as_dict(found)
        del data["kinds"]
        data["format"] = 1
        (col.path / calibration.CALIBRATION_FILE).write_text(json.dumps(data), encoding="utf-8")
        plan = Retriever(col).fusion_plan()
        assert plan.weights == found.weights and plan.source == "calibration"
        assert "(format 1: spans and words only, no table per kind; `tracerag calibrate`)" in plan.why
        assert calibration.refresh(col) is not None
        plan = Retriever(col).fusion_plan()
        assert plan.source == "calibration" and "format 1" not in plan.why


def test_fusion_set_in_the_settings_wins(tmp_path: Path, small_docs: list[Document]) -> None:
    with _collection(tmp_path / "c", small_docs[:20]) as col:
        settings = col.settings.retrieval.model_copy(update={"fusion": "rrf"})
        plan = Retriever(col, settings).fusion_plan()
        assert (plan.method, plan.weights) == (Method.RRF, None)
        settings = col.settings.retrieval.model_copy(update={"fusion": "wrrf", "weights": {"phrase": 0.5}})
        ranking = Retriever(col, settings).search(SearchRequest("Paris", k=3))
        assert ranking.params["fusion"]["method"] == "wrrf" and ranking.params["fusion"]["weights"] == {"phrase": 0.5}
        for d in ranking.documents:  # weighted RRF: each channel's 1/(60 + rank), phrase's halved
            expected = sum((0.5 if e.channel == "phrase" else 1.0) / (60 + e.rank) for e in d.channels)
            assert d.score == pytest.approx(expected)


def test_the_calibrate_command_and_ingest_keep_the_weights(tmp_path: Path, small_docs: list[Document]) -> None:
    src = tmp_path / "docs.jsonl"
    with src.open("w", encoding="utf-8") as f:
        for d in small_docs[:60]:
            f.write(json.dumps({"id": d.id, "text": d.text, "language": d.language, "date": d.date}) + "\n")
    col = tmp_path / "c"
    result = runner.invoke(app, ["ingest", str(src), "-c", str(col), "--no-dense"])
    assert result.exit_code == 0, result.output
    assert "channel weights calibrated on" in result.output  # the ingest calibrated: 60 documents is enough
    assert (col / calibration.CALIBRATION_FILE).is_file()
    result = runner.invoke(app, ["calibrate", "-c", str(col), "--queries", "10", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["calibrated"] and data["weights"]["bm25"] == 1.0 and data["format"] == 2
    expected = {"span": 10, "keywords": 10, "phrase": 10, "shuffled": 10, "entity": 0, "question": 0}
    assert data["queries"] == expected
    assert {k: v["queries"] for k, v in data["kinds"].items()} == expected
    assert data["kinds"]["span"]["acted"]["bm25"] == 10 and 0 <= data["kinds"]["span"]["mrr"]["bm25"] <= 1
    assert data["kinds"]["question"]["note"] == "no model configured (llm.model): no questions asked"
    result = runner.invoke(app, ["search", "Paris", "-c", str(col), "--explain"])
    assert result.exit_code == 0, result.output
    shown = " ".join(result.output.split())  # the console wraps at 80 columns
    assert "fusion: combsum (bm25, date, phrase, entity: max; dense: minmax), weights bm25 1.00" in shown
    assert "calibrated" in result.output
    result = runner.invoke(app, ["calibrate", "-c", str(col), "--no-questions"])
    assert result.exit_code == 0 and "pseudo-MRR" in result.output and "saved to" in result.output
    lines = result.output.splitlines()
    assert max(map(len, lines)) <= 80
    # the per-kind table: one row per kind that has queries, each channel's pseudo-MRR (and count)
    rows = {
        line.split()[0]: line.split()[1:] for line in lines if line.split() and line.split()[0] in calibration.KINDS
    }
    assert set(rows) == {"span", "keywords", "phrase", "shuffled"}
    assert rows["span"][0] == "12" and rows["span"][2] == "(12)"  # 60 documents drawn for 5 kinds; bm25 acted on all
    assert "question: not asked (--no-questions): no questions asked" in result.output
    assert "entity: the collection has no entities" in result.output


def test_a_hit_list_fuses_with_the_weights(tmp_path: Path) -> None:
    """CombSUM with weights straight through `fusion.fuse`: a channel weighed 0 adds nothing."""
    from tracerag.retrieval.fusion import fuse

    hits = {
        "bm25": [Hit("a#0", "a", "bm25", 1, 10.0), Hit("b#0", "b", "bm25", 2, 5.0)],
        "dense": [Hit("b#0", "b", "dense", 1, 0.9), Hit("a#0", "a", "dense", 2, 0.1)],
    }
    equal = fuse(hits, method=Method.COMBSUM)
    assert [d.score for d in equal] == [1.0, 1.0]  # a: 1 + 0, b: 0 + 1 — a tie, broken by the best single rank
    weighted = fuse(hits, method=Method.COMBSUM, weights={"bm25": 1.0, "dense": 0.0})
    assert [d.doc_id for d in weighted] == ["a", "b"] and [d.score for d in weighted] == [1.0, 0.0]
    dense_first = fuse(hits, method=Method.COMBSUM, weights={"bm25": 0.5, "dense": 1.0})
    assert [d.doc_id for d in dense_first] == ["b", "a"]


def test_a_stated_date_weighs_as_much_as_the_other_channels_together(hipe_collection) -> None:
    ranking = Retriever(hipe_collection.collection).search(SearchRequest("Dreyfus 1898", k=10))
    fusion = ranking.params["fusion"]
    found = {c for c, hits in ranking.channel_hits.items() if hits}
    assert "date" in found and fusion["method"] == "combsum"
    others = sum(w for c, w in fusion["weights"].items() if c != "date")
    assert fusion["weights"]["date"] == pytest.approx(others) and others == len(found) - 1  # uncalibrated: 1 each
    assert "the date channel weighs as much as the others together" in fusion["why"]
    # so the documents of 1898 come first
    dates = hipe_collection.collection.store.date_spans([d.doc_id for d in ranking.documents])
    years = [dates[d.doc_id][0][:4] if d.doc_id in dates else None for d in ranking.documents]
    assert years[:2] == ["1898", "1898"] and "1898" not in years[2:]  # measured: 1898, 1898, 1899, 1933, ...


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d["weights"].__setitem__("bm25", "heavy"), "weights.bm25: Input should be a valid number"),
        (lambda d: d["weights"].__setitem__("bm25", -1), "weights.bm25 must be between 0 and 1"),
        (lambda d: d["weights"].__setitem__("bogus", 1.0), "mrr has no 'bogus'"),
        (lambda d: d.__setitem__("weights", [1, 2]), "weights: Input should be a valid dictionary"),
        (lambda d: d.__setitem__("created", 5), "created: Input should be a valid string"),
        (lambda d: d["state"].__setitem__("documents", "x"), "state.documents must be a number"),
        (lambda d: d.pop("state"), "state: Field required"),
    ],
)
def test_a_calibration_with_a_value_out_of_place_is_said_and_not_used(
    tmp_path: Path, small_docs: list[Document], edit, said: str
) -> None:
    """Found by a new user editing calibration.json: every reader crashed, `calibrate` included."""
    with _collection(tmp_path / "c", small_docs[:60]) as col:
        found = calibration.calibrate(Retriever(col), per_kind=10)
        assert found is not None
        data = calibration.as_dict(found)
        edit(data)
        (col.path / calibration.CALIBRATION_FILE).write_text(json.dumps(data), encoding="utf-8")
        plan = Retriever(col).fusion_plan()
        assert plan.weights is None and said in plan.why and "run `tracerag calibrate`" in plan.why
        assert Retriever(col).search(SearchRequest("Paris", k=3)).documents  # searches still work
        assert calibration.refresh(col) is not None  # and the writer replaces it
        assert Retriever(col).fusion_plan().source == "calibration"


def test_a_dense_channel_asked_for_without_vectors_says_why(hipe_collection) -> None:
    """Found by a new user: `--channels dense` on a lexical collection found nothing and said nothing."""
    ranking = Retriever(hipe_collection.collection).search(SearchRequest("Paris", k=3, channels=("dense",)))
    assert ranking.documents == []
    reading = ranking.params["channel_readings"]["dense"]
    assert reading["acts"] is False and "have no vector yet: run `tracerag embed`" in reading["why"]
