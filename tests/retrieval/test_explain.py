"""`explain` reads the store for what the engine found: a result whose chunk the store no longer holds (a
writer is replacing that document) is left out and counted, never a KeyError in a reader."""

from __future__ import annotations

import dataclasses

from tracerag.retrieval import Retriever, SearchRequest
from tracerag.retrieval.explain import explain


def test_a_result_whose_chunk_is_gone_is_left_out_and_counted(hipe_collection):
    col = hipe_collection.collection
    ranking = Retriever(col).search(SearchRequest(query="conseil fédéral", k=5))
    assert len(ranking.documents) == 5
    clean = explain(ranking, col)
    assert "dropped_in_flux" not in clean["params"]
    gone = ranking.documents[1]
    ranking.documents[1] = dataclasses.replace(gone, best_chunk_id=f"{gone.doc_id}#99999")
    data = explain(ranking, col)
    assert data["params"]["dropped_in_flux"] == 1
    assert [r["rank"] for r in data["results"]] == [1, 2, 3, 4]
    assert gone.doc_id not in [r["doc_id"] for r in data["results"]]
