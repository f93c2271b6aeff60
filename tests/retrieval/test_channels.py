"""The date channel and phrase extraction, on hand-made inputs."""

from __future__ import annotations

import math

import pytest

from tracerag.model import DateRange, Hit
from tracerag.retrieval.channels import DateChannel, date_score, phrases_of, read_date, read_phrases

YEAR_1890 = DateRange("1890-01-01", "1890-12-31")


def test_date_score_is_one_inside_and_halves_at_the_half_life() -> None:
    assert date_score(("1890-05-01", "1890-05-01"), YEAR_1890, 365) == 1.0
    assert date_score(("1889-01-01", "1890-01-01"), YEAR_1890, 365) == 1.0  # overlapping partial date
    assert date_score(("1891-12-31", "1891-12-31"), YEAR_1890, 365) == pytest.approx(0.5)
    assert date_score(("1880-01-01", "1880-12-31"), YEAR_1890, 365) == pytest.approx(
        math.exp(-math.log(2) * 3288 / 365)  # 1880-12-31 → 1890-01-01
    )


def test_date_channel_only_exists_for_dated_queries_and_ranks_the_pool() -> None:
    assert DateChannel.for_query("Gambetta discours", 365) is None
    channel = DateChannel.for_query("grève 1890", 365)
    assert channel is not None and channel.target == YEAR_1890
    pool = [
        Hit("far#0", "far", "bm25", 1, 9.0),
        Hit("near#2", "near", "bm25", 2, 8.0),
        Hit("near#0", "near", "dense", 1, 0.9),
        Hit("in#1", "in", "dense", 3, 0.7),
        Hit("undated#0", "undated", "bm25", 3, 7.0),
    ]
    dates = {
        "far": ("1850-01-01", "1850-12-31"),
        "near": ("1892-06-01", "1892-06-30"),
        "in": ("1890-03-01", "1890-03-01"),
    }
    ranked = channel.rank(pool, dates, k=10)
    # inside the year first, then nearest; undated documents are not ranked; each keeps its best-ranked chunk
    assert [(h.doc_id, h.chunk_id, h.rank) for h in ranked] == [
        ("in", "in#1", 1),
        ("near", "near#0", 2),
        ("far", "far#0", 3),
    ]
    assert ranked[0].score == 1.0 and ranked[1].score > ranked[2].score > 0


def test_phrases_of_a_query() -> None:
    assert phrases_of('"Léon Gambetta" à Belleville') == ["Léon Gambetta"]
    assert phrases_of("« la grève générale » et «Jaurès»") == ["la grève générale", "Jaurès"]
    assert phrases_of("Gambetta discours Belleville") == ["Gambetta discours Belleville"]
    assert phrases_of("grève") == []
    assert phrases_of("one two three four five six seven") == []


# -- what the query means: a date it states, phrases it marks --------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("grève 1890", ("1890-01-01", "1890-12-31")),
        ("strike 1911 docks", ("1911-01-01", "1911-12-31")),  # a short query names its date anywhere
        ("between 1880 and 1890", ("1880-01-01", "1890-12-31")),
        ("entre 1880 et 1890 grèves", ("1880-01-01", "1890-12-31")),
        ("Streik 1880–1890", ("1880-01-01", "1890-12-31")),
        ("elections in the 1880s", ("1880-01-01", "1889-12-31")),
        ('"grève générale" 1890', ("1890-01-01", "1890-12-31")),  # the year outside the quotes
        ("What did the papers write about the dock strike in 1911?", ("1911-01-01", "1911-12-31")),
        ("1911 dock strike Liverpool report of the royal commission", ("1911-01-01", "1911-12-31")),
        ("1911: the dock strike in Liverpool and the unions", ("1911-01-01", "1911-12-31")),
    ],
)
def test_a_date_the_query_states_is_a_constraint(query: str, expected: tuple[str, str]) -> None:
    found, reading = read_date(query)
    assert found is not None and (found.range.start, found.range.end) == expected, reading
    assert reading.acts and found.said in reading.why


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("Gambetta discours Belleville", "no date in the query"),
        ("the cheque was stolen in 1889. The prisoner said nothing", "'1889' is inside a passage"),
        ("Wright qui fit, en 1908, ses expériences initiales aux", "'1908' is inside a passage"),
        ("juillet 1937, elle a introduit le droit de vote plural direct", "'juillet 1937' is inside a passage"),
        ('"the cheque was stolen in 1889."', "'1889' is inside quotes"),
        ("docks « stolen in 1889 »", "'1889' is inside quotes"),
    ],
)
def test_a_year_inside_a_passage_or_quotes_is_no_constraint(query: str, why: str) -> None:
    found, reading = read_date(query)
    assert found is None and not reading.acts
    assert why in reading.why
    assert DateChannel.for_query(query, 365) is None


@pytest.mark.parametrize(
    ("query", "phrases"),
    [
        ('"Léon Gambetta" à Belleville', ["Léon Gambetta"]),
        ("« la grève générale » et «Jaurès»", ["la grève générale", "Jaurès"]),
        ("„Eidgenössische Bank“ Zürich", ["Eidgenössische Bank"]),
        ('"the jury returned a verdict of Guilty."', ["the jury returned a verdict of Guilty."]),  # all quotes
        ("Gambetta discours Belleville", ["Gambetta discours Belleville"]),
        ("Kesälaks socken 1886", ["Kesälaks socken"]),  # the date it states is a constraint, not words to match
        ('"grève générale" 1890', ["grève générale"]),
        ('"strike of 1911" docks', ["strike of 1911"]),  # a year inside quotes is words to match
    ],
)
def test_phrases_the_user_marks(query: str, phrases: list[str]) -> None:
    found, reading = read_phrases(query)
    assert found == phrases and reading.acts


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ('the jury returned a verdict of "Guilty." and the prisoner', "carries its own punctuation"),
        ("uns die Wunde schlug.“ „Sehr dunkel,“ sprach der Kapellmeister.", "do not pair up"),
        ("Zulema zu retten. — „Zulema — Julia lebt?“", "carries its own punctuation"),
        ('the word "guilty" was heard by the whole court and the prisoner', "11 words outside the quotes"),
        ("grève", "a whole query of 1 word(s) is none"),
        ("grève 1890", "a whole query of 1 word(s) is none"),
        ("one two three four five six seven", "a whole query of 7 word(s) is none"),
    ],
)
def test_quotes_inside_a_passage_mark_no_phrase(query: str, why: str) -> None:
    found, reading = read_phrases(query)
    assert found == [] and not reading.acts
    assert why in reading.why
