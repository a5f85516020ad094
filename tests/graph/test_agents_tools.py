"""Agents as tools: sub_agent depth limit and concurrency bound, as_tool, over real HTTP."""

from __future__ import annotations

import threading
import time

import pytest
from conftest import offered, openai_model, run_with_events
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.sub_agent import sub_agent_tool
from smart_agent.testing.scripted_server import error, text, tool_call, tool_calls
from smart_agent.tools.agents import DEPTH_KEY, agent_depth, as_handoff, as_tool
from smart_agent.tools.registry import ToolRegistry


def ctx(**kw):
    return Context(model="openai:scripted-model", memory=False, **kw)


run = run_with_events


def registry_with(*tools):
    reg = ToolRegistry()
    for t in tools:
        reg.register(t)
    return reg


async def test_depth_limit_children_at_the_limit_get_no_sub_agent(scripted_server):
    def respond(req):
        last = req["messages"][-1]
        if last["role"] == "tool":
            return text(f"up: {last['content']}")
        if "sub_agent" in offered(req):
            return tool_call("sub_agent", {"task": f"deeper than {last['content'][:20]}"})
        return text("bottom reached")

    srv = scripted_server(responder=respond)
    model = openai_model(srv)
    graph = build_agent_graph(
        model=model,
        registry=registry_with(sub_agent_tool(model=model, registry=ToolRegistry())),
        checkpointer=InMemorySaver(),
    )
    final, events = await run(graph, "dig", ctx(max_agent_depth=2))

    assert final["answer"] == "up: up: bottom reached"
    # root and depth 1 were offered sub_agent; the depth-2 child (at the limit) was not
    assert [offered(r) for r in srv.requests[:3]] == [["sub_agent"], ["sub_agent"], []]
    starts = [e for e in events if e["event"] == "sub_agent" and e["phase"] == "start"]
    ends = [e for e in events if e["event"] == "sub_agent" and e["phase"] == "end"]
    assert [e["depth"] for e in starts] == [1, 2] and all(e["ok"] for e in ends)
    assert starts[0]["parent"] == "root" and starts[1]["parent"] == starts[0]["child"]
    # the grandchild's own events reach the root stream, tagged with its id
    assert any(e["event"] == "final_answer" and e.get("agent") == starts[1]["child"] for e in events)


async def test_sub_agent_beyond_the_limit_is_refused(scripted_server):
    srv = scripted_server([])
    tool = sub_agent_tool(model=openai_model(srv), registry=ToolRegistry(), max_depth=1)

    class Runtime:
        context = ctx()
        config = {"configurable": {DEPTH_KEY: 1}}
        stream_writer = None

    with pytest.raises(RuntimeError, match="depth limit"):
        await tool.coroutine(task="x", runtime=Runtime())
    assert srv.requests == [] and agent_depth(Runtime.config) == 1 and agent_depth(None) == 0


async def test_concurrent_sub_agents_are_bounded_by_the_semaphore(scripted_server):
    active = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def respond(req):
        last = req["messages"][-1]
        if last["role"] == "tool":
            results = [m["content"] for m in req["messages"] if m["role"] == "tool"]
            return text(" + ".join(results))
        if "sub_agent" in offered(req):
            return tool_calls([("sub_agent", {"task": f"part {i}"}) for i in range(5)])
        with lock:  # a child's model turn: count how many run at once
            active["now"] += 1
            active["peak"] = max(active["peak"], active["now"])
        time.sleep(0.3)
        with lock:
            active["now"] -= 1
        return text(f"done {last['content'][-6:]}")

    srv = scripted_server(responder=respond)
    model = openai_model(srv)
    graph = build_agent_graph(model=model, registry=registry_with(sub_agent_tool(model=model, registry=ToolRegistry())))
    start = time.perf_counter()
    final, events = await run(graph, "five parts", ctx(max_sub_agents=2, max_parallel_tools=5, max_agent_depth=1))
    elapsed = time.perf_counter() - start

    assert active["peak"] == 2
    assert elapsed >= 0.85  # three waves of at most two 0.3 s children
    assert final["answer"] == " + ".join(f"done part {i}" for i in range(5))
    assert len([e for e in events if e["event"] == "sub_agent" and e["phase"] == "end" and e["ok"]]) == 5


async def test_as_tool_returns_only_the_answer_and_failures_become_tool_errors(scripted_server):
    def respond(req):
        system = req["messages"][0]["content"]
        last = req["messages"][-1]
        if system == "You are the researcher.":
            if "fail" in last["content"]:
                return error(500, "researcher is down")
            return (
                tool_call("calculator", {"expression": "6*7"})
                if last["role"] == "user"
                else text(f"The result is {last['content']}.")
            )
        if last["role"] == "user":
            return tool_calls(
                [("research", {"task": "compute six times seven"}), ("research", {"task": "fail please"})]
            )
        return text("parent done")

    srv = scripted_server(responder=respond)
    model = openai_model(srv)
    from smart_agent.tools.calculator import calculator

    researcher = build_agent_graph(
        model=model, registry=registry_with(calculator), checkpointer=False, name="researcher"
    )
    research = as_tool(
        researcher, "research", "Ask the researcher.", context={"system_prompt": "You are the researcher."}
    )
    parent = build_agent_graph(model=model, registry=registry_with(research))
    final, events = await run(parent, "ask", ctx(system_prompt="You are the boss."))

    tool_msgs = [m for m in final["messages"] if isinstance(m, ToolMessage)]
    assert tool_msgs[0].content == "The result is 42." and tool_msgs[0].status == "success"
    assert tool_msgs[1].status == "error" and "researcher is down" in tool_msgs[1].content
    # the parent's thread holds only the answers, not the researcher's conversation
    assert not any(getattr(m, "name", None) == "calculator" for m in final["messages"])
    assert final["answer"] == "parent done"
    ends = [e for e in events if e["event"] == "sub_agent" and e["phase"] == "end"]
    assert sorted(e["ok"] for e in ends) == [False, True]


def test_handoff_tool_names_and_acknowledges():
    t = as_handoff("billing")
    assert t.name == "transfer_to_billing" and "billing" in t.description
    assert t.invoke({"reason": "money"}) == "Transferred to billing."
