"""One collection's index, shared by every process that uses it: whoever holds the shard serves it.

Qdrant Edge opens a shard's write-ahead log exclusively and has no read-only mode; worse, a second process that
merely *tries* to load a shard someone else holds can break the holder's next flush. So exactly one process at
a time loads the shard (the owner, holding `engine.lock`), and serves it to the others over a private Unix
socket (`engine.json` beside the lock says where). Every other process is a client that sends each call to
the owner. The owner is whoever came first, except that a writer (ingest, embed) always becomes the owner:
it takes `intent.lock` exclusively, asks the owner to hand over, waits for `engine.lock`, then lets go of the
intent; a reader only tries to become owner while it can take `intent.lock` shared, so no reader snatches
the shard from a waiting writer. An owner asked to hand over finishes the call in progress, closes its shard,
releases the lock and becomes a client itself. An owner that closes (its command is done) stops accepting,
finishes what is in flight, flushes, closes and releases; its clients reconnect and one of them becomes owner.
An owner killed with kill -9 drops its locks with its life: its clients reconnect the same way.

Every engine call is idempotent (point ids derive from chunk ids, deletes are by document id), so a call that
met a closed connection is simply sent again, to whoever owns the index by then.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tracerag.engine import EngineHit, FieldHits, FieldStats, IndexedChunk, SearchEngine, wire
from tracerag.engine.points import StoredPoint
from tracerag.errors import CollectionBusyError, CollectionError, ReadOnlyError
from tracerag.locks import FileLock, Holder, read_extra, read_note, write_note
from tracerag.model import Filter

READER_PATIENCE_S = 30.0  # how long a reader waits for an index that is changing hands or busy, then exit 3
WRITER_PATIENCE_S = 60.0  # how long a writer waits for the owner to hand over, without --wait
NOTICE_AFTER_S = 1.0  # a wait longer than this is said on stderr
_READS = ("bm25", "dense", "phrase", "count", "field_stats")
# How a client reads each read's reply: a lexical search comes back per field, as the engine found it.
_DECODE: dict[str, Callable[[Any], Any]] = {
    "bm25": wire.decode_field_hits,
    "phrase": wire.decode_field_hits,
    "dense": wire.decode_hits,
    "count": int,
    "field_stats": wire.decode_field_stats,
}
_counter = itertools.count()


class _Moved(Exception):
    """The process asked no longer owns the index (it handed it over, or is closing)."""


def socket_dir() -> Path:
    """A folder only this user can enter, for the owner's socket. Socket paths are limited to ~107 bytes, so it
    is short: `<tmp>/tracerag-<uid>`, or a fresh private folder when that one is not ours."""
    base = Path(tempfile.gettempdir())
    if len(str(base)) > 60:
        base = Path("/tmp")
    folder = base / f"tracerag-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    st = folder.lstat()
    if folder.is_symlink() or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return Path(tempfile.mkdtemp(prefix="tracerag-", dir=base))  # someone else made it: do not trust it
    return folder


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (ValueError, OSError):
        return True  # not ours to judge (another user's process, or not a pid)
    return True


def _peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end (Linux); None where the platform cannot tell."""
    if not hasattr(socket, "SO_PEERCRED"):
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", raw)[1]


class SharedEngine:
    """A `SearchEngine` over an index that other processes may be using at the same time.

    `open_engine` loads the shard (only ever called while this process holds `engine.lock`). A writer attaches
    at once (see `attach`); a reader on its first call. `patience` bounds every wait, in seconds (None: wait as
    long as it takes); `notify` is told, once per wait, what is being waited for.
    """

    def __init__(
        self,
        index: Path,
        *,
        state_dir: Path,
        open_engine: Callable[[], SearchEngine],
        writer: bool,
        label: str,
        patience: float | None,
        notify: Callable[[str], None],
        dim: int | None = None,
    ):
        self.index = Path(index)
        self.dim = dim
        self.writer = writer
        self.label = label
        self.patience = patience
        self.notify = notify
        self._open_engine = open_engine
        self._state = Path(state_dir)
        self._engine_lock = FileLock(self._state / "engine.lock")
        self._intent = self._state / "intent.lock"
        self._note = self._state / "engine.json"
        self._real = str(self.index.resolve())
        self._tag = hashlib.sha256(self._real.encode()).hexdigest()[:16]
        self._lock = threading.RLock()  # the local shard: the server threads and the caller's thread share it
        self._client_lock = threading.Lock()
        self._local: SearchEngine | None = None
        self._server: _Server | None = None
        self._client: _Client | None = None
        self._closed = False

    # -- roles ----------------------------------------------------------------------------------------------

    @property
    def role(self) -> str:
        """ "owner" (this process serves the shard), "client" (another one does) or "detached" (not yet)."""
        if self._local is not None:
            return "owner"
        return "client" if self._client is not None else "detached"

    def owner(self) -> Holder | None:
        """The process that serves the index now (maybe this one), or None when nobody does."""
        if self._local is not None:
            return read_note(self._note) or Holder.me()
        if not self._engine_lock.path.exists() or self._engine_lock.is_free():
            return None
        return read_note(self._note) or Holder(0, "", "", "")

    def attach(self) -> None:
        """Become the owner or a client now, rather than at the first call."""
        deadline = self._deadline()
        with self._lock:
            if self._local is not None or self._client is not None:
                return
        if self.writer:
            self._attach_writer(deadline)
        else:
            self._attach_reader(deadline)

    def _deadline(self) -> float | None:
        return None if self.patience is None else time.monotonic() + self.patience

    def _attach_reader(self, deadline: float | None) -> None:
        waited = _Wait(self, deadline, lambda who: f"waiting for the index of {self.label} ({who})…")
        while True:
            if self._check_open() and self._try_own():
                return
            client = self._connect()
            if client is not None:
                self._client = client
                return
            waited.tick()

    def _try_own(self) -> bool:
        """Take the shard if nobody holds it and no writer is on its way to it."""
        intent = FileLock(self._intent)
        if not intent.acquire(shared=True):
            return False
        try:
            if not self._engine_lock.acquire():
                return False
            self._become_owner()
            return True
        finally:
            intent.release()

    def _attach_writer(self, deadline: float | None) -> None:
        intent = FileLock(self._intent)
        waited = _Wait(self, deadline, lambda who: f"waiting for {who} to hand over the index of {self.label}…")
        while not intent.acquire():  # readers hold it shared for microseconds, or while they load the shard
            waited.tick(sleep=False)
            time.sleep(0.005)  # short and steady: readers probing it at random must not starve the writer
        try:
            asked: tuple[object, ...] = ()
            asked_at = 0.0
            while not self._engine_lock.acquire():
                note = read_extra(self._note)
                key = (note.get("pid"), note.get("since"), note.get("socket"))
                if (key != asked or time.monotonic() - asked_at > 2.0) and self._ask_handover(note):
                    asked, asked_at = key, time.monotonic()
                waited.tick()
            self._become_owner()
        finally:
            intent.release()

    def _ask_handover(self, note: dict) -> bool:
        path = note.get("socket")
        if not isinstance(path, str):
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(5.0)
                sock.connect(path)
                wire.send(sock, {"op": "handover", "index": self._real})
                reply = wire.recv(sock)
        except PermissionError:
            raise CollectionBusyError(self._other_user(note)) from None
        except (OSError, wire.WireError):
            return False
        if "error" in reply and reply["error"].get("kind") == "refused":
            raise CollectionBusyError(f"{self.label}: {reply['error'].get('message')}")
        return True

    def _become_owner(self) -> None:
        """Load the shard and serve it. Called holding engine.lock; gives it back if anything fails."""
        try:
            with self._lock:
                if self._closed:
                    raise CollectionError(f"{self.label}: the collection is closed")
                try:
                    self._local = self._open_engine()
                except CollectionError:
                    raise
                except Exception as exc:  # the engine's own errors are plain Exceptions
                    raise CollectionError(f"{self.label}: cannot load the index in {self.index}: {exc}") from exc
                try:
                    self._server = _Server(self, socket_dir() / f"{self._tag}-{os.getpid()}-{next(_counter)}.sock")
                except BaseException:
                    self._close_local()
                    raise
                write_note(
                    self._note,
                    Holder.me(),
                    socket=str(self._server.path),
                    role="writer" if self.writer else "reader",
                    index=self._real,
                )
        except BaseException:
            self._engine_lock.release()
            raise

    def _connect(self) -> _Client | None:
        """A connection to the owner named in engine.json, or None when there is none to be had right now."""
        note = read_extra(self._note)
        path = note.get("socket")
        if not isinstance(path, str):
            return None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(5.0)
            sock.connect(path)
            if (uid := _peer_uid(sock)) is not None and uid != os.getuid():
                raise CollectionBusyError(self._other_user(note))
            wire.send(sock, {"op": "hello", "index": self._real})
            reply = wire.recv(sock)
        except PermissionError:
            sock.close()
            raise CollectionBusyError(self._other_user(note)) from None
        except (OSError, wire.WireError):
            sock.close()
            return None
        except BaseException:
            sock.close()
            raise
        ok = reply.get("ok")
        if not isinstance(ok, dict) or ok.get("index") != self._real:
            sock.close()
            return None
        return _Client(sock, read_note(self._note) or Holder(0, "", "", ""))

    def _other_user(self, note: dict) -> str:
        holder = read_note(self._note)
        who = holder.describe() if holder else "a process"
        return (
            f"the index of {self.label} is in use by {who} of another user; TRACE shares an index between the "
            "processes of one user only: wait for it to finish, or search a copy of the collection"
        )

    def _check_open(self) -> bool:
        if self._closed:
            raise CollectionError(f"{self.label}: the collection is closed")
        return True

    # -- the SearchEngine protocol --------------------------------------------------------------------------

    def upsert(self, chunks: Sequence[IndexedChunk], vectors: np.ndarray | None) -> None:
        self._write("upsert", chunks, vectors)

    def set_vectors(self, chunk_ids: Sequence[str], vectors: np.ndarray) -> None:
        self._write("set_vectors", chunk_ids, vectors)

    def delete(self, doc_ids: Sequence[str]) -> None:
        self._write("delete", doc_ids)

    def optimize(self) -> None:
        self._write("optimize")

    def flush(self) -> None:
        if self.writer:  # a reader has nothing of its own to flush
            self._write("flush")

    def scroll_points(self, offset: str | None, limit: int) -> tuple[list[StoredPoint], str | None]:
        """The index's points as stored, a page at a time (`QdrantEdgeEngine.scroll_points`): for the writer only,
        which holds the shard, so that nothing changes them while they are read (`tracerag migrate`)."""
        return self._write("scroll_points", offset, limit)

    def count_with_vectors(self) -> int:
        """How many points carry a dense vector; the writer only, as `scroll_points`."""
        return self._write("count_with_vectors")

    def bm25(self, text: str, k: int, filter: Filter | None = None) -> FieldHits:
        return self._read("bm25", (text, k, filter), {"text": text, "k": k, "filter": wire.encode_filter(filter)})

    def phrase(self, text: str, k: int, filter: Filter | None = None) -> FieldHits:
        return self._read("phrase", (text, k, filter), {"text": text, "k": k, "filter": wire.encode_filter(filter)})

    def dense(self, vector: np.ndarray, k: int, filter: Filter | None = None) -> list[EngineHit]:
        args = {"vector": wire.encode_array(np.asarray(vector)), "k": k, "filter": wire.encode_filter(filter)}
        return self._read("dense", (vector, k, filter), args)

    def count(self, filter: Filter | None = None) -> int:
        return self._read("count", (filter,), {"filter": wire.encode_filter(filter)})

    def field_stats(self, text: str) -> dict[str, FieldStats]:
        return self._read("field_stats", (text,), {"text": text})

    def _write(self, op: str, *args: Any) -> Any:
        if not self.writer:
            raise ReadOnlyError(f"{self.label} is open for reading: {op} needs it opened for writing")
        with self._lock:
            if self._local is None:
                self._check_open()
                self.attach()
            return getattr(self._local, op)(*args)

    def _read(self, op: str, local_args: tuple, wire_args: dict[str, Any]) -> Any:
        deadline = self._deadline()
        while True:
            with self._lock:
                self._check_open()
                if self._local is not None:
                    return getattr(self._local, op)(*local_args)
            with self._client_lock:
                if self._client is None:
                    self._attach_reader(deadline)
                client = self._client
                if client is None:
                    continue  # became the owner
                try:
                    value = client.call(op, wire_args, _Wait(self, deadline, client.waiting))
                except (_Moved, OSError, wire.WireError):
                    # The owner exited, was killed, or handed over: ask again, whoever owns it now.
                    self._drop_client()
                    continue
                except BaseException:
                    self._drop_client()  # a reply may still be on its way: this connection is out of step
                    raise
            return _DECODE[op](value)

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- serving --------------------------------------------------------------------------------------------

    def serve(self, message: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """One request from a client → (reply, whether to hand the index over once the reply is sent)."""
        op = message.get("op")
        if op == "hello":
            return {"ok": {"pid": os.getpid(), "index": self._real}}, False
        if message.get("index") not in (None, self._real):
            return {"error": {"kind": "bad_request", "message": "wrong index"}}, False
        if op == "handover":
            if self.writer:
                holder = read_note(self._note)
                who = holder.describe() if holder else "another writer"
                return {"error": {"kind": "refused", "message": f"being written by {who}"}}, False
            return {"ok": True}, True
        if op not in _READS:
            return {"error": {"kind": "bad_request", "message": f"unknown operation {op!r:.40}"}}, False
        try:
            args = message.get("args") or {}
            flt = wire.decode_filter(args.get("filter"))
            with self._lock:
                if self._local is None:
                    return {"error": {"kind": "moved"}}, False
                if op == "count":
                    return {"ok": self._local.count(flt)}, False
                if op == "field_stats":
                    return {"ok": wire.encode_field_stats(self._local.field_stats(str(args["text"])))}, False
                k = int(args["k"])
                if op == "dense":
                    hits = self._local.dense(wire.decode_array(args["vector"]), k, flt)
                    return {"ok": wire.encode_hits(hits)}, False
                found = getattr(self._local, op)(str(args["text"]), k, flt)  # bm25 or phrase: per-field hits
            return {"ok": wire.encode_field_hits(found)}, False
        except (KeyError, TypeError, ValueError) as exc:
            return {"error": {"kind": "bad_request", "message": f"{type(exc).__name__}: {exc}"}}, False
        except Exception as exc:  # the engine's own failure: the client reports it
            return {"error": {"kind": "engine", "message": f"{type(exc).__name__}: {exc}"}}, False

    def hand_over(self) -> None:
        """Give the shard up (a writer asked for it): finish the call in progress, close, release; later calls
        of this process go to the new owner."""
        with self._lock:
            server, self._server = self._server, None
            if server is not None:
                server.stop_accepting()
            self._close_local()
        if server is not None:
            server.close_connections()

    def _close_local(self) -> None:
        """Flush and close the shard and release engine.lock. Called holding self._lock."""
        local, self._local = self._local, None
        if local is None:
            return
        try:
            local.flush()
            local.close()
        finally:
            self._engine_lock.release()

    def close(self) -> None:
        """Stop serving, finish the requests in flight, flush, close, release; or just hang up as a client."""
        server = self._server
        if server is not None:
            server.stop_accepting()
        with self._lock:
            self._closed = True
            self._server = None
            self._close_local()
        if server is not None:
            server.close_connections()
        with self._client_lock:
            self._drop_client()


class _Wait:
    """A bounded wait that says once, after NOTICE_AFTER_S, what it waits for, and gives up at the deadline."""

    def __init__(self, engine: SharedEngine, deadline: float | None, describe: Callable[[str], str]):
        self.engine = engine
        self.deadline = deadline
        self.describe = describe
        self.start = time.monotonic()
        self.noticed = False
        self.delay = 0.01

    def who(self) -> str:
        holder = self.engine.owner()
        if holder is None:
            return "it is changing hands"
        return f"served by {holder.describe()}"

    def tick(self, sleep: bool = True) -> None:
        now = time.monotonic()
        if self.deadline is not None and now > self.deadline:
            raise CollectionBusyError(
                f"the index of {self.engine.label} stayed busy for {self.engine.patience:.0f} s ({self.who()}); "
                "retry later" + (", or pass --wait" if self.engine.writer else "")
            )
        if not self.noticed and now - self.start > NOTICE_AFTER_S:
            self.noticed = True
            self.engine.notify(self.describe(self.who()))
        if sleep:
            time.sleep(self.delay)
            self.delay = min(self.delay * 2, 0.2)


class _Client:
    """A connection to the owner."""

    def __init__(self, sock: socket.socket, owner: Holder):
        self.sock = sock
        self.owner = owner

    def waiting(self, who: str) -> str:
        return f"waiting for {self.owner.describe()}, which serves the index, to answer…"

    def call(self, op: str, args: dict[str, Any], wait: _Wait) -> Any:
        self.sock.settimeout(5.0)
        wire.send(self.sock, {"op": op, "args": args})
        self.sock.settimeout(0.5)
        reply = wire.recv(self.sock, idle=lambda: wait.tick(sleep=False))
        if "ok" in reply:
            return reply["ok"]
        error = reply.get("error") or {}
        if error.get("kind") == "moved":
            raise _Moved()
        raise CollectionError(f"the index owner {self.owner.describe()} could not answer: {error.get('message')}")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class _Server:
    """The owner's listening socket: one daemon thread accepts, one per connection answers."""

    def __init__(self, engine: SharedEngine, path: Path):
        self.engine = engine
        self.path = path
        tag = path.name.split("-")[0]
        for stale in path.parent.glob("*-*-*.sock"):  # left by owners killed before they could clean up
            if stale.name.startswith(f"{tag}-") or not _alive(stale.name.split("-")[1]):
                with contextlib.suppress(OSError):
                    stale.unlink()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.bind(str(path))
            os.chmod(path, 0o600)  # the folder is private already; this says so twice
            self.sock.listen(64)
            self.sock.settimeout(0.2)
        except BaseException:
            self.sock.close()
            raise
        self._stop = threading.Event()
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        threading.Thread(target=self._accept, name=f"tracerag-index-{tag}", daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            if (uid := _peer_uid(conn)) is not None and uid != os.getuid():
                conn.close()
                continue
            with self._conns_lock:
                if self._stop.is_set():
                    conn.close()
                    return
                self._conns.add(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        def idle() -> None:
            if self._stop.is_set():
                raise wire.WireClosed("stopping")

        try:
            conn.settimeout(0.5)
            while not self._stop.is_set():
                message = wire.recv(conn, idle)
                reply, hand_over = self.engine.serve(message)
                conn.settimeout(30.0)
                wire.send(conn, reply)
                conn.settimeout(0.5)
                if hand_over:
                    self.engine.hand_over()
                    return
        except (OSError, wire.WireError):
            pass
        finally:
            with self._conns_lock:
                self._conns.discard(conn)
            with contextlib.suppress(OSError):
                conn.close()

    def stop_accepting(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            self.sock.close()

    def close_connections(self) -> None:
        with self._conns_lock:
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
