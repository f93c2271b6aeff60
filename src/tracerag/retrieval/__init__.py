"""Warm-start retrieval: channels rank chunks, fusion turns them into one ranking of documents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracerag.retrieval.search import Retriever, SearchRequest

__all__ = ["Retriever", "SearchRequest"]


def __getattr__(name: str) -> Any:
    """`Retriever` and `SearchRequest` load with the search on first use (PEP 562): importing a light module of the
    package (`fusion`, `pseudo_queries`: the CLI's option defaults) then loads no engine, store or model."""
    if name in __all__:
        from tracerag.retrieval import search

        return getattr(search, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
