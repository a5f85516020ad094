"""Tool-call approval under `langgraph dev`, through langgraph_sdk: the agent graph pauses
before write_file (context approve=write_file), the thread's interrupt carries the HITL
action requests, and a resume command rejects or approves the call."""

from __future__ import annotations

from smart_agent.runs.approval import rejection_text
from smart_agent.testing.scripted_server import last_tool_message, text, tool_call


def respond(req):
    """Write out.txt; once a tool result is back, report it."""
    if req["messages"][-1]["role"] == "tool":
        return text("result: " + last_tool_message(req))
    return tool_call("write_file", {"path": "out.txt", "content": "hello"})


async def test_sdk_rejects_then_approves_a_write(dev_server, tmp_path):
    from langgraph_sdk import get_client

    url, srv = dev_server
    srv.reset([respond] * 4)  # two requests per thread
    client = get_client(url=url)
    (assistant,) = await client.assistants.search(graph_id="agent")
    schemas = await client.assistants.get_schemas(assistant["assistant_id"])
    assert "approve" in schemas["context_schema"]["properties"]
    context = {"model": "openai:scripted-model", "approve": "write_file"}

    # Thread 1: paused before the write, resumed with a rejection (and no context: the
    # decision applies to the calls the paused run asked about all the same).
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "agent", input={"task": "save hello"}, context=context)
    state = await client.threads.get_state(thread["thread_id"])
    (interrupt,) = state["interrupts"]
    (action,) = interrupt["value"]["action_requests"]
    assert action["name"] == "write_file" and action["args"] == {"path": "out.txt", "content": "hello"}
    assert state["next"] == ["human"] and len(srv.requests) == 1
    assert not (tmp_path / "out.txt").exists()
    result = await client.runs.wait(
        thread["thread_id"], "agent",
        command={"resume": {"decisions": [{"type": "reject", "message": "not allowed"}]}},
    )
    call_id = srv.requests[1]["messages"][-2]["tool_calls"][0]["id"]
    rejected = rejection_text("write_file", call_id, "not allowed")
    assert last_tool_message(srv.requests[1]) == rejected and "not allowed" in rejected
    assert result["answer"] == "result: " + rejected
    assert not (tmp_path / "out.txt").exists()
    assert (await client.threads.get_state(thread["thread_id"]))["interrupts"] == []

    # Thread 2: the same request approved writes the file.
    second = await client.threads.create()
    await client.runs.wait(second["thread_id"], "agent", input={"task": "save hello"}, context=context)
    assert len((await client.threads.get_state(second["thread_id"]))["interrupts"]) == 1
    assert not (tmp_path / "out.txt").exists()
    result = await client.runs.wait(
        second["thread_id"], "agent", command={"resume": {"decisions": [{"type": "approve"}]}}, context=context
    )
    assert (tmp_path / "out.txt").read_text() == "hello"
    assert result["answer"] == "result: Wrote 5 characters to out.txt"
