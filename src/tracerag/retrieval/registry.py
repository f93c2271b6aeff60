"""The channels a search can run, by name: each one says what the collection must hold for it (`Need`), how it
reads one query (`prepare`), and how it then ranks chunks (`Channel.search`). The retriever iterates this
registry and knows no channel by its class, so a new channel is one module that calls `register` (and is imported
by `tracerag.retrieval.search`, as the built-in ones are), plus its tests.

A channel's module registers it when imported: `channels.py` registers bm25, dense, date and phrase, `entities.py`
the entity channel. They run in the order registered, a channel that ranks what the others found (`Need.POOL`)
after them all; that order is the one of each search's channel rankings, of its fusion's sum and of the trail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from tracerag.model import DateRange, Filter, Hit
from tracerag.retrieval.fusion import Normalisation

if TYPE_CHECKING:
    from tracerag.collection import Collection
    from tracerag.config import RetrievalSettings
    from tracerag.engine import FieldStats


class Need(StrEnum):
    """What a channel needs of the collection or of the search (shown by `tracerag info`'s readers, checked by the
    channel itself: one that lacks it stays silent and says why)."""

    TEXT = "text"  # the text indexes
    VECTORS = "vectors"  # every chunk's embedding, and the collection's model to embed the query
    ENTITIES = "entities"  # the named entities found at ingest (`tracerag entities`)
    DATES = "dates"  # the documents' dates
    POOL = "pool"  # the chunks the other channels found: it ranks them, it does not search the collection


@dataclass(frozen=True)
class Reading:
    """What a channel took from the query, or why it took nothing: shown by `--explain` and in the trail."""

    acts: bool
    why: str


@dataclass(frozen=True)
class ChannelRanking:
    """One channel's chunks for one query, best first; a lexical channel's per-field rankings (one text index per
    language) beside them, for the trail."""

    hits: list[Hit]
    fields: dict[str, list[Hit]] = field(default_factory=dict)


class Channel(Protocol):
    """A channel ready for one query: ranks chunks the filter admits, at most `k`, ranks 1..n (the contract of
    tests/retrieval/test_channel_contract.py). `earlier` holds the rankings of the channels that ran before it on
    the same filter, which only a `Need.POOL` channel reads."""

    @property
    def name(self) -> str: ...

    def search(self, query: str, flt: Filter, k: int, earlier: Mapping[str, Sequence[Hit]]) -> ChannelRanking: ...


@dataclass(frozen=True)
class QueryContext:
    """What a channel may read to prepare for one query: the query as the index has it, the collection and the
    retrieval settings, and what is asked at most once per search (whether the collection has its vectors, BM25's
    term statistics of the query)."""

    query: str
    collection: Collection
    settings: RetrievalSettings
    has_vectors: Callable[[], bool]
    bm25_stats: Callable[[], Mapping[str, FieldStats]]


@dataclass(frozen=True)
class Prepared:
    """A channel read against one query: the channel to run (None: it stays silent), why it acts or not (None:
    nothing to say), the share of its fusion weight it keeps for this query (1: all of it), and the date the query
    states, when the channel read one (the search reports it)."""

    channel: Channel | None
    reading: Reading | None = None
    share: float = 1.0
    stated: DateRange | None = None


@dataclass(frozen=True)
class ChannelKind:
    """A registered channel: its name, its needs, how it reads a query, and how the calibrated fusion puts its
    scores on one scale: divided by the best one where a score of 0 means "no match" (a lexical score, a date's
    closeness), min-max where every chunk has a score (a cosine)."""

    name: str
    needs: frozenset[Need]
    prepare: Callable[[QueryContext], Prepared]
    scale: Normalisation = Normalisation.MAX

    @property
    def ranks_the_pool(self) -> bool:
        return Need.POOL in self.needs


_REGISTRY: dict[str, ChannelKind] = {}


def register(kind: ChannelKind) -> ChannelKind:
    """Add a channel (a name registered twice is a mistake, not a replacement)."""
    if kind.name in _REGISTRY:
        raise ValueError(f"channel {kind.name!r} is registered already")
    _REGISTRY[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


@contextmanager
def registered(kind: ChannelKind) -> Iterator[ChannelKind]:
    """A channel registered for the length of a `with` block (tests, experiments)."""
    register(kind)
    try:
        yield kind
    finally:
        unregister(kind.name)


def names() -> tuple[str, ...]:
    """Every registered channel's name, in the order registered."""
    return tuple(_REGISTRY)


def kinds(wanted: Sequence[str] | None = None) -> list[ChannelKind]:
    """The registered channels (those named in `wanted`, if given), in the order registered: the order a search
    reads the query and reports the channels' readings and scales in."""
    return [k for k in _REGISTRY.values() if wanted is None or k.name in wanted]


def reading_order(chosen: Sequence[ChannelKind]) -> list[ChannelKind]:
    """The order a search reports its channels' readings in (`--explain`, the trail): those read from the query
    alone (a date, a phrase) before those that depend on what a model made of the collection (its vectors, its
    entities), each part as registered."""
    modelled = {Need.VECTORS, Need.ENTITIES}
    return [k for k in chosen if not k.needs & modelled] + [k for k in chosen if k.needs & modelled]


def run_order(chosen: Sequence[ChannelKind]) -> list[ChannelKind]:
    """The order channels run in: as registered, those that rank the others' pool last."""
    return [k for k in chosen if not k.ranks_the_pool] + [k for k in chosen if k.ranks_the_pool]
