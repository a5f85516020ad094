"""Tools that exist only while a run is going: the tools of the MCP sessions opened for it.

A graph built with MCP servers (``build_agent_graph(agents_file=...)`` whose file has
``mcp_servers``, ``mcp_config=``, the served graphs with ``$SMART_AGENT_MCP_CONFIG``) opens
their sessions around every async run (``graphs/run_scope.py``, ``tools.mcp.run_mcp_tools``)
and makes their tools the run's *run tools* here: in the run's config (``configurable``),
which every node, tool and child graph of that run sees, or in a context variable (the CLI's
runs). A registry lists the run tools
whose names match its ``offer_run_tools`` patterns (the default registry: all of them; a team
member: the names and globs of its ``tools``) after its own tools, so the agent's offered
tools, its tools node, a plan's tools and a planner's steps all find them.

A server that did not start is reported once per run: the run's first event (``emit``,
``events.py``) is preceded by an ``error`` event (``source`` "mcp", ``server``, ``error``)
naming it (the CLI, which opens its sessions itself, prints it at once instead).

A core module: the registry (``tools/registry.py``) and ``events.py`` read it.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "RUN_TOOLS_KEY", "RunTools", "current_run_tools", "pending_run_errors", "run_tools_matching", "using_run_tools",
    "with_run_tools",
]

#: The key of a run's ``configurable`` that carries its run tools (:func:`with_run_tools`); LangGraph
#: copies no ``__`` key into checkpoint metadata.
RUN_TOOLS_KEY = "__smart_agent_run_tools"


@dataclass
class RunTools:
    """One run's session tools: ``(tool, ToolMeta)`` pairs, and the ``error`` events of the
    servers that did not start, sent once on the run's stream."""

    pairs: list[tuple[Any, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)  # payloads of "error" events not sent yet


_CURRENT: ContextVar[RunTools | None] = ContextVar("smart_agent_run_tools", default=None)


def current_run_tools() -> RunTools | None:
    """The run tools of the run this code belongs to (None outside a run that opened sessions):
    those made current here (:func:`using_run_tools`), else those of the run's config
    (:func:`with_run_tools`: a graph run started with them, in whatever task LangGraph runs it)."""
    current = _CURRENT.get()
    if current is not None:
        return current
    try:
        from langgraph.config import get_config

        found = (get_config().get("configurable") or {}).get(RUN_TOOLS_KEY)
    except RuntimeError:  # (not inside a run)
        return None
    return found if isinstance(found, RunTools) else None


def with_run_tools(config: Any, tools: RunTools | None) -> dict[str, Any]:
    """``config`` (a run's config, or None) carrying ``tools`` as the run's run tools."""
    config = dict(config or {})
    if tools is not None:
        config["configurable"] = {**(config.get("configurable") or {}), RUN_TOOLS_KEY: tools}
    return config


@contextlib.contextmanager
def using_run_tools(tools: RunTools | None) -> Iterator[RunTools | None]:
    """Make ``tools`` the run tools of the code inside the ``with`` (and of the tasks it starts)."""
    token = _CURRENT.set(tools)
    try:
        yield tools
    finally:
        with contextlib.suppress(ValueError):  # (an async generator closed from another context)
            _CURRENT.reset(token)


def pending_run_errors() -> list[dict[str, Any]]:
    """The current run's ``error`` event payloads not sent yet, taken (the caller sends them)."""
    current = current_run_tools()
    if current is None or not current.errors:
        return []
    errors, current.errors = current.errors, []
    return errors


def run_tools_matching(patterns: Sequence[str]) -> list[tuple[Any, Any]]:
    """The current run's tools whose names match ``patterns`` (names, or globs with ``*?[``)."""
    current = current_run_tools()
    if current is None or not patterns:
        return []
    return [
        (tool, meta) for tool, meta in current.pairs
        if any(fnmatch.fnmatchcase(tool.name, p) if set(p) & set("*?[") else tool.name == p for p in patterns)
    ]
