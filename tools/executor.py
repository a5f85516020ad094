"""Where synchronous tool code runs: daemon threads, reused, as many as calls in flight.

LangChain runs a sync tool's ``_run`` on the event loop's default executor
(``run_in_executor(None, ...)``). That pool has only ``min(32, cpus + 4)``
threads, and its threads are joined when ``asyncio.run`` ends and again at
interpreter exit: a tool that never returns keeps the process alive after its
timeout, although nobody waits for its result any more.

Here every sync call runs on a daemon thread of its own while it runs (so there
is no pool limit below ``max_parallel_tools``), the caller awaits an asyncio
future that a timeout can abandon, and an abandoned thread never blocks process
exit. A thread whose call has finished waits up to ``IDLE_S`` seconds for the
next call before it ends, so a loop of tool turns starts one thread, not one
per call (starting a thread cost more than the rest of a tool step).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, Tool

T = TypeVar("T")

_names = itertools.count(1)


def is_sync_tool(tool: BaseTool) -> bool:
    """True when awaiting ``tool`` would run its sync ``_run`` in a worker thread."""
    if isinstance(tool, (StructuredTool, Tool)):
        return getattr(tool, "coroutine", None) is None
    return type(tool)._arun is BaseTool._arun


IDLE_S = 30.0  # how long a finished worker waits for the next call before its thread ends
IDLE_NAME = "smart-agent-worker-idle"


class _Workers:
    """Daemon threads that run one job at a time and wait ``IDLE_S`` for the next.

    ``idle`` counts the workers waiting for a job that no submitted job has claimed
    yet: a submit claims one (or starts a thread when there is none), so a job never
    waits behind another. A worker that times out leaves only if an unclaimed
    worker remains counted; otherwise a job is on its way to it."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Callable[[], None]], str]] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.idle = 0

    def submit(self, job: Callable[[], Callable[[], None]], name: str) -> None:
        """Run ``job()`` on a worker, then the callable it returns once the worker counts as
        idle again (so a caller woken by it finds the worker free for its next call)."""
        with self.lock:
            start = self.idle == 0
            if not start:
                self.idle -= 1
        self.jobs.put((job, name))
        if start:
            threading.Thread(target=self._work, name=f"{name}-{next(_names)}", daemon=True).start()

    def _work(self) -> None:
        me = threading.current_thread()
        while True:
            try:
                job, name = self.jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with self.lock:
                    if self.idle > 0:
                        self.idle -= 1
                        return
                continue  # every waiting worker is claimed: a job for this one is coming
            me.name = f"{name}-{next(_names)}"
            deliver = job()
            me.name = IDLE_NAME
            with self.lock:
                self.idle += 1
            deliver()
            # An idle worker keeps nothing of its last call: the job's closure holds the call's
            # config, and through it the run that made the call (its state, its graph).
            del job, deliver


_workers = _Workers()


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


async def run_in_daemon_thread(
    fn: Callable[[], T], *, name: str = "smart-agent-tool", timeout_s: float | None = None
) -> T:
    """Run ``fn()`` on a daemon thread of its own (with the caller's context variables)
    and await its result. Cancelling the await abandons the thread: it runs on, its
    result is dropped, and it does not keep the process alive. ``timeout_s`` (none when
    0 or None): after that many seconds the await raises TimeoutError and abandons the
    thread the same way (a timer on the loop: what ``asyncio.timeout`` around the await
    would do, without its context manager's own work on every call)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # cancelled (timed out) meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def target() -> Callable[[], None]:
        try:
            value, error = context.run(fn), None
        except BaseException as exc:  # handed to the awaiting coroutine
            value, error = None, exc

        def deliver() -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(settle, value, error)

        return deliver

    _workers.submit(target, name)
    if not timeout_s:
        return await future
    timer = loop.call_later(timeout_s, _expire, future)
    try:
        return await future
    finally:
        timer.cancel()


def ainvoke_tool(
    tool: BaseTool,
    args: dict[str, Any],
    config: RunnableConfig | None = None,
    timeout_s: float | None = None,
    then: Callable[[Any], Any] | None = None,
) -> Awaitable[Any]:
    """``tool.ainvoke(args, config)`` to await, except that a sync tool runs in a daemon thread;
    TimeoutError after ``timeout_s`` seconds (none when 0 or None). ``then``: applied to the
    tool's return value where the tool ran (a sync tool's worker thread), the result awaited."""
    if is_sync_tool(tool):

        def job() -> Any:
            result = tool.invoke(args, config=config)
            return result if then is None else then(result)

        return run_in_daemon_thread(job, name=f"smart-agent-tool-{tool.name}", timeout_s=timeout_s)
    return _ainvoke_async(tool, args, config, timeout_s, then)


async def _ainvoke_async(
    tool: BaseTool,
    args: dict[str, Any],
    config: RunnableConfig | None,
    timeout_s: float | None,
    then: Callable[[Any], Any] | None,
) -> Any:
    if not timeout_s:  # (no timer to arm: every call of a tool without a timeout)
        result = await tool.ainvoke(args, config=config)
        return result if then is None else then(result)
    async with asyncio.timeout(timeout_s):  # (cancels the call in this task)
        result = await tool.ainvoke(args, config=config)
    return result if then is None else then(result)
