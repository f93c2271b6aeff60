"""Chunks/s through an OpenAI-compatible embeddings endpoint at batch 16/64 and concurrency 1/4, in one run.

The endpoint is the fake server of the tests (tests/fakes/embeddings_server.py) with a fixed latency per request
(the round trip to a remote GPU box), so what is measured is the client's batching and concurrency, not a model.

    python benchmarks/embed_endpoint.py [--chunks 1024] [--latency-ms 20]

Writes benchmarks/results/embed_endpoint.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.embeddings_server import FakeEmbeddings  # noqa: E402
from tracerag.embed.endpoint import OpenAIEmbedder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=1024)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    texts = [
        f"chunk {i}: the council met on the {i % 28 + 1}th and spoke of the harbour works" for i in range(args.chunks)
    ]
    rows = []
    with FakeEmbeddings(dim=384, latency_s=args.latency_ms / 1000) as fake:
        for batch in (16, 64):
            for concurrency in (1, 4):
                emb = OpenAIEmbedder("fake-embed", fake.base_url, dim=384, batch_size=batch, concurrency=concurrency)
                start = time.perf_counter()
                vectors = emb.encode_documents(texts)
                seconds = time.perf_counter() - start
                assert vectors.shape == (args.chunks, 384)
                rows.append(
                    {
                        "batch": batch,
                        "concurrency": concurrency,
                        "seconds": round(seconds, 3),
                        "chunks_per_s": round(args.chunks / seconds, 1),
                        "requests": emb.requests,
                    }
                )
                emb.close()
    base = rows[0]["chunks_per_s"]
    for row in rows:
        row["ratio"] = round(row["chunks_per_s"] / base, 2)
    out = ROOT / "benchmarks" / "results"
    result = {"chunks": args.chunks, "latency_ms": args.latency_ms, "dim": 384, "rows": rows}
    (out / "embed_endpoint.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        f"# Embedding endpoint throughput ({args.chunks} chunks, {args.latency_ms:g} ms per request, fake server)",
        "",
        "| batch | concurrency | chunks/s | ratio to 16×1 | requests |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['batch']} | {r['concurrency']} | {r['chunks_per_s']} | {r['ratio']} | {r['requests']} |" for r in rows
    ]
    (out / "embed_endpoint.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
