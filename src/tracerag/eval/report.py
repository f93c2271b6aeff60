"""Reports of an evaluation: results.json and a markdown table (runs as rows, metrics as columns, the best value
of each metric in bold, a dagger where a run differs significantly from the first run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SIGNIFICANCE = 0.05


def markdown_table(
    results: dict[str, dict[str, float]], pvalues: dict[str, dict[str, float]], metrics: list[str]
) -> str:
    """`results[run][metric]`; `pvalues[run][metric]` against the first run (absent for it)."""
    runs = list(results)
    best = {m: max(results[r][m] for r in runs) for m in metrics}
    lines = ["| run | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
    for run in runs:
        cells = []
        for m in metrics:
            value = f"{results[run][m]:.4f}"
            if results[run][m] == best[m] and len(runs) > 1:
                value = f"**{value}**"
            p = pvalues.get(run, {}).get(m)
            if p is not None and p < SIGNIFICANCE:
                value += " †"
            cells.append(value)
        lines.append(f"| {run} | " + " | ".join(cells) + " |")
    if len(runs) > 1:
        lines.append("")
        lines.append(f"Best per metric in bold; † = differs from `{runs[0]}` (paired t-test, p < {SIGNIFICANCE}).")
    return "\n".join(lines) + "\n"


def window_share_table(shares: dict[str, Any]) -> str:
    """`diagnostics.window_shares` as a Markdown table: windows as rows; the corpus's, the qrels' and each run's
    share of its top k as columns, so that a window a run over- or under-fills stands out against both."""
    runs = list(shares["runs"])
    lines = [
        f"## Where the top {shares['k']} come from in time ({shares['window']} windows; {shares['chosen']})",
        "",
        "| window | corpus | qrels | " + " | ".join(runs) + " |",
        "|---|---:|---:|" + "---:|" * len(runs),
    ]
    for w in shares["windows"]:
        cells = [shares["corpus"][w], shares["qrels"][w], *(shares["runs"][r][w] for r in runs)]
        lines.append(f"| {w} | " + " | ".join(f"{c:.1%}" for c in cells) + " |")
    lines += ["", "Shares of documents (corpus), of relevant (query, document) pairs (qrels) and of each run's top-k"]
    lines[-1] += " (query, document) pairs; undated documents are a window of their own."
    return "\n".join(lines) + "\n"


RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"


def write_reports(out: Path, summary: dict[str, Any], table: str) -> None:
    """The report folder of an evaluation (the retrieval eval and the catalog benchmark alike): the summary as
    JSON, the tables as Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f"{RESULTS_JSON}.tmp"
    tmp.write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    tmp.replace(out / RESULTS_JSON)
    (out / RESULTS_MD).write_text(table, encoding="utf-8")


def read_markdown(out: Path) -> str:
    """The Markdown tables `write_reports` wrote into `out`."""
    return (out / RESULTS_MD).read_text(encoding="utf-8")


def trails_dir(out: Path) -> Path:
    """Where the runs of an evaluation that keep trails (the agent, the catalog assistant) write them."""
    return out / "trails"
