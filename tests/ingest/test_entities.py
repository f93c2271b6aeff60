"""Named entities found at ingest, on real data: two French HIPE-2022 files (spaCy's `fr_core_news_sm`) and one
German file (no spaCy model: the collection's gazetteer). Spans point at their surface; the gold annotations the
HIPE reader carries are never read; a second pass finds nothing new; a document changed loses its old entities.

`french_entities` (built once per session, ingest.entities on) is the collection the entity channel's tests and
its contract suite (tests/retrieval/test_channel_contract.py) search too.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.built_once import private_copy
from tests.conftest import in_ci, require_datasets
from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.ingest import read_documents
from tracerag.ingest.entities import GAZETTEER, Gazetteer, Pipelines, find_entities
from tracerag.model import Document
from tracerag.text import fold_key

FRENCH = ("HIPE-2022-v2.1-letemps-dev-fr.tsv", "HIPE-2022-v2.1-hipe2020-dev-fr.tsv")
GERMAN = ("HIPE-2022-v2.1-hipe2020-dev-de.tsv",)
FR_PIPELINE = "fr_core_news_sm"


def require_ner() -> None:
    """The `ner` extra (in `dev` too): without it these tests skip on a developer's machine and fail under CI."""
    missing = [m for m in ("spacy", FR_PIPELINE) if importlib.util.find_spec(m) is None]
    if missing:
        reason = f"the ner extra is not installed ({', '.join(missing)}): pip install -e '.[dev]'"
        if in_ci():
            pytest.fail(f"{reason} (CI is set: the entity tests must run)", pytrace=False)
        pytest.skip(reason)


def hipe_files(names: tuple[str, ...]) -> list[Document]:
    root = require_datasets("hipe2022") / "hipe2022"
    docs: list[Document] = []
    for name in names:
        docs.extend(d for d in read_documents(root / name, "hipe") if isinstance(d, Document))
    return docs


@dataclass
class EntityCollection:
    collection: Collection
    documents: dict[str, Document]  # as read, with the reader's gold annotations in source["entities"]


def build(path: Path, docs: list[Document], *, entities: bool = True) -> Collection:
    settings = load_settings(embed={"model": "none"}, ingest={"entities": entities})
    col = Collection.open(path, settings, mode="write", create=True)
    col.ingest(docs, dense=False)
    return col


@pytest.fixture(scope="session")
def french_entities(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EntityCollection]:
    """Two French HIPE files and a German one, ingested with ingest.entities on (~30 s on 2 cores).

    Each module that imports this fixture gets a session fixture of its own: the ingest runs once per run
    (tests/built_once.py) and each gets its own copy of the collection, open for writing as `build` leaves it."""
    require_ner()
    docs = hipe_files(FRENCH + GERMAN)
    path, _ = private_copy(tmp_path_factory, "entities", "collection", lambda target: build(target, docs).close())
    col = Collection.open(path, load_settings(embed={"model": "none"}, ingest={"entities": True}), mode="write")
    yield EntityCollection(col, {d.id: d for d in docs})
    col.close()


def all_mentions(col: Collection) -> list:
    chunks = [c.id for c in col.store.chunks_of(col.store.document_ids())]
    return col.store.mentions_of(chunks)


def test_every_stored_span_points_at_its_surface(french_entities: EntityCollection) -> None:
    col = french_entities.collection
    mentions = all_mentions(col)
    assert len(mentions) > 1000  # measured: ~5,900 on these three files
    chunks = col.store.get_chunks(sorted({m.chunk_id for m in mentions}))
    texts = {d: doc.text for d, doc in col.store.get_documents(sorted({c.doc_id for c in chunks.values()})).items()}
    for m in mentions:
        chunk = chunks[m.chunk_id]
        assert chunk.start <= m.start < m.end <= chunk.end, m
        assert texts[chunk.doc_id][m.start : m.end] == m.surface, m
        assert m.folded == fold_key(m.surface) and len(m.folded) >= 2, m
    assert {m.label for m in mentions} >= {"PER", "LOC", "ORG"}


def test_french_chunks_by_the_pipeline_and_german_ones_by_the_gazetteer(french_entities: EntityCollection) -> None:
    col = french_entities.collection
    german = {d for d, doc in french_entities.documents.items() if doc.language == "de"}
    assert german
    finders = dict(col.store._db.execute("SELECT chunk_id, finder FROM entity_chunks").fetchall())
    looked_at, chunks = col.store.count_chunks_for_entities()
    assert looked_at == chunks == len(finders)  # every chunk looked at, each once
    for chunk_id, finder in finders.items():
        if chunk_id.split("#")[0] in german:
            assert finder.startswith(GAZETTEER + ":"), chunk_id
        else:
            assert finder.startswith(FR_PIPELINE + " 3.8"), chunk_id
    # the gazetteer holds only names the pipeline found in two chunks or more, and finds some in German text
    pipeline_finders = sorted({f for f in finders.values() if not f.startswith(GAZETTEER)})
    french_forms = {f.folded: f.chunks for f in col.store.entity_forms(pipeline_finders)}
    german_mentions = [m for m in all_mentions(col) if m.chunk_id.split("#")[0] in german]
    assert len(german_mentions) > 50  # measured: ~400
    assert all(french_forms.get(m.folded, 0) >= 2 for m in german_mentions)


def test_gold_annotations_are_never_read(french_entities: EntityCollection, tmp_path: Path) -> None:
    """The same texts with their gold entities and Wikidata links taken out, or replaced by false ones, give the
    same stored entities; and what is stored is not the gold (its spans differ)."""
    docs = [d for d in french_entities.documents.values() if d.language == "fr"][:6]
    assert all(d.source.get("entities") for d in docs)  # the reader does carry gold annotations
    without = [replace(d, source={k: v for k, v in d.source.items() if k != "entities"}) for d in docs]
    planted = [
        {"start": 0, "end": 5, "type": "pers", "wikidata": "Q90"},  # a false mention at every document's start
    ]
    false_gold = [replace(d, source={**d.source, "entities": planted}) for d in docs]

    def stored(path: Path, given: list[Document]) -> list[tuple]:
        col = build(path, given)
        try:
            return sorted((m.chunk_id, m.start, m.end, m.surface, m.label) for m in all_mentions(col))
        finally:
            col.close()

    real = stored(tmp_path / "real", docs)
    assert real and real == stored(tmp_path / "without", without) == stored(tmp_path / "false", false_gold)
    # and the channel reads what was predicted, not the documents' annotations: wiped, nothing changes
    from tracerag.retrieval.entities import EntityChannel

    col = Collection.open(tmp_path / "real", load_settings(embed={"model": "none"}), mode="write")
    try:
        names = sorted({surface for *_, surface, _ in real})[:20]
        before = [EntityChannel(col.store).run(n, 20, None) for n in names]
        with col.store._transaction():
            col.store._db.execute("UPDATE documents SET source = '{}'")
        assert [EntityChannel(col.store).run(n, 20, None) for n in names] == before and any(before)
    finally:
        col.close()
    gold = {(d.id, e["start"], e["end"]) for d in docs for e in d.source["entities"]}
    predicted = {(c.split("#")[0], s, e) for c, s, e, *_ in real}
    assert predicted != gold and len(predicted - gold) > 0.2 * len(predicted)  # measured: ~45% not in the gold


def test_a_second_pass_finds_nothing_new_and_a_changed_document_loses_its_entities(tmp_path: Path) -> None:
    require_ner()
    docs = hipe_files(FRENCH[:1])[:5]
    col = build(tmp_path / "c", docs, entities=False)
    try:
        assert col.store.count_chunks_for_entities()[0] == 0  # off at ingest: nothing looked at
        first = col.find_entities()
        assert first.documents == 5 and first.mentions > 0 and first.docs_per_second > 0
        again = col.find_entities()
        assert again.chunks == {} and again.mentions == 0
        doc = docs[0]
        changed = replace(doc, text="Rien ici. " + doc.text[: len(doc.text) // 2])
        col.ingest([changed], dense=False)
        mentions = [m for m in all_mentions(col) if m.chunk_id.startswith(doc.id + "#")]
        assert mentions == []  # the old chunks' entities went with them; the new chunks are not looked at yet
        col.find_entities()
        text = col.store.get_documents([doc.id])[doc.id].text
        mentions = [m for m in all_mentions(col) if m.chunk_id.startswith(doc.id + "#")]
        assert mentions and all(text[m.start : m.end] == m.surface for m in mentions)
    finally:
        col.close()


def test_a_pipeline_configured_later_looks_again_at_what_the_gazetteer_matched(tmp_path: Path) -> None:
    """A language's chunks matched by the gazetteer are looked at by a pipeline configured for it afterwards (no
    German pipeline ships: the French one stands in), once; the other languages' chunks are left as they were."""
    require_ner()
    docs = hipe_files(FRENCH[:1])[:4] + hipe_files(GERMAN)[:3]
    col = build(tmp_path / "c", docs)
    try:
        before = dict(col.store._db.execute("SELECT chunk_id, finder FROM entity_chunks").fetchall())
        german = {c for c, f in before.items() if f.startswith(GAZETTEER + ":")}
        assert german and all(c.split("#")[0] in {d.id for d in docs if d.language == "de"} for c in german)
        report = find_entities(col.store, Pipelines({"fr": FR_PIPELINE, "de": FR_PIPELINE}))
        after = dict(col.store._db.execute("SELECT chunk_id, finder FROM entity_chunks").fetchall())
        assert report.chunks == {after[next(iter(german))]: len(german)}  # the German chunks, and only they
        assert all(after[c].startswith(FR_PIPELINE + " 3.8") for c in german)
        assert {c: f for c, f in after.items() if c not in german} == {
            c: f for c, f in before.items() if c not in german
        }
        again = find_entities(col.store, Pipelines({"fr": FR_PIPELINE, "de": FR_PIPELINE}))
        assert again.chunks == {} and again.mentions == 0
    finally:
        col.close()


def test_the_gazetteer_matches_whole_folded_words_longest_first() -> None:
    from tracerag.ingest.entities import EntityForm

    gazetteer = Gazetteer.of(
        [
            EntityForm("conseil federal", "ORG", "Conseil fédéral", 4),
            EntityForm("berne", "LOC", "Berne", 9),
            EntityForm("rare", "LOC", "Rare", 1),  # in one chunk only: left out
        ]
    )
    text = "Der Conseil Fédéral in BERNE; Bernese, rare."
    found = [(text[s:e], label) for s, e, label in gazetteer.find(text)]
    assert found == [("Conseil Fédéral", "ORG"), ("BERNE", "LOC")]
    assert gazetteer.finder != Gazetteer.of([EntityForm("berne", "LOC", "Berne", 9)]).finder


def test_without_spacy_the_pipelines_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import tracerag.ingest.entities as entities

    monkeypatch.setattr(entities, "spacy_missing", lambda: "spaCy is not installed: pip install 'tracerag[ner]'")
    pipelines = Pipelines({"fr": FR_PIPELINE})
    assert "tracerag[ner]" in (pipelines.why_not("fr") or "")
    assert "no pipeline configured for 'de'" in (pipelines.why_not("de") or "")


def test_entities_report_is_plain_data(french_entities: EntityCollection) -> None:
    report = find_entities(french_entities.collection.store, Pipelines({"fr": FR_PIPELINE}))
    assert json.loads(json.dumps(report.to_dict()))["chunks"] == {}  # all looked at by the session's ingest
