"""The team graph: handoffs switch the active agent (prompt and tools) in one thread."""

from __future__ import annotations

import pytest
from conftest import openai_model
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from smart_agent.config.context import Context
from smart_agent.graphs.team import build_team_graph
from smart_agent.nodes.routes import route_after_handoff, route_after_tools
from smart_agent.nodes.team import AgentSpec, resolve_handoffs
from smart_agent.testing.scripted_server import text, tool_call, tool_calls
from smart_agent.tools.calculator import calculator


def ctx(**kw):
    return Context(model="openai:scripted-model", memory=False, **kw)


async def run(graph, task, thread):
    events, final = [], {}
    config = {"configurable": {"thread_id": thread}}
    async for mode, chunk in graph.astream(
        {"task": task}, config=config, context=ctx(), stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
        else:
            final = chunk
    return final, events


def team(model):
    return build_team_graph(
        agents={
            "triage": AgentSpec("You are triage.", description="Routes requests."),
            "billing": AgentSpec(
                "You are billing.", tools=[calculator], handoffs=["triage"], description="Invoices and refunds."
            ),
            "support": AgentSpec("You are support.", handoffs=["triage"]),
        },
        model=model,
        checkpointer=InMemorySaver(),
    )


def offered(req):
    return sorted(t["function"]["name"] for t in req.get("tools") or [])


async def test_handoff_switches_agent_mid_thread_and_first_transfer_wins(scripted_server):
    srv = scripted_server([
        # triage transfers twice in one turn, both calls with the same id: billing (first) wins
        tool_calls([
            {"name": "transfer_to_billing", "arguments": {"reason": "refund"}, "id": "dup"},
            {"name": "transfer_to_support", "arguments": {}, "id": "dup"},
        ]),
        tool_call("calculator", {"expression": "19.99*2"}),
        text("Your refund is 39.98."),
        text("Anything else about billing?"),
    ])
    graph = team(openai_model(srv))
    final, events = await run(graph, "I want a refund for two items", "t1")

    first, second, third = srv.requests[:3]
    assert first["messages"][0]["content"].startswith("You are triage.")
    assert offered(first) == ["transfer_to_billing", "transfer_to_support"]
    # the next request carries the billing agent's prompt and tools
    assert second["messages"][0]["content"].startswith("You are billing.")
    assert offered(second) == ["calculator", "transfer_to_triage"]
    tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"] == "Transferred to billing."
    assert tool_msgs[1]["content"].startswith("Not transferred: only one handoff per turn")
    assert third["messages"][-1]["content"] == "39.98"
    assert final["answer"] == "Your refund is 39.98." and final["active_agent"] == "billing"
    handoffs = [e for e in events if e["event"] == "handoff"]
    assert len(handoffs) == 1 and handoffs[0]["from"] == "triage" and handoffs[0]["to"] == "billing"
    assert handoffs[0]["ignored"] == ["transfer_to_support"]
    # in the thread each call has exactly one result, in call order
    msgs = final["messages"]
    i = next(k for k, m in enumerate(msgs) if isinstance(m, AIMessage) and len(m.tool_calls) == 2)
    assert [type(m) for m in msgs[i + 1 : i + 3]] == [ToolMessage, ToolMessage]
    assert msgs[i + 2].status == "error"

    # the next run on the thread stays with billing
    final2, _ = await run(graph, "thanks", "t1")
    assert srv.requests[3]["messages"][0]["content"].startswith("You are billing.")
    assert final2["answer"] == "Anything else about billing?" and final2["active_agent"] == "billing"


@pytest.mark.unit  # no server: a function of the graph's nodes
def test_resolve_handoffs_first_valid_in_call_order_wins():
    calls = [
        (0, {"name": "transfer_to_nobody", "args": {}}),
        (1, {"name": "transfer_to_b", "args": {}}),
        (2, {"name": "transfer_to_c", "args": {}}),
        (3, {"name": "transfer_to_b", "args": {}}),
    ]
    winner, errors = resolve_handoffs(calls, "a", {"b", "c"})
    assert winner == 1 and sorted(errors) == [2, 3]
    assert resolve_handoffs([(0, {"name": "transfer_to_a", "args": {}})], "a", {"b"}) == (None, {})


@pytest.mark.unit  # no server: a function of the graph's nodes
def test_route_after_tools_in_a_team():
    handoff = AIMessage("", tool_calls=[{"name": "transfer_to_b", "args": {}, "id": "1"}])
    plain = AIMessage("", tool_calls=[{"name": "calculator", "args": {}, "id": "1"}])
    team = {"active_agent": "a"}
    five = {"max_tool_calls": 5}
    assert route_after_tools({**team, "messages": [handoff, ToolMessage("ok", tool_call_id="1")]}) == "handoff"
    assert route_after_tools({**team, "messages": [plain], "tool_calls_made": 1, "run_settings": five}) == "agent"
    assert (
        route_after_tools({**team, "messages": [plain], "tool_calls_made": 5, "run_settings": five})
        == "toolLimitFinalize"
    )
    # outside a team a transfer-named tool is an ordinary tool
    assert route_after_tools({"messages": [handoff, ToolMessage("ok", tool_call_id="1")]}) == "agent"
    assert route_after_handoff({**team, "tool_calls_made": 5, "run_settings": five}) == "toolLimitFinalize"
    assert route_after_handoff({**team, "tool_calls_made": 1, "run_settings": five}) == "agent"
