"""Temporal windows and equal shares, on hand-made groups."""

from __future__ import annotations

import pytest

from tracerag.errors import ConfigError
from tracerag.retrieval.windows import UNDATED, equal_share, parse_window, window_of


@pytest.mark.parametrize(("spec", "years"), [("5y", 5), ("10y", 10), ("5", 5), (" 10 y ", 10), ("1y", 1)])
def test_parse_window(spec, years):
    assert parse_window(spec) == years


@pytest.mark.parametrize("spec", ["", "y", "0y", "-5y", "5 years", "5m", "1.5y", "ten"])
def test_parse_window_rejects(spec):
    with pytest.raises(ConfigError, match="invalid window"):
        parse_window(spec)


@pytest.mark.parametrize(
    ("date", "years", "window"),
    [
        ("1894-03-01", 5, "1890-1894"),
        ("1890-01-01", 5, "1890-1894"),
        ("1895-01-01", 5, "1895-1899"),
        ("1899-12-31", 5, "1895-1899"),
        ("1899-12-31", 10, "1890-1899"),
        ("1900-01-01", 10, "1900-1909"),
        ("1894-03-01", 1, "1894"),
        ("1794", 25, "1775-1799"),
    ],
)
def test_window_of_is_aligned_on_multiples(date, years, window):
    assert window_of(date, years) == window


@pytest.mark.parametrize("date", [None, ""])
def test_window_of_undated(date):
    assert window_of(date, 5) == UNDATED == "undated"


def _group(item: str) -> str:
    return item[0]  # "a1" -> group "a"


ITEMS = ["a1", "a2", "a3", "b1", "c1", "c2"]


def test_equal_share_interleaves_groups_best_first():
    # round 0: a1 b1 c1 (in their original order), round 1: a2 c2, round 2: a3
    assert equal_share(ITEMS, _group, 4) == ["a1", "b1", "c1", "a2"]


def test_equal_share_group_running_out_leaves_its_share_to_others():
    # b has one item: after round 0 the remaining slots go to a and c; still k items
    assert equal_share(ITEMS, _group, 5) == ["a1", "b1", "c1", "a2", "c2"]
    assert equal_share(ITEMS, _group, 6) == ["a1", "b1", "c1", "a2", "c2", "a3"]


def test_equal_share_returns_everything_when_k_exceeds_items():
    assert sorted(equal_share(ITEMS, _group, 10)) == sorted(ITEMS)
    assert len(equal_share(ITEMS, _group, 10)) == 6


def test_equal_share_keeps_original_order_within_a_round():
    assert equal_share(["b1", "a1", "a2", "b2", "a3"], _group, 2) == ["b1", "a1"]
    assert equal_share(["b1", "a1", "a2", "b2", "a3"], _group, 4) == ["b1", "a1", "a2", "b2"]


def test_equal_share_caps_each_group_when_all_have_enough():
    items = [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)] + [f"c{i}" for i in range(10)]
    picked = equal_share(items, _group, 9)
    assert len(picked) == 9
    assert {g: sum(1 for p in picked if p[0] == g) for g in "abc"} == {"a": 3, "b": 3, "c": 3}
    assert picked[:3] == ["a0", "b0", "c0"]


def test_equal_share_single_group_and_empty():
    assert equal_share(["a1", "a2", "a3"], _group, 2) == ["a1", "a2"]
    assert equal_share([], _group, 3) == []
    assert equal_share(ITEMS, _group, 0) == []
