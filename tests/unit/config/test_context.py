"""Each graph has its own context class; the CLI builds the class of the graph it runs."""

from __future__ import annotations

from dataclasses import fields

import pytest

from smart_agent.cli import build_parser, context_from_args
from smart_agent.config.context import (
    GRAPH_CONTEXTS,
    AgentContext,
    Context,
    DualContext,
    FleetContext,
    PlannerContext,
)
from smart_agent.graphs import BUILDERS


def test_every_graph_has_a_context_class():
    assert set(GRAPH_CONTEXTS) == set(BUILDERS)
    assert issubclass(DualContext, PlannerContext), "the dual graph runs the planner"
    assert issubclass(FleetContext, AgentContext), "fleet workers are agent loops"


@pytest.mark.parametrize("graph", sorted(GRAPH_CONTEXTS))
def test_the_cli_builds_the_class_of_the_graph_it_runs(graph):
    ctx = context_from_args(build_parser().parse_args(["run", "x", "--graph", graph, "--max-tool-calls", "7"]))
    assert type(ctx) is GRAPH_CONTEXTS[graph]
    assert ctx.max_tool_calls == 7


def test_cli_flags_of_another_graph_are_ignored_as_before():
    args = build_parser().parse_args(["run", "x", "--graph", "agent", "--approve-plan"])
    ctx = context_from_args(args)
    assert type(ctx) is AgentContext and not hasattr(ctx, "approve_plan")
    planner = context_from_args(build_parser().parse_args(["run", "x", "--graph", "planner", "--approve-plan"]))
    assert planner.approve_plan is True


def test_context_keeps_every_field_for_existing_callers():
    union = {f.name for f in fields(Context)}
    for cls in GRAPH_CONTEXTS.values():
        assert {f.name for f in fields(cls)} <= union
