"""history.budget.appended: add_messages' result, with its fast path for new messages that only append."""

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import add_messages

from smart_agent.history.budget import appended


def thread():
    return [HumanMessage("q", id="h1"), AIMessage("", id="a1", tool_calls=[{"name": "t", "args": {}, "id": "c1"}])]


def same(left, right):
    expected = add_messages(list(left), list(right))
    got = appended(list(left), list(right))
    # (a dict is converted to a new message with a new id by each call: its id is not compared)
    given = {m.id for m in [*left, *right] if not isinstance(m, dict)}

    def view(ms):
        return [(type(m), m.id if m.id in given else "new", m.content) for m in ms]

    assert view(got) == view(expected)
    return got


def test_new_messages_append_and_get_ids():
    results = [ToolMessage("r", tool_call_id="c1"), AIMessage("done")]
    got = appended(thread(), results)
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


def test_a_replacement_is_not_appended():
    got = appended(thread(), [AIMessage("shorter", id="a1")])
    assert [m.content for m in got] == ["q", "shorter"]


def test_a_thread_holding_a_message_in_dict_form_is_still_checked_for_reused_ids():
    # (a state written from outside a run may hold one)
    left = [{"role": "user", "content": "q", "id": "x"}, AIMessage("old", id="a1")]
    got = appended(list(left), [AIMessage("new", id="a1")])  # a reused id replaces, as add_messages does
    assert [m.content for m in got] == ["q", "new"]
    got = appended(list(left), [AIMessage("more", id="a2")])
    assert [m.content for m in got[1:]] == ["old", "more"]
