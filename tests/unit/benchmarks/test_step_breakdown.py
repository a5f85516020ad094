"""benchmarks/step_breakdown.py: a run's time split into parts that add up to it, the loop's own
work measured beside create_agent's, and every wrapper put back afterwards."""

from __future__ import annotations

import asyncio

from conftest import benchmark_module

step_breakdown = benchmark_module("step_breakdown")


def test_parts_add_up_to_the_run_and_the_wrappers_are_put_back():
    from langchain_core.tools import StructuredTool

    import smart_agent.graphs.agent as graph_module
    import smart_agent.nodes.routes as routes
    from smart_agent.testing.fake_models import ScriptedChatModel

    def wrapped_parts() -> tuple:
        return ScriptedChatModel.ainvoke, StructuredTool.ainvoke, graph_module.make_tools_node, routes.Edge.invoke

    before = wrapped_parts()
    result = asyncio.run(step_breakdown.measure(turns=2, runs=2, rounds=1))
    assert wrapped_parts() == before
    assert "ainvoke" not in vars(ScriptedChatModel)  # (inherited again, not a copy of the wrapper)

    base, loop = result["create_agent"], result["memory off"]
    for parts in (base, loop):
        assert parts["model call"] > 0 and parts["tool execution"] > 0
        named = sum(v for k, v in parts.items() if k not in ("run", "LangGraph and the rest"))
        assert abs(named + parts["LangGraph and the rest"] - parts["run"]) < 0.01
    assert loop["agent node, own work"] > 0 and loop["tools node, own work"] > 0 and loop["routes"] > 0
    assert "routes" not in base  # (create_agent's nodes are not the loop's: not split)
    lines = step_breakdown.table(result, 2)
    assert lines[2].startswith("| run |") and "memory off ÷ create_agent" in lines[-1]
