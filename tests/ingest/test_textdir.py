"""Text-folder reader: ids and corpora from paths, metadata sidecars, bad files as RecordErrors."""

from __future__ import annotations

from pathlib import Path

from tracerag.errors import RecordError
from tracerag.ingest import RecordWarning, read_documents, textdir
from tracerag.model import Document

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "txt"


def split(items: list[Document | RecordError | RecordWarning]) -> tuple[dict[str, Document], list[RecordError]]:
    docs = {i.id: i for i in items if isinstance(i, Document)}
    errors = [i for i in items if isinstance(i, RecordError)]
    warnings = [i for i in items if isinstance(i, RecordWarning)]
    assert len(docs) + len(errors) + len(warnings) == len(items)
    return docs, errors


def test_documents_with_ids_corpora_and_metadata() -> None:
    docs, _ = split(list(textdir.read(FIXTURES)))
    assert list(docs) == ["latin1", "letters/1887-05-17", "letters/reply", "notes", "press/figaro", "readme"]

    letter = docs["letters/1887-05-17"]  # metadata.csv, keyed by id; date normalised
    assert letter.text == (FIXTURES / "letters" / "1887-05-17.txt").read_text(encoding="utf-8")
    assert letter.corpus == "letters"
    assert letter.title == "Lettre à Émile"
    assert letter.date == "1887-05-17"
    assert letter.language == "fr"
    assert letter.source == {"publication": "Fonds Zola"}

    reply = docs["letters/reply"]  # metadata.jsonl keyed by file name, then reply.json over it
    assert reply.text == "Lieber Freund,\r\ndanke für den Brief.\r\n"  # kept exactly, CRLF included
    assert reply.title == "Antwort"
    assert reply.date == "1887-06"
    assert reply.language == "de"
    assert reply.fields == {"genre": "letter"}
    assert reply.source == {"archive": "Staatsarchiv"}

    assert docs["press/figaro"].corpus == "press" and docs["press/figaro"].date == "1887-05"
    readme = docs["readme"]  # top level: the folder's own name
    assert readme.corpus == "txt" and readme.title is None and readme.source == {}


def test_bad_files_and_metadata_are_one_error_each() -> None:
    items = list(textdir.read(FIXTURES))
    docs, errors = split(items)
    found = [(Path(e.file).relative_to(FIXTURES).as_posix(), e.line) for e in errors]
    assert found == [("broken/sidecar.json", None), ("empty.txt", None)]
    reasons = [e.reason for e in errors]
    assert reasons[0].startswith("bad JSON")
    assert reasons[1] == "empty"
    assert errors[0].record == "broken/sidecar"
    # kept with a warning: notes.txt without its bad date (1887-13), latin1.txt decoded as detected
    warnings = [
        (Path(w.file).relative_to(FIXTURES).as_posix(), w.line, w.record) for w in items if isinstance(w, RecordWarning)
    ]
    assert warnings == [("metadata.csv", 4, "notes"), ("latin1.txt", None, "latin1")]
    assert docs["notes"].date is None and docs["notes"].title == "Notes"
    assert docs["latin1"].text == "First line is ASCII.\nSecond line: café.\n"


def test_corpus_and_language_options() -> None:
    docs, _ = split(list(read_documents(FIXTURES, "txt", corpus="zola", language="FR")))
    assert {d.corpus for d in docs.values()} == {"zola"}
    assert docs["readme"].language == "fr"
    assert docs["letters/reply"].language == "de"  # metadata beats options


def test_single_file_and_plain_folder(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "deep.v2.txt").write_text("Deep.", encoding="utf-8")
    (tmp_path / "top.txt").write_text("Top.", encoding="utf-8")
    (tmp_path / "blank.txt").write_text(" \n\t\n", encoding="utf-8")
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfWith BOM.")
    docs, errors = split(list(textdir.read(tmp_path)))
    assert docs["a/b/deep.v2"].corpus == "a"
    assert docs["top"].corpus == tmp_path.name
    assert docs["bom"].text == "With BOM."
    assert [(Path(e.file).name, e.reason) for e in errors] == [("blank.txt", "empty")]

    (only,) = textdir.read(tmp_path / "top.txt")
    assert isinstance(only, Document) and only.id == "top" and only.text == "Top."


def test_metadata_rows_that_cannot_be_used(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A.", encoding="utf-8")
    (tmp_path / "b.txt").write_text("B.", encoding="utf-8")
    (tmp_path / "metadata.jsonl").write_text(
        '{"id": "a", "title": "First"}\n'
        '{"title": "Nobody"}\n'
        '{"id": "a", "title": "Again"}\n'
        "not json\n"
        '{"file": "b.txt", "ocr_quality": "0.5", "shelfmark": "X-1"}\n',
        encoding="utf-8",
    )
    docs, errors = split(list(textdir.read(tmp_path)))
    assert [e.line for e in errors] == [2, 3, 4]
    assert docs["a"].title == "First"
    assert docs["b"].ocr_quality == 0.5 and docs["b"].source == {"shelfmark": "X-1"}


def test_metadata_csv_without_a_key_column(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A.", encoding="utf-8")
    (tmp_path / "metadata.csv").write_text("name,title\na,First\n", encoding="utf-8")
    docs, errors = split(list(textdir.read(tmp_path)))
    assert list(docs) == ["a"] and docs["a"].title is None
    assert len(errors) == 1 and errors[0].line == 1 and "'name', 'title'" in errors[0].reason
