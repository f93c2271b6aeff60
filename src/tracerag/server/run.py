"""Start the server: bind first (so that port 0 gets a real port and the printed address is the one listening),
say where it listens, then serve until interrupted. Used by `tracerag serve` and `tracerag demo --serve`."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from tracerag.errors import ConfigError
from tracerag.server.jobs import Job
from tracerag.server.security import LOOPBACK, new_token
from tracerag.server.state import ServerConfig


def with_token(config: ServerConfig, announce: Callable[[str], None]) -> ServerConfig:
    """A server opened beyond loopback must ask a token: the one given, else a new one, printed once."""
    if config.token is not None and not config.token.strip():
        raise ConfigError("--token: empty; give a token, or leave it out on 127.0.0.1")
    if config.host in LOOPBACK or config.token is not None:
        return config
    # the address printed next carries it: that line is the only place it is ever shown
    announce("a token is required beyond 127.0.0.1: one was made for this run (pass --token to choose it)")
    return ServerConfig(**{**config.__dict__, "token": new_token()})


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc})") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def address(config: ServerConfig, port: int) -> str:
    host = config.host if ":" not in config.host.strip("[]") else f"[{config.host.strip('[]')}]"
    url = f"http://{host}:{port}/"
    return url + (f"?token={config.token}" if config.token else "")


def run_server(config: ServerConfig, announce: Callable[[str], None]) -> None:
    import uvicorn

    from tracerag.server.app import create_app

    config = with_token(config, announce)
    sock = bind(config.host, config.port)
    port = sock.getsockname()[1]
    app = create_app(config)
    jobs = app.state.server.jobs

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            # first end the event streams (a page following a job would hold the graceful shutdown up until its
            # timeout, then be cancelled with a traceback), then uvicorn's own shutdown
            jobs.stop()
            super().handle_exit(sig, frame)

    server = Server(
        uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=5, lifespan="on")
    )
    served = ", ".join(sorted(app.state.server.collections)) or "no collection"
    announce(f"serving {served}" + (" and the catalog" if config.catalog else "") + f" at {address(config, port)}")
    if config.host.strip("[]") in ("0.0.0.0", "::"):
        others = f"http://{socket.gethostname()}:{port}/" + (f"?token={config.token}" if config.token else "")
        announce(f"  (every interface: from another machine, {others} or this machine's address)")
    if config.token:
        # the token is shown once, above; a script sends it in a header (the API refuses it in an address)
        announce("  scripts: header 'Authorization: Bearer TOKEN', TOKEN the ?token= above")
    announce("press Ctrl-C to stop")
    with _stopped_by_signals():
        server.run(sockets=[sock])
    for job in jobs.stop():
        announce(interrupted(job))


def interrupted(job: Job) -> str:
    """What a user should know of a job the stop cut off."""
    where = f" into {job.collection}" if job.collection else ""
    if job.kind == "ingest":
        return (
            f"job {job.id} (ingest{where}) was cut off at {job.progress()}: what it committed is kept; upload the "
            "same files again (or run `tracerag ingest`) to finish it, unchanged documents are skipped"
        )
    return f"job {job.id} ({job.kind}{where}) was cut off at {job.progress()}: its trail ends there"


class _Stopped(Exception):
    """SIGTERM, after uvicorn's graceful shutdown (it raises again the signals it caught)."""


@contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """Ctrl-C or a service manager's SIGTERM is how a server stops: once uvicorn has shut down gracefully, both
    end the run normally (exit 0) instead of as an interruption."""
    if threading.current_thread() is not threading.main_thread():  # signals are only seen by the main thread
        yield
        return

    def stop(_signum: int, _frame: object) -> None:
        raise _Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
