"""The report of graded answers (eval/answers.py): aggregates with bootstrap intervals, overall and per group,
abstention precision and recall, an optional comparison with an earlier report, as results.json and results.md.

A comparison pairs this run (B) with an earlier one (A, its results.json) on the question ids both graded: the
means of each and the paired bootstrap p-value (eval/metrics.py), so two models, prompts or retrieval settings
are compared on the same questions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tracerag.errors import ConfigError
from tracerag.eval.answer_metrics import Comparison, abstention, compare_runs, mean_ci
from tracerag.eval.answers import GROUPS, METRICS, AnswerRow
from tracerag.eval.report import RESULTS_JSON, SIGNIFICANCE, write_reports

Rows = Mapping[str, Mapping[str, float | None]]


def means(rows: Sequence[AnswerRow], *, seed: int = 0) -> dict[str, dict[str, Any]]:
    """`{metric: {mean, low, high, n}}` over the rows where the metric applies."""
    return {m: mean_ci([v for r in rows if (v := r.scores[m]) is not None], seed=seed).as_dict() for m in METRICS}


def aggregate(rows: Sequence[AnswerRow], *, seed: int = 0) -> dict[str, Any]:
    """Overall means, per group value means (kind, language, type where questions give them) and abstention."""
    by: dict[str, dict[str, Any]] = {}
    abstention_by: dict[str, dict[str, Any]] = {}
    for group in GROUPS:
        values = sorted({v for r in rows if isinstance(v := getattr(r, group), str) and v})
        if values:
            parts = {v: [r for r in rows if getattr(r, group) == v] for v in values}
            by[group] = {v: means(part, seed=seed) for v, part in parts.items()}
            abstention_by[group] = {v: _abstention(part) for v, part in parts.items()}
    return {"all": means(rows, seed=seed), "by": by, "abstention": _abstention(rows), "abstention_by": abstention_by}


def _abstention(rows: Sequence[AnswerRow]) -> dict[str, Any]:
    return abstention([(r.abstained, not r.answerable) for r in rows]).as_dict()


def read_rows(path: Path) -> dict[str, dict[str, float | None]]:
    """`{question id: scores}` of an earlier report (its folder or its results.json)."""
    path = Path(path)
    path = path / RESULTS_JSON if path.is_dir() else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {row["id"]: row["scores"] for row in data["rows"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: not a report of graded answers ({exc})") from None


def summary(
    rows: Sequence[AnswerRow], meta: Mapping[str, Any], against: Rows | None = None, *, seed: int = 0
) -> dict[str, Any]:
    out: dict[str, Any] = {**meta, "questions": len(rows), "aggregates": aggregate(rows, seed=seed)}
    if against is not None:
        mine = {r.id: r.scores for r in rows}
        out["comparison"] = [c.as_dict() for c in compare_runs(against, mine, METRICS, seed=seed)]
    out["rows"] = [r.as_dict() for r in rows]
    return out


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _means_table(table: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = ["| metric | mean | 95% CI | n |", "|---|---:|---:|---:|"]
    for metric, m in table.items():
        if m["n"]:
            ci = f"{_fmt(m['low'])}-{_fmt(m['high'])}"
            lines.append(f"| {metric} | {_fmt(m['mean'], 3)} | {ci} | {m['n']} |")
    return lines


def _stopped(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """How many abstentions the evidence check made before any model call (research/evidence.py), and how many
    drafts the citation check withdrew (research/citecheck.py): the rest are the drafter's own."""
    checked = [r for r in rows if r.get("evidence") is not None]
    said = []
    if checked:
        stopped = sum(bool(r.get("stopped")) for r in checked)
        said.append(f"{stopped} of the {len(checked)} checked before drafting were stopped there, with no model call.")
    withdrawn = sum(bool(r.get("withdrawn")) for r in rows)
    if withdrawn:
        said.append(f"{withdrawn} drafted, then withdrawn: none of their citations held up.")
    return said


def markdown(result: Mapping[str, Any]) -> str:
    agg = result["aggregates"]
    lines = [f"# Graded answers: {result.get('set', '')}", ""]
    llm = result.get("llm") or "extractive (no model: the sources' own sentences, quoted)"
    checked = "the drafting model's" if result.get("llm") else "lexical"
    judge = result.get("judge") or f"none (the citation check's verdicts, {checked}; no relevancy)"
    lines += [f"{result['questions']} questions", f"- drafts: {llm}", f"- judge: {judge}"]
    lines += [f"- {name}: {result[name]}" for name in ("collection", "against") if result.get(name)] + [""]
    lines += _means_table(agg["all"])
    a = agg["abstention"]
    lines += [
        "",
        f"Abstention: rate {_fmt(a['rate'])}, precision {_fmt(a['precision'])}, recall {_fmt(a['recall'])}",
        f"({a['abstained']} abstained; {a['expected']} of {a['questions']} called for one).",
        *_stopped(result.get("rows", [])),
    ]
    for group, values in agg["abstention_by"].items():
        if len(values) < 2:  # one value: the overall figures again
            continue
        lines += ["", f"Abstention by {group}:", "", f"| {group} | rate | precision | recall | abstained | due | n |"]
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
        for value, b in values.items():
            cells = [_fmt(b["rate"]), _fmt(b["precision"]), _fmt(b["recall"]), b["abstained"], b["expected"]]
            lines.append(f"| {value} | " + " | ".join(map(str, cells)) + f" | {b['questions']} |")
    for group, values in agg["by"].items():
        if len(values) < 2:  # one value: the overall table again
            continue
        for value, table in values.items():
            lines += ["", f"## {group} = {value}", "", *_means_table(table)]
    if result.get("comparison") is not None:
        lines += ["", "## Against the earlier run (A)", "", "| metric | A | B | n | p | better |"]
        lines.append("|---|---:|---:|---:|---:|---|")
        for c in result["comparison"]:
            tested = c["p"] is not None
            better = c["better"] if c["better"] and tested and c["p"] < SIGNIFICANCE else "-"
            p = f"{c['p']:.3f}" if tested else "too few"
            lines.append(f"| {c['metric']} | {c['a']:.3f} | {c['b']:.3f} | {c['n']} | {p} | {better} |")
        lines += ["", f"Paired bootstrap over the questions both graded; better: p < {SIGNIFICANCE}."]
    lines += ["", "## Questions", "", "| id | kind | abst. | faith. | rel. | cite P | cite R | F1 |"]
    lines.append("|---|---|---|---:|---:|---:|---:|---:|")
    for row in result["rows"]:
        s = row["scores"]
        cells = [s["faithfulness"], s["relevancy"], s["citation_precision"], s["citation_recall"], s["f1"]]
        abst = "yes" if row["abstained"] else "no"  # right when it abstained exactly where an abstention was due
        abst += " (right)" if row["abstained"] != row["answerable"] else " (wrong)"
        lines.append(f"| {row['id']} | {row['kind']} | {abst} | " + " | ".join(_fmt(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write(out: Path, result: dict[str, Any]) -> None:
    write_reports(out, result, markdown(result))


__all__ = ["Comparison", "aggregate", "markdown", "read_rows", "summary", "write"]
