"""The sub-agent tools and the child agent loops they run: ``sub_agent(task)`` runs a fresh child
agent loop with its own conversation and returns only the child's answer; ``start_sub_agent(task)``
runs the same child in the background (a task id back at once), ``check_sub_agent(task_id)`` gives
its answer once it is ready (once), ``cancel_sub_agent(task_id)`` stops it.

Nesting is bounded by ``max_agent_depth`` (children at the limit are not given the
sub-agent tools) and concurrency by ``max_sub_agents`` (a semaphore per nesting level, so a
parent waiting on its child never holds the slot the child needs; a background child holds
one too, and an agent may not have more than ``max_sub_agents`` of them running). Children
share the run's budgets (``run_child``; a background child's spending counts on the run's meter
as it goes: ``models/usage.py`` ``RunMeter``) and cannot ask a person (their approvals are
refused). A background child is a task of the run (``runs/background.py``): it ends, at the
latest, with the run of the agent that started it.

``build_agent_graph`` registers these tools (:func:`with_sub_agents`) as context tools: offered
only while the run's ``sub_agent_tools`` setting is on (``--sub-agents``). ``graphs/sub_agent.py``
``sub_agent_tool()`` is the plain ``sub_agent`` tool for a caller's own list of tools (offered
whenever the tools are). The child graphs are agent loops: ``build`` is ``build_agent_graph``,
passed in by ``graphs/agent.py`` so this module does not import it. Running a child and wrapping any
graph as a tool (``as_tool``) are in ``tools/agents.py``.
"""

from __future__ import annotations

import asyncio
import itertools
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from ..config.context import Context, coerce_context
from ..models.usage import hold_run_meter
from ..runs.background import MAX_HELD_TASKS, BackgroundTask, RunTasks, current_run_tasks
from ..runs.events import preview
from ..tools.agents import (
    CANCEL_SUB_AGENT,
    CHECK_SUB_AGENT,
    ROOT_AGENT,
    START_SUB_AGENT,
    SUB_AGENT,
    TaskArgs,
    agent_depth,
    agent_id,
    child_context,
    run_child,
)
from ..tools.assembly import resolve_registry
from ..tools.context_tools import CONTEXT_TAG
from ..tools.guards import ToolError
from ..tools.registry import ToolMeta, ToolRegistry

__all__ = ["SUB_AGENT_DESCRIPTION", "SubAgents", "with_sub_agents"]


SUB_AGENT_DESCRIPTION = (
    "Delegate a self-contained subtask to a new helper agent with its own fresh context and "
    "the same tools; returns only the helper's final answer. Use it for independent pieces of "
    "work whose details you do not need to keep in your own context."
)
START_DESCRIPTION = (
    "Start a helper agent on a self-contained subtask in the background (its own fresh context, the same "
    "tools) and go on with your own work meanwhile; returns a task id at once. Get its answer with "
    "check_sub_agent(task_id) before you answer: background tasks still running when you answer are cancelled."
)
CHECK_DESCRIPTION = (
    "Check a background helper started with start_sub_agent: its answer once it has finished (given once), "
    "else that it is still running. wait_s waits up to that many seconds for it to finish."
)
CANCEL_DESCRIPTION = "Cancel a background helper started with start_sub_agent that you no longer need."
#: Longest wait of one check_sub_agent call (also at most 90% of the run's tool_timeout_s).
MAX_WAIT_S = 300.0

NO_SCOPE = (
    "background sub-agents need a run scope: run the graph with smart-agent's CLI or `langgraph dev`, or inside "
    "`async with run_scope():` (smart_agent.runs.background); use sub_agent to run the task now"
)


class TaskIdArgs(BaseModel):
    task_id: str = Field(description="The task id start_sub_agent returned, e.g. 'task-1a2b3c4d'.")


class CheckArgs(TaskIdArgs):
    wait_s: float = Field(
        default=0.0, ge=0.0, le=MAX_WAIT_S,
        description="Seconds to wait for the task to finish before answering (0: answer at once).",
    )


_polls = itertools.count()


def _each_check(args: Mapping[str, Any]) -> dict[str, Any]:
    """check_sub_agent's effect for loop detection: every check is its own (a task's state changes
    between two checks of it); checks are bounded by max_tool_calls like any call."""
    return {"task_id": args.get("task_id"), "check": next(_polls)}


class SubAgents:
    """The ``sub_agent`` tool, its background tools and the child graphs they run (built once,
    on first use). ``opt_in``: the tools of ``build_agent_graph`` (context tools, refused while
    the run's ``sub_agent_tools`` setting is off) rather than tools of a caller's own list. ``build``:
    ``build_agent_graph``."""

    def __init__(
        self,
        *,
        build: Callable[..., Any],
        model: BaseChatModel | None = None,
        registry: ToolRegistry | None = None,
        tools: Iterable[BaseTool] | None = None,
        max_depth: int | None = None,
        max_concurrent: int | None = None,
        name: str = SUB_AGENT,
        opt_in: bool = False,
    ) -> None:
        self.build = build
        self.model = model
        self.registry = registry
        self.extra_tools = list(tools or [])
        self.max_depth = max_depth
        self.max_concurrent = max_concurrent
        self.name = name
        self.opt_in = opt_in
        self._graphs: dict[bool, Any] = {}
        self._registries: dict[bool, ToolRegistry] = {}
        self._semaphores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        suffix = name.removeprefix(SUB_AGENT) if name.startswith(SUB_AGENT) else f"_{name}"
        names = [f"{n}{suffix}" for n in (START_SUB_AGENT, CHECK_SUB_AGENT, CANCEL_SUB_AGENT)]
        self.tool = StructuredTool.from_function(
            coroutine=self._run, name=name, description=SUB_AGENT_DESCRIPTION, args_schema=TaskArgs,
        )
        self.start_tool = StructuredTool.from_function(
            coroutine=self._start, name=names[0], description=START_DESCRIPTION, args_schema=TaskArgs,
        )
        self.check_tool = StructuredTool.from_function(
            coroutine=self._check, name=names[1], description=CHECK_DESCRIPTION, args_schema=CheckArgs,
        )
        self.cancel_tool = StructuredTool.from_function(
            coroutine=self._cancel, name=names[2], description=CANCEL_DESCRIPTION, args_schema=TaskIdArgs,
        )

    def entries(self) -> list[tuple[BaseTool, ToolMeta]]:
        """The tools a child that may delegate gets, with their metadata: with ``opt_in`` the four
        (context tools), else ``sub_agent`` alone (a tool of the caller's list)."""
        if not self.opt_in:
            return [(self.tool, ToolMeta(source="user"))]
        tags = (CONTEXT_TAG, SUB_AGENT)
        return [
            (self.tool, ToolMeta(tags=tags)),
            (self.start_tool, ToolMeta(tags=tags)),
            (self.check_tool, ToolMeta(tags=tags, canonical=_each_check)),
            (self.cancel_tool, ToolMeta(tags=tags)),
        ]

    def limits(self, ctx: Context) -> tuple[int, int]:
        depth = self.max_depth if self.max_depth is not None else ctx.max_agent_depth
        concurrent = self.max_concurrent if self.max_concurrent is not None else ctx.max_sub_agents
        return int(depth), max(1, int(concurrent))

    def child_registry(self, can_delegate: bool) -> ToolRegistry:
        if can_delegate not in self._registries:
            reg = resolve_registry(self.registry, self.extra_tools).copy()
            for name in (self.tool.name, self.start_tool.name, self.check_tool.name, self.cancel_tool.name):
                reg.unregister(name)
            if can_delegate:
                for tool, meta in self.entries():
                    reg.register(tool, meta, replace=True)
            self._registries[can_delegate] = reg
        return self._registries[can_delegate]

    def child_graph(self, can_delegate: bool) -> Any:
        """The child agent loop; it has the sub-agent tools only when its children stay within the depth limit."""
        if can_delegate not in self._graphs:
            self._graphs[can_delegate] = self.build(
                model=self.model, registry=self.child_registry(can_delegate), checkpointer=False, name=self.name,
                sub_agents=False,  # (its registry holds the sub-agent tools it may have)
            )
        return self._graphs[can_delegate]

    def semaphore(self, depth: int, limit: int) -> asyncio.Semaphore:
        per_loop = self._semaphores.setdefault(asyncio.get_running_loop(), {})
        return per_loop.setdefault((depth, limit), asyncio.Semaphore(limit))

    def prepare(self, runtime: ToolRuntime | None) -> tuple[Context, int, int, int]:
        """The caller's context, its child's depth, the depth limit and the children at once; a
        ``ToolError`` when sub-agents are off in the run (``opt_in``) or the child would be too deep."""
        ctx: Context = coerce_context(getattr(runtime, "context", None))
        if self.opt_in and not ctx.sub_agent_tools:
            raise ToolError("Sub-agents are off in this run (the sub_agent_tools setting, --sub-agents, turns them on)")
        max_depth, concurrent = self.limits(ctx)
        depth = agent_depth(getattr(runtime, "config", None)) + 1
        if depth > max_depth:
            raise RuntimeError(f"sub-agent depth limit reached ({max_depth}); do this task yourself")
        return ctx, depth, max_depth, concurrent

    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    async def _run(self, task: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
        ctx, depth, max_depth, concurrent = self.prepare(runtime)
        can_delegate = depth < max_depth
        graph = self.child_graph(can_delegate)
        async with self.semaphore(depth, concurrent):
            return await run_child(
                graph, task, runtime=runtime, name=self.name,
                context=child_context(ctx, self.child_registry(can_delegate)),
            )

    # -- background --------------------------------------------------------------------------
    def scope(self, runtime: ToolRuntime | None) -> tuple[RunTasks, str]:
        tasks = current_run_tasks()
        if tasks is None:
            raise ToolError(f"Refused: {NO_SCOPE}.")
        return tasks, agent_id(getattr(runtime, "config", None))

    async def _start(self, task: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
        ctx, depth, max_depth, concurrent = self.prepare(runtime)
        tasks, owner = self.scope(runtime)
        held = tasks.owned(owner)
        running = [r for r in held if not r.task.done()]
        if len(running) >= concurrent:
            raise ToolError(
                f"{len(running)} background sub-agents of yours are running (max_sub_agents={concurrent}): check "
                f"or cancel one first ({', '.join(r.id for r in running)})."
            )
        if len(held) >= MAX_HELD_TASKS:
            raise ToolError("Too many background tasks not yet checked: collect their answers with check_sub_agent.")
        if owner == ROOT_AGENT and depth == 1:
            hold_run_meter()  # the top-level run's meter counts the child's spending as it goes
        can_delegate = depth < max_depth
        graph = self.child_graph(can_delegate)
        child_ctx = child_context(ctx, self.child_registry(can_delegate))

        async def work() -> str:
            async with self.semaphore(depth, concurrent):
                return await run_child(
                    graph, task, runtime=runtime, name=self.name, context=child_ctx, background=True
                )

        record = tasks.start(owner, work(), preview(task, 200))
        return (
            f"Started background task {record.id}: a helper agent works on it while you go on. "
            f'Get its answer with {self.check_tool.name}(task_id="{record.id}") before you answer '
            f"(wait_s to wait for it); tasks still running when you answer are cancelled."
        )

    async def _check(
        self, task_id: str, wait_s: float = 0.0, runtime: ToolRuntime = None  # type: ignore[assignment]
    ) -> str:
        tasks, owner = self.scope(runtime)
        record = self._find(tasks, owner, task_id)
        if not record.task.done() and wait_s > 0:
            cap = float(coerce_context(getattr(runtime, "context", None)).tool_timeout_s)
            await asyncio.wait([record.task], timeout=max(0.0, min(float(wait_s), MAX_WAIT_S, 0.9 * cap)))
        if not record.task.done():
            return (
                f"Task {record.id} is still running ({record.elapsed():.0f} s so far). Do other work and check "
                "again later, or pass wait_s to wait for it."
            )
        tasks.deliver(record)
        if record.task.cancelled():
            return f"Task {record.id} was cancelled; it has no answer."
        exc = record.task.exception()
        if exc is not None:
            raise ToolError(f"Task {record.id} failed: {type(exc).__name__}: {exc}")
        return f"Task {record.id} finished. The helper's answer:\n{record.task.result()}"

    async def _cancel(self, task_id: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
        tasks, owner = self.scope(runtime)
        record = self._find(tasks, owner, task_id)
        if record.task.done():
            return f"Task {record.id} has already finished: {self.check_tool.name} gives its answer."
        record.task.cancel()
        tasks.deliver(record)
        await asyncio.wait([record.task], timeout=5)
        return f"Cancelled task {record.id}."

    def _find(self, tasks: RunTasks, owner: str, task_id: str) -> BackgroundTask:
        record = tasks.find(owner, str(task_id).strip())
        if record is not None:
            return record
        if tasks.was_delivered(owner, str(task_id).strip()):
            raise ToolError(f"Task {task_id!r} was already checked or cancelled: its answer was given once.")
        yours = ", ".join(r.id for r in tasks.owned(owner)) or "none"
        raise ToolError(f"Unknown task id {task_id!r}. Your background tasks in this run: {yours}.")


def with_sub_agents(
    registry: ToolRegistry, build: Callable[..., Any], model: BaseChatModel | None = None
) -> ToolRegistry:
    """``registry`` (a copy) with the sub-agent tools as context tools, offered while a run's
    ``sub_agent_tools`` setting is on; children (``build(...)`` agent loops) get ``registry``'s tools. A
    registry that already has a ``sub_agent`` tool (a caller's own) is left as it is."""
    out = registry.copy()
    subs = SubAgents(build=build, model=model, registry=out, opt_in=True)

    def add(reg: ToolRegistry) -> None:
        if SUB_AGENT in reg:
            return
        for tool, meta in subs.entries():
            reg.register(tool, meta, replace=True)

    out.then(add)
    return out
