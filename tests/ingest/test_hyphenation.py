"""OCR line-end hyphenation: joined in the index text (so `opinion` finds `l'opi-` + `nion`), never in the stored
text or the citation spans. ALTO HYP / SUBS_CONTENT, HIPE's `¬`, and plain `word-\\nword` text."""

from __future__ import annotations

from pathlib import Path

import pytest

import tracerag.config
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.eval.datasets import Benchmark
from tracerag.eval.runner import collection_dir
from tracerag.ingest import alto, hipe
from tracerag.ingest.normalise import hyphenation_forms, join_hyphenation, normalise
from tracerag.model import Document

ALTO = """<?xml version="1.0" encoding="UTF-8"?>
<alto xmlns="http://www.loc.gov/standards/alto/ns-v3#"><Layout><Page ID="P1"><PrintSpace>
<TextBlock ID="TB1">
  <TextLine ID="L1"><String CONTENT="Selon"/><SP/><String CONTENT="l'opi-" SUBS_TYPE="HypPart1"
    SUBS_CONTENT="l'opinion"/><HYP CONTENT="-"/></TextLine>
  <TextLine ID="L2"><String CONTENT="nion" SUBS_TYPE="HypPart2" SUBS_CONTENT="l'opinion"/><SP/>
    <String CONTENT="publique,"/><SP/><String CONTENT="le"/><SP/><String CONTENT="porte" SUBS_TYPE="HypPart1"
    SUBS_CONTENT="porte-manteau"/><HYP CONTENT="-"/></TextLine>
  <TextLine ID="L3"><String CONTENT="manteau" SUBS_TYPE="HypPart2" SUBS_CONTENT="porte-manteau"/><SP/>
    <String CONTENT="du"/><SP/><String CONTENT="GOUVERNE" SUBS_TYPE="HypPart1" SUBS_CONTENT="GOUVERNEMENT"/>
    <HYP CONTENT="-"/></TextLine>
  <TextLine ID="L4"><String CONTENT="MENT" SUBS_TYPE="HypPart2" SUBS_CONTENT="GOUVERNEMENT"/><SP/>
    <String CONTENT="anti-"/><SP/><String CONTENT="et"/><SP/><String CONTENT="pro-guerre."/></TextLine>
</TextBlock></PrintSpace></Page></Layout></alto>
"""
ALTO_TEXT = "Selon l'opi-\nnion publique, le porte-\nmanteau du GOUVERNE-\nMENT anti- et pro-guerre."


@pytest.mark.parametrize(
    ("ocr", "index"),
    [
        ("l'opi-\nnion publique", "l'opinion publique"),
        ("par¬\nlementaire", "parlementaire"),
        ("par¬ lementaire", "parlementaire"),  # "¬" always joins, whatever space follows
        ("gou-\r\n   vernement", "gouvernement"),  # CRLF and indentation
        ("gou-\rvernement", "gouvernement"),  # an old Mac file's lone CR
        ("opi\u00adnion", "opinion"),  # a soft hyphen only marks where a word may break
        ("anti- and pro-war", "anti- and pro-war"),  # a hyphen in running text, spaces around
        ("Saint-\nMartin", "Saint-\nMartin"),  # a capital may start the second word of a compound
        ("1887-\n1889", "1887-\n1889"),
        ("mot -\nsuite", "mot -\nsuite"),  # a dash after a space is not hyphenation
        ("opi- \nnion", "opi- \nnion"),  # nor a hyphen with a space after it on its line
    ],
)
def test_generic_join_is_conservative(ocr: str, index: str) -> None:
    assert join_hyphenation(ocr) == index


def test_alto_keeps_one_hyphen_when_the_string_holds_it_too(tmp_path: Path) -> None:
    """Some OCR engines write the line-end hyphen in the String's CONTENT *and* as the HYP: printed once, kept
    once. (The reader used to add the HYP after it: `l'opi--`.)"""
    for hyp in ('<HYP CONTENT="-"/>', "<HYP/>"):
        xml = ALTO.replace('<HYP CONTENT="-"/></TextLine>\n  <TextLine ID="L2">', f'{hyp}</TextLine><TextLine ID="L2">')
        [doc] = list(alto.read(_write(xml, tmp_path)))
        assert doc.text.startswith("Selon l'opi-\nnion publique"), (hyp, doc.text)


def test_alto_stored_text_is_as_ocrd_and_subs_content_shapes_the_index(tmp_path: Path) -> None:
    [doc] = list(alto.read(_write(ALTO, tmp_path)))
    assert doc.text == ALTO_TEXT
    spans = {doc.text[h["start"] : h["end"]]: h["word"] for h in doc.source["hyphenated"]}
    assert spans == {"l'opi-\nnion": "l'opinion", "porte-\nmanteau": "porte-manteau", "GOUVERNE-\nMENT": "GOUVERNEMENT"}
    # SUBS_CONTENT is used where the generic join would be wrong: a compound's own hyphen, a capital after it
    forms = hyphenation_forms(doc.text, doc.source["hyphenated"])
    assert forms == {"porte-\nmanteau": "porte-manteau", "GOUVERNE-\nMENT": "GOUVERNEMENT"}
    assert (
        normalise(doc.text, None, forms)
        == "Selon l'opinion publique, le porte-manteau du GOUVERNEMENT anti- et pro-guerre."
    )


def test_alto_block_unit_keeps_spans_in_block_coordinates(tmp_path: Path) -> None:
    [doc] = list(alto.read(_write(ALTO, tmp_path), unit="block"))
    assert doc.id.endswith(":TB1") and doc.text == ALTO_TEXT
    assert [doc.text[h["start"] : h["end"]] for h in doc.source["hyphenated"]][0] == "l'opi-\nnion"


def test_search_finds_the_joined_words_and_cites_the_ocr(tmp_path: Path) -> None:
    with Collection.open(tmp_path / "c", load_settings(), mode="write", create=True, embed_model="none") as col:
        col.ingest(alto.read(_write(ALTO, tmp_path)), dense=False)
        for query in ("opinion", "gouvernement", "porte-manteau"):
            hits = [h for field_hits in col.engine.bm25(query, 5).values() for h in field_hits]
            assert [h.doc_id for h in hits] == ["page"], query
        assert col.engine.bm25("portemanteau", 5) == {}  # the compound was not glued together
        [chunk] = col.store.chunks_of(["page"])
        stored = col.store.get_documents(["page"])["page"].text
        assert stored == ALTO_TEXT and (chunk.start, chunk.end) == (0, len(ALTO_TEXT))  # the cited span: as OCR'd
        assert "l'opinion publique" in chunk.index_text and "porte-manteau" in chunk.index_text


def test_real_hipe_documents_are_found_by_their_hyphenated_words(hipe_dir: Path, tmp_path: Path) -> None:
    """HIPE-2022 newseye writes a line-end hyphen as a `¬` token (or `word¬`) with EndOfLine: `amphi¬\nthéâtre`.
    These words occur nowhere else in the two files, and only hyphenated here: before the join no search found
    their documents by them."""
    files = ["HIPE-2022-v2.1-newseye-dev-fr.tsv", "HIPE-2022-v2.1-newseye-dev2-fr.tsv"]
    docs = [d for f in files for d in hipe.read(hipe_dir / f) if isinstance(d, Document)]
    by_id = {d.id: d for d in docs}
    everything = "\n".join(d.text.lower() for d in docs)
    cases = {"amphithéâtre": ("dev_fr_2", "amphi¬\nthéâtre"), "automobilisme": ("dev_fr_9", "automo¬\nbilisme")}
    for word, (doc_id, ocr) in cases.items():
        assert ocr in by_id[doc_id].text and word not in everything
    with Collection.open(tmp_path / "c", load_settings(), mode="write", create=True, embed_model="none") as col:
        col.ingest(docs, dense=False)
        for word, (doc_id, ocr) in cases.items():
            assert doc_id in [h.doc_id for hits in col.engine.bm25(word, 3).values() for h in hits], word
            stored = col.store.get_documents([doc_id])[doc_id].text
            assert stored == by_id[doc_id].text  # the stored text is the OCR, hyphen and line break included
            cited = [stored[c.start : c.end] for c in col.store.chunks_of([doc_id]) if word in c.index_text]
            assert cited and all(ocr in text for text in cited)


def _write(xml: str, folder: Path) -> Path:
    path = folder / "page.xml"
    path.write_text(xml, encoding="utf-8")
    return path


def test_eval_rebuilds_its_cached_collections_when_the_index_text_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The join changed what an index holds (INDEX_VERSION 3): `tracerag eval` keys its cached benchmark
    collections by the settings hash, which holds the index version, so it builds them again."""
    bench = Benchmark("b", "", [Document("d", "x")], {}, {})
    now = collection_dir(Path("/cache"), bench, load_settings())
    assert tracerag.config.INDEX_VERSION >= 3  # 4: languages detected at ingest
    monkeypatch.setattr(tracerag.config, "INDEX_VERSION", 2)
    assert collection_dir(Path("/cache"), bench, load_settings()) != now
