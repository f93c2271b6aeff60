"""One regression test per reader bug the fuzzed corpus (tests/ingest/fuzz.py) found."""

from __future__ import annotations

from pathlib import Path

from tracerag.errors import RecordError
from tracerag.ingest import RecordWarning, alto, hipe, jsonl, table, textdir
from tracerag.ingest.encoding import choose
from tracerag.model import Document


def _split(items: list) -> tuple[dict[str, str], list[tuple[str, int | None, str]]]:
    docs = {d.id: d.text for d in items if isinstance(d, Document)}
    reports = [(type(r).__name__, r.line, r.reason) for r in items if isinstance(r, RecordError | RecordWarning)]
    return docs, reports


def test_a_deeply_nested_sidecar_is_an_error_not_a_crash(tmp_path: Path) -> None:
    """textdir let json's RecursionError escape and stopped the whole ingest."""
    (tmp_path / "a.txt").write_text("Texte.", "utf-8")
    (tmp_path / "a.json").write_text('{"source": ' + "[" * 100_000 + "]" * 100_000 + "}", "utf-8")
    (tmp_path / "b.txt").write_text("Autre.", "utf-8")
    docs, reports = _split(list(textdir.read(tmp_path)))
    assert docs == {"b": "Autre."}
    assert reports == [("RecordError", None, "bad JSON: nested too deeply")]


def test_an_unclosed_quote_no_longer_swallows_the_rows_after_it(tmp_path: Path) -> None:
    """csv (not strict) took every line after a stray opening quote into one field, silently: rows b and c were
    lost and a's text held them. Now the row is an error at its line and the lines after it are read again."""
    (tmp_path / "t.csv").write_text('id,text\na,"runs on\nb,second\nc,"third ""quoted"""\nd,"fourth', "utf-8")
    docs, reports = _split(list(table.read(tmp_path)))
    assert docs == {"b": "second", "c": 'third "quoted"'}
    assert [(kind, line) for kind, line, _ in reports] == [("RecordError", 2), ("RecordError", 5)]
    assert "the lines after it are read again" in reports[0][2]
    assert "unclosed quote (the field runs to the end of the file)" in reports[1][2]


def test_text_after_a_closing_quote_is_an_error_not_glued_on(tmp_path: Path) -> None:
    """`"x"y` was read as `xy`."""
    (tmp_path / "t.csv").write_text('id,text\na,"quoted"tail\nb,fine\n', "utf-8")
    docs, reports = _split(list(table.read(tmp_path)))
    assert docs == {"b": "fine"} and [(k, line) for k, line, _ in reports] == [("RecordError", 2)]


def test_cr_only_line_ends_in_jsonl_and_hipe(tmp_path: Path) -> None:
    """Old Mac files end lines with a lone CR: JSONL read the whole file as one bad line, HIPE as one header."""
    (tmp_path / "a.jsonl").write_bytes(b'{"id": "a", "text": "un"}\r{"id": "b", "text": "deux"}\r')
    docs, reports = _split(list(jsonl.read(tmp_path)))
    assert (docs, reports) == ({"a": "un", "b": "deux"}, [])
    (tmp_path / "h.tsv").write_bytes(b"TOKEN\tMISC\r# hipe2022:document_id = h\rMot\tEndOfLine\rfin\t_\r")
    docs, reports = _split(list(hipe.read(tmp_path / "h.tsv")))
    assert (docs, reports) == ({"h": "Mot\nfin"}, [])


def test_an_empty_hipe_file_is_reported(tmp_path: Path) -> None:
    (tmp_path / "e.tsv").write_bytes(b"")
    assert _split(list(hipe.read(tmp_path))) == ({}, [("RecordError", None, "empty file (no TOKEN header row)")])


def test_control_characters_in_alto_cost_the_characters_not_the_page(tmp_path: Path) -> None:
    """A form feed or another C0 control (XML forbids them) inside a CONTENT made lxml refuse the whole page."""
    page = '<alto><Layout><Page><PrintSpace><TextBlock><TextLine><String CONTENT="Gen\x0c\x01ève"/><SP/>'
    page += '<String CONTENT="1887"/></TextLine></TextBlock></PrintSpace></Page></Layout></alto>'
    (tmp_path / "p.xml").write_text(page, "utf-8")
    docs, reports = _split(list(alto.read(tmp_path)))
    assert docs == {"p": "Genève 1887"}
    assert reports == [("RecordWarning", 1, "2 control characters that XML does not allow removed")]


def test_a_lone_surrogate_escape_costs_one_character_not_the_record(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"id": "a", "text": "caf\\udce9"}\n', "utf-8")
    docs, reports = _split(list(jsonl.read(tmp_path)))
    assert docs == {"a": "caf\ufffd"} and reports[0][:2] == ("RecordWarning", 1)


def test_plain_french_and_german_in_windows_1252_are_not_read_as_baltic_or_dos() -> None:
    """charset-normalizer dropped cp1252 for this text (cp775 kept, reading é as Ķ), and on ALTO pages preferred
    iso8859-10 because a line-end "¬" is mess in cp1252 but a letter (Ž) there."""
    words = "fédéral été señor the été. été and Gemeinde hôtel hôtel Tuesday Tuesday Zürich hôtel. müssen."
    alto_page = (  # a page of the fuzzed corpus (seed 4), as it was written
        '<alto><Layout><Page ID="P1"><PrintSpace><TextBlock ID="B0"><TextLine ID="L0_0"><String CONTENT="député"/>'
        '<SP/><String CONTENT="Grüße"/><SP/><String CONTENT="fédéral"/><SP/><String CONTENT="last"/><SP/>'
        '<String CONTENT="Gemeinde"/><SP/><String CONTENT="çà"/><SP/><String CONTENT="conseil¬"/>'
        '<HYP CONTENT="¬"/></TextLine><TextLine ID="L0_1"><String CONTENT="conseil"/><SP/>'
        '<String CONTENT="Zürich"/><String CONTENT="council"/></TextLine></TextBlock></PrintSpace></Page></Layout>'
        "</alto>\n"
    )
    for text in (words, alto_page):
        assert choose(text.encode("cp1252"), whole=True).codec == "cp1252", text
