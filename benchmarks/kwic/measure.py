"""The share of the snippets `tracerag search` prints that hold at least one of the query's words, before (a
tree whose CLI prints the first 300 characters of each result's best chunk) and after (keyword-in-context
snippets), over the queries of `queries.tsv` (see README.md).

Each tree's `tracerag search QUERY --json` is run as a subprocess (PYTHONPATH=TREE/src), so the rankings are each
tree's own. What the CLI prints is taken from that JSON: before, `" ".join(best_chunk.text.split())[:300]`, the
rule of that tree's `cli/views.py`; after, each of `snippets[].text`. A snippet holds a query word when one of its
words, joined across OCR line-end hyphenation and analysed by the text index's own analyser (tantivy's, of the
result's language), is one of the query's terms in that language: the index's notion of a match, not the kwic
module's. A second, cruder judge that shares no code with the index: a folded word of the snippet starts with the
first 5 letters (or the whole, if shorter) of a folded query word of 4 letters or more.

    python benchmarks/kwic/measure.py --collection DIR --before /work/main --after . \
        --out benchmarks/results/kwic_snippets
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).parent
BEFORE_CHARS = 300  # main's cli/views.py: snippet[:300]


def search(tree: Path, collection: Path, query: str, k: int) -> dict:
    env = os.environ | {"PYTHONPATH": str(tree / "src"), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "tracerag.cli", "search", query, "-c", str(collection), "--k", str(k), "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def index_terms(text: str, language: str | None) -> set[str]:
    import regex

    from tracerag.engine.text_index import analyser, language_of
    from tracerag.ingest.normalise import join_hyphenation

    a = analyser(language_of(language))
    return {t for w in regex.findall(r"[\p{Alphabetic}\p{N}]+", join_hyphenation(text)) for t in a.analyze(w)}


def fold(text: str) -> list[str]:
    plain = "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))
    return "".join(c if c.isalnum() else " " for c in plain).split()


def prefix_hit(snippet: str, query: str) -> bool:
    stems = [w[:5] for w in fold(query) if len(w) >= 4]
    return any(w.startswith(s) for w in fold(snippet) for s in stems)


def printed(result: dict, when: str) -> list[str]:
    if when == "before":
        return [" ".join(result["best_chunk"]["text"].split())[:BEFORE_CHARS]]
    return [sn["text"] for sn in result["snippets"]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--collection", type=Path, required=True)
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, required=True)
    ap.add_argument("--queries", type=Path, default=HERE / "queries.tsv")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    with args.queries.open(encoding="utf-8") as f:
        queries = list(csv.DictReader(f, delimiter="\t"))
    report: dict = {"collection": str(args.collection), "k": args.k, "queries": len(queries), "trees": {}}
    per_query = []
    for when, tree in (("before", args.before), ("after", args.after)):
        snippets = hits = prefix_hits = results = results_hit = 0
        for q in queries:
            answer = search(tree, args.collection, q["query"], args.k)
            q_hits = q_snips = 0
            for r in answer["results"]:
                terms = index_terms(q["query"], r["language"])
                shown = printed(r, when)
                found = [bool(index_terms(s, r["language"]) & terms) for s in shown]
                snippets += len(shown)
                hits += sum(found)
                prefix_hits += sum(prefix_hit(s, q["query"]) for s in shown)
                results += 1
                results_hit += any(found)
                q_hits += sum(found)
                q_snips += len(shown)
            per_query.append({"when": when, "id": q["id"], "query": q["query"], "snippets": q_snips, "hit": q_hits})
        report["trees"][when] = {
            "tree": str(tree),
            "results": results,
            "snippets": snippets,
            "snippets_with_a_query_word": hits,
            "share": round(hits / snippets, 4) if snippets else None,
            "share_prefix_judge": round(prefix_hits / snippets, 4) if snippets else None,
            "results_with_a_query_word_shown": results_hit,
            "result_share": round(results_hit / results, 4) if results else None,
        }
    report["per_query"] = per_query
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(json.dumps(report["trees"], indent=2))
    if args.out:
        args.out.with_suffix(".json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
