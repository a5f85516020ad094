"""Two-phase reasoning (reasoning="two_phase") through the real langchain-openai client."""

from __future__ import annotations

import pytest
from conftest import offered, openai_model, run_with_events
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.nodes.reasoning import REASONING, read_reasoning, tools_named
from smart_agent.testing.scripted_server import text, tool_call
from smart_agent.tools.calculator import calculator
from smart_agent.tools.registry import ToolRegistry


@tool
def lookup(term: str) -> str:
    """Look a term up."""
    return f"{term}: found"


run = run_with_events


async def test_two_phase_reasons_then_acts_with_the_named_tools(scripted_server):
    srv = scripted_server([
        tool_call(REASONING, {"situation": "I must multiply.", "plan": ["Use calculator on 6*7"], "done": False}),
        tool_call("calculator", {"expression": "6*7"}),
        tool_call(REASONING, {"situation": "The product is 42.", "plan": [], "done": True}),
        text("6*7 = 42"),
    ])
    reg = ToolRegistry()
    reg.register(calculator)
    reg.register(lookup)
    graph = build_agent_graph(model=openai_model(srv), registry=reg)
    final, events = await run(graph, "What is 6*7?", Context(memory=False, reasoning="two_phase"))

    assert final["answer"] == "6*7 = 42" and final["tool_calls_made"] == 1
    r = srv.requests
    assert [offered(q) for q in r] == [[REASONING], ["calculator"], [REASONING], []]
    assert "Situation: I must multiply." in r[1]["messages"][0]["content"]
    assert "The task is done" in r[3]["messages"][0]["content"]
    # the reasoning calls never enter the conversation
    calls = [c["name"] for m in final["messages"] if isinstance(m, AIMessage) for c in m.tool_calls]
    assert calls == ["calculator"]
    reasoning = [e for e in events if e["event"] == "reasoning"]
    assert [e["tools"] for e in reasoning] == [["calculator"], []] and reasoning[1]["done"] is True


async def test_direct_mode_is_one_call_per_turn(scripted_server):
    srv = scripted_server([text("hi")])
    reg = ToolRegistry()
    reg.register(lookup)
    graph = build_agent_graph(model=openai_model(srv), registry=reg)
    final, _ = await run(graph, "hello", Context(memory=False))
    assert final["answer"] == "hi" and len(srv.requests) == 1 and offered(srv.requests[0]) == ["lookup"]


@pytest.mark.unit  # no server: a function of the graph's nodes
def test_tools_named_and_read_reasoning():
    r = {"situation": "Use the Calculator, then lookup.", "plan": ["recalculate"], "done": False}
    assert tools_named(r, ["calculator", "lookup", "calc", "read_file"]) == ["calculator", "lookup"]
    msg = AIMessage(
        "", tool_calls=[{"name": REASONING, "args": {"situation": "s", "plan": "one step", "done": "true"}, "id": "1"}]
    )
    assert read_reasoning(msg) == {"situation": "s", "plan": ["one step"], "done": True}
    assert read_reasoning(AIMessage("plain")) is None
