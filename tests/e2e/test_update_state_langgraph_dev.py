"""Editing a thread's state where users do it: `langgraph dev`'s own update path (LangGraph
Studio's "edit state", ``client.threads.update_state``). The agent loop routes with conditional
edges, so a state written as one of its nodes goes where that node's route sends it, and a run
with no input carries on from there."""

from __future__ import annotations

from smart_agent.testing.scripted_server import last_tool_message, text, tool_call

CONTEXT = {"model": "openai:scripted-model"}


def ai_call(name: str, args: dict, call_id: str = "edited-1", msg_id: str | None = None) -> dict:
    """An AI message (as Studio and langgraph_sdk send it) asking for one tool call."""
    message = {"type": "ai", "content": "", "tool_calls": [{"name": name, "args": args, "id": call_id}]}
    if msg_id is not None:
        message["id"] = msg_id
    return message


def answer_with_tool_result(req):
    return text("got " + last_tool_message(req))


async def _finished_thread(client, srv):
    srv.reset([text("first answer"), answer_with_tool_result])
    thread = await client.threads.create()
    result = await client.runs.wait(thread["thread_id"], "agent", input={"task": "hi"}, context=CONTEXT)
    assert result["answer"] == "first answer"
    assert (await client.threads.get_state(thread["thread_id"]))["next"] == []
    return thread["thread_id"]


async def test_update_state_as_agent_goes_to_tools_and_the_run_carries_on(dev_server):
    from langgraph_sdk import get_client

    url, srv = dev_server
    client = get_client(url=url)
    thread_id = await _finished_thread(client, srv)
    await client.threads.update_state(
        thread_id, {"messages": [ai_call("calculator", {"expression": "6*7"})]}, as_node="agent"
    )
    assert (await client.threads.get_state(thread_id))["next"] == ["tools"]
    result = await client.runs.wait(thread_id, "agent", input=None, context=CONTEXT)
    assert len(srv.requests) == 2
    assert srv.requests[1]["messages"][-1]["role"] == "tool" and last_tool_message(srv.requests[1]) == "42"
    assert result["answer"] == "got 42"
    assert result["tool_calls_made"] == 1


async def test_update_state_without_as_node_is_applied_as_the_last_node(dev_server):
    from langgraph_sdk import get_client

    url, srv = dev_server
    client = get_client(url=url)
    thread_id = await _finished_thread(client, srv)
    await client.threads.update_state(thread_id, {"messages": [ai_call("calculator", {"expression": "5+5"})]})
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["tools"]
    result = await client.runs.wait(thread_id, "agent", input=None, context=CONTEXT)
    assert last_tool_message(srv.requests[1]) == "10"
    assert result["answer"] == "got 10"


async def test_a_tool_result_edited_at_a_breakpoint_after_tools_is_what_the_model_reads(dev_server):
    """Studio's debugging step: a run stopped after the tools node (interrupt_after), the tool's
    result edited (no as_node: written as tools, the node that ran last), then a run with no input.
    The model reads the edited result."""
    from langgraph_sdk import get_client

    url, srv = dev_server
    srv.reset([tool_call("calculator", {"expression": "6*7"}), answer_with_tool_result])
    client = get_client(url=url)
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, "agent", input={"task": "6*7?"}, context=CONTEXT, interrupt_after=["tools"])
    state = await client.threads.get_state(thread_id)
    result = state["values"]["messages"][-1]
    assert state["next"] == ["agent"] and result["type"] == "tool" and result["content"] == "42"
    edited = {"type": "tool", "content": "41", "tool_call_id": result["tool_call_id"], "id": result["id"]}
    await client.threads.update_state(thread_id, {"messages": [edited]})
    assert (await client.threads.get_state(thread_id))["next"] == ["agent"]
    final = await client.runs.wait(thread_id, "agent", input=None, context=CONTEXT)
    assert len(srv.requests) == 2 and last_tool_message(srv.requests[1]) == "41"
    assert final["answer"] == "got 41"


async def test_editing_a_call_that_waits_for_approval_reviews_the_edited_call(dev_server, tmp_path):
    """A run paused before write_file (approve=write_file); the pending AI message is edited
    (same message id: it replaces the original) as the agent. The edited call waits for the
    review again (the run's approve setting is in the state), and the approved call is the
    edited one."""
    from langgraph_sdk import get_client

    url, srv = dev_server
    srv.reset([
        tool_call("write_file", {"path": "out.txt", "content": "hello"}),
        lambda req: text("result: " + last_tool_message(req)),
    ])
    client = get_client(url=url)
    context = {**CONTEXT, "approve": "write_file"}
    thread = await client.threads.create()
    thread_id = thread["thread_id"]
    await client.runs.wait(thread_id, "agent", input={"task": "save hello"}, context=context)
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["human"] and len(state["interrupts"]) == 1
    pending = state["values"]["messages"][-1]
    (call,) = pending["tool_calls"]

    edited = ai_call("write_file", {"path": "edited.txt", "content": "edited"}, call["id"], pending["id"])
    await client.threads.update_state(thread_id, {"messages": [edited]}, as_node="agent")
    state = await client.threads.get_state(thread_id)
    messages = state["values"]["messages"]
    assert [m["type"] for m in messages] == ["human", "ai"], "the edit replaced the pending message"
    assert messages[-1]["tool_calls"][0]["args"] == {"path": "edited.txt", "content": "edited"}
    assert state["next"] == ["human"], "the edited call waits for a decision too"

    # A run with no input reaches the review again: it asks about the edited call.
    await client.runs.wait(thread_id, "agent", input=None, context=CONTEXT)
    state = await client.threads.get_state(thread_id)
    (interrupt,) = state["interrupts"]
    (action,) = interrupt["value"]["action_requests"]
    assert action["name"] == "write_file" and action["args"] == {"path": "edited.txt", "content": "edited"}
    assert len(srv.requests) == 1 and not (tmp_path / "edited.txt").exists()

    result = await client.runs.wait(
        thread_id, "agent", command={"resume": {"decisions": [{"type": "approve"}]}}, context=context
    )
    assert (tmp_path / "edited.txt").read_text() == "edited"
    assert not (tmp_path / "out.txt").exists(), "the original call did not run"
    assert result["answer"] == "result: Wrote 6 characters to edited.txt"


async def test_served_drawing_keeps_the_routed_edges(dev_server):
    """Studio draws /assistants/<id>/graph: the routed nodes show their edges as conditional ones
    to each destination; tools has one plain edge, to the agent's step."""
    from langgraph_sdk import get_client

    url, _ = dev_server
    client = get_client(url=url)
    (assistant,) = await client.assistants.search(graph_id="agent")
    drawing = await client.assistants.get_graph(assistant["assistant_id"])
    edges = {(e["source"], e["target"]): bool(e.get("conditional")) for e in drawing["edges"]}
    assert {t for (s, t), c in edges.items() if s == "agent" and c} == {
        "human", "tools", "structuredOutput", "memory_write", "__end__", "agent",
        "handoff", "toolLimitFinalize", "summarize",  # after a tool turn, decided by the agent's step
    }
    assert {t for (s, t) in edges if s == "tools"} == {"agent"}
    assert edges[("human", "tools")] is False and edges[("summarize", "agent")] is False
    assert edges[("tools", "agent")] is False
