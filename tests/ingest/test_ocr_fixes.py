"""Certain OCR repairs: only the confident cases change, in the index text only; the stored text and every cited
span stay exactly as OCR'd; and the OCR-quality floor of a search is exact. Real records from HIPE-OCRepair-2026
(dta19: 1810s-1830s German with U+0364 superscript e) plus planted cases."""

from __future__ import annotations

import re

import pytest

from tests.conftest import require_datasets
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.ingest.ocr_fixes import count, fix
from tracerag.model import Document, Filter
from tracerag.retrieval import Retriever, SearchRequest

PLANTED = "Jch wuͤſste es: ﬁnden Sie e ́te Ge⸗\nschichte."
MODERN = Document(id="modern", text="Ich wüsste es nicht, sagte sie.", corpus="modern", language="de")
_UMLAUTS = {"a": "ä", "o": "ö", "u": "ü", "A": "Ä", "O": "Ö", "U": "Ü"}
_ANY_REPAIRABLE = re.compile("[ſꝛﬀﬁﬂﬃﬄﬅﬆ\u0300-\u036f\u2e17]")


@pytest.fixture(scope="module")
def dta():
    from tracerag.eval.datasets import ocr_records

    return [d for d, _ in ocr_records(require_datasets("hipe-ocrepair2026")) if d.corpus.startswith("dta19-l")]


def test_planted_cases_are_repaired_and_counted():
    text, counts = fix(PLANTED)
    assert text == "Jch wüsste es: finden Sie éte Geschichte."
    assert counts == {"glyph": 2, "superscript_e": 1, "detached_mark": 1, "hyphen_mark": 1}


@pytest.mark.parametrize(
    "unsure",
    [
        "l´homme",  # a spacing acute used as an apostrophe
        "e\n\u0301te",  # a mark after a line break may be a speck on the next line
        "Saint-\nMartin",  # hyphens are normalise's, not these repairs'
        "Ge=\nschichte",  # "=" may be a sign
        "Jnnere",  # J for I is a language's spelling, not a glyph
        "eͤ",  # e above e is no umlaut
        "Ã©té",  # mojibake is ftfy's, in normalise (counted, not repaired here)
    ],
)
def test_unsure_cases_are_left_alone(unsure):
    assert fix(unsure) == (unsure, {})


def test_mojibake_is_counted_not_repaired_here():
    assert count("l'Ã©tÃ© dernier")["mojibake"] == 1


def test_real_text_changes_only_where_a_repair_applies(dta):
    only_superscript = 0
    for doc in dta:
        text, counts = fix(doc.text)
        if not _ANY_REPAIRABLE.search(doc.text):
            assert text == doc.text and not counts
            continue
        assert not re.search("[aouAOU]\u0364", text)  # every umlaut form repaired
        assert counts.get("superscript_e", 0) == len(re.findall("[aouAOU]\u0364", doc.text))
        if set(counts) == {"superscript_e"}:
            only_superscript += 1  # then nothing else may differ: the text is the reference substitution
            assert text == re.sub("([aouAOU])\u0364", lambda m: _UMLAUTS[m.group(1)], doc.text)
    assert only_superscript >= 130, only_superscript  # measured 142 of the 240 dta19 pages


def _build(path, docs, *, fixes: bool) -> None:
    settings = load_settings(ingest={"ocr_fixes": fixes, "detect_language": False})
    with Collection.open(path, settings, mode="write", create=True, embed_model="none") as col:
        col.ingest(docs, dense=False)


def test_the_index_is_repaired_the_stored_text_and_cited_spans_are_not(dta, tmp_path):
    page = next(d for d in dta if "fuͤr" in d.text)
    planted = Document(id="planted", text=PLANTED, corpus="planted", language="de")
    _build(tmp_path / "on", [page, planted, MODERN], fixes=True)
    with Collection.open(tmp_path / "on", load_settings(), mode="read") as col:
        assert col.settings.ingest.ocr_fixes  # the manifest wins, whatever the caller's settings say
        stored = col.store.get_documents([page.id, "planted"])
        assert stored[page.id].text == page.text and stored["planted"].text == PLANTED
        chunks = col.store.chunks_of(["planted"])
        assert "wüsste" in chunks[0].index_text and "finden" in chunks[0].index_text
        estimates = col.store.ocr_estimates([page.id, "planted"])
        assert estimates["planted"]["fixes"] == {"glyph": 2, "superscript_e": 1, "detached_mark": 1, "hyphen_mark": 1}
        assert estimates[page.id]["fixes"]["superscript_e"] == len(re.findall("[aouAOU]\u0364", page.text))
        retriever = Retriever(col)
        for query in ("wüsste", "wuͤſste"):  # typed either way, each finds the page set either way
            ranking = retriever.search(SearchRequest(query, k=5, channels=("bm25",), windows=""))
            assert {d.doc_id for d in ranking.documents} == {"planted", "modern"}, query
            hit = next(d for d in ranking.documents if d.doc_id == "planted")
            best = col.store.get_chunks([hit.best_chunk_id])[hit.best_chunk_id]
            span = col.store.text_spans([("planted", best.start, best.end)])[("planted", best.start, best.end)]
            assert span == PLANTED[best.start : best.end] and "wuͤſste" in span  # the source's exact text
        found = retriever.search(SearchRequest("für", k=5, channels=("bm25",), windows=""))
        assert page.id in [d.doc_id for d in found.documents]


def test_without_fixes_the_index_text_keeps_the_glyphs(tmp_path):
    planted = Document(id="planted", text=PLANTED, corpus="planted", language="de")
    _build(tmp_path / "off", [planted, MODERN], fixes=False)
    with Collection.open(tmp_path / "off", load_settings(ingest={"ocr_fixes": True}), mode="read") as col:
        assert not col.settings.ingest.ocr_fixes
        assert "wuͤ" in col.store.chunks_of(["planted"])[0].index_text
        assert col.store.ocr_estimates(["planted"])["planted"]["fixes"] == {}
        found = Retriever(col).search(SearchRequest("wüsste", k=5, channels=("bm25",), windows=""))
        assert [d.doc_id for d in found.documents] == ["modern"]  # what the repairs are for


def test_the_fixes_setting_shapes_the_index_hash_only_when_on():
    off, on = load_settings(), load_settings(ingest={"ocr_fixes": True})
    assert off.index_hash() == load_settings(ingest={"ocr_fixes": False}).index_hash() != on.index_hash()


def test_the_ocr_floor_is_exact(dta, tmp_path):
    _build(tmp_path / "c", dta, fixes=True)
    with Collection.open(tmp_path / "c", load_settings(), mode="read") as col:
        scores = {i: e["score"] for i, e in col.store.ocr_estimates([d.id for d in dta]).items()}
        retriever = Retriever(col)
        everything = retriever.search(SearchRequest("und", k=len(dta), channels=("bm25",), windows=""))
        found = [d.doc_id for d in everything.documents]
        assert len(found) > 200
        floor = sorted(scores.values())[len(scores) // 2]  # the median: half pass
        kept = retriever.search(SearchRequest("und", k=len(dta), channels=("bm25",), windows="", min_ocr_quality=floor))
        assert [d.doc_id for d in kept.documents] == [i for i in found if scores[i] >= floor]
        assert kept.params["min_ocr_quality"] == floor
        lowest = min(found, key=lambda i: scores[i])
        one = Filter(doc_ids=(lowest,))  # the floor narrows an allow-list too, and an empty result stays empty
        none = retriever.search(
            SearchRequest("und", k=10, filter=one, channels=("bm25",), windows="", min_ocr_quality=floor)
        )
        assert not none.documents and not none.channel_hits.get("bm25")
