"""The memory threads: memory work a run starts but does not wait for.

Two lanes:

* **writes** (:func:`submit`): one worker thread, so writes run in the order they were given. A
  run's write of its observation (``nodes/memory.py`` ``memory_write``) runs after the answer
  was returned. Every store operation of another thread first waits for the writes queued
  before it (:func:`wait`), so a process reads its own writes;
* **reads** (:func:`submit_read`, :func:`then`): a small pool for recalls. A recall never queues
  behind writes queued *after* it: it waits only for the writes queued before it was started
  (:func:`as_of`, the run's own earlier writes), and its query waits in the embedder's queue
  (``vectors.py``), where the queries waiting are embedded together, a few a call.

Nothing queued is lost when the process exits normally: ``concurrent.futures`` joins its
worker threads at interpreter exit (before ``atexit`` handlers) once they have run every job
already queued; :func:`drain` waits for everything earlier (``FaissMemoryStore.close`` and
``close_stores`` wait for the writes, so a store is never closed under a queued write). Only a
kill (SIGKILL, ``os._exit``, a crash) loses the write queued last.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

THREAD_PREFIX = "smart-agent-memory"
READ_THREADS = 4
_writes = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_PREFIX)
_reads = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix=f"{THREAD_PREFIX}-read")
_done: deque[dict[str, Any]] = deque(maxlen=256)  # results of finished jobs, for drain()
_state = threading.Condition()
_writes_queued = 0  # writes submitted so far
_writes_done = 0  # writes finished so far (in order: one thread)
_open = 0  # jobs (and tracked futures) not finished yet, of both lanes
_horizon: contextvars.ContextVar[int | None] = contextvars.ContextVar("memory_write_horizon", default=None)


def in_memory_thread() -> bool:
    """True on the write thread (whose jobs must not wait for themselves)."""
    return threading.current_thread().name.startswith(f"{THREAD_PREFIX}_")  # (the executor's "<prefix>_<n>")


def _opened() -> None:
    global _open
    with _state:
        _open += 1


def _closed() -> None:
    global _open
    with _state:
        _open -= 1
        if _open == 0:
            _state.notify_all()


def submit(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """Run ``fn`` on the write thread, after every write queued before it."""
    global _writes_queued
    with _state:
        _writes_queued += 1
    _opened()

    def job() -> Any:
        global _writes_done
        try:
            return fn(*args, **kwargs)
        finally:
            with _state:
                _writes_done += 1
                _state.notify_all()
            _closed()

    return _writes.submit(job)


def writes_queued() -> int:
    """How many writes were queued so far: what :func:`as_of` takes."""
    return _writes_queued


def submit_read(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    """Run ``fn`` on a read thread, now (reads run side by side)."""
    _opened()

    def job() -> Any:
        try:
            return fn(*args, **kwargs)
        finally:
            _closed()

    return _reads.submit(job)


def then(future: Future[Any], fn: Callable[[Any], Any]) -> Future[Any]:
    """``fn(result)`` on a read thread once ``future`` is done, without a thread waiting for it
    meanwhile (its error is the returned one's; a future ``fn`` returns is waited for the same way)."""
    out: Future[Any] = Future()
    track(out)

    def chained(done: Future[Any]) -> None:
        try:
            value = done.result()
        except BaseException as exc:
            out.set_exception(exc)
            return
        step = submit_read(fn, value)
        step.add_done_callback(lambda f: _copy(f, out))

    future.add_done_callback(chained)
    return out


def _copy(src: Future[Any], dst: Future[Any]) -> None:
    try:
        value = src.result()
    except BaseException as exc:
        dst.set_exception(exc)
        return
    if isinstance(value, Future):
        value.add_done_callback(lambda f: _copy(f, dst))
    else:
        dst.set_result(value)


def track(future: Future[Any]) -> Future[Any]:
    """Count ``future`` as memory work until it is done (:func:`drain` waits for it)."""
    _opened()
    future.add_done_callback(lambda _: _closed())
    return future


def pending() -> int:
    """Jobs queued or running, of both lanes."""
    return _open


def record(result: dict[str, Any]) -> None:
    """Keep a finished job's result (an event payload) for :func:`drain`."""
    _done.append(result)


@contextlib.contextmanager
def as_of(queued: int) -> Iterator[None]:
    """In this block :func:`wait` waits only for the first ``queued`` writes (those queued before a
    recall started), not for writes queued after it."""
    token = _horizon.set(queued)
    try:
        yield
    finally:
        _horizon.reset(token)


def wait(timeout: float | None = None) -> None:
    """Wait until every write queued so far (or before :func:`as_of`'s mark) has run (at once when
    none is; a no-op on the write thread itself, which would wait for its own job)."""
    if in_memory_thread():
        return
    with _state:
        target = _target()
        _state.wait_for(lambda: _writes_done >= target, timeout)


def caught_up() -> bool:
    """Whether :func:`wait` would return at once: every write it would wait for has run."""
    if in_memory_thread():
        return True
    with _state:
        return _writes_done >= _target()


def _target() -> int:
    """How many writes :func:`wait` waits for: those queued before :func:`as_of`'s mark, else all
    queued so far (``_state`` held)."""
    horizon = _horizon.get()
    return _writes_queued if horizon is None else min(horizon, _writes_queued)


def drain(timeout: float | None = None) -> list[dict[str, Any]]:
    """Wait until the memory threads are idle (every write and recall started so far has run),
    then the results recorded since the last drain."""
    if not in_memory_thread():
        with _state:
            _state.wait_for(lambda: _open == 0, timeout)
    out = []
    while _done:
        out.append(_done.popleft())
    return out
