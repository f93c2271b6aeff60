"""CSV reader: column mapping, one RecordError per bad row at its physical line, header errors."""

from __future__ import annotations

from pathlib import Path

from tracerag.errors import RecordError
from tracerag.ingest import RecordWarning, read_documents, table
from tracerag.model import Document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "csv"


def split(items: list[Document | RecordError | RecordWarning]) -> tuple[dict[str, Document], list[RecordError]]:
    docs = {i.id: i for i in items if isinstance(i, Document)}
    errors = [i for i in items if isinstance(i, RecordError)]
    warnings = [i for i in items if isinstance(i, RecordWarning)]
    assert len(docs) + len(errors) + len(warnings) == len(items)
    return docs, errors


def test_mapped_columns_and_unmapped_ones_as_fields() -> None:
    items = list(table.read(FIXTURES / "catalog.csv", title_column="title", date_column="date"))
    docs, errors = split(items)
    assert errors == []
    assert list(docs) == ["c1", "c2", "c3"]
    c1, c2, c3 = docs["c1"], docs["c2"], docs["c3"]
    assert c1.text == "Paris, le 17 mai."
    assert c1.title == "Lettre de Paris"
    assert c1.date == "1887-05"
    assert c1.corpus == "default" and c1.language is None
    assert c1.fields == {"shelfmark": "MS-1", "genre": "letter"}  # empty `notes` left out
    assert c2.text == "Une ligne.\nUne deuxième ligne."
    assert c2.date == "1888-01-02"
    assert c2.fields == {"shelfmark": "MS-2", "genre": "diary", "notes": "long note"}
    assert c3.title is None and c3.date == "1890"
    assert c3.fields == {"genre": "report"}


def test_title_and_date_are_read_by_name_unless_asked_for_none() -> None:
    by_name, _ = split(list(table.read(FIXTURES / "catalog.csv")))
    assert (by_name["c1"].title, by_name["c1"].date) == ("Lettre de Paris", "1887-05")
    docs, _ = split(list(table.read(FIXTURES / "catalog.csv", title_column="", date_column="")))
    assert docs["c1"].title is None and docs["c1"].date is None
    assert docs["c1"].fields == {"title": "Lettre de Paris", "date": "1887-5", "shelfmark": "MS-1", "genre": "letter"}


def test_each_bad_row_is_one_error_at_its_line() -> None:
    path = FIXTURES / "bad_rows.csv"
    items = list(table.read(path, date_column="date"))
    docs, errors = split(items)
    # a bad date costs the row its date, a byte that is not UTF-8 costs the byte: kept, with a warning
    assert list(docs) == ["r1", "r4", "r5", "r6", "r8"]
    assert docs["r4"].text == "Multi\nligne"  # a quoted field over two lines
    assert docs["r4"].date == "1887-05"
    assert docs["r4"].fields == {"place": "Genève"}
    assert docs["r5"].date is None and docs["r6"].text == "caf\ufffd latin-1"
    assert docs["r8"].date == "1887-05-17"
    warnings = {w.line: w.reason for w in items if isinstance(w, RecordWarning)}
    assert sorted(warnings) == [7, 8]
    assert "1887-13" in warnings[7] and "kept undated" in warnings[7]
    assert "1 byte that is not UTF-8 replaced by U+FFFD" in warnings[8]
    assert all(e.file == str(path) for e in errors)
    assert [e.line for e in errors] == [3, 4, 9, 11]
    by_line = {e.line: e.reason for e in errors}
    assert by_line[3] == "expected 4 columns, found 5"
    assert "id missing" in by_line[4]
    assert "text missing" in by_line[9]
    assert by_line[11] == "expected 4 columns, found 2"


def test_missing_mapped_column_is_one_error_for_the_file() -> None:
    path = FIXTURES / "missing_column.csv"
    items = list(table.read(path))
    assert len(items) == 1
    (error,) = items
    assert isinstance(error, RecordError)
    assert error.file == str(path) and error.line == 1
    assert "'text'" in error.reason
    assert "'id', 'body', 'date'" in error.reason

    docs, errors = split(list(table.read(path, text_column="body", date_column="date")))
    assert errors == [] and docs["m1"].text == "Texte" and docs["m1"].date == "1887"


def test_missing_field_column_is_reported_too() -> None:
    items = list(table.read(FIXTURES / "catalog.csv", field_columns=["genre", "author"]))
    assert len(items) == 1 and isinstance(items[0], RecordError)
    assert "'author'" in items[0].reason and "'genre'" not in items[0].reason.split(";")[0]


def test_delimiter_renamed_columns_constants_and_chosen_fields() -> None:
    items = table.read(
        FIXTURES / "semicolon.csv",
        id_column="cote",
        text_column="texte",
        title_column="titre",
        date_column="annee",
        corpus_column="fonds",
        language_column="langue",
        field_columns=["auteur"],
        delimiter=";",
        corpus="archives",
        language="fr",
    )
    docs, errors = split(list(items))
    assert errors == []
    a1, a2 = docs["A-1"], docs["A-2"]
    assert a1.text == "Bericht über die Sitzung."
    assert (a1.title, a1.date, a1.corpus, a1.language) == ("Protokoll", "1887-05", "Ratsarchiv", "de")
    assert a1.fields == {"auteur": "Müller"}  # `lieu` not chosen
    assert (a2.title, a2.date, a2.corpus, a2.language) == (None, "1888", "archives", "fr")
    assert a2.fields == {}


def test_empty_file_is_one_error() -> None:
    path = FIXTURES / "empty.csv"
    items = list(table.read(path))
    assert len(items) == 1 and isinstance(items[0], RecordError)
    assert items[0].file == str(path) and "empty" in items[0].reason


def test_tab_separated_with_bom_and_crlf(tmp_path: Path) -> None:
    p = tmp_path / "t.tsv"
    p.write_bytes(b'\xef\xbb\xbfid\ttext\tlang\r\nt1\tEins.\tde\r\n\r\nt2\t"Zwei,\r\nzwei."\tde\r\nt3\tDrei.\r\n')
    docs, errors = split(list(table.read(tmp_path, delimiter="\t", language_column="lang")))
    assert docs["t1"].language == "de"
    assert docs["t2"].text == "Zwei,\r\nzwei."
    assert [(e.line, e.reason) for e in errors] == [(6, "expected 3 columns, found 2")]


def test_a_long_field_is_read(tmp_path: Path) -> None:
    p = tmp_path / "long.csv"
    text = "mot " * 100_000  # over csv's default 128 KiB field limit
    p.write_text(f'id,text\nlong,"{text}"\nnext,Suite.\n')
    docs, errors = split(list(table.read(p)))
    assert errors == [] and docs["long"].text == text and docs["next"].text == "Suite."


def test_reads_a_file_while_it_is_being_written(tmp_path: Path) -> None:
    p = tmp_path / "growing.csv"
    with p.open("w", encoding="utf-8", newline="") as out:
        out.write("id,text\nx1,first\n")
        out.flush()
        gen = read_documents(p, "csv")
        first = next(gen)
        assert isinstance(first, Document) and first.id == "x1"
        out.write("x2,second\n")
        out.flush()
        second = next(gen)
        assert isinstance(second, Document) and second.id == "x2"
    assert next(gen, None) is None
