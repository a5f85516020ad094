"""Small helpers shared by the planner nodes (no graph wiring, no model calls of their own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...messages import task_text  # noqa: F401  (the planner nodes import it from here)
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
