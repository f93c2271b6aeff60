"""Encodings: UTF-8 when it is, a detected or named encoding when it is not, and a few bad bytes replaced, counted
and reported (file, line, count, encoding) rather than costing the document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import require_datasets
from tracerag.cli import app
from tracerag.errors import ConfigError
from tracerag.ingest import RecordWarning, alto, hipe, jsonl, read_documents, table, textdir
from tracerag.ingest.encoding import asked_encoding, choose, decode
from tracerag.model import Document

FRENCH = "Le conseil d'État a délibéré hier à Genève ; l'œuvre coûte 5 € et la séance fut levée à midi.\n"
GERMAN = "Die Straße in Zürich war voll; Grüße an Müller, der über die Brücke ging.\n"


def docs_and_warnings(items: list) -> tuple[dict[str, Document], list[RecordWarning]]:
    return {d.id: d for d in items if isinstance(d, Document)}, [w for w in items if isinstance(w, RecordWarning)]


@pytest.mark.parametrize("codec", ["latin-1", "cp1252"])
def test_a_latin1_or_cp1252_text_file_is_read_right_and_said(tmp_path: Path, codec: str) -> None:
    text = GERMAN + (FRENCH if codec == "cp1252" else FRENCH.replace("œ", "oe").replace("€", "EUR"))
    (tmp_path / "page.txt").write_bytes(text.encode(codec))
    docs, warnings = docs_and_warnings(list(textdir.read(tmp_path)))
    assert docs["page"].text == text  # é, ß, €, œ come out right
    [warning] = warnings
    assert (warning.file, warning.record) == (str(tmp_path / "page.txt"), "page")
    assert "not UTF-8: decoded as cp1252 (detected)" in warning.reason and "--encoding" in warning.reason


def test_a_short_latin1_file_is_read_as_windows_1252(tmp_path: Path) -> None:
    """On five bytes charset-normalizer finds a dozen encodings equally good (cp1006 first: "Musﻠe")."""
    (tmp_path / "m.txt").write_bytes("Musée".encode("latin-1"))
    docs, _ = docs_and_warnings(list(textdir.read(tmp_path)))
    assert docs["m"].text == "Musée"


def test_one_bad_byte_in_a_utf8_text_costs_the_byte_not_the_document(tmp_path: Path) -> None:
    good = FRENCH * 3
    (tmp_path / "lettre.txt").write_bytes(good.encode() + b"Second: caf\xe9 cr\xe8me.\n")
    docs, warnings = docs_and_warnings(list(textdir.read(tmp_path)))
    assert docs["lettre"].text == good + "Second: caf\ufffd cr\ufffdme.\n"
    [warning] = warnings
    assert (warning.line, warning.record) == (4, "lettre")
    assert warning.reason.startswith("2 bytes that are not UTF-8 replaced by U+FFFD")


def test_encoding_option_wins_over_detection(tmp_path: Path) -> None:
    raw = "Ceci est du texte: Ð Þ ð þ".encode("latin-1")  # Icelandic letters: cp1252 and latin-1 agree
    (tmp_path / "a.txt").write_bytes(raw + b" \x80")  # 0x80: the euro sign in cp1252, a C1 control in latin-1
    asked, _ = docs_and_warnings(list(textdir.read(tmp_path, encoding="latin-1")))
    assert asked["a"].text.endswith(" \x80")
    utf8, warnings = docs_and_warnings(list(textdir.read(tmp_path, encoding="utf-8")))
    assert utf8["a"].text.count("\ufffd") == 5  # strict UTF-8 with replacement: every non-ASCII byte
    assert "(--encoding UTF-8)" in warnings[0].reason
    with pytest.raises(ConfigError, match="unknown encoding 'klingon'"):
        list(textdir.read(tmp_path, encoding="klingon"))


def test_detection_on_the_real_mixed_file_prefers_nothing_silently() -> None:
    """A real directory export: UTF-8 (a combining accent) with three mojibake runs of 3 bytes that are not."""
    path = require_datasets("sf-openreferral") / "sf-openreferral" / "dcyf-youth-programs.csv"
    enc = choose(path.read_bytes()[: 1 << 20], whole=True)
    assert enc.how == "detected"  # 1 valid UTF-8 sequence, 9 invalid bytes: not "mostly UTF-8"
    items = list(table.read(path, id_column="Agency Name", text_column="Program Name"))
    warnings = [w for w in items if isinstance(w, RecordWarning)]
    assert warnings and warnings[0].line is None and "not UTF-8: decoded as" in warnings[0].reason


def test_csv_rows_keep_their_bad_bytes_replaced_and_a_detected_file_is_said_once(tmp_path: Path) -> None:
    (tmp_path / "utf8.csv").write_bytes(
        ("id,text\n" + "".join(f"r{i},{FRENCH.strip()}\n" for i in range(3))).encode() + b"r9,Br\xfcssel\n"
    )
    (tmp_path / "cp.csv").write_bytes(f'id,text\nc1,"{GERMAN.strip()}"\nc2,{FRENCH.strip()}\n'.encode("cp1252"))
    items = list(table.read(tmp_path))
    docs, warnings = docs_and_warnings(items)
    assert docs["r9"].text == "Br\ufffdssel" and docs["c1"].text == GERMAN.strip() and docs["c2"].text == FRENCH.strip()
    assert [(Path(w.file).name, w.line) for w in warnings] == [("cp.csv", None), ("utf8.csv", 5)]
    assert "decoded as cp1252 (detected)" in warnings[0].reason
    assert warnings[1].record == "r9" and "1 byte that is not UTF-8" in warnings[1].reason


def test_a_utf16_csv_with_its_byte_order_mark(tmp_path: Path) -> None:
    (tmp_path / "u.csv").write_bytes(f"id,text\nu1,{FRENCH.strip()} 東京\n".encode("utf-16"))
    docs, warnings = docs_and_warnings(list(table.read(tmp_path)))
    assert docs["u1"].text == FRENCH.strip() + " 東京" and warnings == []


def test_jsonl_and_hipe_are_utf8_but_a_bad_byte_costs_no_record(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b'{"id": "a", "text": "Z\xfcrich"}\n{"id": "b", "text": "ok"}\n')
    docs, warnings = docs_and_warnings(list(jsonl.read(tmp_path)))
    assert (docs["a"].text, docs["b"].text) == ("Z\ufffdrich", "ok")
    assert [(w.line, w.record) for w in warnings] == [(1, "a")]
    latin, warnings = docs_and_warnings(list(jsonl.read(tmp_path, encoding="latin-1")))
    assert latin["a"].text == "Zürich" and warnings == []

    tsv = tmp_path / "x.tsv"
    tsv.write_bytes(
        b"TOKEN\tMISC\n# hipe2022:document_id = d1\n# hipe2022:date = 1887\nZ\xfcrich\tNoSpaceAfter\n,\t_\nhier\t_\n"
    )
    docs, warnings = docs_and_warnings(list(hipe.read(tsv)))
    assert docs["d1"].text == "Z\ufffdrich, hier"
    [w] = warnings
    assert (w.line, w.record) == (4, "d1") and "1 byte that is not UTF-8" in w.reason


def test_alto_with_a_wrong_declaration_keeps_its_page(tmp_path: Path) -> None:
    page = '<alto><Layout><Page><PrintSpace><TextBlock><TextLine><String CONTENT="{}"/></TextLine></TextBlock>'
    page += "</PrintSpace></Page></Layout></alto>"
    (tmp_path / "latin.xml").write_bytes(
        ('<?xml version="1.0" encoding="UTF-8"?>' + page.format("Genève")).encode("cp1252")
    )
    (tmp_path / "none.xml").write_bytes(page.format("Müller").encode("latin-1"))
    (tmp_path / "utf8.xml").write_bytes(
        ('<?xml version="1.0" encoding="ISO-8859-1"?>' + page.format("Zürich")).encode()
    )
    docs, warnings = docs_and_warnings(list(alto.read(tmp_path)))
    assert {i: d.text for i, d in docs.items()} == {"latin": "Genève", "none": "Müller", "utf8": "Zürich"}
    said = {Path(w.file).stem: w.reason for w in warnings}
    assert said["latin"].startswith("declared UTF-8 but the bytes are not: decoded as cp1252 (detected)")
    assert said["none"].startswith("no encoding declared (so UTF-8) but the bytes are not")
    assert said["utf8"] == "declared ISO-8859-1 but the bytes are UTF-8: decoded as UTF-8"


def test_decode_counts_exactly_and_keeps_real_replacement_characters() -> None:
    enc = asked_encoding("utf-8")
    assert enc is not None
    text, replaced, first = decode("a\ufffdb".encode() + b"\xff\xfe", enc)
    assert (text, replaced, first) == ("a\ufffdb\ufffd\ufffd", 2, 3)  # the U+FFFD that was in the file is not counted


def test_cli_encoding_option_and_warnings_in_the_report(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "fr.txt").write_bytes(FRENCH.encode("cp1252"))
    (folder / "bad.txt").write_bytes(FRENCH.encode() + b"caf\xe9\n")
    runner = CliRunner()
    args = ["ingest", str(folder), "-c", str(tmp_path / "c"), "--no-dense", "--embed-model", "none"]
    result = runner.invoke(app, args, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output  # warnings are not skips
    assert "skipped 0 · warnings 2 ·" in result.stdout
    assert "warning " in result.stderr and "fr.txt: not UTF-8: decoded as cp1252 (detected)" in result.stderr
    assert "bad.txt:2: 1 byte that is not UTF-8 replaced by U+FFFD" in result.stderr
    again = runner.invoke(app, [*args, "--encoding", "cp1252", "--json"], env={"COLUMNS": "300"})
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    # read as asked, byte for byte: fr.txt as before, bad.txt with its é (and its UTF-8 part as mojibake: asked for)
    assert report["warnings"] == [] and report["updated"] == 1 and report["unchanged"] == 1
    bad = runner.invoke(app, [*args, "--encoding", "nope"])
    assert bad.exit_code == 2 and "unknown encoding 'nope'" in bad.output


def test_read_documents_passes_the_encoding_to_every_reader(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes('{"id": "a", "text": "Genève"}\n'.encode("cp1252"))
    [doc] = [d for d in read_documents(tmp_path / "a.jsonl", "jsonl", encoding="cp1252") if isinstance(d, Document)]
    assert doc.text == "Genève"
