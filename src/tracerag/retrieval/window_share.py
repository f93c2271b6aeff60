"""Where a search's results come from in time: each time window's share of the results against its share of the
documents searched (the collection, or the sub-corpus, languages and date range the filter admits).

A retriever pulled towards the loudest decade shows it here: HistoRAG found that modern vocabulary retrieved not
one 1950s chunk from a corpus that holds many. A ratio far above 1 is a window the search favours, 0 one it never
reaches. Undated documents are a window of their own ("undated"), counted on both sides, never dropped.

Windows are aligned on multiples of their length, as `retrieval/windows.py` labels them for the equal-share
balancing, so a search balanced with `--windows 10y` is diagnosed on the same windows. Without a length the
smallest of `AUTO_YEARS` that cuts the searched span into at most `AUTO_MAX_WINDOWS` windows is taken, and said.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tracerag.retrieval.windows import UNDATED

# Lengths a person reads as periods: a year, a lustrum, a decade, a generation, a quarter, half a century...
AUTO_YEARS = (1, 2, 5, 10, 20, 25, 50, 100, 200, 500, 1000)
# Few enough windows to read as one table in a terminal, enough to show one decade pulling the rest.
AUTO_MAX_WINDOWS = 10
# The length said when nothing searched is dated: every row is then "undated", the length shapes nothing.
NO_DATES_YEARS = 10


def label(year: int | None, years: int) -> str:
    """The window of a year: `1887`, 10 → "1880-1889"; 1 year → "1887"; None → "undated"."""
    if year is None:
        return UNDATED
    first = year - year % years
    return f"{first}-{first + years - 1}" if years > 1 else str(first)


def auto_years(years_present: Iterable[int]) -> tuple[int, str]:
    """The window length for these (dated) years, and why it was chosen, in words."""
    present = sorted(set(years_present))
    if not present:
        return NO_DATES_YEARS, f"auto: no searched document is dated, so {NO_DATES_YEARS}y (it shapes nothing)"
    low, high = present[0], present[-1]
    for years in AUTO_YEARS:
        if high // years - low // years + 1 <= AUTO_MAX_WINDOWS:
            break
    span = f"{low}" if low == high else f"{low}–{high}"
    return years, (
        f"auto: the shortest of {', '.join(map(str, AUTO_YEARS))} years that cuts the searched documents' "
        f"years ({span}) into at most {AUTO_MAX_WINDOWS} windows"
    )


@dataclass(frozen=True, slots=True)
class WindowRow:
    window: str
    results: int
    result_share: float  # of the results
    documents: int  # documents searched in this window
    corpus_share: float  # of the documents searched

    @property
    def ratio(self) -> float | None:
        """How much more often the results come from this window than the documents do (None: none searched)."""
        return self.result_share / self.corpus_share if self.corpus_share else None


@dataclass(frozen=True, slots=True)
class WindowShares:
    years: int
    chosen: str  # "--windows", "retrieval.windows", or "auto: ..." with the reason
    results: int
    searched: int
    rows: tuple[WindowRow, ...]  # in time order, "undated" last

    def to_dict(self) -> dict[str, Any]:
        return {
            "window": f"{self.years}y",
            "chosen": self.chosen,
            "results": self.results,
            "searched": self.searched,
            "rows": [
                {
                    "window": r.window,
                    "results": r.results,
                    "result_share": round(r.result_share, 4),
                    "documents": r.documents,
                    "corpus_share": round(r.corpus_share, 4),
                    "ratio": None if r.ratio is None else round(r.ratio, 3),
                }
                for r in self.rows
            ],
        }


def shares(
    result_years: Iterable[int | None],
    corpus_years: Mapping[int | None, int],
    years: int | None = None,
    chosen: str = "",
) -> WindowShares:
    """The results' share per window against the searched documents' share.

    result_years: the year of each result (None: undated), one per result; corpus_years: how many searched
    documents each year holds (None: undated), as `DocumentStore.documents_per_year` gives it; years: the window
    length, or None to choose one (`auto_years`) from the searched documents' years.
    """
    results = list(result_years)
    if years is None:
        dated = [y for y, n in corpus_years.items() if y is not None and n > 0]
        years, chosen = auto_years(dated or [y for y in results if y is not None])
    if years <= 0:
        raise ValueError(f"a window is at least 1 year, not {years}")
    got: Counter[str] = Counter(label(y, years) for y in results)
    have: Counter[str] = Counter()
    for year, n in corpus_years.items():
        have[label(year, years)] += n
    total_results, total_docs = sum(got.values()), sum(have.values())
    windows = sorted(set(got) | {w for w, n in have.items() if n}, key=_order)
    rows = tuple(
        WindowRow(
            window=w,
            results=got[w],
            result_share=got[w] / total_results if total_results else 0.0,
            documents=have[w],
            corpus_share=have[w] / total_docs if total_docs else 0.0,
        )
        for w in windows
    )
    return WindowShares(years, chosen, total_results, total_docs, rows)


def _order(window: str) -> tuple[bool, int]:
    return (window == UNDATED, 0 if window == UNDATED else int(window.split("-")[0]))


def year_of(date_start: str | None) -> int | None:
    """The year of an ISO date ("1887-05-17" → 1887); None for an undated document."""
    return int(date_start[:4]) if date_start and date_start[:4].isdigit() else None
