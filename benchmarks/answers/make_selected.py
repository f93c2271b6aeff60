"""The answerable PIAF questions (src/tracerag/data/eval/answers/answerable.jsonl, `piaf`) as a selection: each
names its sources, its gold paragraph and two others a search ranks high for it, in a seeded order, so that the
drafter is graded apart from retrieval, and a recorded run replays on any collection holding those paragraphs
(tests/eval/test_answers_recorded.py builds one from the datasets folder). Writes `piaf_selected.jsonl` here.

    python benchmarks/answers/make_selected.py PIAF_COLLECTION

PIAF_COLLECTION: the collection `tracerag eval piaf-fr` builds (its 1,518 paragraphs). Only document ids are
written: the questions are the shipped set's, the text stays in the datasets folder.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from tracerag.collection import Collection
from tracerag.config import load_settings
from tracerag.eval.answer_sets import load_answer_questions
from tracerag.retrieval.search import Retriever, SearchRequest

OTHERS = 2
OUT = Path(__file__).with_name("piaf_selected.jsonl")


def main(collection: Path) -> None:
    lines = []
    with Collection.open(collection, load_settings(), mode="read") as col:
        retriever = Retriever(col)
        for q in load_answer_questions("answerable"):
            if q.collection != "piaf":
                continue
            ranked = retriever.search(SearchRequest(q.question, k=OTHERS + 1)).documents
            others = [d.doc_id for d in ranked if d.doc_id != q.gold_doc][:OTHERS]
            sources = [q.gold_doc, *others]
            random.Random(q.id).shuffle(sources)
            record = {"id": q.id, "question": q.question, "language": q.language, "kind": q.kind,
                      "gold_doc": q.gold_doc, "gold_answer": q.gold_answer, "sources": sources}  # fmt: skip
            lines.append(json.dumps(record, ensure_ascii=False))
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(lines)} questions")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
