"""The graphs ``langgraph dev`` and LangGraph Server serve (``langgraph.json``): graph factories.

For each run the server enters the graph's factory with the run's ``ServerRuntime``: the factory
checks the client's context against the server's settings (a client may narrow the sandbox,
never widen it: ``config/served.py``) before any node runs, and opens the MCP servers of
``$SMART_AGENT_MCP_CONFIG`` (and of the agents file) for the run (``graphs/run_scope.py``). For
reading a graph's schema or drawing (no run) it yields the graph as it is. The graphs themselves
are built from the server's environment on first use (each graph module's ``graph``).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig

from .run_scope import served_run

if TYPE_CHECKING:  # (the server's own type; only the server calls these)
    from langgraph_sdk.runtime import ServerRuntime

__all__ = ["agent", "dual", "fleet", "planner", "served_graph_of"]


def served_graph_of(name: str) -> Any:
    """The server's graph ``name`` (agent, planner, dual, fleet), built on first use."""
    return importlib.import_module(f"{__package__}.{name}").graph


@contextlib.asynccontextmanager
async def _serve(name: str, config: RunnableConfig, runtime: ServerRuntime) -> AsyncIterator[Any]:
    graph = served_graph_of(name)
    execution = getattr(runtime, "execution_runtime", None)
    if execution is None:  # (the server reads the graph's schema or drawing: no run)
        yield graph.graph if hasattr(graph, "mcp_servers") else graph
        return
    configurable = (config or {}).get("configurable")
    async with served_run(graph, context=execution.context, configurable=configurable) as run_graph:
        yield run_graph


@contextlib.asynccontextmanager
async def agent(config: RunnableConfig, runtime: ServerRuntime) -> AsyncIterator[Any]:
    """The agent loop (the team of ``$SMART_AGENT_AGENTS`` when it is set)."""
    async with _serve("agent", config, runtime) as graph:
        yield graph


@contextlib.asynccontextmanager
async def planner(config: RunnableConfig, runtime: ServerRuntime) -> AsyncIterator[Any]:
    """Plan, then execute."""
    async with _serve("planner", config, runtime) as graph:
        yield graph


@contextlib.asynccontextmanager
async def dual(config: RunnableConfig, runtime: ServerRuntime) -> AsyncIterator[Any]:
    """The dual agent: a reasoning loop that hands objectives to the planner."""
    async with _serve("dual", config, runtime) as graph:
        yield graph


@contextlib.asynccontextmanager
async def fleet(config: RunnableConfig, runtime: ServerRuntime) -> AsyncIterator[Any]:
    """A coordinator and parallel worker agents."""
    async with _serve("fleet", config, runtime) as graph:
        yield graph
