"""The researcher's spelling/synonym map: read from TSV (errors name the file and line), applied to a query when
it is searched, and on HIPE-2022 it finds the documents that only hold a variant spelling."""

from __future__ import annotations

import pytest

from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.boolean import matches, parse
from tracerag.retrieval.expansion import search_expanded
from tracerag.retrieval.synonyms import SynonymMap, SynonymMapError

MAP = "# spellings of the time\nenfants\tenfans\n\nSaint-Lô\tSt-Lô\tSaint Lo\n"


def test_a_form_brings_the_rest_of_its_group():
    synonyms = SynonymMap.parse(MAP, "map.tsv")
    assert len(synonyms) == 2
    query, applied = synonyms.apply("les Enfants trouvés")
    assert query == "les Enfants trouvés enfans"
    assert [(a.found, a.added, a.line) for a in applied] == [("enfants", ("enfans",), 2)]
    # any form of a group, several words included, folded as every key is
    query, applied = synonyms.apply("né à St-Lô")
    assert query == "né à St-Lô Saint-Lô"  # "Saint Lo" folds as "Saint-Lô" does: added once
    assert applied[0].line == 4


def test_a_query_the_map_does_not_touch_is_unchanged():
    synonyms = SynonymMap.parse(MAP)
    assert synonyms.apply("la guerre") == ("la guerre", [])
    assert synonyms.apply("enfantsx") == ("enfantsx", [])  # word boundaries: another word


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ("a\tb\nlonely\n", "map.tsv:2:", "at least two forms"),
        ("a b c\n", "map.tsv:1:", "spaces are not separators"),
        ("a\tb\n\n# c\nc\tA\n", "map.tsv:4:", "already in the group of line 1"),
        ("a\t!!!\n", "map.tsv:1:", "has no letter or digit"),
    ],
)
def test_a_malformed_map_names_the_file_and_line(text, where, problem):
    with pytest.raises(SynonymMapError) as caught:
        SynonymMap.parse(text, "map.tsv")
    assert str(caught.value).startswith(where) and problem in str(caught.value)


def test_reading_a_file_names_it(tmp_path):
    path = tmp_path / "map.tsv"
    path.write_bytes(b"gr\xe8ve\tgreve\n")  # Latin-1, not UTF-8
    with pytest.raises(SynonymMapError, match=r"map\.tsv: not UTF-8"):
        SynonymMap.read(path)
    with pytest.raises(SynonymMapError, match="cannot read"):
        SynonymMap.read(tmp_path / "missing.tsv")
    path.write_text("a\tb\nc\n", encoding="utf-8")
    with pytest.raises(SynonymMapError, match=rf"{path}:2:"):
        SynonymMap.read(path)


@pytest.mark.needs_data("hipe2022")
def test_the_map_finds_documents_that_hold_only_the_old_spelling(hipe_collection):
    col = hipe_collection.collection
    old_only = [d.id for d in col.store.iter_documents() if matches(parse("enfans AND NOT enfant*"), d)]
    assert len(old_only) >= 5, "HIPE-2022 holds 'enfans' (the spelling before 1835) where no 'enfant*' is"
    retriever = Retriever(col)
    request = SearchRequest("enfants", k=200, channels=("bm25",), windows="")
    plain = set(retriever.search(request).doc_ids())
    mapped = search_expanded(retriever, request, synonyms=SynonymMap.parse(MAP))
    assert mapped.searched == "enfants enfans"
    assert not set(old_only) & plain
    assert set(old_only) <= set(mapped.ranking.doc_ids())
