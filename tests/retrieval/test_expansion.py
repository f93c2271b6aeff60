"""Query expansion on the whole of HIPE-2022: vocabulary-neighbour variants, their RRF with the original (weights,
what each query contributed), and the researcher's additions (chosen words) carried into the searched query."""

from __future__ import annotations

import pytest
from rapidfuzz import fuzz

from tracerag.config import load_settings
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval import vocabulary as vocab
from tracerag.retrieval.expansion import (
    ORIGINAL,
    SPELLING_RATIO,
    Variant,
    VariantKind,
    VariantSource,
    search_expanded,
    vocabulary_variants,
    with_additions,
)
from tracerag.retrieval.fusion import rrf
from tracerag.text import fold_key


@pytest.fixture(scope="module")
def col(hipe_collection):
    return hipe_collection.collection


@pytest.fixture(scope="module")
def model(col):
    """Trained on HIPE-2022's French documents (~15 s): enough text for the OCR forms of its common words."""
    french = [d.text for d in col.store.iter_documents() if d.language == "fr"]
    return vocab.train(lambda: iter(french), load_settings().expansion)


def test_additions_are_appended_once():
    assert with_additions("la grève", None, ["grèves", "grève", "Grève", "greve"]) == ("la grève grèves greve", [])
    assert with_additions("la grève", None, []) == ("la grève", [])


@pytest.mark.needs_data("hipe2022")
def test_additions_are_a_variant_and_the_query_as_written_keeps_its_phrase(col):
    """Found by a new user: appended to the query, an added word made the phrase channel look for a three-word
    phrase no document holds, and the search narrowed. The additions are a variant fused with the query now."""
    retriever = Retriever(col)
    request = SearchRequest("gouvernement provisoire", k=10, channels=("bm25", "phrase"), windows="")
    plain = retriever.search(request)
    phrased = {h.doc_id for h in plain.channel_hits["phrase"]}
    assert phrased, "HIPE-2022 holds the phrase"
    added = search_expanded(retriever, request, added=["gouvernemens"])
    (name, _, original), (_, variant, with_word) = added.rankings
    assert name == ORIGINAL and original.params["query"] == "gouvernement provisoire"
    assert original.params["channel_readings"]["phrase"]["acts"]
    assert original.doc_ids()[:10] == plain.doc_ids()
    assert variant is not None and (variant.source, variant.kind) == (VariantSource.RESEARCHER, VariantKind.ADDITIONS)
    assert with_word.params["query"] == "gouvernement provisoire gouvernemens" == added.searched
    top = added.ranking.doc_ids()
    assert top[0] == plain.doc_ids()[0] and phrased & set(top)


@pytest.mark.needs_data("hipe2022")
def test_vocabulary_variants_add_a_neighbour_spelled_like_a_query_word(model):
    query = "le gouvernement provisoire"
    variants = vocabulary_variants(query, model, 3, 0.0)
    assert variants, "HIPE-2022 holds spellings and OCR forms of 'gouvernement' ('gouvernemens', 'vernement')"
    for v in variants:
        assert v.source is VariantSource.VOCABULARY and v.kind is VariantKind.NEIGHBOUR
        assert v.query.startswith(query + " ")  # the query kept whole, one word added
        added = v.query.removeprefix(query + " ")
        assert model.count(added) > 0, v  # a word of the collection
        assert max(fuzz.ratio(fold_key(added), w) for w in ("le", "gouvernement", "provisoire")) >= SPELLING_RATIO
        assert "cosine" in v.why and "occurrences" in v.why
        # never an inflection of a query word (the stemmer finds those already)
        assert not any(added.startswith(w) and len(added) - len(w) <= 2 for w in ("gouvernement", "provisoire"))
    sims = [float(v.why.split("cosine ")[1].split(",")[0]) for v in variants]
    assert sims == sorted(sims, reverse=True)
    assert vocabulary_variants(query, model, 3, 1.01) == []  # none is close enough


@pytest.mark.needs_data("hipe2022")
def test_variants_are_fused_with_the_original_by_weighted_rrf(col):
    retriever = Retriever(col)
    variants = [
        Variant("Findelkinder", VariantSource.LLM, VariantKind.OTHER_LANGUAGE),
        Variant("orphelins", VariantSource.LLM, VariantKind.BROADER_NARROWER),
    ]
    request = SearchRequest("enfants trouvés", k=10, windows="")
    found = search_expanded(retriever, request, variants)
    assert [name for name, _, _ in found.rankings] == [ORIGINAL, "variant 1", "variant 2"]
    assert found.weights == {ORIGINAL: 2.0, "variant 1": 1.0, "variant 2": 1.0}
    lists = {name: r.doc_ids() for name, _, r in found.rankings}
    expected = [f.key for f in rrf(lists, retriever.settings.rrf_k, found.weights)][:10]
    assert found.ranking.doc_ids() == expected
    assert [d.rank for d in found.ranking.documents] == list(range(1, 11))
    # each document says where each query ranked it
    ranks = found.ranking.params["variant_ranks"]
    for doc in found.ranking.doc_ids():
        assert ranks[doc] == {n: lists[n].index(doc) + 1 for n in lists if doc in lists[n]}
    # the original's first document keeps its place unless the variants found another one too
    first = lists[ORIGINAL][0]
    assert found.ranking.doc_ids()[0] == first or ranks[found.ranking.doc_ids()[0]].keys() > {ORIGINAL}


@pytest.mark.needs_data("hipe2022")
def test_without_variants_the_search_is_the_plain_search(col):
    retriever = Retriever(col)
    request = SearchRequest("Gambetta", k=10, windows="")
    assert search_expanded(retriever, request).ranking.doc_ids() == retriever.search(request).doc_ids()
