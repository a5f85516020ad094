"""Background work of a run: child runs an agent starts (``start_sub_agent``) that go on while it
works, whose results it collects when it checks them, and that end with the run that started them.

A run scope (:func:`run_scope`) holds the run's :class:`RunTasks`. The CLI opens one around each run
(``cli/run.py``), a served graph or a graph with MCP servers around each of its runs
(``graphs/run_scope.py``: :func:`run_tasks`, carried in the run's config by :func:`with_run_scope`, as
the run's MCP tools are); a run inside another (a sub-agent, a fleet worker) uses its caller's. A
Python caller of a compiled graph opens one itself::

    async with run_scope():
        final = await graph.ainvoke({"task": ...}, context=...)

Each task belongs to the agent that started it (its agent id, ``tools/agents.py``): only that agent
checks or cancels it, its result is delivered once (then it is dropped), and it is cancelled when its
owner's run ends - a nested run's when that run ends (``run_detached``), every other when the scope
closes. The scope also holds the run's :class:`~smart_agent.models.usage.RunMeter`, so what background
work spends counts on the run's budgets as it happens (``models/usage.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..models.usage import RUN_METER_KEY, RunMeter, using_run_meter

__all__ = [
    "BackgroundTask", "RunTasks", "current_run_tasks", "run_scope", "run_tasks", "using_run_scope", "with_run_scope",
]

#: Most tasks one agent may hold at once (running, or finished and not yet checked).
MAX_HELD_TASKS = 32
#: Seconds the end of a scope waits for its cancelled tasks to wind down.
CLOSE_WAIT_S = 5.0


@dataclass
class BackgroundTask:
    """One task of a run: ``owner`` (the agent id that started it), what it was asked (``label``)."""

    id: str
    owner: str
    label: str
    task: asyncio.Task[Any]
    started: float = field(default_factory=time.monotonic)

    @property
    def status(self) -> str:
        """running | done | failed | cancelled."""
        if not self.task.done():
            return "running"
        if self.task.cancelled():
            return "cancelled"
        return "failed" if self.task.exception() is not None else "done"

    def elapsed(self) -> float:
        return time.monotonic() - self.started


class RunTasks:
    """The background tasks of one run (see the module's text)."""

    def __init__(self) -> None:
        self.tasks: dict[str, BackgroundTask] = {}
        self._delivered: dict[str, str] = {}  # task id -> owner: delivered or cancelled (a later check says so)
        self.meter = RunMeter()
        self.closed = False

    def owned(self, owner: str) -> list[BackgroundTask]:
        return [t for t in self.tasks.values() if t.owner == owner]

    def start(self, owner: str, work: Coroutine[Any, Any, Any], label: str) -> BackgroundTask:
        """Run ``work`` as a task of ``owner`` (a ``RuntimeError`` once the scope closed)."""
        if self.closed:
            work.close()
            raise RuntimeError("the run has ended: no background task can start")
        task_id = f"task-{uuid.uuid4().hex[:8]}"
        record = BackgroundTask(task_id, owner, label, asyncio.get_running_loop().create_task(work))
        record.task.add_done_callback(_retrieved)
        self.tasks[task_id] = record
        return record

    def find(self, owner: str, task_id: str) -> BackgroundTask | None:
        record = self.tasks.get(task_id)
        return record if record is not None and record.owner == owner else None

    def was_delivered(self, owner: str, task_id: str) -> bool:
        return self._delivered.get(task_id) == owner

    def deliver(self, record: BackgroundTask) -> None:
        """Drop ``record``: its result was handed to its owner (or it was cancelled)."""
        self.tasks.pop(record.id, None)
        self._delivered[record.id] = record.owner
        while len(self._delivered) > 4 * MAX_HELD_TASKS:
            self._delivered.pop(next(iter(self._delivered)))

    def cancel_owned(self, owner: str) -> list[BackgroundTask]:
        """Cancel and drop every task of ``owner`` (its run ended); returns them."""
        records = self.owned(owner)
        for record in records:
            record.task.cancel()
            self.tasks.pop(record.id, None)
        return records

    async def close(self) -> None:
        """Cancel every task still held and wait (a little) for them to wind down; no task starts after."""
        self.closed = True
        running = [r.task for r in self.tasks.values()]
        self.tasks.clear()
        for task in running:
            task.cancel()
        pending = [t for t in running if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=CLOSE_WAIT_S)


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark a finished task's exception as seen: a task never checked is not an asyncio warning."""
    if not task.cancelled():
        task.exception()


_TASKS: ContextVar[RunTasks | None] = ContextVar("smart_agent_run_tasks", default=None)

#: The key of a run's ``configurable`` that carries its tasks (:func:`with_run_scope`).
RUN_TASKS_KEY = "__smart_agent_run_tasks"


def current_run_tasks() -> RunTasks | None:
    """The current run's tasks: made current here (:func:`using_run_scope`), else those of the run's
    config (:func:`with_run_scope`: a run driven from several tasks, a served graph's); None outside
    a run scope."""
    current = _TASKS.get()
    if current is not None:
        return current
    try:
        from langgraph.config import get_config

        found = (get_config().get("configurable") or {}).get(RUN_TASKS_KEY)
    except RuntimeError:  # (not inside a run)
        return None
    return found if isinstance(found, RunTasks) else None


def with_run_scope(config: Any, tasks: RunTasks) -> dict[str, Any]:
    """``config`` (a run's config, or None) carrying ``tasks`` and their run meter: every node, tool
    and child run of that run finds them, in whatever task LangGraph runs it."""
    config = dict(config or {})
    config["configurable"] = {
        **(config.get("configurable") or {}), RUN_TASKS_KEY: tasks, RUN_METER_KEY: tasks.meter,
    }  # fmt: skip
    return config


@contextlib.contextmanager
def using_run_scope(tasks: RunTasks) -> Iterator[RunTasks]:
    """Make ``tasks`` (and its run meter) the current run's for the block."""
    token = _TASKS.set(tasks)
    try:
        with using_run_meter(tasks.meter):
            yield tasks
    finally:
        _TASKS.reset(token)


@contextlib.asynccontextmanager
async def run_tasks() -> AsyncIterator[RunTasks]:
    """The tasks of a run: new ones, cancelled when the block ends (inside another scope: that one's,
    which ends them). Makes nothing current: a run driven from several tasks (a served graph's
    stream) sets them around each step (:func:`using_run_scope`)."""
    current = current_run_tasks()
    if current is not None:
        yield current
        return
    tasks = RunTasks()
    try:
        yield tasks
    finally:
        await tasks.close()


@contextlib.asynccontextmanager
async def run_scope() -> AsyncIterator[RunTasks]:
    """A run's scope for a run driven from this task: its background tasks, current in the block and
    cancelled when it ends (inside another scope: that one, which ends them)."""
    async with run_tasks() as tasks:
        with using_run_scope(tasks):
            yield tasks
