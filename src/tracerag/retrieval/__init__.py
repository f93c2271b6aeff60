"""Warm-start retrieval: channels rank chunks, fusion turns them into one ranking of documents."""

from tracerag.retrieval.search import Retriever, SearchRequest

__all__ = ["Retriever", "SearchRequest"]
