"""The ``sub_agent(task)`` tool: it runs a fresh child agent loop with its own
conversation and returns only the child's answer.

Nesting is bounded by ``max_agent_depth`` (children at the limit are not given
``sub_agent``) and concurrency by ``max_sub_agents`` (a semaphore per nesting level, so a
parent waiting on its child never holds the slot the child needs). The child graphs are
agent loops (``graphs/agent.py``), so this composition lives beside the graphs; running a
child and wrapping any graph as a tool (``as_tool``) are in ``tools/agents.py``.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, StructuredTool

from ..config.context import Context, coerce_context
from ..tools.agents import SUB_AGENT, TaskArgs, agent_depth, child_context, run_child
from ..tools.assembly import resolve_registry
from ..tools.registry import ToolMeta, ToolRegistry
from .agent import build_agent_graph

__all__ = ["SUB_AGENT_DESCRIPTION", "SubAgents", "sub_agent_tool"]


SUB_AGENT_DESCRIPTION = (
    "Delegate a self-contained subtask to a new helper agent with its own fresh context and "
    "the same tools; returns only the helper's final answer. Use it for independent pieces of "
    "work whose details you do not need to keep in your own context."
)


class SubAgents:
    """The ``sub_agent`` tool and the child graphs it runs (built once, on first use)."""

    def __init__(
        self,
        *,
        model: BaseChatModel | None = None,
        registry: ToolRegistry | None = None,
        tools: Iterable[BaseTool] | None = None,
        max_depth: int | None = None,
        max_concurrent: int | None = None,
        name: str = SUB_AGENT,
    ) -> None:
        self.model = model
        self.registry = registry
        self.extra_tools = list(tools or [])
        self.max_depth = max_depth
        self.max_concurrent = max_concurrent
        self.name = name
        self._graphs: dict[bool, Any] = {}
        self._registries: dict[bool, ToolRegistry] = {}
        self._semaphores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.tool = StructuredTool.from_function(
            coroutine=self._run, name=name, description=SUB_AGENT_DESCRIPTION, args_schema=TaskArgs,
        )

    def limits(self, ctx: Context) -> tuple[int, int]:
        depth = self.max_depth if self.max_depth is not None else ctx.max_agent_depth
        concurrent = self.max_concurrent if self.max_concurrent is not None else ctx.max_sub_agents
        return int(depth), max(1, int(concurrent))

    def child_registry(self, can_delegate: bool) -> ToolRegistry:
        if can_delegate not in self._registries:
            reg = resolve_registry(self.registry, self.extra_tools).copy()
            reg.unregister(self.name)
            if can_delegate:
                reg.register(self.tool, ToolMeta(source="user"), replace=True)
            self._registries[can_delegate] = reg
        return self._registries[can_delegate]

    def child_graph(self, can_delegate: bool) -> Any:
        """The child agent loop; it has ``sub_agent`` only when its children stay within the depth limit."""
        if can_delegate not in self._graphs:
            self._graphs[can_delegate] = build_agent_graph(
                model=self.model, registry=self.child_registry(can_delegate), checkpointer=False, name=self.name,
            )
        return self._graphs[can_delegate]

    def semaphore(self, depth: int, limit: int) -> asyncio.Semaphore:
        per_loop = self._semaphores.setdefault(asyncio.get_running_loop(), {})
        return per_loop.setdefault((depth, limit), asyncio.Semaphore(limit))

    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    async def _run(self, task: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
        ctx: Context = coerce_context(getattr(runtime, "context", None))
        max_depth, concurrent = self.limits(ctx)
        depth = agent_depth(getattr(runtime, "config", None)) + 1
        if depth > max_depth:
            raise RuntimeError(f"sub-agent depth limit reached ({max_depth}); do this task yourself")
        can_delegate = depth < max_depth
        graph = self.child_graph(can_delegate)
        async with self.semaphore(depth, concurrent):
            return await run_child(
                graph, task, runtime=runtime, name=self.name,
                context=child_context(ctx, self.child_registry(can_delegate)),
            )


def sub_agent_tool(
    *,
    model: BaseChatModel | None = None,
    registry: ToolRegistry | None = None,
    tools: Iterable[BaseTool] | None = None,
    max_depth: int | None = None,
    max_concurrent: int | None = None,
    name: str = SUB_AGENT,
) -> BaseTool:
    """The ``sub_agent(task)`` tool. Children get ``registry`` (default: the built-in
    tools) plus ``tools``; limits default to the run's ``max_agent_depth`` / ``max_sub_agents``."""
    return SubAgents(
        model=model, registry=registry, tools=tools, max_depth=max_depth, max_concurrent=max_concurrent, name=name,
    ).tool
