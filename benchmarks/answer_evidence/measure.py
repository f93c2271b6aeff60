"""The evidence check before drafting (research/evidence.py) on questions the code did not write: how often it
abstains where an abstention is due (the absurd set) and where it is not (the answerable set, PIAF's own questions,
the cross-lingual sets), at several shares. No model: the check reads words only.

    python benchmarks/answer_evidence/measure.py --hipe HIPE_COLLECTION --piaf PIAF_COLLECTION [--k 3]
    python benchmarks/answer_evidence/measure.py --set QUESTIONS.jsonl=COLLECTION [--set ...]

The collections are those the answer sets are asked over (src/tracerag/data/eval/answers/README.md): all of
HIPE-2022 v2.1, and PIAF's 1,518 paragraphs (`tracerag eval piaf-fr` builds it); `--set` adds any question set
(eval/answers.py's JSONL) with the collection it is asked over. Prints a table per set, kind, language and share;
"(gold shown)" rows keep the answerable questions whose gold document was among the sources checked, where an
abstention is a loss.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.eval.answer_run import load_questions
from tracerag.eval.answers import _sources
from tracerag.research.answer import EXCERPT_CHARS
from tracerag.research.evidence import evidence

SHARES = (0.34, 0.5, 0.6, 0.67, 0.75, 0.8)
SETS = {
    "hipe": ["absurd:hipe", "answerable:hipe", "xling-hipe"],
    "piaf": ["absurd:piaf", "answerable:piaf", "piaf-fr", "xling-piaf"],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hipe", type=Path)
    parser.add_argument("--piaf", type=Path)
    parser.add_argument("--set", action="append", default=[], metavar="QUESTIONS=COLLECTION")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--sample", type=int, default=150, help="questions of a benchmark (PIAF's, xling)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    settings = Settings()
    rows = []
    plan = [(path, SETS[name]) for name, path in (("hipe", args.hipe), ("piaf", args.piaf)) if path]
    plan += [(Path(pair.split("=", 1)[1]), [pair.split("=", 1)[0]]) for pair in args.set]
    for path, sets in plan:
        with Collection.open(path, settings, mode="read") as col:
            for source in sets:
                shipped = not source.startswith(("piaf-fr", "xling"))
                for q in load_questions([source], settings.datasets, sample=None if shipped else args.sample, seed=1):
                    sources = _sources(col, q, args.k)
                    e = evidence(
                        q.question,
                        q.language,
                        sources,
                        share=1.0,
                        shown=EXCERPT_CHARS,
                    )
                    for share in SHARES:
                        rows.append(
                            {
                                "set": source,
                                "kind": q.kind or ("answerable" if q.answerable else ""),
                                "language": q.language,
                                "answerable": q.answerable,
                                "share": share,
                                "abstain": e.share < share,
                                "held": e.share,
                                "id": q.id,
                                "question": q.question,
                                "missing": e.missing,
                                "xl": e.cross_lingual,
                                "shown": q.gold_doc in {s.doc_id for s in sources},
                            }
                        )
    if args.out:
        args.out.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    table: dict[tuple[str, str, str, float], list[bool]] = defaultdict(list)
    for r in rows:
        table[(r["set"], r["kind"], r["language"], r["share"])].append(r["abstain"])
        if r["answerable"] and r["shown"]:
            table[(r["set"] + " (gold shown)", r["kind"], "all", r["share"])].append(r["abstain"])
    print("| set | kind | lang | " + " | ".join(f"share {s}" for s in SHARES) + " | n |")
    print("|---|---|---|" + "---:|" * (len(SHARES) + 1))
    for key in sorted({k[:3] for k in table}):
        cells = [table[(*key, s)] for s in SHARES]
        print(f"| {' | '.join(key)} | " + " | ".join(f"{sum(c) / len(c):.2f}" for c in cells) + f" | {len(cells[0])} |")


if __name__ == "__main__":
    main()
