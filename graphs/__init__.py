"""Graph builders by name (what `smart-agent run --graph NAME` and langgraph.json use)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

BUILDERS: dict[str, str] = {
    "agent": "smart_agent.graphs.agent:build_agent_graph",
    "planner": "smart_agent.graphs.planner:build_planner_graph",
    "dual": "smart_agent.graphs.dual:build_dual_graph",
    "fleet": "smart_agent.graphs.fleet:build_fleet_graph",
}


def get_builder(name: str) -> Callable:
    try:
        target = BUILDERS[name]
    except KeyError:
        raise ValueError(f"Unknown graph {name!r}. Known graphs: {', '.join(BUILDERS)}") from None
    module, attr = target.split(":")
    try:
        return getattr(import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"Graph {name!r} is not available in this version ({exc})") from None
