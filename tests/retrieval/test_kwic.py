"""Keyword in context: the query's words found as the BM25 index finds them (folded, stemmed by language, cut at
non-letters), exact offsets, the window holding the most of them; checked on small texts and on real OCR'd
newspapers against the engine's own BM25 hits."""

from __future__ import annotations

from itertools import islice
from pathlib import Path

from tracerag.engine import FieldStats, TermStats
from tracerag.ingest import read_documents
from tracerag.model import Document
from tracerag.retrieval.kwic import matches, query_keys, rarity, snippet, snippets, term_key


def test_words_meet_as_the_index_makes_them_one_term() -> None:
    assert term_key("Grèves", "fr") == term_key("greve", "fr")
    assert term_key("Strikes", "en") == term_key("strike", "en")
    assert term_key("Häuser", "de") == term_key("hauser", "de")
    assert term_key("fires", None) != term_key("fire", None)  # no language: folded, not stemmed
    assert term_key("strikes", "en") != term_key("strict", "en")


def test_matches_are_exact_offsets_of_whole_words() -> None:
    text = "L'État et les grèves; la GRÈVE générale (grévistes) à Paris_Nord."
    found = matches(text, query_keys(["greve etat paris"], "fr"), "fr")
    assert [text[s:e] for s, e in found] == ["État", "grèves", "GRÈVE", "Paris"]
    assert matches(text, set(), "fr") == []


def test_the_snippet_is_the_window_with_the_most_query_terms() -> None:
    filler = "nothing to see here. " * 30
    text = "fire " + filler + "the harbour fire spread along the harbour wall. " + filler
    sn = snippet(text, ["harbour fire"], "en", width=120, offset=1000)
    assert "the harbour fire spread" in sn.text
    assert {sn.text[s:e] for s, e in sn.spans} == {"harbour", "fire"}
    assert len(sn.spans) >= 3
    assert sn.cut_before and sn.cut_after
    assert text[sn.start - 1000 : sn.end - 1000] == sn.text  # document offsets
    lo, hi = sn.start - 1000, sn.end - 1000
    assert text[lo - 1].isspace() and (hi == len(text) or text[hi].isspace())  # no word cut in two


def test_a_short_text_is_its_own_snippet_and_one_without_matches_its_start() -> None:
    short = snippet("A fire in the night.", ["fire"], "en")
    assert short.text == "A fire in the night." and short.spans == ((2, 6),)
    assert not short.cut_before and not short.cut_after
    long_text = "word " * 200
    none = snippet(long_text, ["fire"], "en", width=50)
    assert none.spans == () and none.start == 0 and len(none.text) <= 80 and none.cut_after


def test_on_real_newspapers_every_bm25_hit_shows_a_query_word(hipe_dir: Path, tmp_path: Path) -> None:
    """The engine found each chunk for a query word: its snippet marks at least one, and every mark is one."""
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.retrieval import Retriever, SearchRequest

    settings = load_settings(cache_dir=str(tmp_path / "cache"))
    docs = [
        d
        for name in ("HIPE-2022-v2.1-letemps-dev-fr.tsv", "HIPE-2022-v2.1-newseye-dev-de.tsv")
        for d in islice(read_documents(hipe_dir / name, "hipe"), 25)
        if isinstance(d, Document)
    ]
    with Collection.open(tmp_path / "c", settings, mode="write", create=True, embed_model="none") as col:
        col.ingest(docs, dense=False)
        marked = 0
        for query in ("conseil fédéral", "Regierung Wahlen", "guerre"):
            ranking = Retriever(col).search(SearchRequest(query=query, k=10, channels=("bm25",), windows=""))
            assert ranking.documents, query
            chunks = col.store.get_chunks([d.best_chunk_id for d in ranking.documents])
            texts = col.store.get_documents([d.doc_id for d in ranking.documents])
            for d in ranking.documents:
                chunk, doc = chunks[d.best_chunk_id], texts[d.doc_id]
                sn = snippet(doc.text[chunk.start : chunk.end], [query], doc.language, offset=chunk.start)
                keys = query_keys([query], doc.language)
                assert sn.spans, (query, d.doc_id)
                assert all(term_key(sn.text[s:e], doc.language) in keys for s, e in sn.spans)
                marked += len(sn.spans)
        assert marked >= 25  # 27 measured


def test_words_are_analysed_by_the_index_s_own_analyser() -> None:
    assert term_key("cœur", "fr") == term_key("COEUR", "fr")  # ASCII folding, which Unicode decomposition misses
    assert matches("die Voͤrse schloss", query_keys(["voͤrse"], "de"), "de") == [(4, 10)]  # combining letter kept
    assert term_key("strikes", "da") != term_key("strike", "da")  # no Danish index stemmer: folded only
    assert term_key("Grèves", "fr-ch") == term_key("greve", "fr")


def test_a_word_hyphenated_at_a_line_end_is_matched_whole_as_the_index_joined_it() -> None:
    text = "au commis¬ sariat de Belle¬ville, l'opi-\nnion; Saint-\nMartin"
    found = matches(text, query_keys(["commissariat belleville opinion saint"], "fr"), "fr")
    assert [text[s:e] for s, e in found] == ["commis¬ sariat", "Belle¬ville", "opi-\nnion", "Saint"]
    assert matches(text, query_keys(["sariat ville"], "fr"), "fr") == []  # halves are not words of the index


def test_several_windows_do_not_overlap_and_the_first_of_equals_comes_first() -> None:
    filler = " ".join(["rien"] * 60)
    text = f"la grève du port. {filler} une autre grève. {filler} fin"
    first, second = snippets(text, ["grève"], "fr", width=60, count=3)
    assert first.end <= second.start
    assert [sn.text[s:e] for sn in (first, second) for s, e in sn.spans] == ["grève", "grève"]
    assert len(snippets(text, ["absent"], "fr", width=60, count=3)) == 1  # no match: the text's start, once


def test_a_window_with_the_querys_rare_word_beats_one_with_its_common_words() -> None:
    """The PIAF trial: "[l] [La] [de] [la] [est]" was shown before "Australie", the word the query was about."""
    filler = " ".join(["rien"] * 60)
    text = f"la capitale de la France est la ville de Paris. {filler} une ville d'Australie. {filler} fin"
    query = ["la capitale de l'Australie"]
    assert "Australie" not in snippets(text, query, "fr", width=60)[0].text  # counted alike: 3 words beat 1
    stats = FieldStats(
        1000,
        (
            TermStats("la", 1, 900),
            TermStats("capitale", 1, 40),
            TermStats("de", 1, 950),
            TermStats("l", 1, 800),
            TermStats("Australie", 1, 3),
        ),
    )
    weights = rarity(stats, "fr")
    assert weights[term_key("Australie", "fr")] > 10 * weights[term_key("la", "fr")]
    best, other = snippets(text, query, "fr", width=60, count=2, weights=weights)
    assert "Australie" in best.text and best.start > other.start  # best first, not in text order
    assert snippet(text, query, "fr", width=60, weights=weights) == best
