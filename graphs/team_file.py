"""A team from an agents file (``tools/agents_file.py``): each agent becomes a team member
(``AgentSpec``: its prompt, tools, handoffs and run settings), and each agent named in
another's ``sub_agents`` becomes a tool ``<name>`` (its description is the agent's) that runs
that agent as a detached child and returns only its final answer.

A named sub-agent runs like the ``sub_agent`` tool's children (``graphs/sub_agent.py``):
its own conversation and context budget, the run's budget shared (``run_child``), no
long-term memory, approvals refused, at most ``max_agent_depth`` levels deep (an agent at
the limit is not given its sub-agents' tools) and ``max_sub_agents`` children at once per
level. Its events reach the parent's stream tagged ``agent: <name>-<id>``.

The file's ``mcp_servers`` are returned with the team: the agent graph opens their sessions
around each run (``graphs/run_scope.py``), and every agent (sub-agents too) also holds the
run's MCP tools its ``tools`` name (``AgentSpec.run_tools``, ``run_tools.py``).

The child graphs are agent loops: ``build`` is ``build_agent_graph``, passed in by
``graphs/agent.py`` so this module does not import it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, StructuredTool

from ..config import settings
from ..config.context import Context, coerce_context
from ..nodes.team import AgentSpec
from ..tools.agents import TaskArgs, agent_depth, child_context, run_child
from ..tools.agents_file import AgentDef, AgentsConfig, load_agents_file, match_tools
from ..tools.assembly import resolve_registry
from ..tools.mcp_config import McpServer
from ..tools.registry import ToolRegistry

__all__ = ["NamedSubAgents", "served_agents_file", "team_from_file"]


def served_agents_file() -> Path | None:
    """The agents file of the served ``agent`` graph: ``$SMART_AGENT_AGENTS`` (None: one agent)."""
    return settings.agents_file()


def team_from_file(
    path: str | Path,
    *,
    registry: ToolRegistry,
    build: Callable[..., Any],
    model: BaseChatModel | None = None,
    mcp_servers: Sequence[McpServer] = (),
    middleware: Sequence[Any] = (),
) -> tuple[dict[str, AgentSpec], str, tuple[McpServer, ...]]:
    """``(agents, default agent, the file's MCP servers)`` of ``build_agent_graph`` from the
    file at ``path``; agents' tools are taken from ``registry`` (names and globs resolved
    against it) and from the run's MCP tools (of the file's servers and ``mcp_servers``).
    ``middleware``: the graph's, which its named sub-agents run too (each with its own after it)."""
    also = (lambda name: any(s.may_name(name) for s in mcp_servers)) if mcp_servers else None
    config = load_agents_file(path, tool_names=registry.names(), also=also)
    subs = NamedSubAgents(config, registry, build, model, middleware)
    agents = {
        name: AgentSpec(
            prompt=agent.prompt,
            tools=subs.own_tools(name) + [subs.tool(s) for s in agent.sub_agents],
            handoffs=list(agent.handoffs),
            description=agent.description,
            context=dict(agent.settings),
            run_tools=list(agent.tools),
            middleware=list(agent.middleware),
        )
        for name, agent in config.agents.items()
    }
    return agents, config.default, config.mcp_servers


class NamedSubAgents:
    """The tools ``<name>`` of an agents file's sub-agents and the child graphs they run (built on first use)."""

    def __init__(
        self, config: AgentsConfig, registry: ToolRegistry, build: Callable[..., Any], model: BaseChatModel | None,
        middleware: Sequence[Any] = (),
    ) -> None:
        self.config = config
        self.middleware = list(middleware)
        self.registry = registry
        self.build = build
        self.model = model
        self._tools: dict[str, BaseTool] = {}
        self._graphs: dict[tuple[str, bool], Any] = {}
        self._semaphores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def agent(self, name: str) -> AgentDef:
        return self.config.agents[name]

    def own_tools(self, name: str) -> list[BaseTool]:
        names, _missing = match_tools(self.agent(name).tools, self.registry.names())
        return [self.registry.get(n) for n in names]

    def tool(self, name: str) -> BaseTool:
        if name not in self._tools:
            # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` and the ignore
            async def run(task: str, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
                return await self._run(name, task, runtime)

            self._tools[name] = StructuredTool.from_function(
                coroutine=run,
                name=name,
                description=self.agent(name).description,
                args_schema=TaskArgs,
            )
        return self._tools[name]

    def child_graph(self, name: str, can_delegate: bool) -> Any:
        """The agent's loop as a child; it has its own sub-agents' tools only when they stay within the depth limit."""
        key = (name, can_delegate)
        if key not in self._graphs:
            tools = self.own_tools(name) + ([self.tool(s) for s in self.agent(name).sub_agents] if can_delegate else [])
            registry = resolve_registry(ToolRegistry().offer_run_tools(self.agent(name).tools), tools)
            middleware = [*self.middleware, *self.agent(name).middleware]
            self._graphs[key] = self.build(
                model=self.model, registry=registry, checkpointer=False, name=name, middleware=middleware
            )
        return self._graphs[key]

    def semaphore(self, depth: int, limit: int) -> asyncio.Semaphore:
        per_loop = self._semaphores.setdefault(asyncio.get_running_loop(), {})
        return per_loop.setdefault((depth, limit), asyncio.Semaphore(limit))

    async def _run(self, name: str, task: str, runtime: ToolRuntime | None = None) -> str:
        ctx: Context = coerce_context(getattr(runtime, "context", None))
        max_depth, concurrent = int(ctx.max_agent_depth), max(1, int(ctx.max_sub_agents))
        depth = agent_depth(getattr(runtime, "config", None)) + 1
        if depth > max_depth:
            raise RuntimeError(f"sub-agent depth limit reached ({max_depth}); do this task yourself")
        agent = self.agent(name)
        # its own settings; the caller's output schema is the caller's (the child's is its own setting, if any)
        changes = {"output_schema": None, **agent.settings, "system_prompt": agent.prompt, "tools": None}
        own = dataclasses.replace(ctx, **changes)
        graph = self.child_graph(name, depth < max_depth)
        async with self.semaphore(depth, concurrent):
            return await run_child(graph, task, runtime=runtime, name=name, context=child_context(own))
