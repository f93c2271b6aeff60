"""A real session with `tracerag mcp`, for the docs page guide/assistants.md: the SDK's own client starts the
server as a subprocess over stdio, as a desktop client does, and makes the calls an assistant would make
(initialise, list the tools, search, read a document, keep it in a selection, export the selection as RIS, read
the search's trail), printing each request and its answer (long strings and lists shortened). Then
`tracerag trail list` shows the runs, marked with the client's name.

It lives beside the page generator (docs/hooks/, left out of the site) because it makes a page's content and
measures nothing (benchmarks/ holds measurements); it is run by hand, not at build time, since it builds a
collection and starts processes, and its run ids and times differ on each run.

    python docs/hooks/mcp_transcript.py                 # builds the demo collection in a temporary folder
    python docs/hooks/mcp_transcript.py --collection DIR  # or uses one (the calls add to its trail and selection)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp_types import Implementation

CLIENT = Implementation(name="docs-transcript", version="1.0")
QUERY = "students riot at the university"
QUESTION = "Student unrest in Cuba around 1900"
STRING = 50  # longer strings are cut to this many characters
ITEMS = 2  # longer lists show their first items and how many more
USER = "researcher"  # who decides, in the selection (the `selection.user` setting), unless already set
NUMBERS = re.compile(r"\[\s*(-?[\d.]+(?:,\s*-?[\d.]+)*)\s*\]")  # a list of numbers, indented over lines


def shorten(data: Any) -> Any:
    """`data` with long strings cut and long lists trimmed, saying what was left out."""
    if isinstance(data, str):
        return data if len(data) <= STRING else data[: STRING - 1] + "…"
    if isinstance(data, list):
        kept = [shorten(x) for x in data[:ITEMS]]
        return kept + [f"… {len(data) - ITEMS} more"] if len(data) > ITEMS else kept
    if isinstance(data, dict):
        return {k: shorten(v) for k, v in data.items()}
    return data


def show(arrow: str, what: str, data: Any = None) -> None:
    print(textwrap.fill(f"{arrow} {what}", 80, subsequent_indent="  "))
    if data is not None:
        text = json.dumps(shorten(data), ensure_ascii=False, indent=2)
        print(NUMBERS.sub(lambda m: "[" + ", ".join(m.group(1).replace(",", " ").split()) + "]", text))
    print()


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    show("→", f"tools/call {tool}", arguments)
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise SystemExit(f"{tool} failed: {result.content}")
    answer: dict[str, Any] = result.structured_content or {}
    show("←", f"{tool}: structuredContent", answer)
    if tool == "document":  # the same answer as text, for clients that read only text: fenced, labelled as data
        lines = getattr(result.content[0], "text", "").split("\n")
        print(f"← {tool}: content[0].text (its first lines wrapped at 80, then the last)")
        for line in lines[:4]:
            print(textwrap.fill(line, 80, subsequent_indent="  "))
        print(f"  … {len(lines) - 5} lines of the JSON above\n{lines[-1]}\n")
    return answer


async def session(collection: Path, tracerag: str) -> None:
    server = StdioServerParameters(
        command=tracerag,
        args=["mcp", "-c", str(collection)],
        env={"TRACERAG_SELECTION__USER": USER, **os.environ},  # the SDK passes on only HOME, PATH... unless told
    )
    show("→", f"initialize (client {CLIENT.name} {CLIENT.version}), server: tracerag mcp -c {collection.name}")
    async with Client(server, client_info=CLIENT) as client:
        info = client.server_info
        show(
            "←",
            "initialized",
            {
                "protocolVersion": client.protocol_version,
                "serverInfo": info.model_dump(exclude_none=True) if info else None,
                "instructions": client.instructions,
            },
        )
        show("→", "tools/list")
        tools = (await client.list_tools()).tools
        print(f"← {len(tools)} tools")
        for t in tools:
            about = f"{t.name}: {t.title} (inputs: {', '.join(t.input_schema.get('properties', {}))})"
            print(textwrap.fill(about, 80, initial_indent="  ", subsequent_indent="      "))
        print()
        found = await call(client, "search", {"query": QUERY, "k": 3})
        first = found["results"][0]["doc_id"]
        await call(client, "document", {"doc_id": first, "max_chars": 300})
        await call(
            client,
            "add_to_selection",
            {"question": QUESTION, "doc_id": first, "note": "the riot itself", "run_id": found["run_id"]},
        )
        await call(client, "export", {"question": QUESTION, "format": "ris"})
        uri = f"tracerag://trails/{collection.name}/{found['run_id']}"
        show("→", f"resources/read {uri}")
        contents = (await client.read_resource(uri)).contents[0]
        trail = json.loads(getattr(contents, "text", "{}"))
        run = trail["events"][0]
        kinds = [e.get("kind", "?") for e in trail["events"]]
        about = trail["run"]
        show("←", f"a {about['kind']} run, {about['status']}; {len(kinds)} events: {', '.join(kinds)}")
        shown = {k: run[k] for k in ("kind", "run", "question", "client") if k in run}
        show("←", "its first event (the run's), in part", shown)


def build_demo(folder: Path, tracerag: str) -> Path:
    """The demo collection from the packaged sample, which every install has (a datasets folder holding HIPE-2022
    would make it from that instead: the datasets setting is pointed at an empty folder)."""
    target = folder / "demo"
    env = {k: v for k, v in os.environ.items() if k != "TRACERAG_DEMO_DATA"} | {"TRACERAG_DATASETS": str(folder)}
    subprocess.run([tracerag, "demo", "-c", str(target)], check=True, capture_output=True, env=env)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--collection", type=Path, help="a collection to use (default: a fresh demo collection)")
    args = parser.parse_args()
    tracerag = shutil.which("tracerag") or sys.exit("tracerag is not on PATH (pip install -e .)")
    with tempfile.TemporaryDirectory() as tmp:
        collection = args.collection.resolve() if args.collection else build_demo(Path(tmp), tracerag)
        anyio.run(session, collection, tracerag)
        print(f"$ tracerag trail list -c {collection.name}")
        sys.stdout.flush()
        subprocess.run(
            [tracerag, "trail", "list", "-c", str(collection)], check=True, env={**os.environ, "COLUMNS": "80"}
        )


if __name__ == "__main__":
    main()
