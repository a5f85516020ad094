"""Small helpers shared by the planner nodes (no graph wiring, no model calls of their own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...messages import task_text  # noqa: F401  (the planner nodes import it from here)
from ...tools.ask import ask_tools
from ...tools.registry import ToolRegistry


def remaining_budget(state: Mapping[str, Any], ctx: Any) -> int:
    """Tool calls the run may still make: its ``max_tool_calls`` minus every step attempt so far."""
    budget = state.get("max_tool_calls")
    budget = int(ctx.max_tool_calls if budget is None else budget)
    used = sum(int((r or {}).get("attempts") or 0) for r in (state.get("step_results") or {}).values())
    return max(0, budget - used)


def select_registry(registry: ToolRegistry, names: list[str] | None) -> ToolRegistry:
    """The registry restricted to ``names`` (all tools when None/empty)."""
    if not names:
        return registry
    subset = ToolRegistry()
    for tool in registry.tools(names):
        subset.register(tool, registry.meta(tool.name))
    return subset


def offered_registry(registry: ToolRegistry, ctx: Any) -> ToolRegistry:
    """The tools a planner run offers, validates and runs: ``ctx.tools`` (all when empty), and
    ``ask_user`` only while the run's ``ask_user`` is on (as the agent loop offers it)."""
    subset = select_registry(registry, ctx.tools)
    hidden = set() if getattr(ctx, "ask_user", False) else ask_tools(subset)
    if not hidden:
        return subset
    offered = ToolRegistry()
    for tool in subset.tools():
        if tool.name not in hidden:
            offered.register(tool, subset.meta(tool.name))
    return offered
