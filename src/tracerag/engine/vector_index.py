"""The embedded engine's dense side: vectors in immutable segments of plain files, searched exactly or by faiss HNSW.

A segment is written once and never changed: its vectors (float32, unit length), what a filter asks of each row
(`meta.npy`: the chunk's key, its document's key, corpus, language, first and last day) and the ids a hit names
(`ids.bin`, `ids.npy`: "chunk_id\\x1fdoc_id" per row, UTF-8, and the offsets). A segment of at least `HNSW_ROWS`
rows keeps its vectors in its faiss HNSW graph (`hnsw.faiss`, whose flat storage holds them), a smaller one in
`vec.npy`: the vectors are on disk once (the document store keeps its own copy, the source of truth). What a later
write deletes is a list of rows in a file of its own. `state.json` names the live segments and their deletions; the
writer replaces it atomically at each flush, after the files it names are written, so a reader (any process; files
are mapped, never locked) sees the last flush whole, and a kill -9 loses only what was not flushed. Files a merge
made obsolete are removed once the new state is written: a reader that still maps them keeps its mapping (POSIX),
and one that meets a missing file reads the state again.

Why faiss and exact search beside it: faiss' HNSW is the peer this engine is measured against (benchmarks/scale.py)
and serves a mapped graph to every process; a small segment is searched exactly (a matrix-vector product), and so is
a filtered search whose admitted rows are few, or whose HNSW search came back short: a filtered search returns
min(k, admitted) hits every time.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

STATE = "state.json"
# A segment this large gets an HNSW graph; a smaller one is searched exactly (every eval collection is: their
# quality is exact search's). Real e5 vectors are hard on a graph: on 11,751 of them and 249 real questions
# (xling-hipe), M 16 and efConstruction 128, the exact top 10 is found at 0.92 (ef 128), 0.97 (256), 0.99 (512),
# against ~1 ms for the exact search itself at that size (benchmarks/dense_recall.py, engine_choice.md).
HNSW_ROWS = 20_000
# A filtered search of a graph segment admitting at most this many rows scores them exactly; above, the graph is
# searched with the filter (faiss skips what it does not admit) and exact search only makes up a short answer.
# Gathering 20,000 rows from the graph's storage to score them was 68% of a filtered dense search at 100k.
EXACT_ROWS = 2_000
HNSW_M = 16  # graph degree (faiss' default)
HNSW_EF_BUILD = 128
HNSW_EF = 256  # the search's candidate list (at least k): `engine.dense_ef` sets it
MERGE_FACTOR = 4  # optimize() merges the segments smaller than a quarter of the largest into one
NO_DAY_START = np.iinfo(np.int32).max  # an undated chunk: no date range reaches it
NO_DAY_END = np.iinfo(np.int32).min
META = np.dtype([("key", "<i8"), ("doc", "<i8"), ("corpus", "<i4"), ("lang", "<i4"), ("ds", "<i4"), ("de", "<i4")])


def key_of(text: str) -> int:
    """A chunk's (or document's) 63-bit key: its id's hash. Two ids of a million collide with odds of 1 in 10^7."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little") >> 1


@dataclass
class Rows:
    """Rows on their way to a segment."""

    meta: list[tuple[int, int, int, int, int, int]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.meta)


class Segment:
    """One segment's files, mapped (read-only) on first use."""

    def __init__(self, folder: Path, record: dict[str, Any]):
        self.folder = folder
        self.name: str = record["name"]
        self.rows: int = record["rows"]
        self.has_hnsw: bool = record.get("hnsw", False)
        self.deleted_file: str | None = record.get("deleted")
        self._vec: np.ndarray | None = None
        self._meta: np.ndarray | None = None
        self._offsets: np.ndarray | None = None
        self._ids: bytes | None = None
        self._hnsw: Any = None
        self._live: np.ndarray | None = None
        self._sorted: tuple[np.ndarray, np.ndarray] | None = None

    def file(self, suffix: str) -> Path:
        return self.folder / f"{self.name}.{suffix}"

    @property
    def vectors(self) -> np.ndarray:
        """The rows' vectors, mapped: a graph's own storage where it has one (the vectors are kept once)."""
        if self._vec is None:
            if self.has_hnsw:
                import faiss

                storage = faiss.downcast_index(self.hnsw().storage)
                flat = faiss.rev_swig_ptr(storage.get_xb(), storage.ntotal * storage.d)  # type: ignore[attr-defined]
                self._vec = np.asarray(flat).reshape(storage.ntotal, storage.d)
            else:
                self._vec = np.load(self.file("vec.npy"), mmap_mode="r")
        return self._vec

    @property
    def meta(self) -> np.ndarray:
        if self._meta is None:
            self._meta = np.load(self.file("meta.npy"), mmap_mode="r")
        return self._meta

    def ids(self, rows: Sequence[int]) -> list[tuple[str, str]]:
        if self._offsets is None or self._ids is None:
            self._offsets = np.load(self.file("ids.npy"))
            self._ids = self.file("ids.bin").read_bytes()
        found = []
        for r in rows:
            text = self._ids[int(self._offsets[r]) : int(self._offsets[r + 1])].decode("utf-8")
            chunk_id, _, doc_id = text.partition("\x1f")
            found.append((chunk_id, doc_id))
        return found

    @property
    def deleted(self) -> np.ndarray:
        """The rows deleted since the segment was written (sorted)."""
        if self.deleted_file is None:
            return np.empty(0, dtype=np.int64)
        return np.load(self.folder / self.deleted_file)

    @property
    def live(self) -> np.ndarray | None:
        """Which rows are live (None: all of them)."""
        if self.deleted_file is None:
            return None
        if self._live is None:
            live = np.ones(self.rows, dtype=bool)
            live[self.deleted] = False
            self._live = live
        return self._live

    def hnsw(self) -> Any:
        if self._hnsw is None:
            import faiss

            self._hnsw = faiss.read_index(str(self.file("hnsw.faiss")), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
        return self._hnsw

    def rows_of_keys(self, keys: np.ndarray) -> np.ndarray:
        """The rows holding any of `keys` (a chunk is in at most one live row of the index)."""
        if self._sorted is None:
            column = np.asarray(self.meta["key"])
            order = np.argsort(column, kind="stable")
            self._sorted = (column[order], order)
        column, order = self._sorted
        at = np.searchsorted(column, keys)
        at = np.minimum(at, len(column) - 1) if len(column) else at
        hit = column[at] == keys if len(column) else np.zeros(len(keys), dtype=bool)
        return np.asarray(order[at[hit]], dtype=np.int64)

    def search(
        self, query: np.ndarray, k: int, admitted: np.ndarray | None, ef: int = HNSW_EF
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best `k` rows among `admitted` (a mask; None: every live row) by inner product: (scores, rows)."""
        mask = self.live if admitted is None else (admitted if self.live is None else admitted & self.live)
        allowed = self.rows if mask is None else int(np.count_nonzero(mask))
        want = min(k, allowed)
        if want == 0:
            return np.empty(0, dtype=np.float32), np.empty(0, dtype=np.int64)
        if self.has_hnsw and (mask is None or allowed > EXACT_ROWS):
            scores, rows = self._hnsw_search(query, want, mask, ef)
            if len(rows) >= want:
                return scores, rows
        rows = np.arange(self.rows) if mask is None else np.flatnonzero(mask)
        scores = self.vectors[rows] @ query if mask is not None else self.vectors @ query
        if len(rows) > want:
            top = np.argpartition(-scores, want - 1)[:want]
            return scores[top], rows[top]
        return scores, rows

    def _hnsw_search(
        self, query: np.ndarray, k: int, mask: np.ndarray | None, ef: int
    ) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        params = faiss.SearchParametersHNSW(efSearch=max(ef, k))  # type: ignore[attr-defined]
        if mask is not None:
            bits = np.packbits(mask, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(self.rows, faiss.swig_ptr(bits))
        scores, rows = self.hnsw().search(query.reshape(1, -1), k, params=params)
        keep = rows[0] >= 0
        return scores[0][keep], rows[0][keep].astype(np.int64)


class VectorIndex:
    """The vectors of a collection in `path` (see the module docstring). Only the writer calls the write methods."""

    def __init__(self, path: Path, dim: int, *, create: bool = False, ef: int = HNSW_EF):
        self.path = Path(path)
        self.dim = dim
        self.ef = ef  # the HNSW search's candidate list
        if create and not (self.path / STATE).exists():
            self.path.mkdir(parents=True, exist_ok=True)
            self._write_state({"dim": dim, "next": 0, "segments": [], "corpora": [], "languages": []})
        self._stamp: tuple[int, int, int] | None = None
        self._state: dict[str, Any] = {}
        self._segments: dict[str, Segment] = {}
        self._pending = Rows()
        self._deleted: dict[str, set[int]] = {}  # segment → rows deleted since the last flush
        self._refresh()
        if self._state.get("dim") != dim:
            raise ValueError(f"{self.path} holds {self._state.get('dim')}-d vectors, not {dim}-d")
        if create:
            self._remove_leftovers()

    def _remove_leftovers(self) -> None:
        """Files the state does not name: what a writer killed during a flush or a merge left (the state is
        replaced last, so they were never part of the index). Only the writer calls this, under the writer lock."""
        live = {record["name"] for record in self._state["segments"]}
        deletions = {record["deleted"] for record in self._state["segments"] if record.get("deleted")}
        for path in self.path.iterdir():
            name = path.name
            segment = name.partition(".")[0]
            current = segment in live and not name.endswith(".tmp") and (".del" not in name or name in deletions)
            if name != STATE and not current:
                with contextlib.suppress(OSError):
                    path.unlink()

    # -- state ----------------------------------------------------------------------------------------

    def _read_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path / STATE)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _refresh(self) -> None:
        """Read the state again when another process (or this one) replaced it."""
        stamp = self._read_stamp()
        if stamp == self._stamp:
            return
        state = json.loads((self.path / STATE).read_text(encoding="utf-8"))
        segments = {}
        for record in state["segments"]:
            old = self._segments.get(record["name"])
            if old is not None and old.deleted_file == record.get("deleted"):
                segments[record["name"]] = old
            else:
                segments[record["name"]] = Segment(self.path, record)
        self._state, self._segments, self._stamp = state, segments, stamp

    def _write_state(self, state: dict[str, Any]) -> None:
        _write_atomic(self.path / STATE, lambda out: json.dump(state, out), mode="w")

    def _code(self, table: str, value: str) -> int:
        values: list[str] = self._state[table]
        if value not in values:
            values.append(value)
        return values.index(value)

    # -- writes ---------------------------------------------------------------------------------------

    def add(
        self,
        chunk_ids: Sequence[str],
        doc_ids: Sequence[str],
        corpora: Sequence[str],
        languages: Sequence[str],
        days: Sequence[tuple[int, int] | None],
        vectors: np.ndarray,
    ) -> None:
        """Add (or replace) these chunks' vectors; a replaced chunk's old row is deleted."""
        self.delete_keys([key_of(c) for c in chunk_ids])
        vectors = np.asarray(vectors, dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms == 0, 1, norms)  # cosine: unit vectors, scored by inner product
        for i, cid in enumerate(chunk_ids):
            span = days[i]
            self._pending.meta.append(
                (
                    key_of(cid),
                    key_of(doc_ids[i]),
                    self._code("corpora", corpora[i]),
                    self._code("languages", languages[i]),
                    span[0] if span else NO_DAY_START,
                    span[1] if span else NO_DAY_END,
                )
            )
            self._pending.ids.append(f"{cid}\x1f{doc_ids[i]}")
            self._pending.vectors.append(vectors[i])

    def delete_keys(self, keys: Sequence[int]) -> None:
        if not keys:
            return
        wanted = np.asarray(sorted(set(keys)), dtype=np.int64)
        for seg in self._segments.values():
            rows = seg.rows_of_keys(wanted)
            if len(rows):
                self._deleted.setdefault(seg.name, set()).update(int(r) for r in rows)
        dropped = set(keys)
        self._drop_pending(lambda meta: meta[0] in dropped)

    def delete_docs(self, doc_ids: Sequence[str]) -> None:
        if not doc_ids:
            return
        docs = np.asarray([key_of(d) for d in doc_ids], dtype=np.int64)
        for seg in self._segments.values():
            rows = np.flatnonzero(np.isin(seg.meta["doc"], docs))
            if len(rows):
                self._deleted.setdefault(seg.name, set()).update(int(r) for r in rows)
        wanted = set(int(d) for d in docs)
        self._drop_pending(lambda meta: meta[1] in wanted)

    def _drop_pending(self, drop: Callable[[tuple], bool]) -> None:
        if not self._pending:
            return
        keep = [i for i, meta in enumerate(self._pending.meta) if not drop(meta)]
        if len(keep) < len(self._pending):
            p = self._pending
            self._pending = Rows([p.meta[i] for i in keep], [p.ids[i] for i in keep], [p.vectors[i] for i in keep])

    @property
    def dirty(self) -> bool:
        return bool(self._pending) or bool(self._deleted)

    def flush(self) -> None:
        """Write what was added as a new segment and what was deleted, then the state that names them."""
        if not self.dirty:
            return
        self._refresh()
        state = json.loads(json.dumps(self._state))
        if self._pending:
            record = self._write_segment(state, self._pending.meta, self._pending.ids, np.stack(self._pending.vectors))
            state["segments"].append(record)
        obsolete = []
        for record in state["segments"]:
            rows = self._deleted.get(record["name"])
            if not rows:
                continue
            before = Segment(self.path, record).deleted
            merged = np.union1d(before, np.asarray(sorted(rows), dtype=np.int64))
            name = f"{record['name']}.del{state['next']}.npy"
            state["next"] += 1
            _save(self.path / name, merged)
            if record.get("deleted"):
                obsolete.append(record["deleted"])
            record["deleted"] = name
            record["dead"] = len(merged)
        self._write_state(state)
        self._pending = Rows()
        self._deleted = {}
        self._refresh()
        for name in obsolete:
            with contextlib.suppress(OSError):
                (self.path / name).unlink()

    def _write_segment(
        self, state: dict[str, Any], meta: Sequence[tuple] | np.ndarray, ids: Sequence[str], vectors: np.ndarray
    ) -> dict[str, Any]:
        name = f"seg{state['next']:06d}"
        state["next"] += 1
        rows = len(ids)
        graph = rows >= HNSW_ROWS
        if not graph:  # a graph keeps the vectors in its own storage
            _save(self.path / f"{name}.vec.npy", np.ascontiguousarray(vectors, dtype=np.float32))
        _save(
            self.path / f"{name}.meta.npy", np.asarray(meta, dtype=META) if not isinstance(meta, np.ndarray) else meta
        )
        blobs = [s.encode("utf-8") for s in ids]
        offsets = np.zeros(rows + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(b) for b in blobs])
        _save(self.path / f"{name}.ids.npy", offsets)
        _write_atomic(self.path / f"{name}.ids.bin", lambda out: out.write(b"".join(blobs)))
        if graph:
            self._build_hnsw(self.path / f"{name}.hnsw.faiss", vectors)
        return {"name": name, "rows": rows, "hnsw": graph}

    def _build_hnsw(self, path: Path, vectors: np.ndarray) -> None:
        import faiss

        graph = faiss.IndexHNSWFlat(self.dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        graph.hnsw.efConstruction = HNSW_EF_BUILD
        graph.add(np.ascontiguousarray(vectors, dtype=np.float32))
        tmp = path.with_suffix(".tmp")
        try:
            faiss.write_index(graph, str(tmp))
        except RuntimeError as exc:  # faiss says a short write, not why
            tmp.unlink(missing_ok=True)
            free = shutil.disk_usage(self.path).free
            if free < len(vectors) * vectors.shape[1] * 4:
                raise OSError(errno.ENOSPC, f"No space left on device ({free:,} bytes free)", str(self.path)) from exc
            raise
        with open(tmp, "rb") as written:
            os.fsync(written.fileno())
        os.replace(tmp, path)

    def optimize(self) -> None:
        """Merge the small segments (under a quarter of the largest, or without a graph) into one, dropping their
        deleted rows; a merged segment of `HNSW_ROWS` rows or more gets its graph."""
        self.flush()
        segments = list(self._segments.values())
        if not segments:
            return
        largest = max(s.rows for s in segments)
        small = [s for s in segments if not s.has_hnsw or s.rows * MERGE_FACTOR < largest]
        rewrite = [s for s in segments if s.live is not None and s.rows and (s.rows - len(s.deleted)) < s.rows / 2]
        merge = {s.name: s for s in small + rewrite}
        if len(merge) == 1:
            (only,) = merge.values()
            alone_is_fine = only.live is None and (only.has_hnsw or only.rows < HNSW_ROWS)
            if alone_is_fine:
                return
        if not merge:
            return
        parts = list(merge.values())
        metas: list[np.ndarray] = []
        ids: list[str] = []
        vectors: list[np.ndarray] = []
        for seg in parts:
            rows = np.arange(seg.rows) if seg.live is None else np.flatnonzero(seg.live)
            metas.append(np.asarray(seg.meta[rows]))
            ids.extend(f"{c}\x1f{d}" for c, d in seg.ids(rows.tolist()))
            vectors.append(np.asarray(seg.vectors[rows]))
        state = json.loads(json.dumps(self._state))
        kept = [r for r in state["segments"] if r["name"] not in merge]
        if ids:
            kept.append(self._write_segment(state, np.concatenate(metas), ids, np.concatenate(vectors)))
        state["segments"] = kept
        self._write_state(state)
        self._refresh()
        for seg in parts:
            for path in [*seg.folder.glob(f"{seg.name}.*")]:
                with contextlib.suppress(OSError):
                    path.unlink()

    # -- reads ----------------------------------------------------------------------------------------

    def count(self) -> int:
        self._refresh()
        return sum(s.rows - len(s.deleted) for s in self._segments.values())

    def corpus_codes(self, corpora: Sequence[str]) -> np.ndarray:
        """The codes of the corpora at or under any of `corpora` ("a" admits "a/x")."""
        wanted = set(corpora)
        found = [
            i
            for i, c in enumerate(self._state["corpora"])
            if any("/".join(c.split("/")[: n + 1]) in wanted for n in range(c.count("/") + 1))
        ]
        return np.asarray(found, dtype=np.int32)

    def language_codes(self, languages: Sequence[str]) -> np.ndarray:
        wanted = set(languages)
        return np.asarray([i for i, v in enumerate(self._state["languages"]) if v in wanted], dtype=np.int32)

    def search(
        self, query: np.ndarray, k: int, admit: Callable[[np.ndarray], np.ndarray] | None = None
    ) -> list[tuple[str, str, float]]:
        """The `k` nearest chunks by cosine among the rows `admit(meta)` admits (None: all): (chunk_id, doc_id,
        score), best first."""
        for attempt in range(3):
            try:
                return self._search(query, k, admit)
            except FileNotFoundError:  # a merge removed a segment this process had not yet seen go
                if attempt == 2:
                    raise
                self._stamp = None
                self._refresh()
        return []

    def _search(
        self, query: np.ndarray, k: int, admit: Callable[[np.ndarray], np.ndarray] | None
    ) -> list[tuple[str, str, float]]:
        self._refresh()
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        q = q / norm if norm else q
        found: list[tuple[float, Segment, int]] = []
        for seg in self._segments.values():
            mask = None if admit is None else admit(seg.meta)
            scores, rows = seg.search(q, k, mask, self.ef)
            found.extend((float(s), seg, int(r)) for s, r in zip(scores, rows, strict=True))
        found.sort(key=lambda item: -item[0])
        top = found[:k]
        hits: list[tuple[str, str, float]] = []
        for seg in {id(s): s for _, s, _ in top}.values():
            picked = [r for _, s, r in top if s is seg]
            names = dict(zip(picked, seg.ids(picked), strict=True))
            hits.extend((names[r][0], names[r][1], score) for score, s, r in top if s is seg)
        return sorted(hits, key=lambda h: (-h[2], h[0]))

    def files(self) -> list[Path]:
        return [self.path / STATE, *(p for s in self._segments.values() for p in self.path.glob(f"{s.name}.*"))]


def _write_atomic(path: Path, write: Callable[[Any], object], mode: str = "wb") -> None:
    """`write(file)` into a temporary file beside `path`, synced, then put in its place: a reader sees the old file
    or the new one whole, and a kill leaves at most a `.tmp` the next writer removes."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, mode, encoding="utf-8" if "b" not in mode else None) as out:
        write(out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def _save(path: Path, array: np.ndarray) -> None:
    _write_atomic(path, lambda out: np.save(out, array))
