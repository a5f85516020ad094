"""Tool-call limits (policies/tool_call_limits.py): the setting's syntax and LangChain's
ToolCallLimitMiddleware counting, on hand-built replies."""

from __future__ import annotations

import pytest
from langchain.agents.middleware.tool_call_limit import ToolCallLimitExceededError
from langchain_core.messages import AIMessage, ToolMessage

from smart_agent.config.context import AgentContext
from smart_agent.nodes.routes import END, route_after_agent
from smart_agent.policies.tool_call_limits import CallLimit, limit_reply, parse_limit

pytestmark = pytest.mark.unit


def calls(*names):
    return [{"name": n, "args": {}, "id": f"c{i}", "type": "tool_call"} for i, n in enumerate(names)]


def test_the_syntax():
    assert parse_limit("calculator:run=1") == CallLimit("calculator", 1, None, "continue")
    assert parse_limit("run=2/thread=5/exit=end") == CallLimit(None, 2, 5, "end")
    assert parse_limit("*:thread=3/exit=error") == CallLimit(None, None, 3, "error")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("calculator", "is not [TOOL:]run=N"),
        ("calculator:exit=end", "give run=N, thread=N or both"),
        ("run=0", "at least 1"),
        ("run=x", "whole number"),
        ("run=3/thread=2", "run (3) cannot exceed thread (2)"),
        ("run=1/exit=stop", "exit must be one of continue, error, end"),
        ("run=1/run=2", "is not [TOOL:]run=N"),
        ("a b:run=1", "TOOL must be a tool name"),
    ],
)
def test_bad_limits_say_why(text, problem):
    with pytest.raises(ValueError, match=problem.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        parse_limit(text)
    with pytest.raises(ValueError):
        AgentContext(tool_call_limits=[text])


def test_continue_blocks_the_calls_over_the_run_limit_and_counts_as_langchain_does():
    ctx = AgentContext(tool_call_limits=["calculator:run=1"])
    reply = calls("calculator", "calculator", "read_file")
    update = limit_reply({}, ctx, AIMessage("", tool_calls=reply), reply)
    [blocked] = update["messages"]
    assert isinstance(blocked, ToolMessage) and blocked.tool_call_id == "c1" and blocked.status == "error"
    assert blocked.content == "Tool call limit exceeded. Do not call 'calculator' again."
    # the run counts the blocked call (it was tried), the thread only the one allowed
    counts = update["bookkeeping"]
    assert counts["run_tool_calls"] == {"calculator": 2} and counts["thread_tool_calls"] == {"calculator": 1}
    assert "stopped" not in counts


def test_a_thread_limit_counts_across_runs():
    ctx = AgentContext(tool_call_limits=["thread=2"])
    state = {"bookkeeping": {"thread_tool_calls": {"*": 1}, "run_tool_calls": {}}}
    reply = calls("a", "b")
    update = limit_reply(state, ctx, AIMessage("", tool_calls=reply), reply)
    assert [m.tool_call_id for m in update["messages"]] == ["c1"]
    assert update["messages"][0].content == "Tool call limit exceeded. Do not make additional tool calls."
    assert update["bookkeeping"]["thread_tool_calls"] == {"*": 2}


def test_end_answers_every_call_and_stops_the_run():
    ctx = AgentContext(tool_call_limits=["calculator:run=1/exit=end"])
    reply = calls("read_file", "calculator", "calculator")
    update = limit_reply({}, ctx, AIMessage("", tool_calls=reply), reply)
    *answers, final = update["messages"]
    assert [m.tool_call_id for m in answers] == ["c0", "c1", "c2"]  # (the others are not run either)
    assert "Not run" in answers[0].content and "Do not call 'calculator'" in answers[2].content
    assert isinstance(final, AIMessage) and final.content == update["answer"]
    assert update["answer"] == "'calculator' tool call limit reached: run limit exceeded (2/1 calls)."
    assert update["bookkeeping"]["stopped"] == "tool_call_limit"
    schema = {"output_schema": {"type": "object"}}
    state = {"bookkeeping": update["bookkeeping"], "run_settings": schema, "messages": [final]}
    assert route_after_agent(state) == END  # no structured answer is made of it


def test_error_raises_langchains_error():
    ctx = AgentContext(tool_call_limits=["run=1/exit=error"])
    reply = calls("a", "b")
    with pytest.raises(ToolCallLimitExceededError, match="run limit exceeded"):
        limit_reply({}, ctx, AIMessage("", tool_calls=reply), reply)


def test_no_limits_no_update():
    reply = calls("a")
    assert limit_reply({}, AgentContext(), AIMessage("", tool_calls=reply), reply) == {}
