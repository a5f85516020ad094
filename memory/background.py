"""The memory thread: memory work a run starts but does not wait for.

One worker thread per process, so its jobs run in the order they were given: a run's write of
its observation (``nodes/memory.py`` ``memory_write``) runs after the answer was returned, and
the next run's recall query (``prefetch_recall``) is embedded after it, so that recall sees it.

Nothing queued is lost when the process exits normally: ``concurrent.futures`` joins its
worker threads at interpreter exit (before ``atexit`` handlers) once they have run every job
already queued; :func:`drain` waits for them earlier (``FaissMemoryStore.close`` and
``close_stores`` call it, so a store is never closed under a queued write). Only a kill
(SIGKILL, ``os._exit``, a crash) loses the write queued last.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

THREAD_PREFIX = "smart-agent-memory"
_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_PREFIX)
_done: deque[dict[str, Any]] = deque(maxlen=256)  # results of finished jobs, for drain()
_pending = 0
_lock = threading.Lock()


def in_memory_thread() -> bool:
    return threading.current_thread().name.startswith(THREAD_PREFIX)


def submit(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """Run ``fn`` on the memory thread, after every job queued before it."""
    global _pending
    with _lock:
        _pending += 1

    def job() -> Any:
        global _pending
        try:
            return fn(*args, **kwargs)
        finally:
            with _lock:
                _pending -= 1

    return _executor.submit(job)


def pending() -> int:
    """Jobs queued or running."""
    return _pending


def record(result: dict[str, Any]) -> None:
    """Keep a finished job's result (an event payload) for :func:`drain`."""
    _done.append(result)


def wait(timeout: float | None = None) -> None:
    """Wait until every job queued so far has run (at once when none is; a no-op on the memory
    thread itself, which would wait for its own job)."""
    if _pending and not in_memory_thread():
        _executor.submit(lambda: None).result(timeout)


def drain(timeout: float | None = None) -> list[dict[str, Any]]:
    """:func:`wait`, then the results recorded since the last drain."""
    wait(timeout)
    out = []
    while _done:
        out.append(_done.popleft())
    return out
