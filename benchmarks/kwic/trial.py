"""A trial of the CLI's result snippets on a collection they were not developed on (PIAF: French Wikipedia
paragraphs), with queries typed as readers type them (`trial_piaf.tsv`, see README.md).

For each query, `tracerag search QUERY -c DIR` is run twice as a subprocess of the tree `--tree` (PYTHONPATH):
piped at COLUMNS=80 (what a reader's pipe or file gets) and with `--json --k 10`. For each result:

- marked: a printed snippet has a marked span; explaining: one marked word is, analysed by the text index's own
  analyser (tantivy's, of the result's language), one of the query's terms (the index's notion of a match);
- stopword-only: every marked word of the result is a function word (`FUNCTION_WORDS`) while the query holds a
  content word (so the marks show little of why it ranked);
- unmarked: no marked snippet; then whether the printed block says how it was found (a channel name in it);
- offsets: each snippet's `text` is `document_text[start:end]` of the source file (`--source`, the JSONL made by
  `prepare`), `line` given or null, cut mid-word (a letter on both sides of a cut);
- garbage: a backslash escape or an HTML entity in a printed line that the document does not hold;
- width: lines of the piped output wider than 80 columns (`rich.cells.cell_len`).

    python benchmarks/kwic/trial.py prepare --piaf ../shared/datasets/piaf/piaf-v1.1.json --out /tmp/trial/piaf.jsonl
    tracerag ingest /tmp/trial/piaf.jsonl -c /tmp/trial/coll --no-dense && tracerag embed -c /tmp/trial/coll
    python benchmarks/kwic/trial.py measure --collection /tmp/trial/coll --source /tmp/trial/piaf.jsonl \
        --tree . --out benchmarks/results/kwic_trial
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent
WIDTH = 80
# French and English function words: what a mark on its own shows nothing about (this benchmark's judgement,
# not the library's: the index keeps them and matches them)
_WORDS = "a à au aux avec ce ces d dans de des du elle en est et eu il l la le les leur lieu ou où par pas pour qu que "
_WORDS += "quel quelle qui quand s sa se ses son sur un une y the of on in to and is a an for with at by"
FUNCTION_WORDS = frozenset(_WORDS.split(" "))
GARBAGE = re.compile(r"\\[xuUn]|&(?:amp|lt|gt|quot|#\d+);")


def prepare(piaf: Path, out: Path) -> int:
    """One JSONL record per PIAF paragraph: id `Title-N`, the article title, French, sub-corpus `piaf`."""
    data = json.loads(piaf.read_text(encoding="utf-8"))
    n = 0
    with out.open("w", encoding="utf-8") as f:
        for article in data["data"]:
            for i, p in enumerate(article["paragraphs"]):
                doc_id = f"{article['title']}-{i}".replace(" ", "_")
                record = {"id": doc_id, "title": article["title"], "text": p["context"], "language": "fr"}
                f.write(json.dumps(record | {"corpus": "piaf"}, ensure_ascii=False) + "\n")
                n += 1
    return n


def run(tree: Path, collection: Path, query: str, *extra: str) -> str:
    env = os.environ | {"PYTHONPATH": str(tree / "src"), "NO_COLOR": "1", "COLUMNS": str(WIDTH)}
    cmd = [sys.executable, "-m", "tracerag.cli", "search", query, "-c", str(collection), "--k", "10", *extra]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout


def index_terms(text: str, language: str | None) -> set[str]:
    import regex

    from tracerag.engine.text_index import analyser, language_of
    from tracerag.ingest.normalise import join_hyphenation

    a = analyser(language_of(language))
    return {t for w in regex.findall(r"[\p{Alphabetic}\p{N}]+", join_hyphenation(text)) for t in a.analyze(w)}


def fold(word: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", word.casefold()) if not unicodedata.combining(c))


def blocks(text: str) -> dict[int, list[str]]:
    """The piped output's lines of each result, by rank (a block starts at `NN. title`)."""
    out: dict[int, list[str]] = {}
    rank = None
    for line in text.splitlines():
        m = re.match(r"^\s?(\d+)\. ", line)
        if m:
            rank = int(m.group(1))
        if rank is not None:
            out.setdefault(rank, []).append(line)
    return out


def judge(query: str, answer: dict, printed: str, docs: dict[str, str]) -> list[dict]:
    """One verdict per result (see the module docstring)."""
    from rich.cells import cell_len

    printed_blocks = blocks(printed)
    content = any(fold(w) not in FUNCTION_WORDS for w in re.findall(r"\w+", query))
    verdicts = []
    for r in answer["results"]:
        terms = index_terms(query, r["language"])
        marked = [sn["text"][s:e] for sn in r["snippets"] for s, e in sn["spans"]]
        explaining = [w for w in marked if index_terms(w, r["language"]) & terms]
        doc = docs.get(r["doc_id"])
        offsets_ok = doc is not None and all(doc[sn["start"] : sn["end"]] == sn["text"] for sn in r["snippets"])
        mid_word = [
            sn["text"][:20] + "…"
            for sn in r["snippets"]
            if doc is not None
            and (
                (sn["start"] > 0 and doc[sn["start"] - 1].isalnum() and doc[sn["start"]].isalnum())
                or (sn["end"] < len(doc) and doc[sn["end"] - 1].isalnum() and doc[sn["end"]].isalnum())
            )
        ]
        # a query word in the title (indexed with every chunk) or in the best chunk's text but shown in no snippet
        in_title = bool(index_terms(r["title"] or "", r["language"]) & terms)
        content_terms = {
            t for w in re.findall(r"\w+", query) if fold(w) not in FUNCTION_WORDS for t in index_terms(w, r["language"])
        }
        shown_terms = set().union(*(index_terms(w, r["language"]) for w in marked)) if marked else set()
        chunk_terms = index_terms(r["best_chunk"]["text"], r["language"])
        block = printed_blocks.get(r["rank"], [])
        channels = [c["channel"] for c in r["channels"]]
        said = [c for c in ("dense", "variant", "expansion", "found by") if any(c in line for line in block)]
        garbage = [line for line in block if GARBAGE.search(line) and not (doc and GARBAGE.search(doc))]
        verdicts.append(
            {
                "rank": r["rank"],
                "doc_id": r["doc_id"],
                "channels": channels,
                "marked": sorted(set(marked)),
                "explaining": bool(explaining),
                "misleading_marks": sorted({w for w in marked if w not in explaining}),
                "title_match": in_title,
                "content_in_chunk_not_shown": sorted((content_terms & chunk_terms) - shown_terms),
                "stopword_only": bool(marked) and content and all(fold(w) in FUNCTION_WORDS for w in marked),
                "unmarked_says_how": bool(said) if not marked else None,
                "offsets_ok": offsets_ok,
                "lines_given": [sn["line"] for sn in r["snippets"]],
                "cut_mid_word": mid_word,
                "garbage": garbage,
                "wide_lines": [line for line in block if cell_len(line) > WIDTH],
            }
        )
    return verdicts


def measure(args: argparse.Namespace) -> None:
    from rich.cells import cell_len

    with args.queries.open(encoding="utf-8") as f:
        queries = list(csv.DictReader(f, delimiter="\t"))
    docs = {}
    with args.source.open(encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            docs[rec["id"]] = rec["text"]
    per_query, by_cat = [], defaultdict(lambda: defaultdict(int))
    wide_total = 0
    for q in queries:
        printed = run(args.tree, args.collection, q["query"])
        answer = json.loads(run(args.tree, args.collection, q["query"], "--json"))
        verdicts = judge(q["query"], answer, printed, docs)
        wide = [line for line in printed.splitlines() if cell_len(line) > WIDTH]
        wide_total += len(wide)
        c = by_cat[q["category"]]
        c["queries"] += 1
        for v in verdicts:
            c["results"] += 1
            c["explaining"] += v["explaining"]
            c["marked_not_explaining"] += bool(v["marked"]) and not v["explaining"]
            c["stopword_only"] += v["stopword_only"]
            c["unmarked"] += not v["marked"]
            c["unmarked_title_match"] += not v["explaining"] and v["title_match"]
            c["content_word_hidden"] += bool(v["content_in_chunk_not_shown"])
            c["unmarked_said"] += bool(v["unmarked_says_how"])
            c["dense_only"] += "bm25" not in v["channels"] and "phrase" not in v["channels"]
            c["offsets_bad"] += not v["offsets_ok"]
            c["mid_word"] += bool(v["cut_mid_word"])
            c["garbage"] += bool(v["garbage"])
        per_query.append(
            {
                "id": q["id"],
                "category": q["category"],
                "query": q["query"],
                "channels": answer["params"].get("active_channels"),
                "wide_lines": wide,
                "results": verdicts,
            }
        )
    report = {
        "collection": str(args.collection),
        "tree": str(args.tree),
        "queries": len(queries),
        "lines_over_80": wide_total,
        "by_category": {k: dict(v) for k, v in by_cat.items()},
        "per_query": per_query,
    }
    print(json.dumps({k: report[k] for k in ("queries", "lines_over_80", "by_category")}, indent=1))
    if args.out:
        args.out.with_suffix(".json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--piaf", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    m = sub.add_parser("measure")
    m.add_argument("--collection", type=Path, required=True)
    m.add_argument("--source", type=Path, required=True, help="the JSONL the collection was ingested from")
    m.add_argument("--tree", type=Path, default=Path("."))
    m.add_argument("--queries", type=Path, default=HERE / "trial_piaf.tsv")
    m.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.cmd == "prepare":
        print(prepare(args.piaf, args.out), "records")
    else:
        measure(args)


if __name__ == "__main__":
    main()
