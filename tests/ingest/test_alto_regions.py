"""Page regions: ALTO String boxes kept per character span at ingest, a cited span's region on its page, and the
IIIF link to it. The real page is the head of page 1 of the BnL's Luxemburger Zeitung of 10 July 1858, with its
coordinates (the page the demo sample's ALTO comes from; see the fixture's header)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lxml import etree

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import ConfigError
from tracerag.ingest import alto, read_documents
from tracerag.ingest.alto_regions import BOXES, PAGES, check_base, iiif_region, page_regions, region_url
from tracerag.model import Document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PAGE = FIXTURES / "alto_regions" / "bnl-1858-07-10-p1-head.xml"
DEMO_TITLE = Path(__file__).resolve().parents[2] / "src/tracerag/data/demo/bnl/luxzeit-1858-07-10-titre.xml"
BASE = "https://iiif.example.org/iiif/luxzeit-1858-07-10/{page_id}"
NS = "{http://www.loc.gov/standards/alto/ns-v3#}"


def _strings(path: Path) -> list[tuple[str, float, float, float, float]]:
    """(CONTENT, HPOS, VPOS, WIDTH, HEIGHT) of every String of the file, read with lxml alone."""
    tree = etree.parse(str(path))
    return [
        (s.get("CONTENT"), *(float(s.get(k)) for k in ("HPOS", "VPOS", "WIDTH", "HEIGHT")))
        for s in tree.iter(f"{NS}String")
    ]


@pytest.fixture(scope="module")
def page_doc() -> Document:
    [doc] = list(alto.read(PAGE))
    return doc


@pytest.fixture(scope="module")
def collection(tmp_path_factory, page_doc):
    path = tmp_path_factory.mktemp("regions") / "c"
    col = Collection.open(path, load_settings(embed={"model": "none"}), mode="write", create=True)
    col.ingest(read_documents(PAGE.parent, "alto", date="1858-07-10"), dense=False)
    yield col
    col.close()


def test_the_fixture_is_the_demo_page_with_its_coordinates(page_doc):
    [demo] = list(alto.read(DEMO_TITLE))
    assert demo.text.startswith(page_doc.text)  # the same OCR, word for word
    assert BOXES not in demo.source and PAGES not in demo.source  # the demo's copy has no geometry: no boxes


def test_every_string_keeps_its_box_by_its_span(page_doc):
    strings = _strings(PAGE)
    boxes = page_doc.source[BOXES]
    assert len(boxes) == len(strings) == 65
    for (content, *box), (start, end, page, *kept) in zip(strings, boxes, strict=True):
        assert page_doc.text[start:end] == content.replace("&gt;", ">")
        assert (page, kept) == (0, box)
    assert page_doc.source[PAGES] == [{"id": "P1", "number": 1, "width": 2580.0, "height": 4060.0, "unit": "mm10"}]


def _span(doc: Document, words: str) -> tuple[int, int]:
    start = doc.text.index(words)
    return start, start + len(words)


def test_a_cited_span_gets_the_union_of_its_strings_inside_the_page(collection, page_doc):
    start, end = _span(page_doc, "Luxemburger Zeitung - Journal")
    boxes = collection.store.boxes_in(page_doc.id, start, end)
    [region] = page_regions(page_doc.id, page_doc.source, boxes, iiif_base=BASE)
    # the cited words' Strings, from the XML itself
    cited = [s for s in _strings(PAGE) if s[0] in ("Luxemburger", "Zeitung", "-", "Journal") and s[2] == 255]
    assert len(cited) == 4 == region.strings
    x, y, w, h = region.box
    for _, sx, sy, sw, sh in cited:
        assert x <= sx and y <= sy and sx + sw <= x + w and sy + sh <= y + h
    assert (x, y, x + w, y + h) == (161, 255, 1664, 370)  # exactly their union, not the line's or the block's
    assert min(x, y) >= 0 and x + w <= 2580 and y + h <= 4060  # inside the Page's WIDTH/HEIGHT
    # mm10 without a scan resolution: percent of the page, widened to hold the whole box
    assert region.region == "pct:6.24,6.28,58.26,2.84"
    px, py, pw, ph = (float(v) for v in region.region.removeprefix("pct:").split(","))
    assert px / 100 * 2580 <= 161 and py / 100 * 4060 <= 255
    assert (px + pw) / 100 * 2580 >= 1664 and (py + ph) / 100 * 4060 >= 370 and px + pw <= 100 and py + ph <= 100
    assert (
        region.url == "https://iiif.example.org/iiif/luxzeit-1858-07-10/P1/pct:6.24,6.28,58.26,2.84/max/0/default.jpg"
    )


def test_mm10_becomes_pixels_at_a_known_resolution(page_doc):
    page = page_doc.source[PAGES][0]
    region, how = iiif_region((161, 255, 1503, 115), page, dpi=300)
    # 161 mm10 = 16.1 mm = 0.634 in = 190.2 px at 300 dpi: edges rounded outwards
    assert region == "190,301,1776,137" and "300 dpi" in how  # bottom 370 mm10 = 437.008 px: 438
    region, how = iiif_region((161, 255, 1503, 115), {**page, "unit": "inch1200"}, dpi=300)
    assert region == "40,63,376,30"  # 1/1200 inch at 300 dpi is a quarter pixel


def test_pixel_boxes_give_the_iiif_pixel_url(tmp_path):
    (tmp_path / "p.xml").write_text(
        '<alto xmlns="http://www.loc.gov/standards/alto/ns-v4#"><Description><MeasurementUnit>pixel'
        "</MeasurementUnit></Description><Layout>"
        '<Page ID="PAGE1" PHYSICAL_IMG_NR="7" WIDTH="2000" HEIGHT="3000"><PrintSpace><TextBlock ID="B1">'
        '<TextLine><String CONTENT="Hier" HPOS="100.4" VPOS="200" WIDTH="80" HEIGHT="40"/><SP/>'
        '<String CONTENT="soir" HPOS="190" VPOS="205" WIDTH="70.2" HEIGHT="38"/></TextLine></TextBlock>'
        "</PrintSpace></Page>"
        '<Page ID="PAGE2" PHYSICAL_IMG_NR="8" WIDTH="2000" HEIGHT="3000"><PrintSpace><TextBlock ID="B2">'
        '<TextLine><String CONTENT="suite" HPOS="50" VPOS="60" WIDTH="90" HEIGHT="30"/></TextLine></TextBlock>'
        "</PrintSpace></Page></Layout></alto>",
        encoding="utf-8",
    )
    [doc] = list(alto.read(tmp_path / "p.xml"))
    assert doc.text == "Hier soir\n\nsuite"
    boxes = [(int(b[2]), *b[3:]) for b in doc.source[BOXES]]
    template = "https://gallica.example/iiif/ark:/12148/bpt6k1/f{page_number}"
    regions = page_regions(doc.id, doc.source, boxes, iiif_base=template)
    # one region per page: the document runs over two
    assert [(r.page_id, r.region) for r in regions] == [("PAGE1", "100,200,161,43"), ("PAGE2", "50,60,90,30")]
    assert regions[0].url == "https://gallica.example/iiif/ark:/12148/bpt6k1/f7/100,200,161,43/max/0/default.jpg"
    assert re.fullmatch(r"https://\S+/\d+,\d+,\d+,\d+/max/0/default\.jpg", regions[1].url or "")
    # by block, each block keeps its own page
    blocks = list(alto.read(tmp_path / "p.xml", unit="block"))
    assert [[b[2] for b in d.source[BOXES]] for d in blocks] == [[0, 0], [1]]


def test_a_document_names_its_own_scan_and_bases_are_checked(page_doc):
    own = {**page_doc.source, "iiif": "https://own.example/iiif/img1"}
    [region] = page_regions(page_doc.id, own, [(0, 161, 255, 570, 115)], iiif_base=BASE)
    assert region.url and region.url.startswith("https://own.example/iiif/img1/pct:")
    [bare] = page_regions(page_doc.id, page_doc.source, [(0, 161, 255, 570, 115)])
    assert bare.url is None and bare.region and "no IIIF base" in bare.note
    with pytest.raises(ConfigError, match=r"\{page\}"):
        check_base("https://x.example/{page}")
    with pytest.raises(ConfigError, match="http"):
        check_base("iiif.example.org/x")
    assert region_url("https://x.example/a/", "1,2,3,4") == "https://x.example/a/1,2,3,4/max/0/default.jpg"


def test_no_page_size_and_no_pixels_means_no_region_and_says_why():
    region, how = iiif_region((1, 2, 3, 4), {"id": "P", "unit": "mm10", "width": None, "height": None}, None)
    assert region is None and "WIDTH/HEIGHT" in how


def test_a_collection_without_boxes_has_no_regions(tmp_path):
    col = Collection.open(tmp_path / "c", load_settings(embed={"model": "none"}), mode="write", create=True)
    col.ingest(read_documents(DEMO_TITLE.parent, "alto"), dense=False)
    assert not col.store.keeps_boxes()
    assert col.store.boxes_in("luxzeit-1858-07-10-titre", 0, 100) == []
    col.close()


def test_the_store_keeps_the_boxes_apart_and_replaces_them_with_their_document(collection, page_doc, tmp_path):
    store = collection.store
    stored = store.get_documents([page_doc.id])[page_doc.id]
    assert BOXES not in stored.source and stored.source[PAGES] == page_doc.source[PAGES]  # pages stay, boxes move
    assert len(store.boxes_in(page_doc.id, 0, len(page_doc.text))) == 65
    again = collection.ingest(read_documents(PAGE.parent, "alto", date="1858-07-10"), dense=False)
    assert again.unchanged == 1 and len(store.boxes_in(page_doc.id, 0, len(page_doc.text))) == 65
    # a changed page replaces its boxes: the first String moved
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / PAGE.name).write_text(
        PAGE.read_text(encoding="utf-8").replace(
            'HPOS="158" VPOS="121" WIDTH="83"', 'HPOS="150" VPOS="121" WIDTH="91"'
        ),
        encoding="utf-8",
    )
    assert collection.ingest(read_documents(moved, "alto", date="1858-07-10"), dense=False).updated == 1
    boxes = store.boxes_in(page_doc.id, 0, len(page_doc.text))
    assert len(boxes) == 65 and boxes[0] == (0, 150.0, 121.0, 91.0, 50.0)
