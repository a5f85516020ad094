"""state.merge_messages (the messages reducer): add_messages' result, with its fast path for new
messages that only append."""

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import add_messages

from smart_agent import state as state_module
from smart_agent.state import merge_messages


def copied(value):
    """A list or message-like with copies of its messages (the reducers give ids to the messages they get)."""
    if isinstance(value, list):
        return [copied(m) for m in value]
    return value.model_copy() if hasattr(value, "model_copy") else value


def thread():
    return [HumanMessage("q", id="h1"), AIMessage("", id="a1", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])]


def same(left, right):
    expected = add_messages(copied(left), copied(right))
    got = merge_messages(copied(left), copied(right))
    # (a dict is converted to a new message with a new id by each call: its id is not compared)
    given = {m.id for m in [*left, *(right if isinstance(right, list) else [right])] if hasattr(m, "id")}

    def view(ms):
        return [(type(m), m.id if m.id in given else "new", m.content) for m in ms]

    assert view(got) == view(expected)
    return got


def test_new_messages_append_and_get_ids():
    results = [ToolMessage("r", tool_call_id="c1"), AIMessage("done")]
    got = merge_messages(thread(), results)
    assert [m.content for m in got] == ["q", "", "r", "done"]
    assert all(m.id for m in got) and len({m.id for m in got}) == 4


@pytest.mark.parametrize(
    "right",
    [
        [AIMessage("replaced", id="a1")],  # an id of the thread: replaced in place
        [AIMessage("x", id="n1"), AIMessage("y", id="n1")],  # one id twice: the later wins
        [RemoveMessage(id="h1")],
        [AIMessageChunk(content="chunk", id="n2")],
        [{"role": "user", "content": "a dict"}],
        [HumanMessage("new", id="n3")],
        [ToolMessage("r", tool_call_id="c1"), AIMessage("replaced", id="a1")],  # a new id beside a reused one
        [ToolMessage("r", tool_call_id="c1"), AIMessage("more", id="n4")],
    ],
)
def test_same_as_add_messages(right):
    same(thread(), right)


def test_a_replacement_replaces_the_message_in_place():
    got = merge_messages(thread(), [AIMessage("shorter", id="a1")])
    assert [m.content for m in got] == ["q", "shorter"]


def test_a_thread_holding_a_message_in_dict_form_is_still_checked_for_reused_ids():
    # (a state written from outside a run may hold one)
    left = [{"role": "user", "content": "q", "id": "x"}, AIMessage("old", id="a1")]
    got = merge_messages(list(left), [AIMessage("new", id="a1")])  # a reused id replaces, as add_messages does
    assert [m.content for m in got] == ["q", "new"]
    got = merge_messages(list(left), [AIMessage("more", id="a2")])
    assert [m.content for m in got[1:]] == ["old", "more"]


@pytest.mark.parametrize(
    "right",
    [
        AIMessage("one message alone", id="n5"),  # not a list: add_messages takes it as one message
        "a string",
        ("user", "a (role, content) pair"),
        {"role": "user", "content": "a dict alone"},
        [("user", "a pair in a list"), AIMessage("x", id="n6")],
        [],
    ],
)
def test_same_as_add_messages_for_any_write(right):
    same(thread(), right)


@pytest.mark.parametrize(
    "left",
    [
        [HumanMessage("q"), AIMessage("a", id="a1")],  # a message without an id: add_messages gives it one
        [{"role": "user", "content": "q", "id": "d1"}, AIMessage("a", id="a1")],  # in dict form: converted
        [],
    ],
)
def test_same_as_add_messages_for_any_thread(left):
    got = same(left, [ToolMessage("r", tool_call_id="c1", id="t1"), AIMessage("b", id="a9")])
    assert all(m.id for m in got) and all(not isinstance(m, dict) for m in got)


def test_new_messages_are_appended_without_add_messages(monkeypatch):
    def fail(*args):
        raise AssertionError("add_messages was called")

    monkeypatch.setattr(state_module, "add_messages", fail)
    left = thread()
    got = merge_messages(left, [ToolMessage("r", tool_call_id="c1"), AIMessage("done", id="a2")])
    assert got[:2] == left and [m.content for m in got[2:]] == ["r", "done"] and len(left) == 2


def test_the_loop_state_reduces_messages_with_merge_messages():
    from typing import get_type_hints

    from langchain_core.messages import AIMessage as AI
    from langgraph.graph import StateGraph

    from smart_agent.state import AgentState, InputState, OutputState

    for schema in (AgentState, InputState, OutputState):
        assert get_type_hints(schema, include_extras=True)["messages"].__metadata__ == (merge_messages,)
    builder = StateGraph(AgentState)
    builder.add_node("n", lambda state: {"messages": [AI("b", id="a2"), AI("c")]})
    builder.set_entry_point("n")
    graph = builder.compile()
    assert graph.channels["messages"].operator is merge_messages
    out = graph.invoke({"messages": [HumanMessage("q", id="h1"), AI("a", id="a2")]})
    assert [(m.content, bool(m.id)) for m in out["messages"]] == [("q", True), ("b", True), ("c", True)]


def test_the_ids_remembered_for_a_merged_list_still_catch_a_reused_id():
    """The second merge onto a list merge_messages made reads that list's remembered ids: a message
    that reuses the id of one appended earlier replaces it, as add_messages does."""
    first = merge_messages([HumanMessage("hi", id="h1")], [AIMessage("one", id="a1")])
    second = merge_messages(first, [AIMessage("two", id="a2")])
    third = merge_messages(second, [AIMessage("one, edited", id="a1")])
    assert [(m.id, m.content) for m in third] == [("h1", "hi"), ("a1", "one, edited"), ("a2", "two")]
    second.append(AIMessage("three", id="a3"))  # (changed in place: its remembered ids are not used)
    fourth = merge_messages(second, [AIMessage("three, edited", id="a3")])
    assert [m.id for m in fourth] == ["h1", "a1", "a2", "a3"] and fourth[-1].content == "three, edited"
