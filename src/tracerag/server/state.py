"""What one server process holds: the collections and the catalog it serves (by name: a request names a
collection, never a path), the settings, the background jobs, and each worker thread's open collection.

The collection's sharing rules (collection/opening.py: one writer, any number of readers, each opening the index's files
itself) hold here as in the CLI: each worker thread keeps its own read-only `Collection` (SQLite connections belong
to the thread that made them), an ingest runs in a child process that opens the collection for writing, and the
readers here go on meanwhile, seeing its commits."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tracerag.collection import Collection
from tracerag.config import Settings
from tracerag.errors import ConfigError, TraceError
from tracerag.llm import StructuredLLM
from tracerag.server.jobs import JobRegistry
from tracerag.server.models import SharedModel


class NotFoundError(TraceError):
    """A named thing (collection, run, job, document, conversation) the server does not have: HTTP 404."""


@dataclass(frozen=True)
class ServerConfig:
    """How `tracerag serve` was started. `token` None: no token asked (loopback only, see cli/serve.py)."""

    collections: tuple[Path, ...]
    settings: Settings
    catalog: Path | None = None
    token: str | None = None
    host: str = "127.0.0.1"
    port: int = 8765


def collection_names(paths: tuple[Path, ...]) -> dict[str, Path]:
    """Each collection's name in URLs: its folder's name, made unique with its parent's when two share it (the
    same folder given twice is served once)."""
    names: dict[str, Path] = {}
    for path in paths:
        path = Path(path).resolve()
        if path in names.values():
            continue
        name = path.name or "collection"
        if name in names:
            name = f"{path.parent.name}-{name}"
        if name in names:
            raise ConfigError(f"-c {path}: two collections would be served as {name!r}; rename one folder")
        names[name] = path
    return names


@dataclass
class ServerState:
    config: ServerConfig
    collections: dict[str, Path] = field(init=False)
    jobs: JobRegistry = field(init=False)
    shared_model: SharedModel = field(init=False)
    _local: threading.local = field(default_factory=threading.local, init=False)
    _opened: list[Collection] = field(default_factory=list, init=False)
    _opened_lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _closers: list[Callable[[], None]] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.collections = collection_names(self.config.collections)
        self.jobs = JobRegistry(self.config.settings.server.jobs_kept)
        self.shared_model = SharedModel(self.config.settings)

    @property
    def settings(self) -> Settings:
        return self.config.settings

    def model(self) -> StructuredLLM | None:
        """A language model for one run (its own accounting), over the server's one provider; None without
        `serve --llm`."""
        return self.shared_model.llm()

    def path_of(self, name: str) -> Path:
        """The folder of the collection served as `name`; NotFoundError for any other name."""
        try:
            return self.collections[name]
        except KeyError:
            known = ", ".join(sorted(self.collections)) or "none"
            raise NotFoundError(f"collection {name!r}: not served here (served: {known})") from None

    @contextmanager
    def reading(self, name: str) -> Iterator[Collection]:
        """This thread's read-only view of collection `name`, opened on first use and kept for the next request
        on the same thread (a search need not pay an open). A view that failed is dropped, so the next request
        opens afresh."""
        path = self.path_of(name)
        views: dict[str, Collection] = self._local.__dict__.setdefault("views", {})
        col = views.get(name)
        if col is None:
            col = Collection.open(path, self.settings, mode="read", notify=lambda _message: None)
            views[name] = col
            with self._opened_lock:
                self._opened.append(col)
        try:
            yield col
        except TraceError:
            raise
        except Exception:
            views.pop(name, None)
            col.close()
            raise

    def on_close(self, closer: Callable[[], None]) -> None:
        """Call `closer` at shutdown, before the views close (e.g. the catalog conversations, which hold their own)."""
        with self._opened_lock:
            self._closers.append(closer)

    def close(self) -> None:
        """Close every view (at shutdown): each hands its index on to whoever still uses it."""
        with self._opened_lock:
            closers, self._closers = self._closers, []
            opened, self._opened = self._opened, []
        for closer in closers:
            with contextlib.suppress(Exception):
                closer()
        for col in opened:
            with contextlib.suppress(Exception):  # at shutdown, one view that cannot close must not keep the rest
                col.close()
