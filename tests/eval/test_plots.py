"""Eval figures: each writes a valid PNG of the expected pixel size, deterministically; empty input raises."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.image as mpimg
import pytest

from tracerag.eval.plots import decade_histogram, group_bars, mean_recall, recall_curves

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

QRELS = {"q1": {"d1": 1, "d3": 2, "d5": 0}, "q2": {"d4": 1}, "q3": {}}
RUNS = {
    "bm25": {"q1": [("d2", 3.0), ("d1", 2.0), ("d3", 1.0)], "q2": [("d9", 2.0), ("d4", 1.0)]},
    "hybrid": {"q1": [("d3", 3.0), ("d1", 2.0)], "q2": [("d4", 1.0)]},
}
BY_GROUP = {"fr": {"bm25": 0.41, "hybrid": 0.63}, "de": {"bm25": 0.35, "hybrid": 0.58}, "en": {"hybrid": 0.7}}
DISTRIBUTION = {
    "corpus": {"1870s": 0.2, "undated": 0.1, "1850s": 0.3, "1860s": 0.4},
    "hybrid": {"1850s": 0.5, "1860s": 0.3, "undated": 0.2},
    "hybrid+windows": {"1850s": 0.4, "1860s": 0.3, "1870s": 0.2, "undated": 0.1},
}


def assert_png(path: Path, width: int = 800, height: int = 500) -> None:
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    assert mpimg.imread(path).shape[:2] == (height, width)


def test_agg_backend_is_forced() -> None:
    assert matplotlib.get_backend().lower() == "agg"


def test_mean_recall_follows_per_query() -> None:
    # q1: 0 at 1 (bm25 ranks d2 first), 1/2 at 2, 1 at 3; q2: 0 at 1, 1 from 2; q3 has no judgment.
    assert mean_recall(QRELS, RUNS["bm25"], ks=(3, 1, 2)) == {1: 0.0, 2: 0.75, 3: 1.0}


def test_recall_curves_writes_png(tmp_path: Path) -> None:
    path = recall_curves(QRELS, RUNS, tmp_path / "sub" / "recall.png", title="Recall on the test set")
    assert path == tmp_path / "sub" / "recall.png"
    assert_png(path)


def test_recall_curves_size_follows_figsize(tmp_path: Path) -> None:
    assert_png(recall_curves(QRELS, RUNS, tmp_path / "r.png", figsize=(4, 3), dpi=50), width=200, height=150)


def test_output_is_deterministic(tmp_path: Path) -> None:
    a = recall_curves(QRELS, RUNS, tmp_path / "a.png")
    b = recall_curves(QRELS, RUNS, tmp_path / "b.png")
    assert a.read_bytes() == b.read_bytes()
    c = decade_histogram(DISTRIBUTION, tmp_path / "c.png", "Decades")
    d = decade_histogram(DISTRIBUTION, tmp_path / "d.png", "Decades")
    assert c.read_bytes() == d.read_bytes()
    assert b"Software" not in a.read_bytes()


@pytest.mark.parametrize(
    ("qrels", "runs", "ks", "message"),
    [
        (QRELS, {}, (1, 10), "runs"),
        ({}, RUNS, (1, 10), "judge no query"),
        ({"q1": {}}, RUNS, (1, 10), "judge no query"),
        (QRELS, RUNS, (), "ks"),
        (QRELS, RUNS, (0, 5), "positive"),
    ],
)
def test_recall_curves_rejects_empty_input(tmp_path: Path, qrels, runs, ks, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        recall_curves(qrels, runs, tmp_path / "x.png", ks=ks)
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("value_labels", [False, True])
def test_group_bars_writes_png(tmp_path: Path, value_labels: bool) -> None:
    path = group_bars(BY_GROUP, "R@10", tmp_path / "groups.png", "R@10 by language", value_labels=value_labels)
    assert path == tmp_path / "groups.png"
    assert_png(path)


@pytest.mark.parametrize(("by_group", "message"), [({}, "by_group"), ({"fr": {}, "de": {}}, "every group")])
def test_group_bars_rejects_empty_input(tmp_path: Path, by_group, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        group_bars(by_group, "R@10", tmp_path / "x.png", "t")


def test_decade_histogram_writes_png(tmp_path: Path) -> None:
    path = decade_histogram(DISTRIBUTION, tmp_path / "decades.png", "Decades: corpus vs retrieved")
    assert path == tmp_path / "decades.png"
    assert_png(path)


def test_decade_histogram_orders_decades(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.axes import Axes

    seen: list[list[str]] = []
    original = Axes.set_xticks

    def spy(self, ticks, labels=None, **kwargs):
        if labels is not None:
            seen.append(list(labels))
        return original(self, ticks, labels, **kwargs)

    monkeypatch.setattr(Axes, "set_xticks", spy)
    distribution = {"corpus": {"undated": 0.1, 1900: 0.2, "1850s": 0.3, 870: 0.1, "1860": 0.3}}
    decade_histogram(distribution, tmp_path / "d.png", "t")
    assert seen == [["870", "1850s", "1860", "1900", "undated"]]


@pytest.mark.parametrize(("distribution", "message"), [({}, "distribution"), ({"corpus": {}}, "every series")])
def test_decade_histogram_rejects_empty_input(tmp_path: Path, distribution, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        decade_histogram(distribution, tmp_path / "x.png", "t")
