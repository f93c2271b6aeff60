"""Figures for evaluation reports: recall curves, grouped bar charts and decade histograms, written as PNG.

Headless and deterministic: the Agg backend is forced before pyplot is imported, nothing is ever shown,
every figure is closed once saved, and the PNG carries no timestamp nor software version, so the same input
gives the same bytes. Every figure has a fixed pixel size (`figsize` inches x `dpi`, 800 x 500 by default):
the layout is tightened inside the canvas, never by cropping it.

Each function returns the `Path` written (parent folders are created) and raises ValueError on empty input.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import TypeVar

import matplotlib

matplotlib.use("Agg", force=True)  # before pyplot: never a window, whatever the environment says

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from tracerag.eval.metrics import QrelsLike, RunLike, per_query  # noqa: E402

__all__ = ["DEFAULT_KS", "decade_histogram", "group_bars", "mean_recall", "recall_curves"]

DEFAULT_KS: tuple[int, ...] = (1, 2, 3, 5, 10, 20, 50, 100)

_FIGSIZE = (8.0, 5.0)
_DPI = 100
_DECADE = re.compile(r"^\s*(-?\d+)")
_STYLES = (("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-"), ("x", "--"))


def mean_recall(qrels: QrelsLike, run: RunLike, ks: Sequence[int] = DEFAULT_KS) -> dict[int, float]:
    """`{k: mean R@k}` over the judged queries of `qrels` (metrics.per_query's rules), in the order of `ks`."""
    ks = _check_ks(ks)
    table = per_query(qrels, run, [f"R@{k}" for k in ks])
    if not table:
        raise ValueError("the qrels judge no query: no recall to plot")
    return {k: math.fsum(row[f"R@{k}"] for row in table.values()) / len(table) for k in ks}


def recall_curves(
    qrels: QrelsLike,
    runs: Mapping[str, RunLike],
    path: str | PathLike[str],
    ks: Sequence[int] = DEFAULT_KS,
    title: str = "Recall at k",
    *,
    figsize: tuple[float, float] = _FIGSIZE,
    dpi: int = _DPI,
) -> Path:
    """Mean recall@k against k (log x axis), one line per run of `runs` (`{name: run}`), in their order."""
    if not runs:
        raise ValueError("no run to plot: `runs` is empty")
    ks = _check_ks(ks)
    curves = {name: mean_recall(qrels, run, ks) for name, run in runs.items()}
    fig, ax = _figure(figsize, dpi)
    try:
        for i, (name, curve) in enumerate(curves.items()):
            style = _STYLES[i % len(_STYLES)]  # runs that coincide stay visible: marker and dash differ
            ax.plot(ks, [curve[k] for k in ks], marker=style[0], linestyle=style[1], markersize=5, label=str(name))
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("k (log scale)")
        ax.set_ylabel("mean recall@k")
        ax.set_title(title)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="lower right")
        return _save(fig, path)
    finally:
        plt.close(fig)


# Group and bar keys: anything hashable, shown with str() (a language code, a decade as 1850 or "1850s").
G = TypeVar("G", bound=Hashable)
B = TypeVar("B", bound=Hashable)


def group_bars(
    by_group: Mapping[G, Mapping[str, float]],
    metric: str,
    path: str | PathLike[str],
    title: str,
    *,
    value_labels: bool = False,
    figsize: tuple[float, float] = _FIGSIZE,
    dpi: int = _DPI,
) -> Path:
    """Grouped bars: one group per key of `by_group` (e.g. a language), one bar per run, height = `metric`.

    `by_group` is `{group: {run: value}}`; groups keep their order, runs appear in first-seen order and a run
    missing from a group leaves a gap. `value_labels` writes each value above its bar.
    """
    if not by_group:
        raise ValueError("no group to plot: `by_group` is empty")
    groups = list(by_group)
    run_names = _union(by_group.values())
    if not run_names:
        raise ValueError("no value to plot: every group of `by_group` is empty")
    fig, ax = _figure(figsize, dpi)
    try:
        _side_by_side(ax, groups, run_names, lambda g, r: by_group[g].get(r), value_labels)
        ax.set_xlabel("group")
        ax.set_ylabel(metric)
        ax.set_title(title)
        ax.legend(title="run")
        return _save(fig, path)
    finally:
        plt.close(fig)


def decade_histogram(
    distribution: Mapping[str, Mapping[object, float]],
    path: str | PathLike[str],
    title: str,
    *,
    figsize: tuple[float, float] = _FIGSIZE,
    dpi: int = _DPI,
) -> Path:
    """Side-by-side bars per decade for each series of `distribution` (`{series: {decade: share}}`).

    Decades are sorted by their leading number (1850, "1850" and "1850s" all work) with "undated" (or any
    non-numeric key) last; a series without a decade gets 0 there. Shares are plotted as given.
    """
    if not distribution:
        raise ValueError("no series to plot: `distribution` is empty")
    decades = sorted(_union(distribution.values()), key=_decade_key)
    if not decades:
        raise ValueError("no decade to plot: every series of `distribution` is empty")
    series = list(distribution)
    fig, ax = _figure(figsize, dpi)
    try:
        _side_by_side(ax, decades, series, lambda d, s: distribution[s].get(d, 0.0), False)
        ax.set_xlabel("decade")
        ax.set_ylabel("share")
        ax.set_title(title)
        ax.legend()
        if len(decades) > 8:
            ax.tick_params(axis="x", labelrotation=45)
        return _save(fig, path)
    finally:
        plt.close(fig)


def _side_by_side(
    ax: Axes, groups: Sequence[G], bars: Sequence[B], value: Callable[[G, B], float | None], labels: bool
) -> None:
    """Per group, one bar per name of `bars`, side by side; `value(group, bar)` may be None (a gap)."""
    width = 0.8 / len(bars)
    for i, bar in enumerate(bars):
        xs, heights = [], []
        for j, group in enumerate(groups):
            height = value(group, bar)
            if height is not None and not math.isnan(height):
                xs.append(j - 0.4 + width * (i + 0.5))
                heights.append(float(height))
        container = ax.bar(xs, heights, width=width, label=str(bar))
        if labels:
            ax.bar_label(container, fmt="%.2f", fontsize=8, padding=2)
    ax.set_xticks(range(len(groups)), [str(group) for group in groups])
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    if labels:
        ax.margins(y=0.1)


def _union(mappings: Iterable[Mapping[G, object]]) -> list[G]:
    return list(dict.fromkeys(key for mapping in mappings for key in mapping))


def _decade_key(decade: object) -> tuple[int, float, str]:
    match = _DECADE.match(str(decade))
    if match is None:  # "undated" and anything else that is not a year, after the decades
        return (1, 0.0, str(decade))
    return (0, float(match[1]), str(decade))


def _check_ks(ks: Sequence[int]) -> list[int]:
    ks = list(dict.fromkeys(ks))
    if not ks:
        raise ValueError("no cutoff to plot: `ks` is empty")
    if any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"cutoffs must be positive integers, got {ks}")
    return sorted(ks)


def _figure(figsize: tuple[float, float], dpi: int) -> tuple[Figure, Axes]:
    fig, ax = plt.subplots(figsize=figsize, dpi=dpi, layout="constrained")
    return fig, ax


def _save(fig: Figure, path: str | PathLike[str]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # No "Software" entry and PNG has no date by default: same input, same bytes.
    fig.savefig(path, format="png", dpi=fig.dpi, metadata={"Software": None})
    return path
