"""Equal shares: temporal windowing and corpus balancing are the same operation on a fused ranking.

A ranking dominated by one decade (or one large newspaper) hides the rest; taking an equal share from each
group, best first within each round, keeps every period (or sub-corpus) represented.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from tracerag.config import window_years
from tracerag.errors import ConfigError

T = TypeVar("T")
UNDATED = "undated"


def parse_window(spec: str) -> int:
    """'5y' / '10y' / '5' → window length in years (the format settings check when loaded)."""
    try:
        return window_years(spec)
    except ValueError as exc:
        raise ConfigError(f"invalid window {spec!r}: {exc}") from None


def window_of(date_start: str | None, years: int) -> str:
    """The window label of a date: windows are aligned on multiples of `years` (1890-1894, 1895-1899...)."""
    if not date_start:
        return UNDATED
    year = int(date_start[:4])
    first = year - year % years
    return f"{first}-{first + years - 1}" if years > 1 else str(first)


def equal_share(items: Sequence[T], group: Callable[[T], str], k: int) -> list[T]:
    """The first `k` items after interleaving the groups: every group's best item, then every group's second,
    and so on; within a round, items keep their original order. A group that runs out leaves its share to
    the others, so the list still has k items when there are k.
    """
    position: dict[str, int] = {}
    keyed = []
    for index, item in enumerate(items):
        g = group(item)
        round_ = position.get(g, 0)
        position[g] = round_ + 1
        keyed.append((round_, index, item))
    keyed.sort(key=lambda t: (t[0], t[1]))
    return [item for _, _, item in keyed[:k]]
