"""The calibration's pseudo-query kinds on real collections, and the weights they give (issue 23, part 3).

For each collection (opened read-only: nothing is saved), every pseudo-query kind is searched once with every
channel (`calibration.measure`); from those same searches the script computes the per-kind table and the channel
weights four ways:

- `spans-and-words`: the kinds before issue 23 (span, keywords, phrase), every query counting once (the weights a
  calibration gave before);
- `pooled`: every kind, every query counting once (a kind with more queries counts more);
- `balanced` (the default): every kind, each kind weighing the same: a query of a kind with n queries counts
  1/n (`calibration.weigh`);
- `kind-mean`: every kind, the mean of each kind's MRR where the channel acted, however rarely it acted there;
- `ratio-mean`: the mean over kinds of each kind's MRR ratio.

Then, where an eval report of the same collection is given (`runs/channels/RUN.CHANNEL.trec`), each set of weights
fuses the benchmark's own queries' channel rankings as the default search does (`benchmarks/fusion_methods.py`'s
`fuse`) and is scored against its judgments (nDCG@10, R@10): which weights predict what people asked.

    python benchmarks/calibration_kinds.py --collection cranfield=~/.cache/tracerag/eval/cranfield-… \
        --report cranfield=reports/base-cranfield --out benchmarks/results/calibration_kinds

With `--llm MODEL` (as `llm.model`: `local`, `openai:NAME`) the question kind is asked of that model, for
`--questions N` passages drawn with the seed (a draw of N per kind, of which only the questions are kept: a small
model on 2 cores writes one in about ten seconds), and the questions are kept in OUT.json.

Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fusion_methods import fuse  # noqa: E402

from tracerag.collection import Collection  # noqa: E402
from tracerag.config import load_settings  # noqa: E402
from tracerag.eval.datasets import load_benchmark  # noqa: E402
from tracerag.eval.metrics import evaluate  # noqa: E402
from tracerag.eval.trec import read_run  # noqa: E402
from tracerag.retrieval import Retriever, calibration  # noqa: E402
from tracerag.retrieval.calibration import CANDIDATES, KINDS, Measured, weigh  # noqa: E402

OLD_KINDS = ("span", "keywords", "phrase")


def with_questions(measured: Measured, retriever: Retriever, args: argparse.Namespace) -> Measured:
    """`measured` with the question kind of a draw of `args.questions` per kind, asked of `args.llm`."""
    from tracerag.llm import load_llm
    from tracerag.research.pseudo_questions import PassageQuestions

    model = load_llm(load_settings(llm={"model": args.llm}))
    assert model is not None
    asker = PassageQuestions(model)
    asked = calibration.measure(retriever, args.questions, args.seed, questioner=asker)
    keep = [i for i, q in enumerate(asked.queries) if q.kind == "question"]
    notes = dict(measured.notes)
    notes.pop("question", None)
    if "question" in asked.notes:
        notes["question"] = asked.notes["question"]
    return replace(
        measured,
        queries=measured.queries + [asked.queries[i] for i in keep],
        ranks=measured.ranks + [asked.ranks[i] for i in keep],
        scored=measured.scored + [asked.scored[i] for i in keep],
        notes=notes,
        seconds=measured.seconds + asked.seconds,
    )


def subset(measured: Measured, kinds: tuple[str, ...]) -> Measured:
    keep = [i for i, q in enumerate(measured.queries) if q.kind in kinds]
    return replace(
        measured,
        queries=[measured.queries[i] for i in keep],
        ranks=[measured.ranks[i] for i in keep],
        scored=[measured.scored[i] for i in keep],
    )


def pooled(measured: Measured) -> dict[str, float]:
    """Every query counting once: the kinds made one."""
    return weigh(replace(measured, queries=[replace(q, kind="span") for q in measured.queries]))[2]


def ratio_mean(measured: Measured) -> dict[str, float]:
    """The mean over kinds of each kind's MRR ratio (each kind alone through `weigh`)."""
    per_kind = [weigh(subset(measured, (k,)))[2] for k in KINDS if any(q.kind == k for q in measured.queries)]
    channels = {c for w in per_kind for c in w}
    return {
        c: round(math.fsum(w[c] for w in per_kind if c in w) / sum(1 for w in per_kind if c in w), 4) for c in channels
    }


def kind_mean(measured: Measured) -> dict[str, float]:
    """Each kind's MRR where the channel acted, averaged over the kinds it acted on (however rarely), and the
    best channel's alike: the ratio of those means."""
    rr = {c: [1.0 / r[c] if r.get(c) else 0.0 for r in measured.ranks] for c in measured.channels}
    out = {}
    for c in measured.channels:
        by_kind: dict[str, list[int]] = {}
        for i, q in enumerate(measured.queries):
            if measured.scored[i].get(c):
                by_kind.setdefault(q.kind, []).append(i)
        if not by_kind:
            continue

        def mean_of(o: str, by_kind: dict[str, list[int]] = by_kind) -> float:
            return math.fsum(math.fsum(rr[o][i] for i in idx) / len(idx) for idx in by_kind.values()) / len(by_kind)

        best = max(mean_of(o) for o in measured.channels)
        out[c] = round(mean_of(c) / best, 4) if best else 0.0
    return out


def scored_on_benchmark(name: str, report: Path, data: Path, weights: dict[str, dict[str, float]]) -> dict:
    bench = load_benchmark(name, data)
    files = sorted((report / "runs" / "channels").glob("hybrid.*.trec"))
    channels = {f.name.removeprefix("hybrid.").removesuffix(".trec"): read_run(f) for f in files}
    queries = sorted({q for run in channels.values() for q in run} & set(bench.qrels))
    qrels = {q: bench.qrels[q] for q in queries}
    method, normalisation = next((m, n) for label, m, n, _ in CANDIDATES if label == "calibrated")
    out: dict = {"queries": len(queries), "channels": sorted(channels)}

    def score(w: dict[str, float]) -> dict[str, float]:
        run = fuse(channels, method, normalisation, w, date_weighs_the_rest=True)
        found = evaluate(qrels, {q: run.get(q, []) for q in queries}, ("nDCG@10", "R@10"))
        return {m: round(v, 4) for m, v in found.items()}

    for label, w in weights.items():
        out[label] = score(w)
    # what the benchmark's own judgments would choose: each channel but bm25 swept from 0 to 1 (the others
    # as balanced), to see how far the calibrated weights are from the best fixed weight, and what that costs
    out["sweep"] = {}
    for channel in channels:
        if channel == "bm25":
            continue
        points = {f"{x / 10:.1f}": score({**weights["balanced"], channel: x / 10})["nDCG@10"] for x in range(11)}
        out["sweep"][channel] = points
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", action="append", required=True, help="NAME=DIR, opened read-only")
    parser.add_argument("--report", action="append", default=[], help="BENCHMARK=FOLDER of a tracerag eval")
    parser.add_argument("--per-kind", type=int, default=calibration.QUERIES_PER_KIND)
    parser.add_argument("--seed", type=int, default=calibration.SEED)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get("TRACERAG_DATASETS", "../shared/datasets")))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/calibration_kinds"))
    parser.add_argument("--llm", default="", help="llm.model for the question kind (none: no questions)")
    parser.add_argument("--questions", type=int, default=40, help="passages asked for a question, with --llm")
    parser.add_argument("--note", default="", help="a line for the markdown: where the collections come from")
    args = parser.parse_args()
    reports = dict(item.split("=", 1) for item in args.report)
    rows = []
    for item in args.collection:
        name, folder = item.split("=", 1)
        path = Path(folder).expanduser()
        with Collection.open(path, load_settings(), mode="read") as col:
            started = time.perf_counter()
            measured = calibration.measure(Retriever(col), args.per_kind, args.seed)
            if args.llm:
                measured = with_questions(measured, Retriever(col), args)
            table = calibration.kind_table(measured, weigh(measured)[2])
            stored = _stored_weights(path)
            documents = col.store.count_documents()
        weights = {
            "spans-and-words": weigh(subset(measured, OLD_KINDS))[2],
            "pooled": pooled(measured),
            "balanced": weigh(measured)[2],
            "kind-mean": kind_mean(measured),
            "ratio-mean": ratio_mean(measured),
        }
        row: dict = {
            "collection": name,
            "documents": documents,
            "seconds": round(time.perf_counter() - started, 1),
            "channels": measured.channels,
            "kinds": {k: _kind(v) for k, v in table.items()},
            "weights": weights,
            "stored": stored,
            "questions": [
                {"doc_id": q.doc_id, "question": q.text, "ranks": measured.ranks[i]}
                for i, q in enumerate(measured.queries)
                if q.kind == "question"
            ],
        }
        if name in reports:
            row["benchmark"] = scored_on_benchmark(name.split("+")[0], Path(reports[name]), args.data, weights)
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    args.out.with_suffix(".md").write_text(_markdown(rows, args), encoding="utf-8")


def _stored_weights(path: Path) -> dict[str, float] | None:
    """The weights in the collection's calibration.json, whatever its format (a format 1 file is what the
    calibration gave before the kinds; `calibration.load` no longer reads it)."""
    file = path / calibration.CALIBRATION_FILE
    return json.loads(file.read_text(encoding="utf-8")).get("weights") if file.is_file() else None


def _kind(report: calibration.KindReport) -> dict:
    return {
        "queries": report.queries,
        "mrr": report.mrr,
        "acted": report.acted,
        "fused": report.fused,
        "note": report.note,
    }


def _markdown(rows: list[dict], args: argparse.Namespace) -> str:
    lines = [f"Pseudo-queries: {args.per_kind} of each kind, seed {args.seed}; {os.cpu_count()} cores.", ""]
    if args.note:
        lines += [args.note, ""]
    for row in rows:
        channels = row["channels"]
        lines += [f"### {row['collection']} ({row['documents']:,} documents, {row['seconds']} s)", ""]
        lines.append("| kind | queries | " + " | ".join(channels) + " | fused (default) |")
        lines.append("|---|---|" + "---|" * len(channels) + "---|")
        for kind, k in row["kinds"].items():
            if not k["queries"]:
                lines.append(f"| {kind} | 0 ({k['note']}) |" + " |" * (len(channels) + 1))
                continue
            cells = [f"{k['mrr'][c]:.3f} ({k['acted'][c]})" if c in k["mrr"] else "–" for c in channels]
            lines.append(f"| {kind} | {k['queries']} | " + " | ".join(cells) + f" | {k['fused']:.3f} |")
        lines += [
            "",
            "| weights | "
            + " | ".join(channels)
            + (" | nDCG@10 / R@10 on the benchmark |" if "benchmark" in row else " |"),
        ]
        lines.append("|---|" + "---|" * len(channels) + ("---|" if "benchmark" in row else ""))
        if row["stored"]:
            stored = [f"{row['stored'][c]:.2f}" if c in row["stored"] else "–" for c in channels]
            lines.append("| stored calibration.json | " + " | ".join(stored) + (" | |" if "benchmark" in row else " |"))
        for label, w in row["weights"].items():
            cells = [f"{w.get(c, 1.0):.2f}" for c in channels]
            scored = ""
            if "benchmark" in row:
                b = row["benchmark"][label]
                scored = f" {b['nDCG@10']:.4f} / {b['R@10']:.4f} |"
            lines.append(f"| {label} | " + " | ".join(cells) + " |" + scored)
        if "benchmark" in row:
            b = row["benchmark"]
            lines += ["", f"Benchmark: {b['queries']} queries, channels {b['channels']}."]
            for channel, points in b["sweep"].items():
                best = max(points.items(), key=lambda kv: kv[1])
                swept = ", ".join(f"{w} {v:.4f}" for w, v in points.items())
                lines.append(f"nDCG@10 with the {channel} weight swept (best {best[0]}: {best[1]:.4f}): {swept}.")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
