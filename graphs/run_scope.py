"""The runs of a graph with MCP servers, and the runs of the graphs ``langgraph dev`` serves.

``with_mcp_servers(compiled, servers)`` returns :class:`McpRunGraph`: the compiled graph (held,
not subclassed: every other attribute is the graph's) whose async runs - ``ainvoke``,
``astream``, ``astream_events`` - first open the servers' sessions (all at once, through
``langchain-mcp-adapters``), make their tools the run's tools (``runs/run_tools.py``: the run's
config carries them, so the agent offers them, its tools node and a planner's steps call them),
and close them when the run ends, also when it fails or is cancelled. A server that does not
start is one ``error`` event on the run's stream naming it, and the run goes on without its
tools. A run inside another run that has run tools (a sub-agent's graph, a CLI run, which opens
its servers itself) uses those and opens nothing. Sync runs open no session: MCP tools are async.

The served graphs are graph factories (``graphs/served.py``, what ``langgraph.json`` names): for
each run the server enters :func:`served_run`, which checks the client's context against the
server's settings (``config/served.py``: a client may narrow the sandbox, never widen it) before
any node runs, then opens the MCP servers for the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from ..config import settings
from ..config.served import client_context
from ..runs.background import RunTasks, run_tasks, with_run_scope
from ..runs.run_tools import RunTools, with_run_tools
from ..tools.mcp import run_mcp_tools
from ..tools.mcp_config import McpServer, load_mcp_config

__all__ = [
    "McpRunGraph", "mcp_servers_of", "served_graph", "served_mcp_config", "served_run", "with_mcp_servers",
]


class McpRunGraph:
    """A compiled graph whose async runs hold its MCP servers' sessions open. Composition: every
    attribute but the async run methods is the compiled graph's own (``graph``)."""

    def __init__(self, graph: Any, servers: Sequence[McpServer]) -> None:
        self.graph = graph
        self.mcp_servers = tuple(servers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.graph, name)

    def with_config(self, config: Any = None, **kwargs: Any) -> McpRunGraph:
        return McpRunGraph(self.graph.with_config(config, **kwargs), self.mcp_servers)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        async with run_mcp_tools(self.mcp_servers) as tools, run_tasks() as background:
            return await self.graph.ainvoke(input, run_config(config, tools, background), **kwargs)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        async with run_mcp_tools(self.mcp_servers) as tools, run_tasks() as background:
            async for chunk in self.graph.astream(input, run_config(config, tools, background), **kwargs):
                yield chunk

    async def astream_events(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        async with run_mcp_tools(self.mcp_servers) as tools, run_tasks() as background:
            async for event in self.graph.astream_events(input, run_config(config, tools, background), **kwargs):
                yield event


def run_config(config: Any, tools: RunTools | None, background: RunTasks) -> dict[str, Any]:
    """A run's config carrying its MCP tools and its background tasks (``runs/``)."""
    return with_run_scope(with_run_tools(config, tools), background)


def with_mcp_servers(compiled: Any, servers: Sequence[McpServer]) -> Any:
    """``compiled`` opening ``servers`` around each run (itself when there are none)."""
    return McpRunGraph(compiled, servers) if servers else compiled


def mcp_servers_of(config: Any) -> list[McpServer]:
    """``mcp_config=`` of a graph builder: None, a ``{"mcpServers": ...}`` file, or servers."""
    if config is None:
        return []
    if isinstance(config, (str, os.PathLike)):
        return load_mcp_config(os.fspath(config))
    return list(config)


def served_mcp_config() -> Any:
    """The MCP servers file of the graphs ``langgraph dev`` serves: ``$SMART_AGENT_MCP_CONFIG`` (None: none)."""
    return settings.mcp_config()


_served_lock = threading.Lock()


def served_graph(module: str, name: str, build: Callable[[], Any]) -> Any:
    """A graph module's ``__getattr__``: its ``graph`` (the server's graph, built from the server's
    environment) is built on first access, then kept in the module, so importing a graph module
    (the CLI does, for its builder) builds nothing. ``from smart_agent.graphs.agent import graph``
    and ``getattr`` work; the server reaches it through the factories of ``graphs/served.py``."""
    if name != "graph":
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    namespace = sys.modules[module].__dict__
    with _served_lock:
        if "graph" not in namespace:
            namespace["graph"] = build()
        return namespace["graph"]


@contextlib.asynccontextmanager
async def served_run(
    graph: Any, *, context: Any = None, configurable: Mapping[str, Any] | None = None
) -> AsyncIterator[Any]:
    """One served run of ``graph`` (a compiled graph, or an :class:`McpRunGraph`): the client's
    ``context`` and the context fields of its ``configurable`` are checked against the server's
    settings first (``config/served.py``; a widening value is a ``ClientContextError`` naming the
    field, before any node runs), then the graph's MCP servers open for the run. Yields the graph
    to run, its run tools in its config."""
    fields = _context_fields(configurable)
    for given in (context, fields or None):
        if given is not None:  # (resolves the workspace on the file system: off the event loop)
            await asyncio.to_thread(client_context, given)
    inner = graph.graph if isinstance(graph, McpRunGraph) else graph
    servers = graph.mcp_servers if isinstance(graph, McpRunGraph) else ()
    async with run_mcp_tools(servers) as tools, run_tasks() as background:
        yield inner.with_config(run_config(None, tools, background))


def _context_fields(configurable: Mapping[str, Any] | None) -> dict[str, Any]:
    """The context fields among a client's ``configurable`` (langgraph dev takes them as context)."""
    if not configurable:
        return {}
    from ..config.context import context_field_names

    names = set(context_field_names())
    return {k: v for k, v in configurable.items() if k in names}
