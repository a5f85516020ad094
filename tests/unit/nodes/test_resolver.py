"""The resolver validates input, consumes the task and resets per-run counters."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage

from smart_agent.config.context import Context
from smart_agent.nodes.resolver import INTERRUPTED_RESULT, InputError, resolve_input


def test_task_becomes_user_message_and_is_consumed():
    out = resolve_input({"task": "  hello  "}, Context(max_tool_calls=7))
    assert [m.content for m in out["messages"]] == ["hello"]
    assert out["task"] == "" and out["tool_calls_made"] == 0
    assert out["run_settings"] == {"max_tool_calls": 7}
    assert out["bookkeeping"]["finalize"] is False and out["answer"] == ""


def test_messages_input_is_accepted_without_task():
    out = resolve_input({"messages": [HumanMessage("hi")]}, Context())
    assert "messages" not in out  # nothing new to add


@pytest.mark.parametrize(
    "state, fragment",
    [
        ({}, "Nothing to do"),
        ({"task": "   "}, "Nothing to do"),
        ({"task": 42}, "must be a string"),
        ({"messages": [HumanMessage("q"), AIMessage("a")]}, "must end with a user message"),
    ],
)
def test_bad_input_is_rejected_clearly(state, fragment):
    with pytest.raises(InputError, match=fragment):
        resolve_input(state, Context())


def test_invalid_limits_are_rejected():
    ctx = Context()
    ctx.max_parallel_tools = 0
    with pytest.raises(InputError, match="max_parallel_tools"):
        resolve_input({"task": "x"}, ctx)
    with pytest.raises(ValueError, match="max_tool_calls"):
        Context(max_tool_calls=-1)


def test_interrupted_tool_calls_are_answered_before_the_new_turn():
    human = HumanMessage("next question", id="h2")
    history = [
        HumanMessage("q", id="h1"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "calculator", "args": {}, "id": "c1"}, {"name": "calculator", "args": {}, "id": "c2"}],
        ),
        ToolMessage("1", tool_call_id="c1", id="t1"),
        human,
    ]
    out = resolve_input({"messages": history}, Context())
    msgs = out["messages"]
    assert isinstance(msgs[0], RemoveMessage) and msgs[0].id == "h2"
    assert isinstance(msgs[1], ToolMessage) and msgs[1].tool_call_id == "c2" and msgs[1].content == INTERRUPTED_RESULT
    assert isinstance(msgs[2], HumanMessage) and msgs[2].content == "next question"


def test_output_keys_a_run_may_not_write_get_their_empty_value_once():
    first = resolve_input({"task": "hi"}, Context())
    empty = {"compactions": 0, "memory_context": "", "recalled_memories": [], "thread_usage": {}}
    assert {k: first[k] for k in empty} == empty
    assert "todos" not in first  # (unset until the todo list is used: --json shows it then)
    assert not {"active_agent", "handoffs"} & set(first)  # (a team's own run start writes them)
    kept = {"task": "again", "compactions": 2, "memory_context": "m", "recalled_memories": [{"id": "x"}],
            "thread_usage": {"model_calls": 1}}  # fmt: skip
    later = resolve_input(kept, Context())
    assert not {"compactions", "memory_context", "recalled_memories"} & set(later)


async def test_a_run_leaves_no_output_key_unwritten_but_the_todo_list():
    # LangGraph reads every output key after each step; one never written costs it two exceptions.
    import typing

    from smart_agent.graphs.agent import build_agent_graph
    from smart_agent.state import TEAM_KEYS, AgentOutputState
    from smart_agent.testing.fake_models import ScriptedChatModel
    from smart_agent.tools.registry import ToolRegistry

    graph = build_agent_graph(model=ScriptedChatModel(responses=[AIMessage("done")]), registry=ToolRegistry())
    result = await graph.ainvoke({"task": "hi"}, context=Context(memory=False))
    assert set(typing.get_type_hints(AgentOutputState)) - set(result) == {"todos", *TEAM_KEYS}
    assert not set(TEAM_KEYS) & set(graph.channels)  # (a single agent's state has no team keys)
