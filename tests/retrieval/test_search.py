"""Search on the whole of HIPE-2022 (the session collection, ingested without vectors: bm25, phrase and date
channels; dense stays out)."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from tracerag.errors import ConfigError
from tracerag.model import DateRange, Filter
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.channels import Bm25Channel, PhraseChannel
from tracerag.retrieval.explain import explain
from tracerag.retrieval.fusion import merge_fields
from tracerag.retrieval.windows import window_of


@pytest.fixture(scope="module")
def col(hipe_collection):
    return hipe_collection.collection


@pytest.fixture(scope="module")
def retriever(col):
    return Retriever(col)


def search(retriever, query, **kw):
    return retriever.search(SearchRequest(query, **kw))


def matching_documents(col, query: str, flt: Filter) -> set[str]:
    """Documents the filter admits that contain a query term: what the search may return at most."""
    return {h.doc_id for hits in col.engine.bm25(query, 5000, flt).values() for h in hits}


# -- filters: only matching documents, and still k of them -------------------------------------------------


@pytest.mark.parametrize(
    ("query", "flt", "corpora"),
    [
        ("guerre", Filter(corpora=("letemps",)), {"letemps/gdl", "letemps/jdg"}),  # the parent: both papers
        ("guerre", Filter(corpora=("letemps/gdl",)), {"letemps/gdl"}),
        ("Krieg", Filter(corpora=("hipe2020",), languages=("de",)), {"hipe2020/nzz", "hipe2020/luxwort",
                                                                      "hipe2020/tageblatt"}),
    ],
)  # fmt: skip
def test_corpus_filter(col, retriever, query, flt, corpora):
    assert len(matching_documents(col, query, flt)) >= 10
    ranking = search(retriever, query, k=10, filter=flt)
    assert len(ranking.documents) == 10
    docs = col.store.get_documents(ranking.doc_ids())
    assert {docs[d].corpus for d in ranking.doc_ids()} <= corpora


def test_parent_corpus_covers_all_its_children(col, retriever):
    found = search(retriever, "guerre", k=60, filter=Filter(corpora=("letemps",)))
    docs = col.store.get_documents(found.doc_ids())
    assert {d.corpus for d in docs.values()} == {"letemps/gdl", "letemps/jdg"}


@pytest.mark.parametrize(
    "corpora",
    [
        ("letemps", "letemps/gdl"),
        ("letemps/gdl", "letemps"),
        ("letemps", "letemps"),
        ("letemps/gdl", "letemps/jdg", "letemps"),
    ],
)
def test_overlapping_corpora_give_each_document_once(col, retriever, corpora):
    ranking = search(retriever, "guerre", k=15, filter=Filter(corpora=corpora))
    ids = ranking.doc_ids()
    assert len(ids) == len(set(ids)) == 15
    assert [d.rank for d in ranking.documents] == list(range(1, 16))
    docs = col.store.get_documents(ids)
    assert {d.corpus for d in docs.values()} == {"letemps/gdl", "letemps/jdg"}
    # the same documents as asking for "letemps" alone
    assert ids == search(retriever, "guerre", k=15, filter=Filter(corpora=("letemps",))).doc_ids()


@pytest.mark.parametrize(
    ("query", "date_from", "date_to"),
    [
        ("guerre", "1900-01-01", "1949-12-31"),
        ("Krieg", "1860-01-01", "1889-12-31"),
        ("London", "1820-01-01", "1829-12-31"),
        ("Zürich", "1900-01-01", None),
        ("Paris", None, "1830-06-15"),
    ],
)
def test_date_filter(col, retriever, query, date_from, date_to):
    flt = Filter(date_from=date_from, date_to=date_to)
    assert len(matching_documents(col, query, flt)) >= 10
    ranking = search(retriever, query, k=10, filter=flt)
    assert len(ranking.documents) == 10
    wanted = DateRange(date_from or "0001-01-01", date_to or "9999-12-31")
    spans = col.store.date_spans(ranking.doc_ids())
    assert set(spans) == set(ranking.doc_ids())  # no undated document passes a date filter
    for doc_id, (start, end) in spans.items():
        assert DateRange(start, end).overlaps(wanted), (doc_id, start, end)
    # and the filter did something: unfiltered, other dates come first
    unfiltered = col.store.date_spans(search(retriever, query, k=10).doc_ids())
    assert any(not DateRange(*span).overlaps(wanted) for span in unfiltered.values())


@pytest.mark.parametrize(("query", "language"), [("Krieg", "de"), ("Stockholm", "sv"), ("Paris", "en")])
def test_language_filter(col, retriever, query, language):
    flt = Filter(languages=(language,))
    assert len(matching_documents(col, query, flt)) >= 10
    ranking = search(retriever, query, k=10, filter=flt)
    assert len(ranking.documents) == 10
    docs = col.store.get_documents(ranking.doc_ids())
    assert {d.language for d in docs.values()} == {language}


def test_doc_ids_allow_list(col, retriever):
    # 12 documents that mention "guerre" but are not its top 10: the allow-list must still fill k
    deep = search(retriever, "guerre", k=40).doc_ids()
    allowed = tuple(deep[20:32])
    assert len(allowed) == 12
    ranking = search(retriever, "guerre", k=10, filter=Filter(doc_ids=allowed))
    assert len(ranking.documents) == 10
    assert set(ranking.doc_ids()) <= set(allowed)
    # a document outside the list never comes back, however good its match
    assert deep[0] not in ranking.doc_ids()
    assert search(retriever, "guerre", filter=Filter(doc_ids=("no-such-document",))).documents == []


def test_filters_combine(col, retriever):
    flt = Filter(corpora=("letemps",), date_from="1800-01-01", date_to="1899-12-31", languages=("fr",))
    assert len(matching_documents(col, "France", flt)) >= 10
    ranking = search(retriever, "France", k=10, filter=flt)
    assert len(ranking.documents) == 10
    docs = col.store.get_documents(ranking.doc_ids())
    spans = col.store.date_spans(ranking.doc_ids())
    for d in docs.values():
        assert d.corpus.startswith("letemps/") and d.language == "fr"
        assert "1800-01-01" <= spans[d.id][0] <= "1899-12-31"
    assert ranking.params["filter"]["corpora"] == ["letemps"]


# -- accents --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accented", "plain"),
    [("république française", "republique francaise"), ("grève", "greve"), ("Genève", "Geneve"),
     ("Zürich Bürger", "Zurich Burger")],
)  # fmt: skip
def test_accents_do_not_change_the_results(retriever, accented, plain):
    with_accents = search(retriever, accented, k=10).doc_ids()
    assert with_accents  # the query finds something
    assert search(retriever, plain, k=10).doc_ids() == with_accents


# -- channels ---------------------------------------------------------------------------------------------------


def test_dense_stays_out_without_vectors(retriever):
    ranking = search(retriever, "guerre civile")
    assert "dense" in ranking.params["channels"]
    assert "dense" not in ranking.params["active_channels"]
    assert "dense" not in ranking.channel_hits


def test_date_channel_silent_without_a_date(retriever):
    ranking = search(retriever, "Krieg Frankreich")
    assert "date" in ranking.params["channels"]
    assert "date" not in ranking.params["active_channels"]
    assert ranking.channel_hits.get("date", []) == []
    assert ranking.params["query_date"] is None
    assert all(e.channel != "date" for d in ranking.documents for e in d.channels)


def test_date_channel_active_with_a_date(col, retriever):
    ranking = search(retriever, "Conseil fédéral 1881")
    assert "date" in ranking.params["active_channels"]
    assert ranking.params["query_date"] == ["1881-01-01", "1881-12-31"]
    date_hits = ranking.channel_hits["date"]
    pool = {h.doc_id for name, hits in ranking.channel_hits.items() if name != "date" for h in hits}
    assert {h.doc_id for h in date_hits} <= pool  # it ranks the other channels' candidates
    scores = [h.score for h in date_hits]
    assert scores == sorted(scores, reverse=True)
    # documents of 1881 score 1 and come first; the others decay with their distance to 1881
    spans = col.store.date_spans([h.doc_id for h in date_hits])
    in_1881 = [h for h in date_hits if spans[h.doc_id][0] <= "1881-12-31" and spans[h.doc_id][1] >= "1881-01-01"]
    assert len(in_1881) >= 2
    assert date_hits[: len(in_1881)] == in_1881
    assert all(h.score == 1.0 for h in in_1881)
    assert all(h.score < 1.0 for h in date_hits[len(in_1881) :])
    # and the date moves documents of 1881 up in the fused ranking
    top = col.store.date_spans(ranking.doc_ids()[:5])
    without = col.store.date_spans(search(retriever, "Conseil fédéral").doc_ids()[:5])
    assert sum(s[0].startswith("1881") for s in top.values()) > sum(s[0].startswith("1881") for s in without.values())


def test_unknown_channel_and_bad_requests(retriever):
    with pytest.raises(ConfigError, match="unknown channels"):
        search(retriever, "guerre", channels=("bm25", "magic"))
    with pytest.raises(ConfigError, match="empty query"):
        search(retriever, "   ")
    with pytest.raises(ConfigError, match="k must be positive"):
        search(retriever, "guerre", k=0)
    with pytest.raises(ConfigError, match="invalid window"):
        search(retriever, "guerre", windows="ten years")


def test_only_the_asked_channels_run(retriever):
    ranking = search(retriever, '"république française"', channels=("phrase",))
    assert ranking.params["active_channels"] == ["phrase"]
    assert ranking.documents
    assert all([e.channel for e in d.channels] == ["phrase"] for d in ranking.documents)


# -- windows ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "flt", "k"),
    [
        ("Paris", Filter(date_from="1850-01-01", date_to="1899-12-31"), 10),
        ("Paris", Filter(date_from="1850-01-01", date_to="1899-12-31"), 20),
        ("Zürich", Filter(), 10),
    ],
)
def test_windows_take_an_equal_share(col, retriever, query, flt, k):
    ranking = search(retriever, query, k=k, filter=flt, windows="10y")
    assert ranking.params["windows"] == "10y"
    docs = ranking.documents
    assert len(docs) == k
    spans = col.store.date_spans(ranking.doc_ids())
    for d in docs:  # each document sits in the window of its date
        assert d.window == window_of(spans.get(d.doc_id, (None,))[0], 10)
    # the candidate pool: every document a channel found
    pool = {h.doc_id for hits in ranking.channel_hits.values() for h in hits}
    pool_spans = col.store.date_spans(sorted(pool))
    per_window_pool = Counter(window_of(pool_spans.get(d, (None,))[0], 10) for d in pool)
    share = math.ceil(k / len(per_window_pool))
    # these queries leave enough candidates in every window for the cap to hold
    assert all(n >= share for n in per_window_pool.values()), per_window_pool
    per_window = Counter(d.window for d in docs)
    assert len(per_window) == min(k, len(per_window_pool)) >= 2  # as many windows as k allows
    assert max(per_window.values()) <= math.ceil(k / len(per_window))
    assert_equal_share(per_window, per_window_pool)


def assert_equal_share(per_window: Counter, per_window_pool: Counter) -> None:
    """A window may hold 2+ more than another only when that other one has run out of candidates."""
    for a in per_window_pool:
        for b in per_window_pool:
            if per_window[a] >= per_window[b] + 2:
                assert per_window[b] == per_window_pool[b], (a, b, per_window, per_window_pool)


def test_a_window_that_runs_out_leaves_its_share_to_others(col, retriever):
    flt = Filter(date_from="1800-01-01", date_to="1869-12-31")
    ranking = search(retriever, "London", k=24, filter=flt, windows="10y")
    assert len(ranking.documents) == 24  # still k
    pool = {h.doc_id for hits in ranking.channel_hits.values() for h in hits}
    spans = col.store.date_spans(sorted(pool))
    per_window_pool = Counter(window_of(spans.get(d, (None,))[0], 10) for d in pool)
    per_window = Counter(d.window for d in ranking.documents)
    share = math.ceil(24 / len(per_window_pool))
    short = [w for w, n in per_window_pool.items() if n < share]
    assert short  # some decade has fewer candidates than its share ...
    for w in short:
        assert per_window[w] == per_window_pool[w]  # ... and gives all it has
    assert min(n for w, n in per_window.items() if w not in short) > share  # the others fill its share
    assert_equal_share(per_window, per_window_pool)


def test_windows_change_a_ranking_dominated_by_one_period(col, retriever):
    flt = Filter(date_from="1850-01-01", date_to="1899-12-31")
    # "London": 6 of its top 10 from one decade (field_merge query_idf; "Paris" was 4 of 10 by raw score, 2 now)
    plain = search(retriever, "London", k=10, filter=flt).doc_ids()
    spans = col.store.date_spans(plain)
    plain_windows = Counter(window_of(spans[d][0], 10) for d in plain)
    assert max(plain_windows.values()) > 2  # one decade crowds the others out
    windowed = search(retriever, "London", k=10, filter=flt, windows="10y")
    assert max(Counter(d.window for d in windowed.documents).values()) == 2
    # windowing reorders and picks within the same candidates; the best document stays first
    assert windowed.doc_ids()[0] == plain[0]


def test_settings_windows_can_be_disabled_per_request(retriever):
    ranking = search(retriever, "Paris", k=10, windows="")
    assert ranking.params["windows"] is None
    assert all(d.window is None for d in ranking.documents)


# -- per-corpus depth -----------------------------------------------------------------------------------------

BIG, SMALL = "topres19th/dorset-county-chronicle-etc", "hipe2020/sn83020874"  # 143 and 5 documents


def test_small_corpus_gets_its_share(col, retriever):
    flt = Filter(corpora=(BIG, SMALL))
    small_matches = matching_documents(col, "government", Filter(corpora=(SMALL,)))
    assert 1 <= len(small_matches) < 5
    ranking = search(retriever, "government", k=10, filter=flt)
    assert ranking.params["per_corpus"] is True
    assert len(ranking.documents) == 10
    corpora = {d.id: d.corpus for d in col.store.get_documents(ranking.doc_ids()).values()}
    assert set(corpora.values()) == {BIG, SMALL}
    # every matching document of the small corpus is in the top 10, the rest are the big corpus's best
    assert {d for d, c in corpora.items() if c == SMALL} == small_matches
    assert small_matches <= set(ranking.doc_ids()[: 2 * len(small_matches)])
    # equal share: the small corpus's best document is among the first two
    small_ranks = [i for i, d in enumerate(ranking.doc_ids()) if corpora[d] == SMALL]
    assert small_ranks[0] <= 1


def test_without_per_corpus_depth_the_big_corpus_crowds_out_the_small(col, retriever):
    """The contrast that makes the test above meaningful."""
    flat = Retriever(col)
    flat.settings = flat.settings.model_copy(update={"per_corpus_depth": False})
    ranking = flat.search(SearchRequest("government", k=10, filter=Filter(corpora=(BIG, SMALL))))
    assert ranking.params["per_corpus"] is False
    corpora = {d.corpus for d in col.store.get_documents(ranking.doc_ids()).values()}
    assert corpora == {BIG}


# -- a lexical channel's fields: each language index's own ranking, merged in retrieval, in sight ------------


def test_each_language_fields_ranking_is_kept_and_merged_in_sight(col, retriever):
    ranking = search(retriever, "Paris London Berlin", k=10, channels=("bm25", "phrase"))
    fields = ranking.field_hits["bm25"]
    assert {"fr", "de", "en"} <= set(fields)
    docs = col.store.get_documents(sorted({h.doc_id for hits in fields.values() for h in hits}), text=False)
    for field, hits in fields.items():
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))  # ranks within the field
        assert {docs[h.doc_id].language for h in hits} == {field}  # each field holds its own language
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # the channel's ranking is the fields merged on one scale (retrieval/fields.py), by retrieval, named in the params
    assert ranking.params["field_merge"] == "query_idf"
    stats = Bm25Channel(col.engine).field_stats("Paris London Berlin")
    assert ranking.channel_hits["bm25"] == merge_fields(fields, ranking.params["depth"], "query_idf", stats)
    phrase = ranking.field_hits.get("phrase", {})
    stats = PhraseChannel(col.engine).field_stats("Paris London Berlin")
    assert ranking.channel_hits["phrase"] == merge_fields(phrase, ranking.params["depth"], "query_idf", stats)


def test_explain_shows_each_fields_ranking_and_where_a_result_came_from(col, retriever):
    data = explain(search(retriever, "Paris London Berlin", k=10, channels=("bm25",)), col)
    by_field = data["field_rankings"]["bm25"]
    assert {"fr", "de", "en"} <= set(by_field)
    for result in data["results"]:
        [entry] = result["channels"]
        assert result["language"] == entry["field"]
        ranked = by_field[entry["field"]]
        if entry["field_rank"] <= len(ranked):
            assert ranked[entry["field_rank"] - 1]["chunk_id"] == entry["chunk_id"]
