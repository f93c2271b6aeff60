"""Reading a folder in parts (what each worker of a distributed ingest reads) gives, part after part, exactly the
records of reading it whole: the same documents with the same ids, sub-corpora and metadata, the same errors and
warnings with their file and line, each once, in the same order."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from tracerag.errors import RecordError
from tracerag.ingest import ReadPart, read_documents, read_part, reader_files

FIXTURES = REPO / "tests" / "fixtures"


def _comparable(items: list) -> list:
    """Errors are exceptions, equal only to themselves: compared by what they say and where."""
    return [("error", str(i), i.file, i.line) if isinstance(i, RecordError) else i for i in items]


def _in_parts(path: Path, fmt: str, size: int, **options) -> list:
    files = reader_files(path, fmt, **options)
    parts = [ReadPart(tuple(files[i : i + size]), lead=i == 0) for i in range(0, len(files), size)]
    return _comparable([item for part in parts for item in read_part(path, fmt, part, **options)])


@pytest.mark.parametrize(
    ("folder", "fmt", "options"),
    [
        ("txt", "txt", {}),  # metadata.csv / .jsonl rows (some bad), sidecars, sub-folders as sub-corpora
        ("jsonl", "jsonl", {}),  # malformed lines, a .ndjson beside
        ("alto", "alto", {}),  # broken and truncated XML, a Latin-1 file
        ("csv", "csv", {"delimiter": ","}),
        ("hipe", "hipe", {}),
    ],
)
@pytest.mark.parametrize("size", [1, 2])
def test_a_folder_read_in_parts_is_the_folder_read_whole(folder, fmt, options, size):
    path = FIXTURES / folder
    whole = _comparable(list(read_documents(path, fmt, **options)))
    assert len(reader_files(path, fmt, **options)) >= 1
    assert _in_parts(path, fmt, size, **options) == whole


def test_a_text_folder_reports_its_bad_metadata_rows_once_whatever_the_parts():
    path = FIXTURES / "txt"
    whole = list(read_documents(path, "txt"))
    folder_level = _comparable(
        [r for r in whole if str(getattr(r, "file", "")).endswith(("metadata.csv", "metadata.jsonl"))]
    )
    assert folder_level, "the fixture has bad metadata rows: without them this test shows nothing"
    parts = _in_parts(path, "txt", 1)
    assert [r for r in parts if r in folder_level] == folder_level


def test_the_files_of_a_table_folder_follow_the_delimiter(tmp_path):
    (tmp_path / "a.csv").write_text("id,text\n1,one\n", encoding="utf-8")
    (tmp_path / "b.tsv").write_text("id\ttext\n2\ttwo\n", encoding="utf-8")
    assert [f.name for f in reader_files(tmp_path, "csv", delimiter=",")] == ["a.csv"]
    assert [f.name for f in reader_files(tmp_path, "csv", delimiter="\t")] == ["a.csv", "b.tsv"]
