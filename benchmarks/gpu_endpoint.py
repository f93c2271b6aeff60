"""TRACE's OpenAI-compatible embedding client (`embed.endpoint.OpenAIEmbedder`, the encoder of `--embed-model
openai:MODEL`) against an embedding server on a GPU: how many chunks a second the client's batching and concurrency
get through when the model is fast, which is the path a user with a GPU takes for 10^6 chunks.

    python benchmarks/gpu_endpoint.py --texts texts.jsonl --chunks 200000 --out OUTDIR     # on a machine with CUDA

No model weights can reach the GPU machines this was run on (no network, 64 MiB carried at most: the e5-small
weights are 72 MB), so the server runs a transformer of multilingual-e5-small's shape (12 layers, 384 wide, 12 heads,
1,536 feed-forward, a 250,037-word vocabulary, mean pooling) with random weights in fp16: the same arithmetic as the
real model, so the same speed, and vectors that mean nothing (nothing here looks at them but the client's checks).
Its tokenizer cuts words into pieces of up to 4 letters (about as many tokens as the real one) and hashes them into
the vocabulary (a real server tokenizes in
Rust; here it is Python in the server, counted in the time). Texts: real HIPE-2022 chunks (`--texts`, one JSON string
a line), repeated to `--chunks`. The server is a plain threaded HTTP server in this file, batching each request on
the GPU; the client is TRACE's own, unchanged, in another process, as `tracerag embed` would use it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

VOCAB = 250_037
MAX_TOKENS = 512
# pieces of up to 4 letters: 265 tokens for a mean HIPE-2022 chunk of 852 characters, where the real tokenizer
# makes 254 (benchmarks/results/embed_speed.md), so the model does as much work as on real tokens
_WORD = re.compile(r"\w{1,4}|[^\w\s]")


def _tokens(text: str) -> list[int]:
    ids = [0]
    for word in _WORD.findall(text)[: MAX_TOKENS - 2]:
        ids.append(zlib.crc32(word.encode()) % (VOCAB - 3) + 3)
    ids.append(2)
    return ids


def serve(port: int, ready: Path) -> None:
    import torch
    from transformers import BertConfig, BertModel

    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=384,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=1536,
        max_position_embeddings=MAX_TOKENS + 2,
    )
    torch.manual_seed(0)
    model = BertModel(config, add_pooling_layer=False).to(device).eval()
    if device == "cuda":
        model = model.half()
    lock = threading.Lock()
    served = {"texts": 0, "tokens": 0, "gpu_s": 0.0}

    def embed(texts: list[str]) -> list[list[float]]:
        ids = [_tokens(t) for t in texts]
        width = max(len(i) for i in ids)
        batch = torch.zeros((len(ids), width), dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for row, seq in enumerate(ids):
            batch[row, : len(seq)] = torch.tensor(seq)
            mask[row, : len(seq)] = 1
        with lock, torch.inference_mode():
            start = time.perf_counter()
            batch, mask = batch.to(device), mask.to(device)
            hidden = model(input_ids=batch, attention_mask=mask).last_hidden_state.float()
            pooled = (hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)
            vectors = torch.nn.functional.normalize(pooled, dim=-1).cpu().tolist()
            served["gpu_s"] += time.perf_counter() - start
            served["texts"] += len(ids)
            served["tokens"] += int(mask.sum())
        return vectors

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body = json.dumps(served).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
            vectors = embed(texts)
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
            body = json.dumps({"object": "list", "data": data, "model": request.get("model")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    embed(["warm up"] * 8)
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    ready.write_text(json.dumps({"device": device, "name": torch.cuda.get_device_name() if device == "cuda" else ""}))
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=Path, required=True)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--batch", default="64,256")
    parser.add_argument("--concurrency", default="4,8")
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ready", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.port, args.ready)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from tracerag.embed.endpoint import OpenAIEmbedder

    base = [json.loads(line) for line in args.texts.read_text(encoding="utf-8").splitlines() if line.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    ready = args.out / "server-ready.json"
    ready.unlink(missing_ok=True)
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--port", str(args.port), "--ready", str(ready), "--texts", "-"],
    )
    try:
        while not ready.exists():
            if server.poll() is not None:
                raise SystemExit("the server did not start")
            time.sleep(0.5)
        info = json.loads(ready.read_text())
        url = f"http://127.0.0.1:{args.port}/v1"
        rows = []
        for batch in [int(b) for b in args.batch.split(",")]:
            for concurrency in [int(c) for c in args.concurrency.split(",")]:
                client = OpenAIEmbedder("e5-shaped", url, dim=384, batch_size=batch, concurrency=concurrency)
                texts = [f"{base[i % len(base)]} [{i}]" for i in range(args.chunks)]
                start = time.perf_counter()
                for i in range(0, len(texts), batch * concurrency * 4):  # as collection._encode hands them over
                    vectors = client.encode_documents(texts[i : i + batch * concurrency * 4])
                    assert vectors.shape[1] == 384
                seconds = time.perf_counter() - start
                rows.append(
                    {
                        "batch": batch,
                        "concurrency": concurrency,
                        "chunks": len(texts),
                        "seconds": round(seconds, 2),
                        "chunks_per_s": round(len(texts) / seconds, 1),
                        "requests": client.requests,
                        "retried": client.retried,
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
        with __import__("urllib.request").request.urlopen(f"http://127.0.0.1:{args.port}/stats") as answer:
            served = json.loads(answer.read())
        result = {
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "server": info,
            "cpus": os.cpu_count(),
            "mean_characters": round(sum(map(len, base)) / len(base), 1),
            "served": served,
            "runs": rows,
        }
        (args.out / "gpu_endpoint.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(json.dumps(result))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
