"""Two what-ifs of the Cranfield trial (results.md), outside the library: nothing here changes tracerag.

    python benchmarks/answer_trial/what_if.py split eval --answers SET -c DIR --judge none --out DIR
    python benchmarks/answer_trial/what_if.py unseen benchmarks/answer_trial/cranfield.jsonl

`split`: the same CLI, but the extractive drafter's sentences also end at a period with a space on both sides
(" . "), as Cranfield's lower-case, tokenised abstracts write them; the library's rule wants a capital or a
digit after the period, so each Cranfield chunk is one "sentence" and the draft quotes whole chunks.
`unseen`: per question, its words of MIN_WORD letters or more (and its words holding a digit) that no Cranfield
abstract holds, even by stem: what a collection-level check could see that the per-source share does not.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

_SPACED = re.compile(r"\s\.(?=\s)")


def _split() -> None:
    import tracerag.research.answer as answer
    from tracerag.cli import app
    from tracerag.text import trimmed_span

    library = answer.prose_sentences

    def spaced(text: str) -> list[tuple[int, int]]:
        out = []
        for start, end in library(text):
            piece = start
            for m in _SPACED.finditer(text, start, end):
                if span := trimmed_span(text, piece, m.end()):
                    out.append(span)
                piece = m.end()
            if span := trimmed_span(text, piece, end):
                out.append(span)
        return out

    answer.prose_sentences = spaced
    sys.argv = ["tracerag", *sys.argv[2:]]
    app()


def _unseen(path: str) -> None:
    from tracerag.eval.datasets import load_benchmark
    from tracerag.research.evidence import MIN_WORD, words
    from tracerag.text import stem

    bench = load_benchmark("cranfield", Path(os.environ["TRACERAG_DATASETS"]))
    vocab = {w for d in bench.documents for w in words(d.text)}
    stems = {stem(w, "en") for w in vocab}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        asked = [w for w in words(q["question"]) if len(w) >= MIN_WORD or any(c.isdigit() for c in w)]
        unseen = [w for w in asked if w not in vocab and stem(w, "en") not in stems]
        print(f"{q['id']:12} {q['kind']:13} {' '.join(unseen) or '-'}")


if __name__ == "__main__":
    {"split": _split, "unseen": lambda: _unseen(sys.argv[2])}[sys.argv[1]]()
