"""The bm25s peer baseline on a four-document corpus whose BM25 scores are worked out by hand."""

from __future__ import annotations

import math

import pytest

from tracerag.eval.datasets import Benchmark, Query
from tracerag.eval.peers import bm25s_run, peer_tokens
from tracerag.model import Document

# Tokens (lowercased, accents stripped, one-letter tokens dropped), title first:
#   g1 "Geneve lac"              -> geneve lac            (length 2)
#   g2 "geneve geneve ville"     -> geneve geneve ville   (length 3)
#   p1 "Paris, à la ville"       -> paris la ville        (length 3; "à" is one letter, dropped)
#   a0 title "Zürich", text "lac" -> zurich lac           (length 2)
# avgdl = 10 / 4 = 2.5, N = 4. bm25s "lucene": idf = ln(1 + (N - df + 0.5) / (df + 0.5)),
# term score = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)), k1 = 1.5, b = 0.75.
DOCS = [
    Document("g1", "Geneve lac"),
    Document("g2", "geneve geneve ville"),
    Document("p1", "Paris, à la ville"),
    Document("a0", "lac", title="Zürich"),
]
QUERIES = {
    "accent": Query("accent", "Genève"),  # matches the unaccented "geneve" of g1 and g2
    "tie": Query("tie", "le LAC"),  # "le" is in no document; g1 and a0 tie on "lac"
    "title": Query("title", "zurich"),  # only in a0's title
    "none": Query("none", "x Berlin"),  # no known token
}
BENCH = Benchmark("toy", "hand-made", DOCS, QUERIES, {})


def _term(df: int, tf: int, dl: int) -> float:
    idf = math.log(1 + (4 - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + 1.5 * (1 - 0.75 + 0.75 * dl / 2.5))


def test_tokens_are_lowercased_accent_stripped_and_two_letters_long() -> None:
    assert peer_tokens("Genève, à l'Hôtel-de-Ville 1887 a") == ["geneve", "hotel", "de", "ville", "1887"]


def test_accented_query_matches_unaccented_document_in_bm25_order() -> None:
    run = bm25s_run(BENCH, ["accent"])
    # df(geneve) = 2, idf = ln(1 + 2.5 / 2.5) = ln 2.
    # g2: tf 2, dl 3: ln2 * 2 / (2 + 1.5 * (0.25 + 0.9)) = ln2 * 2 / 3.725 = 0.3722
    # g1: tf 1, dl 2: ln2 * 1 / (1 + 1.5 * (0.25 + 0.6)) = ln2 / 2.275 = 0.3047
    # g2 repeats the term in a longer document and still wins; p1 and a0 do not match and are left out.
    assert [doc for doc, _ in run["accent"]] == ["g2", "g1"]
    assert run["accent"][0][1] == pytest.approx(math.log(2) * 2 / 3.725, rel=1e-6)
    assert run["accent"][1][1] == pytest.approx(math.log(2) / 2.275, rel=1e-6)
    assert run["accent"][0][1] == pytest.approx(_term(2, 2, 3), rel=1e-6)
    assert all(type(score) is float for _, score in run["accent"])


def test_ties_by_doc_id_title_indexed_and_unknown_tokens() -> None:
    run = bm25s_run(BENCH, ["tie", "title", "none"])
    # "lac": df 2, g1 and a0 both tf 1, dl 2 -> equal scores; a0 < g1 by id though a0 was indexed last.
    assert [doc for doc, _ in run["tie"]] == ["a0", "g1"]
    assert run["tie"][0][1] == run["tie"][1][1] == pytest.approx(_term(2, 1, 2), rel=1e-6)
    # "zurich" only occurs in a0's title: df 1, idf = ln(1 + 3.5 / 1.5).
    assert run["title"] == [("a0", pytest.approx(_term(1, 1, 2), rel=1e-6))]
    assert run["none"] == []


def test_depth_cuts_the_ranking() -> None:
    assert bm25s_run(BENCH, ["accent"], depth=1)["accent"][0][0] == "g2"
    assert len(bm25s_run(BENCH, ["accent"], depth=1)["accent"]) == 1
    assert [doc for doc, _ in bm25s_run(BENCH, ["tie"], depth=1)["tie"]] == ["a0"]  # a tie at the cut goes by id
    with pytest.raises(ValueError):
        bm25s_run(BENCH, ["accent"], depth=0)
