"""The ask_user tool: the human node asks the question (an interrupt ``{"question": ...}``),
the answer is the call's result; not offered, and not run, while ask_user is off."""

from __future__ import annotations

from conftest import loop_context, openai_model, run_graph
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from typing_extensions import TypedDict

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.testing.fake_models import ScriptedChatModel
from smart_agent.testing.scripted_server import last_tool_message, text, tool_calls, tool_messages
from smart_agent.tools.ask import ask_user
from smart_agent.tools.builtins import default_registry
from smart_agent.tools.invoke import run_tool

ASK = {"name": "ask_user", "arguments": {"question": "Which file?"}, "id": "q1"}


ctx = loop_context


async def run(graph, value, context, thread="t", events=None):
    """Stream one run (a task, or a Command to resume) on ``thread``: the final values."""
    return await run_graph(graph, value, context, thread=thread, events=events)


async def pending(graph, thread="t"):
    snapshot = await graph.aget_state({"configurable": {"thread_id": thread}})
    return [i.value for task in snapshot.tasks for i in task.interrupts]


def names(request) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


async def test_ask_user_pauses_with_the_question_and_the_answer_is_the_result(scripted_server, workspace):
    srv = scripted_server([tool_calls([ASK]), text("Using b.txt.")])
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), registry=default_registry())
    context = ctx(workspace, ask_user=True)
    events: list = []
    await run(graph, "open the file", context, events=events)
    assert "ask_user" in names(srv.requests[0])
    assert await pending(graph) == [{"question": "Which file?"}]
    assert [(e["id"], e["question"]) for e in events if e["event"] == "question"] == [("q1", "Which file?")]
    events.clear()
    final = await run(graph, Command(resume="b.txt"), context, events=events)
    assert final["answer"] == "Using b.txt."
    assert last_tool_message(srv.requests[1]) == "b.txt"
    assert final["tool_calls_made"] == 0  # an answer is no tool execution
    assert [e["id"] for e in events if e["event"] == "answer"] == ["q1"]
    assert not any(e["event"] == "question" for e in events)
    # the answered call is one of the run's tool calls: a tool_call event (marked reviewed) and its result
    assert [(e["id"], e["name"], e["reviewed"]) for e in events if e["event"] == "tool_call"] == [
        ("q1", "ask_user", "answer")
    ]
    assert [(e["id"], e["ok"]) for e in events if e["event"] == "tool_result"] == [("q1", True)]


async def test_approval_first_then_each_question_in_call_order(scripted_server, workspace):
    write = {"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}, "id": "w1"}
    ask2 = {"name": "ask_user", "arguments": {"question": "And the colour?"}, "id": "q2"}
    srv = scripted_server([tool_calls([ASK, write, ask2]), text("done")])
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), registry=default_registry())
    context = ctx(workspace, ask_user=True, approve="write_file")
    await run(graph, "go", context)
    (review,) = await pending(graph)
    assert [a["name"] for a in review["action_requests"]] == ["write_file"]
    await run(graph, Command(resume={"decisions": [{"type": "approve"}]}), context)
    assert await pending(graph) == [{"question": "Which file?"}] and not (workspace / "a.txt").exists()
    await run(graph, Command(resume={"answer": "a.txt"}), context)
    assert await pending(graph) == [{"question": "And the colour?"}]
    final = await run(graph, Command(resume="blue"), context)
    assert final["answer"] == "done" and (workspace / "a.txt").read_text() == "x"
    assert [m["content"] for m in tool_messages(srv.requests[1])] == ["a.txt", "Wrote 1 characters to a.txt", "blue"]


async def test_ask_user_is_not_offered_nor_run_when_off(scripted_server, workspace):
    srv = scripted_server([tool_calls([ASK]), text("ok")])
    graph = build_agent_graph(model=openai_model(srv), checkpointer=InMemorySaver(), registry=default_registry())
    final = await run(graph, "go", ctx(workspace))
    assert "ask_user" not in names(srv.requests[0]) and "calculator" in names(srv.requests[0])
    assert await pending(graph) == [] and final["answer"] == "ok"
    assert last_tool_message(srv.requests[1]).startswith("Unknown tool 'ask_user'")


async def test_a_blank_question_is_an_invalid_call_not_a_pause(workspace):
    model = ScriptedChatModel(responses=[
        AIMessage("", tool_calls=[{"name": "ask_user", "args": {"question": "  "}, "id": "q"}]),
        "fine",
    ])
    graph = build_agent_graph(model=model, checkpointer=InMemorySaver(), registry=default_registry())
    final = await run(graph, "go", ctx(workspace, ask_user=True))
    assert await pending(graph) == [] and final["answer"] == "fine"
    result = model.calls[1]["messages"][-1]
    assert result.status == "error" and result.content.startswith("Invalid arguments for tool 'ask_user'")


class S(TypedDict, total=False):
    out: str


async def test_run_tool_lets_the_interrupt_of_ask_user_through():
    """Outside the loop's human node (e.g. a planner step) the tool itself pauses the run."""
    runs = []

    async def step(state: S) -> S:
        outcome = await run_tool(ask_user, {"question": "Proceed?"}, call_id="s1")
        runs.append(outcome)
        return {"out": outcome.content}

    graph = StateGraph(S).add_node("step", step).add_edge(START, "step").add_edge("step", END)
    graph = graph.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "p"}}
    first = await graph.ainvoke({}, config)
    assert [i.value for i in first["__interrupt__"]] == [{"question": "Proceed?"}] and runs == []
    final = await graph.ainvoke(Command(resume="yes"), config)
    assert final["out"] == "yes" and runs[0].ok
