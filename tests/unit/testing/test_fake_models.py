"""ScriptedChatModel (in-process, no server), the request readers and demo_responder as a pure
function."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from scripted_support import aggregate, calculator, write_file

from smart_agent.testing.demo import DEMO_TASK, demo_responder
from smart_agent.testing.fake_models import ScriptedChatModel, ScriptExhaustedError
from smart_agent.testing.scripted_server import (
    last_tool_message,
    tool_messages,
)


def test_request_readers():
    request = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "a", "type": "function", "function": {"name": "calculator", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "a", "content": "1591"},
            {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "ok"}]},
        ]
    }
    assert [m["tool_call_id"] for m in tool_messages(request)] == ["a", "b"]
    assert last_tool_message(request) == "ok"
    assert last_tool_message({"messages": [{"role": "user", "content": "x"}]}) is None


def test_demo_responder_reads_result_from_request_not_hardcoded():
    # A calculator that returns something else: the answer must follow it.
    def request_with(calc_result: str, extra_tool_first: bool = False) -> dict:
        msgs = [
            {"role": "user", "content": DEMO_TASK},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "w1", "type": "function", "function": {"name": "write_file", "arguments": "{}"}},
                {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": "{}"}},
            ]},
        ]
        # Tool messages in an order that does not match the calls: matching is by id.
        msgs.append({"role": "tool", "tool_call_id": "c1", "content": calc_result})
        msgs.append({"role": "tool", "tool_call_id": "w1", "content": "ok"})
        return {"messages": msgs}

    final = demo_responder(request_with("42"))
    assert final["content"] == "37 × 43 = 42. I saved the result to answer.txt."
    assert "tool_calls" not in final

    swapped = request_with("42")
    swapped["messages"][2], swapped["messages"][3] = swapped["messages"][3], swapped["messages"][2]
    nxt = demo_responder(swapped)  # last tool message now is the calculator's
    assert nxt["tool_calls"][0]["name"] == "write_file"
    assert nxt["tool_calls"][0]["arguments"] == {"path": "answer.txt", "content": "37*43 = 42\n"}

    first = demo_responder({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": DEMO_TASK}]})
    assert first["tool_calls"][0] == {"name": "calculator", "arguments": {"expression": "37*43"}}


def _calc_msg(expr: str = "37*43", id: str | None = None) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": "calculator", "args": {"expression": expr}, "id": id}], id="reused"
    )


def test_scripted_chat_model_bind_tools_and_calls_recorded():
    model = ScriptedChatModel(responses=[_calc_msg(id="c1"), "done"])
    bound = model.bind_tools([calculator, write_file])
    assert model.bound_tools == ["calculator", "write_file"]
    first = bound.invoke([HumanMessage("q")])
    assert first.tool_calls[0]["name"] == "calculator" and first.tool_calls[0]["id"] == "c1"
    second = model.invoke([HumanMessage("q"), first, ToolMessage("1591", tool_call_id="c1")])
    assert second.content == "done"
    assert model.calls[0]["tools"] == ["calculator", "write_file"]
    assert model.calls[1]["tools"] == []  # unbound call offers no tools
    assert len(model.calls[1]["messages"]) == 3


def test_scripted_chat_model_ids_are_none_and_tool_ids_generated():
    model = ScriptedChatModel(responses=[_calc_msg(), _calc_msg()])
    a = model.invoke("x")
    b = model.invoke("y")
    assert model.responses[0].id == "reused"  # script untouched
    assert a.id != "reused" and b.id != "reused" and a.id != b.id
    assert a.tool_calls[0]["id"] and a.tool_calls[0]["id"] != b.tool_calls[0]["id"]


def test_scripted_chat_model_callable_and_exhaustion():
    model = ScriptedChatModel(responses=[lambda msgs: AIMessage(f"saw {len(msgs)}")])
    assert model.invoke([HumanMessage("a"), HumanMessage("b")]).content == "saw 2"
    with pytest.raises(ScriptExhaustedError, match="exhausted after 1"):
        model.invoke("again")


def test_scripted_chat_model_streams_tool_calls():
    model = ScriptedChatModel(
        responses=[
            AIMessage(
                content="Computing now.",
                tool_calls=[
                    {"name": "calculator", "args": {"expression": "37*43"}, "id": "c1"},
                    {"name": "write_file", "args": {"path": "a.txt", "content": "x"}, "id": "w1"},
                ],
            ),
            "plain words here",
        ]
    )
    bound = model.bind_tools([calculator, write_file])
    chunks = list(bound.stream("go"))
    agg = aggregate(chunks)
    assert agg.content == "Computing now."
    assert [(tc["name"], tc["args"], tc["id"]) for tc in agg.tool_calls] == [
        ("calculator", {"expression": "37*43"}, "c1"),
        ("write_file", {"path": "a.txt", "content": "x"}, "w1"),
    ]
    assert model.calls[0]["tools"] == ["calculator", "write_file"]
    text_chunks = list(model.stream("more"))
    assert len(text_chunks) > 2
    assert aggregate(text_chunks).content == "plain words here"


def test_scripted_chat_model_in_agent_with_messages_stream_mode():
    from langchain.agents import create_agent

    model = ScriptedChatModel(responses=[_calc_msg(id="c1"), "37 × 43 = 1591."])
    agent = create_agent(model, tools=[calculator])
    streamed = []
    for msg, _meta in agent.stream({"messages": [HumanMessage(DEMO_TASK)]}, stream_mode="messages"):
        streamed.append(msg)
    result_types = [type(m).__name__ for m in streamed]
    assert "ToolMessage" in result_types
    ai_chunks = [m for m in streamed if type(m).__name__ == "AIMessageChunk"]
    assert any(m.tool_call_chunks for m in ai_chunks)
    tool_msgs = [m for m in streamed if isinstance(m, ToolMessage)]
    assert tool_msgs[0].content == "1591"
    assert model.calls[0]["tools"] == ["calculator"]


def test_scripted_chat_model_in_agent_keeps_all_messages():
    from langchain.agents import create_agent

    model = ScriptedChatModel(responses=[_calc_msg(id="c1"), _calc_msg("1+1", id="c2"), "done"])
    agent = create_agent(model, tools=[calculator])
    out = agent.invoke({"messages": [HumanMessage("q")]})
    kinds = [type(m).__name__ for m in out["messages"]]
    # Scripted messages all had id="reused"; none replaced another.
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert out["messages"][-1].content == "done"
