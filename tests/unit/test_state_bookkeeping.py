"""The loop's bookkeeping key (``state.kept``, ``state.keep``) and how one node's updates join
(``state.joined_update``): one key holds every entry, and no write may drop another's."""

import asyncio
from collections import OrderedDict

from langgraph.graph import END, START, StateGraph

from smart_agent.state import AgentState, joined_update, keep, kept, kept_count, kept_entries


def test_kept_reads_an_entry_and_falls_back_for_what_a_run_would_not_write():
    assert kept({"bookkeeping": {"finalize": True}}, "finalize") is True
    assert kept({"bookkeeping": {"notice": None}}, "notice", "") == ""
    assert kept({}, "stopped", "") == ""
    # (a state written from outside a run, e.g. update_state, may hold anything under the key)
    assert kept({"bookkeeping": "finalize"}, "finalize") is None
    assert kept({"bookkeeping": OrderedDict(stopped="tool_call_limit")}, "stopped") == "tool_call_limit"


def test_dict_and_counter_entries_read_as_such_whatever_the_state_holds():
    state = {"bookkeeping": {"run_tool_calls": {"*": 3}, "retrievals_made": 2, "loop_guard": "x"}}
    assert kept_entries(state, "run_tool_calls") == {"*": 3}
    assert kept_entries(state, "loop_guard") == {} and kept_entries({}, "run_tool_calls") == {}
    assert kept_count(state, "retrievals_made") == 2
    assert kept_count(state, "output_retries") == 0 and kept_count({"bookkeeping": None}, "output_retries") == 0


def test_keep_adds_entries_to_what_the_update_already_writes():
    update = keep({"messages": []}, run_tool_calls={})
    assert keep(update, after_tools="pending") is update
    assert update == {"messages": [], "bookkeeping": {"run_tool_calls": {}, "after_tools": "pending"}}


def test_joined_update_keeps_the_entries_of_both_and_the_later_value_of_other_keys():
    first = {"answer": "a", "bookkeeping": {"finalize": True, "notice": "x"}, "run_settings": {"max_tool_calls": 3}}
    then = {"answer": "b", "bookkeeping": {"notice": ""}, "archived": {"ex_1": {}}}
    assert joined_update(first, then) == {
        "answer": "b",
        "bookkeeping": {"finalize": True, "notice": ""},
        "run_settings": {"max_tool_calls": 3},
        "archived": {"ex_1": {}},
    }
    assert joined_update(None, then) == then


def test_the_graph_merges_bookkeeping_writes_entry_by_entry():
    # Two nodes each write one entry: the second keeps the first's (the key's reducer).
    builder = StateGraph(AgentState)
    builder.add_node("one", lambda state: keep({}, finalize=True, thread_tool_calls={"*": 2}))
    builder.add_node("two", lambda state: keep({}, notice=str(kept(state, "finalize"))))
    builder.add_edge(START, "one")
    builder.add_edge("one", "two")
    builder.add_edge("two", END)
    out = asyncio.run(builder.compile().ainvoke({"bookkeeping": {"stopped": ""}}))
    assert out["bookkeeping"] == {"stopped": "", "finalize": True, "thread_tool_calls": {"*": 2}, "notice": "True"}
