"""Routing decisions of the agent loop, on hand-built states."""

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from smart_agent.nodes.routes import END, pending_tool_calls, route_after_agent, route_after_tools, tool_limit_reached
from smart_agent.nodes.tools import plan_calls


def ai_with_calls(n=1):
    return AIMessage(
        "", tool_calls=[{"name": "calculator", "args": {"expression": "1"}, "id": f"c{i}"} for i in range(n)]
    )


def test_after_agent_runs_tools_when_model_asked():
    assert route_after_agent({"messages": [HumanMessage("q"), ai_with_calls()]}) == "tools"


def test_after_agent_ends_on_plain_answer():
    assert route_after_agent({"messages": [HumanMessage("q"), AIMessage("done")]}) == END


def test_after_agent_ends_when_finalizing_even_with_calls():
    assert route_after_agent({"messages": [ai_with_calls()], "finalize": True}) == END


def test_after_agent_treats_malformed_calls_as_calls():
    msg = AIMessage(
        "",
        invalid_tool_calls=[
            {"name": "calculator", "args": "{bad", "id": "x", "error": "bad json", "type": "invalid_tool_call"}
        ],
    )
    assert pending_tool_calls(msg)
    assert route_after_agent({"messages": [msg]}) == "tools"


def test_after_agent_ends_on_empty_state():
    assert route_after_agent({}) == END
    assert route_after_agent({"messages": [ToolMessage("x", tool_call_id="1")]}) == END


def test_after_tools_finalizes_exactly_at_limit():
    assert route_after_tools({"tool_calls_made": 2, "max_tool_calls": 3}) == "agent"
    assert route_after_tools({"tool_calls_made": 3, "max_tool_calls": 3}) == "toolLimitFinalize"
    assert route_after_tools({"tool_calls_made": 5, "max_tool_calls": 3}) == "toolLimitFinalize"


def test_limit_zero_means_no_tools():
    assert tool_limit_reached({"tool_calls_made": 0, "max_tool_calls": 0})
    assert not tool_limit_reached({"tool_calls_made": 0})


def test_plan_calls_splits_at_remaining_budget():
    calls = [{"id": str(i)} for i in range(5)]
    run, skipped = plan_calls(calls, made=18, limit=20)
    assert [c["id"] for c in run] == ["0", "1"] and [c["id"] for c in skipped] == ["2", "3", "4"]
    run, skipped = plan_calls(calls, made=25, limit=20)
    assert run == [] and len(skipped) == 5
