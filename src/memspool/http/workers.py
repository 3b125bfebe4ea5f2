"""The threads that call the Service: a fixed few, each with its own warm Service.

SQLite calls block, so they run off the event loop. A ``sqlite3``
connection belongs to the thread that opened it, so each worker thread
keeps one :class:`~memspool.service.Service` (one connection, one profile
cache) for the life of the server; WAL lets them read side by side, and the
store's busy timeout queues their writes behind the drainer's. The pool is
fixed rather than anyio's, whose idle threads are retired after seconds,
which would drop their warm connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from memspool.service import Service

__all__ = ["Workers"]

T = TypeVar("T")
#: How long closing waits for every worker to take its close task.
_CLOSE_WAIT_SECS = 10.0


class Workers:
    """Run ``call(service)`` on a worker thread, with that thread's Service."""

    def __init__(self, home: Path, threads: int) -> None:
        self.home = home
        self._executor = ThreadPoolExecutor(max_workers=threads,
                                            thread_name_prefix="memspool-http")
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened = 0

    def _service(self) -> Service:
        service: Service | None = getattr(self._local, "service", None)
        if service is None:
            service = self._local.service = Service(self.home)
            with self._lock:
                self._opened += 1
        return service

    def _run(self, call: Callable[[Service], T]) -> T:
        return call(self._service())

    async def run(self, call: Callable[[Service], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._run, call)

    def close(self) -> None:
        """Close every worker's Service on its own thread, then stop the threads.

        A connection may only be closed by its thread: one close task per
        opened Service, each waiting at a barrier until all have started, so
        no thread takes two of them.
        """
        with self._lock:
            opened = self._opened
        if opened:
            barrier = threading.Barrier(opened)
            for _ in range(opened):
                self._executor.submit(self._close_mine, barrier)
        self._executor.shutdown(wait=True)

    def _close_mine(self, barrier: threading.Barrier) -> None:
        service: Service | None = getattr(self._local, "service", None)
        if service is not None:
            service.close()
            self._local.service = None
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(_CLOSE_WAIT_SECS)
