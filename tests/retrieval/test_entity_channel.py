"""The entity channel on real data (French and German HIPE-2022, predicted entities): exact, folded and fuzzy
(an OCR-misspelled name) matches, the query's entities read from its shape, fused with the other channels and
shown by `--explain`, `--json` and the trail; silent, and saying why, on a collection without entities; and the
`tracerag entities` command that adds them to one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.ingest.test_entities import FRENCH, EntityCollection, build, french_entities, hipe_files, require_ner
from tracerag.cli import app
from tracerag.model import Filter
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.entities import EntityChannel, Lexicon, candidates
from tracerag.text import fold_key
from tracerag.trail.events import ChannelEvent

__all__ = ["french_entities"]  # the session fixture, shared with the ingest tests

runner = CliRunner()


def channel(col, **options) -> EntityChannel:
    return EntityChannel(col.store, None, **options)


def docs_mentioning(col, folded: str) -> set[str]:
    return {doc_id for _, doc_id, _, _ in col.store.entity_chunks([folded])}


def test_an_exact_name_finds_the_chunks_that_mention_it(french_entities: EntityCollection) -> None:
    col = french_entities.collection
    found, _ = channel(col).reading("Lausanne")
    hits = channel(col).run("Lausanne", 200, None)
    assert hits and {h.doc_id for h in hits} >= docs_mentioning(col, "lausanne")
    # the chunks naming it exactly come first, then those of forms like it (OCR variants, longer names)
    exact = {m.chunk_id for m in col.store.mentions_of([h.chunk_id for h in hits]) if m.folded == "lausanne"}
    assert {h.chunk_id for h in hits[: len(exact)]} == exact
    matched = {m.chunk_id for m in col.store.mentions_of([h.chunk_id for h in hits]) if m.folded in found[0].matches}
    assert {h.chunk_id for h in hits} == matched


def test_case_and_accents_are_folded(french_entities: EntityCollection) -> None:
    col = french_entities.collection
    assert docs_mentioning(col, "geneve")
    exact = channel(col).run("Genève", 100, None)
    assert channel(col).run("GENEVE", 100, None) == exact == channel(col).run("geneve", 100, None)


def test_an_ocr_misspelled_name_finds_the_name(french_entities: EntityCollection) -> None:
    """'Lausaune' (n read as u, the commonest OCR confusion) finds the chunks of 'Lausanne'; and every frequent
    name of the collection with one letter changed finds its own chunks among its first hits."""
    col = french_entities.collection
    fuzzy = channel(col).run("Lausaune", 200, None)
    exact = channel(col).run("Lausanne", 200, None)
    naming = {m.chunk_id for m in col.store.mentions_of([h.chunk_id for h in exact]) if m.folded == "lausanne"}
    assert naming and {h.chunk_id for h in fuzzy} >= naming
    assert channel(col, fuzzy=100.0).run("Lausaune", 10, None) == []  # exact and folded only
    lexicon = Lexicon.of(col.store)
    names = [f for f in col.store.entity_forms() if f.chunks >= 4 and len(f.folded) >= 7 and " " not in f.folded]
    assert len(names) >= 10
    found = 0
    for form in names:
        i = len(form.folded) // 2
        typo = form.folded[:i] + ("x" if form.folded[i] != "x" else "y") + form.folded[i + 1 :]
        if typo in lexicon.chunks:
            continue
        hits = channel(col).run(typo, 50, None)
        found += form.folded in {m.folded for m in col.store.mentions_of([h.chunk_id for h in hits[:5]])}
    assert found >= 0.9 * len(names)  # measured: all of them


def test_a_longer_name_holding_the_query_counts_less_than_the_name_itself(french_entities: EntityCollection) -> None:
    col = french_entities.collection
    assert docs_mentioning(col, "la france") - docs_mentioning(col, "france")  # "la France" alone in some
    hits = channel(col).run("France", 500, None)
    assert {h.doc_id for h in hits} >= docs_mentioning(col, "la france") | docs_mentioning(col, "france")
    exact = {h.chunk_id for h in hits if h.score >= hits[0].score * 0.999}
    assert exact <= {m.chunk_id for m in col.store.mentions_of(list(exact)) if m.folded == "france"}


def test_the_query_entities_are_read_from_its_shape(french_entities: EntityCollection) -> None:
    col = french_entities.collection
    ch = channel(col)
    found, why = ch.reading("Conseil fédéral 1890")
    assert why.acts and [q.text for q in found] == ["Conseil fédéral"]  # the date is the date channel's
    assert found[0].matches["conseil federal"] == 1.0
    found, why = ch.reading("que disait le Journal de Genève sur la grève des ouvriers de Lausanne en hiver")
    assert why.acts and {q.text for q in found} >= {"Lausanne"}  # a long query: capitalised runs
    quoted = [c for c in candidates('"la Suisse" et le reste', None) if c.found_by == "quoted"]
    assert [(c.start, c.end) for c in quoted] == [(1, 10)]
    assert ch.reading("qwxzvbnmk")[1].why.startswith("no entity of the collection's")


def test_the_filter_is_the_engines(french_entities: EntityCollection) -> None:
    col = french_entities.collection
    everything = channel(col).run("Suisse", 500, None)
    kept = channel(col).run("Suisse", 500, Filter(corpora=("letemps",)))
    docs = col.store.get_documents([h.doc_id for h in everything], text=False)
    assert kept and [h.chunk_id for h in kept] == [
        h.chunk_id for h in everything if docs[h.doc_id].corpus.startswith("letemps/")
    ]
    dated = channel(col).run("Suisse", 500, Filter(date_from="1900-01-01", date_to="1950-12-31"))
    spans = col.store.date_spans([h.doc_id for h in dated])
    assert dated and all(s <= "1950-12-31" and e >= "1900-01-01" for s, e in spans.values())
    assert len(spans) == len({h.doc_id for h in dated})


def test_fused_with_the_other_channels_and_shown(french_entities: EntityCollection) -> None:
    col = french_entities.collection
    retriever = Retriever(col)
    alone = retriever.search(SearchRequest("Lausanne", k=10, channels=("entity",)))
    assert alone.documents and alone.params["active_channels"] == ["entity"]
    assert alone.params["channel_readings"]["entity"]["acts"]
    fused = retriever.search(SearchRequest("Lausanne", k=10, channels=("bm25", "phrase", "entity")))
    assert "entity" in fused.params["active_channels"]
    assert any(e.channel == "entity" for d in fused.documents for e in d.channels)
    rrf = Retriever(col, col.settings.retrieval.model_copy(update={"fusion": "rrf"}))
    assert (
        "entity" in rrf.search(SearchRequest("Lausanne", k=10, channels=("bm25", "entity"))).params["active_channels"]
    )
    hits = fused.channel_hits["entity"]
    event = ChannelEvent(
        step=0, channel="entity", query="Lausanne", ranking=[(h.doc_id, h.chunk_id, h.score) for h in hits]
    )
    assert event.channel == "entity"


def test_the_cli_adds_entities_to_a_collection_made_without_them(tmp_path: Path) -> None:
    require_ner()
    col = build(tmp_path / "c", hipe_files(FRENCH[:1])[:8], entities=False)
    path = col.path
    silent = Retriever(col).search(SearchRequest("Lausanne", k=5, channels=("entity",)))
    assert not silent.documents
    assert "run `tracerag entities`" in silent.params["channel_readings"]["entity"]["why"]
    col.close()
    result = runner.invoke(app, ["entities", "-c", str(path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["documents"] == 8 and report["mentions"] > 0 and report["chunks_looked_at"] == report["chunks_total"]
    again = runner.invoke(app, ["entities", "-c", str(path)])
    assert again.exit_code == 0, again.output
    assert "nothing new" in again.stdout
    explained = runner.invoke(app, ["search", "Lausanne", "-c", str(path), "--channels", "entity", "--json"])
    assert explained.exit_code == 0, explained.output
    assert json.loads(explained.stdout)["results"]


def test_without_spacy_the_command_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracerag.ingest.entities as found  # the command asks it when it runs

    monkeypatch.setattr(found, "spacy_missing", lambda: "spaCy is not installed: pip install 'tracerag[ner]'")
    result = runner.invoke(app, ["entities", "-c", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "tracerag[ner]" in result.output


def test_fold_key_is_what_is_stored(french_entities: EntityCollection) -> None:
    forms = french_entities.collection.store.entity_forms()
    assert all(fold_key(f.surface) == f.folded for f in forms)


def test_a_name_in_a_question_weighs_its_share_of_the_words(french_entities: EntityCollection) -> None:
    """A keyword query that is a name gives the entity channel its full weight; a question naming one place
    among many words gives it that share (piaf-fr: at full weight, names in questions cost 0.03 nDCG@10)."""
    retriever = Retriever(french_entities.collection)
    short = retriever.search(SearchRequest("Lausanne", k=5, channels=("bm25", "entity")))
    assert (short.params["fusion"]["weights"] or {}).get("entity", 1.0) == 1.0
    question = "que disait-on alors dans les journaux de la grève des ouvriers de Lausanne ?"
    long = retriever.search(SearchRequest(question, k=5, channels=("bm25", "entity")))
    assert long.params["channel_readings"]["entity"]["acts"]
    words = len([w for w in question.split() if any(c.isalnum() for c in w)])
    named = sum(
        len(q.text.split()) for q in Retriever(french_entities.collection).entity_channel().reading(question)[0]
    )
    assert 1 <= named <= 3 and long.params["fusion"]["weights"]["entity"] == pytest.approx(named / words)
    assert "share of the query's words that are names" in long.params["fusion"]["why"]
