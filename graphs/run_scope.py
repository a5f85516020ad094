"""A compiled graph that opens its MCP servers' sessions around each of its runs, and the graphs
``langgraph dev`` serves, whose runs first check their client's context.

``with_mcp_servers(compiled, servers)`` returns the same graph (nodes, edges, schemas,
drawing) whose async runs - ``ainvoke``, ``astream``, ``astream_events``, and so every run
``langgraph dev`` makes - first open the servers' sessions (all at once, through
``langchain-mcp-adapters``), make their tools the run's tools (``run_tools.py``: the
graph's registries hold them, so the agent offers them, its tools node and a planner's steps
call them, a plan may name them), and close them when the run ends, also when it fails or is
cancelled. A server that does not start is one ``error`` event on the run's stream naming it,
and the run goes on without its tools.

A run inside another run that has run tools (a sub-agent's graph, a CLI run, which opens its
servers itself) uses those and opens nothing. Sync runs (``invoke``, ``stream``) open no
session: MCP tools are async.

``served_graph`` builds a graph module's served ``graph`` (``graphs/served.py``, what
``langgraph.json`` names) with ``served=True``: every run of it, async or sync, first passes its
context through ``context_client.client_context`` - a client may narrow the server's sandbox
(workspace, private network, write cap, budgets), never widen it - and fails with one line naming
the field before any node runs, MCP server starts or model is called. That is the one place: the
nodes and tools trust the context they get, as they trust the CLI's and a Python caller's.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

from ..config import settings
from ..config.served import client_context
from ..runs.background import run_tasks, using_run_scope
from ..runs.run_tools import using_run_tools
from ..tools.mcp import run_mcp_tools
from ..tools.mcp_config import McpServer, load_mcp_config
from .self_routing import SelfRoutedGraph

__all__ = ["McpRunGraph", "as_served", "mcp_servers_of", "served_graph", "served_mcp_config", "with_mcp_servers"]


class McpRunGraph(SelfRoutedGraph):
    """A compiled state graph whose async runs hold its MCP servers' sessions open (its nodes
    may route themselves: ``graphs/self_routing.py``); ``served``: a served graph, whose runs
    take their context from a client (checked by ``context_client.client_context``)."""

    def __init__(self, *, mcp_servers: Sequence[McpServer] = (), served: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # (both kept by copy() and with_config(), which pass __dict__: the server copies the graph)
        self.mcp_servers = tuple(mcp_servers)
        self.served = served

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]:
        if self.served:
            kwargs["context"] = client_context(kwargs.get("context"))
        return super().stream(input, config, **kwargs)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        if self.served:
            context = kwargs.get("context")
            if context is None or (isinstance(context, Mapping) and not context.get("workspace")):
                kwargs["context"] = client_context(context)  # (reads no file)
            else:  # the workspace is resolved on the file system: off the event loop
                kwargs["context"] = await asyncio.to_thread(client_context, context)
        async with run_mcp_tools(self.mcp_servers) as tools, run_tasks() as background:
            inner: Any = super().astream(input, config, **kwargs)
            try:
                while True:
                    # The run tools (and the run's background tasks) are set around every step of the
                    # run, in whatever task drives it (langgraph dev's streams may resume the stream
                    # from several): the node tasks each step starts copy them.
                    with using_run_tools(tools), using_run_scope(background):
                        try:
                            chunk = await anext(inner)
                        except StopAsyncIteration:
                            return
                    yield chunk
            finally:
                with using_run_tools(tools), using_run_scope(background):
                    await inner.aclose()


def with_mcp_servers(compiled: Any, servers: Sequence[McpServer]) -> Any:
    """``compiled`` opening ``servers`` around each run (itself when there are none)."""
    if not servers:
        return compiled
    attrs = {k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"}
    return McpRunGraph(mcp_servers=servers, **attrs)


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


def as_served(compiled: Any) -> McpRunGraph:
    """``compiled`` (the same nodes, edges, schemas, MCP servers) as a served graph: its runs check
    their client's context first (``context_client.client_context``)."""
    attrs = {k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"}
    return McpRunGraph(**{**attrs, "served": True})


_served_lock = threading.Lock()


def served_graph(module: str, name: str, build: Callable[[], Any]) -> Any:
    """A graph module's ``__getattr__``: its served ``graph`` is built on first access, then kept
    in the module, so importing a graph module (the CLI does, for its builder) builds nothing.
    ``from smart_agent.graphs.agent import graph`` and ``getattr`` work; ``langgraph dev`` reads
    the module's ``__dict__``, so langgraph.json names ``smart_agent.graphs.served``. The graph is
    a served one (:func:`as_served`): its runs check their client's context; ``build_*_graph()``
    builds one that trusts its caller (the CLI, Python code)."""
    if name != "graph":
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    namespace = sys.modules[module].__dict__
    with _served_lock:
        if "graph" not in namespace:
            namespace["graph"] = as_served(build())
        return namespace["graph"]
