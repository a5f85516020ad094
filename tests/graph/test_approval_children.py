"""approve in detached child runs (sub-agents, fleet workers): nobody can answer a child's
interrupt, so the child inherits the setting and its calls that need approval are refused
with a clear error result, never run without the approval and never left hanging."""

from __future__ import annotations

from conftest import loop_context, openai_model, run_with_events
from langgraph.checkpoint.memory import InMemorySaver

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.graphs.fleet import build_fleet_graph
from smart_agent.graphs.sub_agent import sub_agent_tool
from smart_agent.nodes.fleet import AGGREGATE_SYSTEM, SUBMIT_SUBTASKS
from smart_agent.nodes.human import NO_APPROVER
from smart_agent.testing.scripted_server import last_tool_message, text, tool_call
from smart_agent.tools.builtins import default_registry

WRITE_ARGS = {"path": "out.txt", "content": "hello"}


ctx = loop_context


def names(request) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


async def test_a_sub_agent_call_needing_approval_is_refused_not_run(scripted_server, workspace):
    srv = scripted_server([
        tool_call("sub_agent", {"task": "write hello to out.txt"}),  # the parent delegates
        tool_call("write_file", WRITE_ARGS),  # the child tries to write
        text("I could not write it: it needs approval."),  # the child answers
        text("The file needs your approval; I did not write it."),  # the parent answers
    ])
    model = openai_model(srv)
    registry = default_registry()
    registry.register(sub_agent_tool(model=model, registry=default_registry()))
    graph = build_agent_graph(model=model, registry=registry, checkpointer=InMemorySaver())
    final, events = await run_with_events(graph, "write hello", ctx(workspace, approve="write_file", ask_user=True))
    assert final["answer"] == "The file needs your approval; I did not write it."
    assert not (workspace / "out.txt").exists()
    snapshot = await graph.aget_state({"configurable": {"thread_id": "t"}})
    assert snapshot.next == () and not any(t.interrupts for t in snapshot.tasks)
    assert last_tool_message(srv.requests[2]) == NO_APPROVER.format(name="write_file", approve="write_file")
    assert "ask_user" in names(srv.requests[0]) and "ask_user" not in names(srv.requests[1])  # nobody to ask
    assert last_tool_message(srv.requests[3]) == "I could not write it: it needs approval."
    assert not any(e["event"] == "approval_requested" for e in events)


async def test_a_fleet_worker_call_needing_approval_is_refused(scripted_server, workspace):
    def respond(req):
        tools = names(req)
        if SUBMIT_SUBTASKS in tools:
            return tool_call(SUBMIT_SUBTASKS, {"subtasks": ["Write hello to out.txt"]})
        if req["messages"][0]["content"] == AGGREGATE_SYSTEM:
            return text("Summary: " + req["messages"][-1]["content"])
        if req["messages"][-1]["role"] == "tool":
            return text("worker: " + req["messages"][-1]["content"])
        assert "ask_user" not in tools
        return tool_call("write_file", WRITE_ARGS)

    srv = scripted_server(responder=respond)
    graph = build_fleet_graph(model=openai_model(srv), registry=default_registry(), checkpointer=InMemorySaver())
    final, _ = await run_with_events(graph, "write hello", ctx(workspace, approve="side-effects", ask_user=True))
    assert not (workspace / "out.txt").exists()
    refused = NO_APPROVER.format(name="write_file", approve="side-effects")
    assert refused in final["answer"]
