"""ALTO reader: page and block documents, block/line offsets, and broken files reported one by one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tracerag.errors import ConfigError, RecordError
from tracerag.ingest import RecordWarning, alto, read_documents
from tracerag.model import Document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "alto"
V4_TEXT = "Le conseil d'État a délibé¬\nré hier.\n\nGenève (1887)."
V2_TEXT = "Zürich, den 17. Mai"
BROKEN = ("empty.xml", "truncated.xml")  # latin1.xml declares UTF-8 wrongly: kept, with a warning


def test_v4_page() -> None:
    [doc] = list(alto.read(FIXTURES / "page_v4.xml"))
    assert isinstance(doc, Document)
    assert (doc.id, doc.text, doc.corpus) == ("page_v4", V4_TEXT, "alto")
    assert (doc.source["file"], doc.source["page_id"]) == ("page_v4.xml", "P1")
    blocks = {b["id"]: doc.text[b["start"] : b["end"]] for b in doc.source["blocks"]}
    assert blocks == {"TB1": "Le conseil d'État a délibé¬\nré hier.", "TB2": "Genève (1887)."}
    lines = {ln["id"]: doc.text[ln["start"] : ln["end"]] for ln in doc.source["lines"]}
    assert lines == {"TB1_L1": "Le conseil d'État a délibé¬", "TB1_L2": "ré hier.", "TB2_L1": "Genève (1887)."}


def test_v4_blocks() -> None:
    docs = list(alto.read(FIXTURES / "page_v4.xml", unit="block", corpus="gdl", date="1887-5-17", language="fr"))
    assert [d.id for d in docs] == ["page_v4:TB1", "page_v4:TB2"]
    assert [d.text for d in docs] == V4_TEXT.split("\n\n")
    for d in docs:
        assert (d.corpus, d.date, d.language) == ("gdl", "1887-05-17", "fr")
        assert d.source["page_id"] == "P1"
        [block] = d.source["blocks"]
        assert block == {"id": d.source["block_id"], "start": 0, "end": len(d.text)}
    assert [(ln["id"], docs[0].text[ln["start"] : ln["end"]]) for ln in docs[0].source["lines"]] == [
        ("TB1_L1", "Le conseil d'État a délibé¬"),
        ("TB1_L2", "ré hier."),
    ]


def test_v2_page_joins_words_and_skips_empty_lines() -> None:
    [doc] = list(alto.read(FIXTURES / "page_v2.xml"))
    assert (doc.id, doc.text) == ("page_v2", V2_TEXT)
    assert doc.source["page_id"] == "PAGE2"
    assert doc.source["blocks"] == [{"id": "BLOCK_A", "start": 0, "end": len(V2_TEXT)}]
    assert doc.source["lines"] == [{"id": "LINE_A1", "start": 0, "end": len(V2_TEXT)}]


@pytest.mark.parametrize("name", BROKEN)
def test_broken_file_is_one_error(name: str) -> None:
    [err] = list(alto.read(FIXTURES / name))
    assert isinstance(err, RecordError)
    assert err.file == str(FIXTURES / name) and name in str(err)
    assert err.line is not None and err.line >= 1


def test_folder_goes_on_past_broken_files() -> None:
    out = list(read_documents(FIXTURES, "alto", unit="block"))
    errors = sorted(Path(r.file).name for r in out if isinstance(r, RecordError))
    warnings = [Path(r.file).name for r in out if isinstance(r, RecordWarning)]
    docs = [r.id for r in out if isinstance(r, Document)]
    assert errors == list(BROKEN)
    assert warnings == ["latin1.xml"]
    assert docs == ["latin1:TB1", "page_v2:BLOCK_A", "page_v4:TB1", "page_v4:TB2"]
    assert len(out) == len(errors) + len(warnings) + len(docs)


def test_empty_page_and_nested_ids(tmp_path: Path) -> None:
    (tmp_path / "issue1").mkdir()
    (tmp_path / "issue2").mkdir()
    shutil.copy(FIXTURES / "page_v2.xml", tmp_path / "issue1" / "0001.xml")
    shutil.copy(FIXTURES / "page_v4.xml", tmp_path / "issue2" / "0001.xml")
    blank = tmp_path / "issue2" / "0002.xml"
    blank.write_text(
        '<alto xmlns="http://www.loc.gov/standards/alto/ns-v3#"><Layout><Page ID="P">'
        "<PrintSpace><TextBlock ID='B'><TextLine><String CONTENT=''/><SP/></TextLine></TextBlock>"
        "</PrintSpace></Page></Layout></alto>",
        encoding="utf-8",
    )
    (tmp_path / "mets.xml").write_text("<mets/>", encoding="utf-8")
    out = list(alto.read(tmp_path))
    docs = [r for r in out if isinstance(r, Document)]
    assert [(d.id, d.corpus, d.source["file"]) for d in docs] == [
        ("issue1/0001", "issue1", "issue1/0001.xml"),
        ("issue2/0001", "issue2", "issue2/0001.xml"),
    ]
    errors = [r for r in out if isinstance(r, RecordError)]
    assert [(Path(e.file).name, e.reason.split(" (")[0]) for e in errors] == [
        ("0002.xml", "no text"),
        ("mets.xml", "not an ALTO file"),
    ]


def test_bad_options() -> None:
    with pytest.raises(ConfigError):
        list(alto.read(FIXTURES / "page_v4.xml", unit="line"))
    with pytest.raises(ConfigError):
        list(alto.read(FIXTURES / "page_v4.xml", date="1887-13"))
