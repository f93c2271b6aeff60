"""Time windows: the share of a search's results per window against the share of the documents searched."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.dates import parse_partial_date
from tracerag.ingest import read_documents
from tracerag.model import Document, Filter
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.explain import explain
from tracerag.retrieval.window_share import UNDATED, auto_years, label, shares

pytestmark = pytest.mark.needs_data("hipe2022")


def _year(doc: Document) -> int | None:
    return int(parse_partial_date(doc.date).start[:4]) if doc.date else None


@pytest.fixture(scope="module")
def hipe_docs(hipe_dir: Path) -> list[Document]:
    return [d for d in read_documents(hipe_dir, "hipe") if isinstance(d, Document)]


def test_labels_and_the_automatic_length():
    assert label(1887, 10) == "1880-1889" and label(1887, 1) == "1887" and label(None, 10) == UNDATED
    assert auto_years([1858])[0] == 1
    assert auto_years(range(1850, 1860))[0] == 1  # ten years: ten windows of one
    assert auto_years([1790, 2015])[0] == 25  # 1775..2000 in 25-year windows: ten
    years, why = auto_years([])
    assert years == 10 and "no searched document is dated" in why


def test_shares_sum_to_one_and_count_the_undated():
    got = shares([1851, 1852, 1903, None], {1850: 5, 1851: 3, 1905: 2, None: 10}, 10, "--windows")
    rows = {r.window: r for r in got.rows}
    assert list(rows) == ["1850-1859", "1900-1909", UNDATED]  # time order, undated last
    assert (rows["1850-1859"].results, rows["1850-1859"].documents) == (2, 8)
    assert (rows[UNDATED].results, rows[UNDATED].documents) == (1, 10)
    assert math.isclose(sum(r.result_share for r in got.rows), 1.0)
    assert math.isclose(sum(r.corpus_share for r in got.rows), 1.0)
    assert (got.results, got.searched) == (4, 20)
    assert rows[UNDATED].ratio == pytest.approx(0.25 / 0.5)
    # a window with documents but no result is kept: the silence is the finding
    silent = shares([1851], {1850: 1, 1950: 9}, 10)
    assert [(r.window, r.results, r.documents) for r in silent.rows] == [("1850-1859", 1, 1), ("1950-1959", 0, 9)]
    assert silent.rows[1].ratio == 0.0


def test_the_corpus_share_comes_from_the_store(hipe_collection, hipe_docs):
    store = hipe_collection.collection.store
    assert store.documents_per_year() == Counter(_year(d) for d in hipe_docs)
    assert store.documents_per_year()[None] == sum(1 for d in hipe_docs if not d.date) > 0
    # the sub-corpus and date range searched: what the filter admits (a corpus holds the corpora inside it)
    flt = Filter(corpora=("topres19th",), date_from="1850-01-01", date_to="1869-12-31")
    admitted = [
        d
        for d in hipe_docs
        if d.corpus.startswith("topres19th/")
        and d.date
        and parse_partial_date(d.date).end >= "1850-01-01"
        and parse_partial_date(d.date).start <= "1869-12-31"
    ]
    assert admitted
    assert store.documents_per_year(flt) == Counter(_year(d) for d in admitted)


def test_every_search_says_where_its_results_come_from_in_time(hipe_collection, hipe_docs):
    col = hipe_collection.collection
    ranking = Retriever(col).search(SearchRequest("Genève conseil fédéral", k=20))
    windows = ranking.params["time_windows"]
    assert windows["chosen"].startswith("auto:") and windows["window"] == "25y"  # 1780-2010 in 25-year windows
    assert windows["results"] == len(ranking.documents) == 20
    assert windows["searched"] == len(hipe_docs)
    assert math.isclose(sum(r["result_share"] for r in windows["rows"]), 1.0, abs_tol=1e-3)
    assert math.isclose(sum(r["corpus_share"] for r in windows["rows"]), 1.0, abs_tol=1e-3)
    undated = next(r for r in windows["rows"] if r["window"] == UNDATED)
    assert undated["documents"] == sum(1 for d in hipe_docs if not d.date)
    # each result counted in its own window
    dates = {d.id: d for d in hipe_docs}
    expected = Counter(label(_year(dates[d.doc_id]), 25) for d in ranking.documents)
    assert {r["window"]: r["results"] for r in windows["rows"] if r["results"]} == expected
    # --explain and --json carry it as the search made it
    assert explain(ranking, col)["params"]["time_windows"] == windows


def test_balanced_windows_are_diagnosed_on_the_same_windows(hipe_collection):
    col = hipe_collection.collection
    ranking = Retriever(col).search(
        SearchRequest("election", k=10, windows="10y", filter=Filter(date_from="1880-01-01", date_to="1899-12-31"))
    )
    windows = ranking.params["time_windows"]
    assert (windows["window"], windows["chosen"]) == ("10y", "--windows")
    assert {r["window"] for r in windows["rows"]} <= {"1880-1889", "1890-1899"}  # the date range searched
    assert {d.window for d in ranking.documents} == {r["window"] for r in windows["rows"] if r["results"]}


def test_undated_results_are_counted_as_such(tmp_path):
    col = Collection.open(tmp_path / "c", load_settings(embed={"model": "none"}), mode="write", create=True)
    docs = [
        Document(id="a", text="Le conseil municipal a siégé hier soir.", date="1887-05-01"),
        Document(id="b", text="Le conseil général se réunira demain.", date="1912"),
        Document(id="c", text="Le conseil de fabrique, sans date connue."),
    ]
    col.ingest(docs, dense=False)
    windows = Retriever(col).search(SearchRequest("conseil", k=10, windows="")).params["time_windows"]
    col.close()
    rows = {r["window"]: (r["results"], r["documents"]) for r in windows["rows"]}
    assert windows["window"] == "5y"  # 1887-1912: the shortest length giving at most ten windows
    assert rows == {"1885-1889": (1, 1), "1910-1914": (1, 1), UNDATED: (1, 1)}
