"""Tool assembly: the registry a graph offers, built from the defaults, the caller's
tools and the context tools. Graph files only wire; they ask this module for tools."""

from __future__ import annotations

from collections.abc import Iterable

from langchain_core.tools import BaseTool

from .builtins import builtin_meta, default_registry
from .context_tools import with_context_tools
from .registry import ToolMeta, ToolRegistry, attached_meta

__all__ = ["resolve_registry"]


def resolve_registry(registry: ToolRegistry | None, tools: Iterable[BaseTool] | None) -> ToolRegistry:
    """The agent loop's registry: ``registry`` (default: the built-in tools and plugins,
    loaded on first use) plus ``tools`` (replacing same-named ones; a tool's metadata: a built-in's,
    or the ``ToolMeta`` it carries, e.g. an MCP tool's, else a user tool's), plus the context tools
    (get_tool_response, manage_todo_list: offered when they apply)."""
    if registry is None:
        registry = default_registry()
    if tools:
        registry = registry.copy()
        for t in tools:
            registry.register(t, builtin_meta(t) or attached_meta(t) or ToolMeta(source="user"), replace=True)
    return with_context_tools(registry)
