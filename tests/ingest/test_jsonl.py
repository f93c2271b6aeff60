"""JSONL reader: fields, aliases, one RecordError per bad line, and streaming."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from tracerag.errors import RecordError
from tracerag.ingest import RecordWarning, jsonl, read_documents
from tracerag.model import Document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "jsonl"


def split(items: list[Document | RecordError | RecordWarning]) -> tuple[dict[str, Document], list[RecordError]]:
    docs = {i.id: i for i in items if isinstance(i, Document)}
    errors = [i for i in items if isinstance(i, RecordError)]
    warnings = [i for i in items if isinstance(i, RecordWarning)]
    assert len(docs) + len(errors) + len(warnings) == len(items)
    return docs, errors


def test_good_records_carry_every_field() -> None:
    docs, errors = split(list(jsonl.read(FIXTURES / "good.jsonl")))
    assert errors == []
    assert list(docs) == ["figaro-1887-05-17-p1", "42", "nzz-1888", "plain"]

    figaro = docs["figaro-1887-05-17-p1"]
    assert figaro.text == "L'incendie de l'Opéra-Comique a fait de nombreuses victimes."
    assert figaro.corpus == "press"
    assert figaro.title == "Le Figaro"
    assert figaro.date == "1887-05-17"
    assert figaro.language == "fr"
    assert figaro.source == {"publication": "Le Figaro", "page": 1}
    assert figaro.fields == {}
    assert figaro.ocr_quality == pytest.approx(0.82)

    letter = docs["42"]  # an id of digits (as a string), `body` alias, partial date normalised
    assert letter.text == "Brief an die Redaktion."
    assert letter.date == "1887-05"
    assert letter.language == "de"
    assert letter.fields == {"genre": "letter"}
    assert letter.corpus == "default"

    nzz = docs["nzz-1888"]  # `content` alias, integer year, unknown keys folded into source
    assert nzz.text == "Neue Zürcher Zeitung, Jahrgang 1888."
    assert nzz.date == "1888"
    assert nzz.source == {"publication": "Neue Zürcher Zeitung", "url": "https://example.org/nzz/1888"}

    plain = docs["plain"]  # text kept exactly; "" and null count as absent
    assert plain.text == "  Kept exactly,\nspaces and all.\n"
    assert plain.title is None and plain.date is None


def test_each_bad_line_is_one_error_and_no_good_record_is_lost() -> None:
    path = FIXTURES / "bad.jsonl"
    items = list(jsonl.read(path))
    docs, errors = split(items)
    # a bad date costs the date, a byte that is not UTF-8 costs the byte: both records are kept, with a warning
    assert list(docs) == ["ok-1", "ok-2", "bad-date", "latin1", "ok-3"]
    assert docs["ok-1"].date == "1887"
    assert docs["ok-2"].date == "1887-05"
    assert docs["ok-3"].language == "fr"
    assert docs["bad-date"].date is None and docs["latin1"].text == "caf\ufffd cr\ufffdme"
    warnings = {w.line: w.reason for w in items if isinstance(w, RecordWarning)}
    assert sorted(warnings) == [5, 6]
    assert "1887-13" in warnings[5] and "kept undated" in warnings[5]
    assert "2 bytes that are not UTF-8 replaced by U+FFFD" in warnings[6] and "--encoding" in warnings[6]
    assert all(e.file == str(path) for e in errors)
    assert [e.line for e in errors] == [2, 3, 8, 9, 10]
    by_line = {e.line: e.reason for e in errors}
    assert by_line[2].startswith("bad JSON")
    assert "id missing" in by_line[3]
    assert "text missing" in by_line[8]
    assert "JSON object" in by_line[9]
    assert "ocr_quality" in by_line[10]


def test_options_rename_id_and_text_and_give_defaults() -> None:
    """extra.ndjson also has a UTF-8 BOM, CRLF line ends and a blank line."""
    items = list(jsonl.read(FIXTURES / "extra.ndjson", id_field="ark", text_field="ocr", language="FR"))
    docs, errors = split(items)
    assert errors == []
    first, second = docs["ark:/12148/bpt6k1"], docs["ark:/12148/bpt6k2"]
    assert first.text == "Texte OCR."
    assert first.date == "1887-05-07"
    assert first.corpus == "gallica"
    assert first.language == "fr"
    assert second.corpus == "default"
    assert first.source == {} and second.source == {}


def test_text_field_override_makes_aliases_ordinary_keys(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_text('{"id": "x", "abstract": "Kurz.", "text": "Lang."}\n{"id": "y", "text": "Nur Text."}\n')
    docs, errors = split(list(jsonl.read(p, text_field="abstract", corpus="theses")))
    assert docs["x"].text == "Kurz."
    assert docs["x"].source == {"text": "Lang."}
    assert docs["x"].corpus == "theses"
    assert [(e.line, "abstract" in e.reason) for e in errors] == [(2, True)]


def test_other_bad_values_are_record_errors(tmp_path: Path) -> None:
    p = tmp_path / "b.jsonl"
    p.write_text(
        "\n".join(
            [
                '{"id": "s", "text": "x", "source": "Le Temps"}',
                '{"id": "t", "text": 12}',
                '{"id": "u", "text": "   "}',
                '{"id": "v", "text": "x", "date": "17 mai 1887"}',
                '{"id": "w", "text": "bad surrogate \\udce9"}',
                '{"id": "ok", "text": "good pair \\ud83d\\ude00"}',
                '{"id": true, "text": "x"}',
            ]
        )
        + "\n"
    )
    docs, errors = split(list(jsonl.read(p)))
    # an unparseable date and a lone surrogate are repaired (warnings), not errors
    assert list(docs) == ["v", "w", "ok"]
    assert docs["ok"].text == "good pair \U0001f600"
    assert docs["v"].date is None and docs["w"].text == "bad surrogate \ufffd"
    assert [e.line for e in errors] == [1, 2, 3, 7]


def test_a_folder_is_read_file_by_file_in_order() -> None:
    items = list(read_documents(FIXTURES, "jsonl"))
    files = [Path(i.file).name for i in items if isinstance(i, RecordError)]
    assert files == ["bad.jsonl"] * 5 + ["extra.ndjson"] * 2  # extra.ndjson lacks `id` by default
    docs = [i.id for i in items if isinstance(i, Document)]
    assert docs == ["ok-1", "ok-2", "bad-date", "latin1", "ok-3", "figaro-1887-05-17-p1", "42", "nzz-1888", "plain"]


def test_first_document_comes_before_a_big_file_is_read(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    line = '{"id": "d%d", "text": "Lorem ipsum dolor sit amet, document %d.", "date": "1887"}\n'
    p.write_text("".join(line % (i, i) for i in range(200_000)))
    size = p.stat().st_size
    started = time.perf_counter()
    gen = jsonl.read(p)
    tracemalloc.start()
    try:
        first = next(gen)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(first, Document) and first.id == "d0"
    assert size > 10_000_000
    assert peak < 1_000_000, f"reading one record took {peak} bytes for a {size}-byte file"
    assert time.perf_counter() - started < 1.0
    gen.close()


def test_reads_a_file_while_it_is_being_written(tmp_path: Path) -> None:
    p = tmp_path / "growing.jsonl"
    with p.open("w", encoding="utf-8") as out:
        out.write('{"id": "a", "text": "first"}\n')
        out.flush()
        gen = jsonl.read(p)
        first = next(gen)
        assert isinstance(first, Document) and first.id == "a"
        out.write('{"id": "b", "text": "second"}\n')
        out.flush()
        second = next(gen)
        assert isinstance(second, Document) and second.id == "b"
    assert next(gen, None) is None
