"""Where synchronous tool code runs: one daemon thread per call.

LangChain runs a sync tool's ``_run`` on the event loop's default executor
(``run_in_executor(None, ...)``). That pool has only ``min(32, cpus + 4)``
threads, and its threads are joined when ``asyncio.run`` ends and again at
interpreter exit: a tool that never returns keeps the process alive after its
timeout, although nobody waits for its result any more.

Here every sync call gets its own daemon thread (so there is no pool limit
below ``max_parallel_tools``), the caller awaits an asyncio future that a
timeout can abandon, and an abandoned thread never blocks process exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import threading
from collections.abc import Callable
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


async def run_in_daemon_thread(fn: Callable[[], T], *, name: str = "smart-agent-tool") -> T:
    """Run ``fn()`` in a new daemon thread (with the caller's context variables) and
    await its result. Cancelling the await abandons the thread: it runs on, its
    result is dropped, and it does not keep the process alive."""
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

    def target() -> None:
        try:
            value, error = context.run(fn), None
        except BaseException as exc:  # handed to the awaiting coroutine
            value, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=target, name=f"{name}-{next(_names)}", daemon=True).start()
    return await future


async def ainvoke_tool(tool: BaseTool, args: dict[str, Any], config: RunnableConfig | None = None) -> Any:
    """``tool.ainvoke(args, config)``, except that a sync tool runs in a daemon thread."""
    if is_sync_tool(tool):
        return await run_in_daemon_thread(
            lambda: tool.invoke(args, config=config), name=f"smart-agent-tool-{tool.name}"
        )
    return await tool.ainvoke(args, config=config)
