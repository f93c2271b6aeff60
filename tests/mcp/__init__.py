"""The tool server's tests. `run_async` runs a client session in a thread of its own: a worker that ran the web
app's browser tests keeps Playwright's sync API (and its asyncio loop) running in its main thread, where
`anyio.run` would refuse to start another."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import anyio

T = TypeVar("T")


def run_async(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """`anyio.run(fn, *args)` in a fresh thread, its result or its exception."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(anyio.run, fn, *args).result()
