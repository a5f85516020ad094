"""Small helpers shared by the planner nodes (no graph wiring, no model calls of their own)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...models.messages import task_text  # noqa: F401  (the planner nodes import it from here)
from ...tools.ask import ask_tools
from ...tools.registry import ToolRegistry


def remaining_budget(state: Mapping[str, Any], ctx: Any) -> int:
    """Tool calls the run may still make: its ``max_tool_calls`` minus every step attempt (and
    every tool call of a step's sub-agents) so far."""
    budget = state.get("max_tool_calls")
    budget = int(ctx.max_tool_calls if budget is None else budget)
    return max(0, budget - attempts_used(state.get("step_results") or {}))


def attempts_used(results: Mapping[str, Any]) -> int:
    """Tool executions of the run so far: every attempt of every step (retries included) and
    every tool call of the sub-agents a step ran (``tool_calls``, when it has one)."""
    return sum(step_calls(r) for r in results.values())


def step_calls(result: Mapping[str, Any] | None) -> int:
    """The tool executions of one step result: its ``tool_calls`` (attempts and what they ran),
    else its ``attempts``."""
    result = result or {}
    return int(result.get("tool_calls") or result.get("attempts") or 0)


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
