"""Run the trial's calls (`calls.json`) against `tracerag mcp` over stdio, as a client would, and record each request
and its answer (shortened) with three checks made by machine; then write the report from the hand verdicts.

    python benchmarks/mcp_trial/run.py --collection /tmp/mcptrial/ocr --catalog /tmp/mcptrial/miami
    python benchmarks/mcp_trial/run.py --report-only     # the markdown again, after editing the verdicts

The server is a subprocess (`python -m tracerag.cli mcp -c DIR --catalog DIR`), reached through the SDK's client
with a client name of its own, so that the trail check can look for it. The machine checks, per call:

- `outside`: strings of the answer outside `retrieved_text` objects that quote 40 or more characters of any
  document of the collection (document text belongs in `retrieved_text` only);
- `trail`: the run the call recorded (its search/ask/review run, the catalog conversation, or the `call` run in the
  answer's `_meta`), and whether that run's trail names this client;
- the error's kind (protocol error with its code and message, or a tool error's text).

What came back is judged by hand against the data: `verdict` and `judged` in calls.json."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

HERE = Path(__file__).parent
RESULTS = HERE.parent / "results"
FINDINGS = HERE / "findings.md"  # what the verdicts add up to, written by hand after judging
CLIENT = types.Implementation(name="mcp-trial", version="1.0")
CLIENT_STAMP = f"mcp: {CLIENT.name} {CLIENT.version}"
QUOTE = 40  # characters of a document's text that make a string a quote
CATEGORIES = ("search", "read", "selection", "export", "catalog", "hostile")


# ------------------------------------------------------------------------------------------------ arguments


def resolve(value: Any, answers: dict[str, Any]) -> Any:
    """`$ID.a.0.b` is the value at that path in call ID's answer; {"$repeat": S, "times": N} is S * N."""
    if isinstance(value, str) and value.startswith("$"):
        cid, *path = value[1:].split(".")
        found: Any = answers[cid]  # KeyError: that call gave no answer
        for step in path:
            found = found[int(step)] if isinstance(found, list) else found[step]
        return found
    if isinstance(value, dict) and "$repeat" in value:
        return value["$repeat"] * value["times"]
    if isinstance(value, dict):
        return {k: resolve(v, answers) for k, v in value.items()}
    return value


def short(value: Any, chars: int = 300, items: int = 5) -> Any:
    """The answer shortened for the record: long strings cut, long lists cut, with what was left out said."""
    if isinstance(value, str):
        return value if len(value) <= chars else f"{value[:chars]}… ({len(value)} chars)"
    if isinstance(value, list):
        kept = [short(v, chars, items) for v in value[:items]]
        return kept + ([f"… ({len(value)} items)"] if len(value) > items else [])
    if isinstance(value, dict):
        return {k: short(v, chars, items) for k, v in value.items()}
    return value


# ------------------------------------------------------------------------------------------------ the calls


async def run_calls(calls: list[dict[str, Any]], collection: Path, catalog: Path) -> list[dict[str, Any]]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tracerag.cli", "mcp", "-c", str(collection), "--catalog", str(catalog)],
        env=dict(os.environ),
    )
    answers: dict[str, Any] = {}
    records = []
    async with Client(params, client_info=CLIENT, read_timeout_seconds=600) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        records.append({"id": "session", "tools": tools})
        for call in calls:
            record: dict[str, Any] = {"id": call["id"], "tool": call["tool"]}
            try:
                arguments = resolve(call["arguments"], answers)
            except (KeyError, IndexError, TypeError) as exc:
                record |= {"outcome": "skipped", "why": f"a follow-up of a call that gave no answer: {exc!r}"}
                records.append(record)
                continue
            record["arguments"] = short(arguments, chars=120)
            try:
                result = await client.call_tool(call["tool"], arguments)
            except MCPError as exc:
                record |= {"outcome": "protocol_error", "code": exc.error.code, "message": exc.error.message,
                           "data": exc.error.data}  # fmt: skip
                records.append(record)
                continue
            text = result.content[0].text if result.content and isinstance(result.content[0], types.TextContent) else ""
            if result.is_error:
                record |= {"outcome": "tool_error", "message": text}
            else:
                answers[call["id"]] = result.structured_content
                record |= {
                    "outcome": "ok",
                    "summary": text.split("\n", 1)[0],
                    "meta": result.meta,
                    "answer": short(result.structured_content),
                    "full": result.structured_content,  # for the checks; dropped before writing
                }
            records.append(record)
    return records


# ------------------------------------------------------------------------------------------------ the checks


def walk(value: Any, path: str = "") -> Any:
    """Each string of `value` outside `retrieved_text` objects, with its path."""
    if isinstance(value, dict):
        if value.get("kind") == "retrieved_text":
            return
        for k, v in value.items():
            yield from walk(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from walk(v, f"{path}.{i}")
    elif isinstance(value, str):
        yield path, value


def quotes(text: str, docs: dict[str, str]) -> str | None:
    """The document `text` quotes 40 or more characters of, if any (windows of 40, every 20 characters)."""
    for start in range(0, len(text) - QUOTE + 1, QUOTE // 2):
        window = text[start : start + QUOTE]
        for doc_id, body in docs.items():
            if window in body:
                return doc_id
    return None


def check(records: list[dict[str, Any]], collection: Path, catalog: Path) -> None:
    from tracerag.collection import Collection
    from tracerag.config import load_settings
    from tracerag.trail import read_trail, trails_by_run

    with Collection.open(collection, load_settings(None), mode="read") as col:
        docs = {d.id: d.text for d in col.store.iter_documents()}
    runs = trails_by_run([collection, catalog])
    for record in records:
        full = record.pop("full", None)
        if full is None:
            continue
        record["outside"] = [
            f"{path} quotes {doc_id}" for path, text in walk(full) if (doc_id := quotes(text, docs)) is not None
        ]
        meta = record.get("meta") or {}
        run_id = full.get("run_id") or full.get("review_run") or meta.get("tracerag/call_run")
        path = runs.get(run_id) if run_id else None
        if path is None:
            record["trail"] = f"{run_id}: no trail file" if run_id else "no run named"
            continue
        first = read_trail(path)[0]
        client = getattr(first, "client", None)
        stamp = "" if client == CLIENT_STAMP else " NOT this client"
        record["trail"] = f"{run_id} ({first.run.value}): client {client!r}{stamp}"
        if meta.get("tracerag/call_run") and meta["tracerag/call_run"] != run_id:
            record["trail"] += f"; call run {meta['tracerag/call_run']}"


# ------------------------------------------------------------------------------------------------ the report


def cell(value: Any, chars: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text if len(text) <= chars else text[:chars] + "…"
    return text.replace("|", "\\|").replace("\n", " ")


def answered(record: dict[str, Any]) -> str:
    """What came back, in a line: the documents or services named first, else the answer's own summary."""
    if record["outcome"] == "ok":
        answer = record["answer"]
        listed = answer.get("results", answer.get("sources"))
        found = [h for h in listed if isinstance(h, dict)] if isinstance(listed, list) else []
        if found:
            return f"{len(found)} hits: " + ", ".join(f"{h['doc_id']} ({h['date'] or 'undated'})" for h in found)
        if "outcome" in answer and "cards" in answer:
            cards = [c["name"] for c in answer["cards"] if isinstance(c, dict)]
            return f"{answer['outcome']}: " + ("; ".join(cards) if cards else answer["reply"])
        return record["summary"]
    if record["outcome"] == "protocol_error":
        return f"protocol error {record['code']}: {record['message']}"
    if record["outcome"] == "tool_error":
        return f"tool error: {record['message']}"
    return f"skipped: {record['why']}"


def report(calls: list[dict[str, Any]], records: list[dict[str, Any]]) -> str:
    by_id = {r["id"]: r for r in records}
    tally: dict[str, Counter[str]] = {c: Counter() for c in CATEGORIES}
    for call in calls:
        tally[call["category"]][call.get("verdict", "unjudged")] += 1
    lines = [
        "# `tracerag mcp` trial: calls an assistant makes for people",
        "",
        "Made and checked as `benchmarks/mcp_trial/README.md` says: "
        f"{len(calls)} calls over stdio by the SDK's client (`{CLIENT_STAMP}`), on a collection of 500 HIPE-OCRepair "
        "newspaper paragraphs and pages (en, de, fr; 1801-1959 and undated) and the Miami 211 catalog, no language "
        "model. Verdicts by hand against the data (`verdict`, `judged` in calls.json); the columns `outside` and "
        "`trail` are the runner's checks (document text outside `retrieved_text`; the run recorded and whether its "
        "trail names the client).",
        "",
        "| category | calls | pass | partial | fail |",
        "|---|---|---|---|---|",
    ]
    for cat in CATEGORIES:
        t = tally[cat]
        lines.append(f"| {cat} | {sum(t.values())} | {t['pass']} | {t['partial']} | {t['fail']} |")
    total = sum((tally[c] for c in CATEGORIES), Counter())
    lines += [f"| all | {sum(total.values())} | {total['pass']} | {total['partial']} | {total['fail']} |", ""]
    if FINDINGS.exists():
        lines += [FINDINGS.read_text(encoding="utf-8").strip(), ""]
    for cat in CATEGORIES:
        lines += [f"## {cat}", "", "| id | for | request | answer | outside / trail | verdict | judged |",
                  "|---|---|---|---|---|---|---|"]  # fmt: skip
        for call in (c for c in calls if c["category"] == cat):
            rec = by_id.get(call["id"], {"outcome": "skipped", "why": "not run"})
            checks = "; ".join(filter(None, ["; ".join(rec.get("outside", [])) or "", rec.get("trail", "")]))
            request = f"{call['tool']} {cell(rec.get('arguments', call['arguments']), 120)}"
            lines.append(
                f"| {call['id']} | {cell(call['for'], 60)} | {cell(request, 160)} | {cell(answered(rec), 260)} | "
                f"{cell(checks, 120)} | {call.get('verdict', '?')} | {cell(call.get('judged', ''), 400)} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collection", type=Path, default=Path("/tmp/mcptrial/ocr"))
    parser.add_argument("--catalog", type=Path, default=Path("/tmp/mcptrial/miami"))
    parser.add_argument("--calls", type=Path, default=HERE / "calls.json")
    parser.add_argument("--out", type=Path, default=RESULTS / "mcp_trial.jsonl")
    parser.add_argument("--report", type=Path, default=RESULTS / "mcp_trial.md")
    parser.add_argument("--report-only", action="store_true", help="Write the report from --out and the verdicts.")
    args = parser.parse_args()
    calls = json.loads(args.calls.read_text(encoding="utf-8"))["calls"]
    if args.report_only:
        records = [json.loads(line) for line in args.out.read_text(encoding="utf-8").splitlines()]
    else:
        records = anyio.run(run_calls, calls, args.collection, args.catalog)
        check(records, args.collection, args.catalog)
        with args.out.open("w", encoding="utf-8") as f:
            for record in records:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
    args.report.write_text(report(calls, records), encoding="utf-8")
    print(f"{len(records) - 1} calls -> {args.out}, {args.report}")


if __name__ == "__main__":
    main()
