"""Evaluation harness: TREC run and qrels files, retrieval metrics and significance tests."""
