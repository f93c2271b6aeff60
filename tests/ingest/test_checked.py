"""Records read with their options checked before anything is written (`tracerag ingest` reads through this)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracerag.errors import ConfigError
from tracerag.ingest.checked import read_checked, reader_options, take_documents
from tracerag.model import Document

ALTO = Path(__file__).resolve().parents[1] / "fixtures" / "alto"
OPTIONS = {
    "corpus": "press",
    "language": None,
    "id_column": "id",
    "text_column": "body",
    "delimiter": ";",
    "encoding": None,
    "unit": "page",
    "date": "",
}


def test_each_reader_gets_only_the_options_it_understands():
    assert reader_options("csv", OPTIONS) == {
        "corpus": "press",
        "id_column": "id",
        "text_column": "body",
        "delimiter": ";",
    }
    assert reader_options("alto", OPTIONS) == {"corpus": "press", "unit": "page"}  # an empty date is no date
    assert reader_options("jsonl", OPTIONS) == {"corpus": "press"}
    assert reader_options("hipe", OPTIONS) == {}  # its files say corpus and language themselves
    assert reader_options("hipe", OPTIONS | {"encoding": "latin-1"}) == {"encoding": "latin-1"}


def test_bad_options_are_refused_before_a_record_is_used(tmp_path: Path):
    source = tmp_path / "docs.csv"
    source.write_text("id;body\na;Un texte.\nb;Un autre.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="--delimiter ';;'"):
        read_checked(source, None, OPTIONS | {"delimiter": ";;"})
    with pytest.raises(ConfigError, match="no such file"):
        read_checked(tmp_path / "missing.csv", None, OPTIONS)
    with pytest.raises(ConfigError, match="ALTO unit must be one of"):  # the reader's own check, on the first record
        read_checked(ALTO, "alto", OPTIONS | {"unit": "line"})
    records = list(read_checked(source, None, OPTIONS))
    assert [r.id for r in records if isinstance(r, Document)] == ["a", "b"]  # the first record was put back
    assert [r.id for r in take_documents(iter(records), 1) if isinstance(r, Document)] == ["a"]
