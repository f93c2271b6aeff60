"""Boolean filters: the parser (and its errors naming the position), the evaluator against a naive reading of
each document, and exactness on the whole of HIPE-2022: every result satisfies the expression, and no document
that satisfies it is lost within k."""

from __future__ import annotations

import re
import unicodedata

import pytest

from tracerag.errors import TraceError
from tracerag.model import Document, Filter
from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.boolean import And, FilterSyntaxError, Not, Or, Term, matches, matching_ids, parse
from tracerag.retrieval.expansion import search_expanded


@pytest.fixture(scope="module")
def col(hipe_collection):
    return hipe_collection.collection


@pytest.fixture(scope="module")
def documents(col):
    return list(col.store.iter_documents())


# -- the parser ----------------------------------------------------------------------------------------------------


def test_precedence_not_and_or_and_implicit_and():
    assert parse("a OR b c") == Or((Term(("a",)), And((Term(("b",)), Term(("c",))))))
    assert parse("NOT a AND b") == And((Not(Term(("a",))), Term(("b",))))
    assert parse("(a OR b) AND NOT c") == And((Or((Term(("a",)), Term(("b",)))), Not(Term(("c",)))))
    # lower-case operators are words
    assert parse("war and peace") == And((Term(("war",)), Term(("and",)), Term(("peace",))))


def test_phrases_fields_and_prefixes():
    expr = parse('"Conseil fédéral" corpus:letemps date:1900..1910 grev*')
    assert str(expr) == '("conseil federal" AND corpus:letemps AND date:1900..1910 AND grev*)'
    assert str(parse('title:"la grève"')) == "title:la grève"


@pytest.mark.parametrize(
    ("expression", "position", "problem"),
    [
        ("", 1, "an empty expression"),
        ("a OR", 5, "the expression ends"),
        ("(a b", 1, "'(' is never closed"),
        ("a b)", 4, "unexpected ')'"),
        ('a "open', 3, "never closed"),
        ("AND a", 1, "AND where a word"),
        ("date:18x9", 1, "unparseable date"),
        ("a NOT", 6, "the expression ends"),
        ("corpus: x", 1, "corpus: has no value"),
    ],
)
def test_errors_name_the_position(expression, position, problem):
    with pytest.raises(FilterSyntaxError) as caught:
        parse(expression)
    message = str(caught.value)
    assert isinstance(caught.value, TraceError)
    assert f"at character {position}:" in message, message
    assert problem in message, message


# -- the evaluator -------------------------------------------------------------------------------------------------


def _fold(text: str) -> str:
    plain = "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))
    return " ".join(re.sub(r"[\W_]+", " ", re.sub(r"['’‘`´ʼ]", "", plain)).split())


def test_words_phrases_and_fields_on_a_small_document():
    doc = Document(
        "d1",
        "La GRÈVE des typographes, à Genève.",
        corpus="letemps/gdl",
        date="1905-03",
        language="fr",
        fields={"section": "Chronique"},
    )
    assert matches(parse("greve"), doc)
    assert not matches(parse("grèves"), doc)  # word boundaries: a plural is another word
    assert matches(parse("grev*"), doc)
    assert matches(parse('"grève des typographes"'), doc)
    assert not matches(parse('"typographes grève"'), doc)
    assert matches(parse("corpus:letemps AND language:fr AND section:chronique"), doc)
    assert not matches(parse("corpus:let"), doc)  # a corpus, or one below it: not a prefix of its name
    assert matches(parse("date:1905"), doc) and matches(parse("date:..1906"), doc)
    assert matches(parse("date:1905-03-15"), doc)  # inside the month the document is dated
    assert not matches(parse("date:1900..1905-02-28"), doc)
    assert not matches(parse("date:1906..1910"), doc)
    assert matches(parse("NOT Lyon AND (Genève OR Lyon)"), doc)


@pytest.fixture(scope="module")
def folded_texts(documents) -> dict[str, str]:
    """Every document's folded text, folded once for the four words below (a dict the tests only read)."""
    return {d.id: _fold(d.text) for d in documents}


@pytest.mark.needs_data("hipe2022")
@pytest.mark.parametrize("word", ["gouvernement", "Genève", "zurich", "paix"])
def test_a_word_matches_exactly_the_documents_that_hold_it(documents, folded_texts, word):
    """Against a naive reading of every document of HIPE-2022 (regex over the folded text)."""
    wanted = _fold(word)
    naive = {i for i, text in folded_texts.items() if re.search(rf"(?<!\S){re.escape(wanted)}(?!\S)", text)}
    assert naive, word
    assert set(matching_ids(parse(word), documents)) == naive


# -- exactness of a filtered search ----------------------------------------------------------------------------


@pytest.mark.needs_data("hipe2022")
@pytest.mark.parametrize(
    ("query", "expression"),
    [
        ("gouvernement", "NOT Paris"),
        ("conseil", '"conseil fédéral" OR (Berne AND NOT Genève)'),
        ("guerre", "language:de OR date:1900..1920"),
        ("commune", "corpus:letemps AND conseil*"),
    ],
)
def test_every_result_satisfies_the_filter_and_none_is_lost(col, documents, query, expression):
    expr = parse(expression)
    by_id = {d.id: d for d in documents}
    satisfying = {d.id for d in documents if matches(expr, d)}
    retriever = Retriever(col)
    k = 10
    request = SearchRequest(query, k=k, channels=("bm25",), windows="")
    found = search_expanded(retriever, request, filter_expression=expression)
    results = found.ranking.doc_ids()
    assert found.allowed == len(satisfying)
    assert results, "a filter test that returns nothing proves nothing"
    assert all(matches(expr, by_id[d]) for d in results)
    # none lost within k: the unfiltered ranking, searched deep enough and cut to the satisfying documents, starts
    # with exactly the filtered search's results
    deep = retriever.search(SearchRequest(query, k=len(documents), channels=("bm25",), windows="")).doc_ids()
    expected = [d for d in deep if d in satisfying][:k]
    assert results == expected


@pytest.mark.needs_data("hipe2022")
def test_a_filter_nothing_satisfies_finds_nothing(col):
    found = search_expanded(Retriever(col), SearchRequest("gouvernement", k=5), filter_expression='"zzqx qqzz"')
    assert found.allowed == 0 and found.ranking.documents == []


@pytest.mark.needs_data("hipe2022")
def test_a_field_no_document_has_is_an_error(col):
    with pytest.raises(TraceError, match="no document has the field 'colour'"):
        search_expanded(Retriever(col), SearchRequest("gouvernement", k=5), filter_expression="colour:red")


@pytest.mark.needs_data("hipe2022")
def test_the_filter_narrows_the_allow_list_already_given(col, documents):
    some = tuple(d.id for d in documents[:40])
    found = search_expanded(
        Retriever(col), SearchRequest("le", k=50, filter=Filter(doc_ids=some)), filter_expression="NOT gouvernement"
    )
    assert set(found.ranking.doc_ids()) <= set(some)
    assert not any(matches(parse("gouvernement"), d) for d in documents if d.id in set(found.ranking.doc_ids()))
