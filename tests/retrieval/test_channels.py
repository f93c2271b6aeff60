"""The date channel and phrase extraction, on hand-made inputs."""

from __future__ import annotations

import math

import pytest

from tracerag.model import DateRange, Hit
from tracerag.retrieval.channels import DateChannel, date_score, phrases_of

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
