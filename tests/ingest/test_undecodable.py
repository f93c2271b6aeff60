"""Inputs that are not what they claim: a CSV or JSON Lines file of binary data is refused whole, as a text file
is, with the same message; UTF-16 without a byte-order mark is read; an id holding a control character, or a
JSON id that is not a string, is a reported, skipped record, and reading goes on."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.errors import RecordError
from tracerag.ingest import RecordWarning, read_documents
from tracerag.model import Document

FRENCH = "Le théâtre de la Gaîté a brûlé hier soir ; les pompiers, arrivés à minuit, ont sauvé l'œuvre.\n"
GERMAN = "Die Brücke über die Aare wurde gestern eröffnet; Größe und Schönheit überraschten die Bürger.\n"
RUSSIAN = "Пожар в театре вчера вечером, пожарные прибыли в полночь.\n"
ASCII = "The harbour strike ended on Tuesday; the dockers went back to work.\n"


def split(items: list) -> tuple[dict[str, Document], list[RecordError], list[RecordWarning]]:
    docs = {i.id: i for i in items if isinstance(i, Document)}
    return docs, [i for i in items if isinstance(i, RecordError)], [i for i in items if isinstance(i, RecordWarning)]


def garbage(n: int, seed: int = 25) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(n))


# -- binary data -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_text_header_over_random_bytes_is_refused_alike_in_every_format(tmp_path: Path, seed: int) -> None:
    """Before: the CSV came out as ~100 documents with ESC and NUL in their ids; the .txt was refused."""
    body = b"id,text\n" + garbage(4000, seed)
    reasons = {}
    for suffix, fmt in ((".txt", "txt"), (".csv", "csv"), (".jsonl", "jsonl")):
        path = tmp_path / f"data{suffix}"
        path.write_bytes(body)
        docs, errors, _ = split(list(read_documents(path, fmt)))
        assert docs == {}
        [error] = errors
        assert error.file == str(path) and error.line is None
        reasons[fmt] = error.reason
    assert reasons["csv"] == reasons["jsonl"] == reasons["txt"]  # one check, one message
    assert reasons["txt"].startswith("binary data, not text: ")
    assert " of 4,008 bytes are not UTF-8" in reasons["txt"] and "characters are control characters" in reasons["txt"]


def test_a_table_in_a_text_folder_metadata_file_is_refused_too(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(FRENCH, encoding="utf-8")
    (tmp_path / "metadata.csv").write_bytes(b"id,title\n" + garbage(3000))
    docs, errors, _ = split(list(read_documents(tmp_path, "txt")))
    assert list(docs) == ["a"]
    [error] = errors
    assert error.file == str(tmp_path / "metadata.csv") and error.reason.startswith("binary data, not text: ")


def test_sixteen_bit_numbers_have_utf16s_nul_pattern_but_are_refused(tmp_path: Path) -> None:
    rng = random.Random(4)
    data = b"".join(rng.randrange(2000).to_bytes(2, "little") for _ in range(1000))
    for name, fmt in (("n.txt", "txt"), ("n.csv", "csv")):
        (tmp_path / name).write_bytes(data)
        docs, errors, _ = split(list(read_documents(tmp_path / name, fmt)))
        assert docs == {} and len(errors) == 1 and errors[0].reason.startswith("binary data, not text"), errors


def test_a_damaged_line_in_a_long_file_costs_that_line_only(tmp_path: Path) -> None:
    good = [json.dumps({"id": f"d{i}", "text": FRENCH}, ensure_ascii=False) for i in range(40)]
    path = tmp_path / "d.jsonl"
    path.write_bytes("\n".join(good[:20]).encode() + b"\n" + garbage(200).replace(b"\n", b" ") + b"\n" +
                     "\n".join(good[20:]).encode() + b"\n")  # fmt: skip
    docs, errors, _ = split(list(read_documents(path, "jsonl")))
    assert len(docs) == 40 and [e.line for e in errors] == [21]


def test_a_stray_nul_in_utf8_text_is_not_taken_for_utf16(tmp_path: Path) -> None:
    text = FRENCH + "\x00" + GERMAN
    (tmp_path / "p.txt").write_bytes(text.encode("utf-8"))
    docs, errors, warnings = split(list(read_documents(tmp_path / "p.txt", "txt")))
    assert docs["p"].text == text and errors == [] and warnings == []


# -- UTF-16 without a byte-order mark --------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("text", [FRENCH, GERMAN, RUSSIAN, ASCII * 2], ids=["fr", "de", "ru", "ascii"])
def test_a_utf16_text_without_a_bom_is_read_and_said(tmp_path: Path, codec: str, text: str) -> None:
    """Before: "binary data, not text (0 of 194 bytes not UTF-8)" for the ASCII text, which is valid UTF-8."""
    (tmp_path / "page.txt").write_bytes(text.encode(codec))
    docs, errors, warnings = split(list(read_documents(tmp_path / "page.txt", "txt")))
    assert errors == [] and docs["page"].text == text
    [warning] = warnings
    assert f"not UTF-8: decoded as {codec.upper().replace('-LE', 'LE').replace('-BE', 'BE')} (detected)" in str(warning)


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_a_utf16_table_and_json_lines_without_a_bom_are_read(tmp_path: Path, codec: str) -> None:
    (tmp_path / "t.csv").write_bytes(f'id,text\nfr,"{FRENCH.strip()}"\nde,"{GERMAN.strip()}"\n'.encode(codec))
    lines = [{"id": "fr", "text": FRENCH}, {"id": "de", "text": GERMAN}]
    (tmp_path / "t.jsonl").write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines).encode(codec))
    for name, fmt, expected in (
        ("t.csv", "csv", (FRENCH.strip(), GERMAN.strip())),
        ("t.jsonl", "jsonl", (FRENCH, GERMAN)),
    ):
        docs, errors, warnings = split(list(read_documents(tmp_path / name, fmt)))
        assert errors == [] and (docs["fr"].text, docs["de"].text) == expected, fmt
        assert [w.line for w in warnings] == [None] and "UTF-16" in warnings[0].reason


# -- ids -------------------------------------------------------------------------------------------------------


def test_an_id_holding_a_control_character_is_a_reported_skip(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text('id,text\nok-1,Premier.\n"es\x1bc",Deux.\n"n\x00ul",Trois.\nok-2,Quatre.\n')
    docs, errors, _ = split(list(read_documents(tmp_path / "t.csv", "csv")))
    assert list(docs) == ["ok-1", "ok-2"]
    assert [(e.line, e.reason) for e in errors] == [
        (3, "id holds a control character (\\x1b at character 3) (column 'id')"),
        (4, "id holds a control character (\\x00 at character 2) (column 'id')"),
    ]
    (tmp_path / "j.jsonl").write_text('{"id": "a\\u001b]0;T\\u0007", "text": "x"}\n{"id": "ok", "text": "y"}\n')
    docs, errors, _ = split(list(read_documents(tmp_path / "j.jsonl", "jsonl")))
    assert list(docs) == ["ok"] and [(e.line, e.reason) for e in errors] == [
        (1, "id holds a control character (\\x1b at character 2) (key 'id')")
    ]


def test_a_text_file_whose_name_holds_a_control_character_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "bad\x1b[2J.txt").write_text(FRENCH, encoding="utf-8")
    (tmp_path / "good.txt").write_text(GERMAN, encoding="utf-8")
    docs, errors, _ = split(list(read_documents(tmp_path, "txt")))
    assert list(docs) == ["good"]
    [error] = errors
    assert error.file == str(tmp_path / "bad\x1b[2J.txt") and error.reason.startswith("id holds a control character")


BAD_IDS = [(42, "a number 42"), (4.2, "a number 4.2"), (["a"], 'an array ["a"]'), ({"n": 1}, 'an object {"n": 1}'),
           (True, "a boolean true")]  # fmt: skip


def test_a_json_id_that_is_not_a_string_is_a_reported_skip_naming_file_line_and_key(tmp_path: Path) -> None:
    lines = [{"id": "first", "text": "a"}] + [{"id": v, "text": "b"} for v, _ in BAD_IDS]
    lines += [{"id": None, "text": "c"}, {"ref": 7, "text": "d"}, {"id": "last", "text": "e"}]
    path = tmp_path / "ids.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    docs, errors, _ = split(list(read_documents(path, "jsonl")))
    assert list(docs) == ["first", "last"]  # reading went on
    expected = [(n, f"id must be a string, found {what} (key 'id')") for n, (_, what) in enumerate(BAD_IDS, start=2)]
    expected += [(7, "id missing (key 'id')"), (8, "id missing (key 'id')")]
    assert [(e.line, e.reason) for e in errors] == expected and {e.file for e in errors} == {str(path)}
    _, errors, _ = split(list(read_documents(path, "jsonl", id_field="ref")))
    assert [e.reason for e in errors if e.line == 8] == ["id must be a string, found a number 7 (key 'ref')"]


def test_a_metadata_id_that_is_not_a_string_is_reported(tmp_path: Path) -> None:
    (tmp_path / "42.txt").write_text(FRENCH, encoding="utf-8")
    (tmp_path / "metadata.jsonl").write_text('{"id": 42, "title": "Quarante-deux"}\n', encoding="utf-8")
    docs, errors, _ = split(list(read_documents(tmp_path, "txt")))
    assert docs["42"].title is None  # not matched by a number
    assert [(e.line, e.reason) for e in errors] == [(1, "id must be a string, found a number 42 (key 'id')")]


def test_ingest_reports_the_skips_and_keeps_going(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.jsonl").write_text('{"id": 1, "text": "un"}\n{"id": "deux", "text": "deux"}\n', encoding="utf-8")
    result = CliRunner().invoke(
        app, ["ingest", str(data), "-c", str(tmp_path / "c"), "--format", "jsonl", "--embed-model", "none", "--json"]
    )
    assert result.exit_code == 1, result.output  # some records skipped
    report = json.loads(result.stdout)
    assert report["added"] == 1 and report["skipped"] == 1
    [error] = report["errors"]
    assert (Path(error["file"]).name, error["line"]) == ("a.jsonl", 1) and "id must be a string" in error["reason"]


def test_an_alto_file_whose_name_holds_a_control_character_is_skipped(tmp_path: Path) -> None:
    """ALTO and HIPE readers do not check ids themselves: `read_documents` does, for every reader."""
    page = Path(__file__).parents[1] / "fixtures" / "alto" / "page_v4.xml"
    (tmp_path / "page\x1b[2J.xml").write_bytes(page.read_bytes())
    docs, errors, _ = split(list(read_documents(tmp_path, "alto")))
    assert docs == {}
    [error] = errors
    assert error.reason == "id holds a control character (\\x1b at character 5)" and error.record == "page\x1b[2J"
